import { describe, expect, it } from "vitest";
import type { OverviewReady } from "../api/types";
import overviewFixture from "../__fixtures__/overview_resnet50.json";
import { buildDonutOption, buildExecutionRows } from "./executionDonutOption";
import { buildStepChartModel, buildStepChartOption } from "./stepChartOption";
import { makeStepTooltipFormatter, pieTooltipFormatter } from "./tooltipFormatters";
import { RESNET_CATEGORY_LABELS } from "../testing/overview";

const overview = overviewFixture as unknown as OverviewReady;
const EVIL = "<img src=x onerror=alert(1)>";

/** Parses tooltip HTML the way ECharts would show it, to check what becomes an element. */
function asDom(html: string): HTMLDivElement {
  const div = document.createElement("div");
  div.innerHTML = html;
  return div;
}

describe("tooltip formatters escape trace strings", () => {
  it("step tooltip shows a malicious series and step name as text", () => {
    const format = makeStepTooltipFormatter({ label: "ms", divisor: 1000 });
    const html = format([
      { seriesName: EVIL, name: `${EVIL}step`, value: 84.2105, color: "#4e79a7" },
      { seriesName: "Memcpy", name: `${EVIL}step`, value: 0.002, color: "red;background:url(x)" },
      { seriesName: "Memset", name: `${EVIL}step`, value: 0, color: "#edc948" },
    ]);
    expect(html).not.toContain("<img");
    expect(html).not.toContain("url(x)");
    const dom = asDom(html);
    expect(dom.querySelector("img")).toBeNull();
    expect(dom.textContent).toContain(`Step ${EVIL}step`);
    expect(dom.textContent).toContain(`${EVIL}: 84.21 ms`);
    expect(dom.textContent).toContain("Memcpy: 2.00 µs"); // small values keep a readable unit
    expect(dom.textContent).not.toContain("Memset"); // zero categories are left out
    expect(dom.textContent).toContain("Total: 84.21 ms");
  });

  it("pie tooltip shows a malicious category name as text", () => {
    const html = pieTooltipFormatter({ name: EVIL, value: 84445.4, percent: 75.67, color: "#4e79a7" });
    const dom = asDom(html);
    expect(dom.querySelector("img")).toBeNull();
    expect(dom.textContent).toBe(`${EVIL}84,445.4 µs (75.67 %)`);
  });
});

describe("step chart option", () => {
  it("has one bar per step and one stacked series per category, in ms for 100 ms steps", () => {
    const model = buildStepChartModel(overview);
    expect(model.unit.label).toBe("ms");
    expect(model.stepNames).toEqual(["5", "6", "7", "8", "9", "10"]);
    expect(model.series.map((s) => s.name)).toEqual(RESNET_CATEGORY_LABELS);
    const dataloader = model.series.find((s) => s.key === "dataloader_us");
    expect(dataloader?.values).toEqual([69.317, 57.669, 61.257, 56.453, 62.69, 48.185]);
    // The stacked values of each step add up to its total.
    model.stepNames.forEach((_, i) => {
      const sum = model.series.reduce((acc, s) => acc + (s.values[i] ?? 0), 0);
      expect(sum).toBeCloseTo((overview.steps[i]?.total_us ?? 0) / 1000, 6);
    });

    const option = buildStepChartOption(model, "#212121");
    const series = option.series as { type: string; stack: string; name: string }[];
    expect(series).toHaveLength(8);
    expect(series.every((s) => s.type === "bar" && s.stack === "step")).toBe(true);
    expect((option.yAxis as { name: string }).name).toBe("Step time (ms)");
  });

  it("stays in µs for short steps", () => {
    const model = buildStepChartModel({
      categories: ["kernel_us", "other_us"],
      steps: [{ step: "1", start_us: 0, end_us: 900, total_us: 900, kernel_us: 800, other_us: 100 }],
    });
    expect(model.unit.label).toBe("µs");
    expect(model.series.map((s) => s.values)).toEqual([[800], [100]]);
  });
});

describe("execution summary rows", () => {
  it("gives each category its average µs and share of the average step", () => {
    const rows = buildExecutionRows(overview);
    const kernel = rows.find((r) => r.key === "kernel_us");
    expect(kernel?.us).toBe(98588.66666666667);
    expect(kernel?.pct).toBeCloseTo(55.5141, 3);
    const total = rows.reduce((acc, r) => acc + (r.pct ?? 0), 0);
    expect(total).toBeCloseTo(100, 6);
  });

  it("leaves zero categories out of the donut", () => {
    const option = buildDonutOption(buildExecutionRows(overview), "#000");
    const [pie] = option.series as { data: { name: string; value: number }[] }[];
    expect(pie?.data.map((d) => d.name)).toEqual([
      "Kernel",
      "Memcpy",
      "Memset",
      "Runtime",
      "DataLoader",
      "CPU Exec",
      "Other",
    ]);
  });

  it("shows the served share of the average step, not one recomputed from the µs", () => {
    const rows = buildExecutionRows({ categories: ["kernel_us"], average: { total_us: 100, kernel_us: 50 }, average_pct: { kernel_us: 12.5 } });
    expect(rows[0]?.pct).toBe(12.5);
  });

  it("has no percentages when the average step is 0", () => {
    const rows = buildExecutionRows({ categories: ["kernel_us"], average: { total_us: 0, kernel_us: 0 }, average_pct: { kernel_us: null } });
    expect(rows[0]?.pct).toBeNull();
  });
});

describe("top-N donuts", () => {
  it("colors items in order, Other grey, keeps zero items in the legend but not in the chart", async () => {
    const { buildTopDonutOption, colorTopItems, OTHER_COLOR } = await import("./topDonutOption");
    const items = colorTopItems(
      [
        { name: "Tensor cores", value: 0 },
        { name: "<b>x</b>", value: 30 },
        { name: "Other", value: 10 },
      ],
      ["#111111", "#222222"],
    );
    expect(items.map((i) => [i.color, i.pct])).toEqual([
      ["#111111", 0],
      ["#222222", 75],
      [OTHER_COLOR, 25],
    ]);
    const [pie] = buildTopDonutOption(items).series as { data: { name: string }[] }[];
    expect(pie?.data.map((d) => d.name)).toEqual(["<b>x</b>", "Other"]);
  });
});
