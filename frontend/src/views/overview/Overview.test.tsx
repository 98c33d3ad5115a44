import { render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { OverviewReady } from "../../api/types";
import overviewFixture from "../../__fixtures__/overview_resnet50.json";
import { Overview } from "./Overview";
import { RESNET_CATEGORY_LABELS } from "../../testing/overview";

// happy-dom has no canvas; the chart component is replaced by one that exposes what it was given.
vi.mock("../../components/EChart", () => ({
  EChart: (props: { testId?: string; option: { series?: { name?: string; data?: unknown[] }[] } }) => (
    <div
      data-testid={props.testId}
      data-series={JSON.stringify((props.option.series ?? []).map((s) => s.name ?? null))}
      data-points={JSON.stringify((props.option.series ?? []).map((s) => s.data?.length ?? 0))}
    />
  ),
}));

const overview = overviewFixture as unknown as OverviewReady;

function valueOf(label: string): string | null {
  const dt = screen.getAllByText(label).find((el) => el.closest("dt"))?.closest("dt");
  return dt?.nextElementSibling?.textContent ?? null;
}

describe("Overview view", () => {
  it("renders the GPU summary from the fixture", () => {
    render(<Overview data={overview} theme="light" />);
    const util = screen.getAllByTestId("gpu-utilization");
    expect(util.map((el) => el.textContent)).toEqual(["55.51 %"]);
    expect(screen.getByTestId("sm-efficiency").textContent).toBe("54.68 %");
    expect(screen.getByTestId("achieved-occupancy").textContent).toBe("49.13 %");
    expect(screen.getByTestId("tensor-core").textContent).toBe("0.00 %"); // no kernel uses tensor cores
    expect(valueOf("Name")).toBe("Tesla V100-DGXS-32GB");
    expect(valueOf("Memory")).toBe("31.74 GiB");
    expect(valueOf("Compute capability")).toBe("7.0");
  });

  it("gives every GPU metric a definition tooltip", () => {
    render(<Overview data={overview} theme="light" />);
    const gpu = screen.getByTestId("gpu-summary");
    const tips = within(gpu).getAllByRole("tooltip").map((el) => el.textContent ?? "");
    expect(tips).toHaveLength(4);
    expect(tips[0]).toMatch(/^GPU Utilization \(%\): .*at least one kernel/);
    expect(tips[3]).toMatch(/Tensor Cores/);
  });

  it("renders the configuration", () => {
    render(<Overview data={overview} theme="light" />);
    expect(valueOf("Device type")).toBe("GPU");
    expect(valueOf("Steps")).toBe("6");
    expect(valueOf("Steps window")).toBe("1.07 s");
    expect(valueOf("Distributed")).toBe("–");
    expect(valueOf("PyTorch version")).toBe("–");
    expect(valueOf("Trace format")).toBe("kineto-2021");
    expect(valueOf("Step markers in trace")).toBe("Yes");
    expect(screen.queryByText("Incomplete last steps left out")).toBeNull();
  });

  it("names the tail steps the server left out", () => {
    const withDropped = { ...overview, configuration: { ...overview.configuration, dropped_tail_steps: ["10", "11"] } };
    render(<Overview data={withDropped} theme="light" />);
    expect(valueOf("Incomplete last steps left out")).toBe("10, 11");
  });

  it("renders the execution summary table with times and shares of the average step", () => {
    render(<Overview data={overview} theme="light" />);
    const table = screen.getByTestId("execution-table");
    const rows = within(table)
      .getAllByRole("row")
      .map((tr) => Array.from(tr.querySelectorAll("th,td")).map((c) => c.textContent));
    expect(rows[0]).toEqual(["Category", "Time (µs)", "Percentage of average step"]);
    expect(rows[1]).toEqual(["Kernel", "98,588.7", "55.51 %"]);
    expect(rows[6]).toEqual(["DataLoader", "59,261.8", "33.37 %"]);
    expect(rows[4]).toEqual(["Communication", "0.0", "0.00 %"]);
    expect(rows[rows.length - 1]).toEqual(["Average step", "177,592.2", "100.00 %"]);
    const donut = screen.getByTestId("execution-donut");
    expect(donut.dataset.points).toBe("[7]"); // zero-valued Communication is not drawn
    expect(screen.getByTestId("donut-center").textContent).toBe("Average step177.59 ms");
  });

  it("renders the step chart with one series per category", () => {
    render(<Overview data={overview} theme="dark" />);
    const chart = screen.getByTestId("step-chart");
    expect(JSON.parse(chart.dataset.series ?? "[]")).toEqual(RESNET_CATEGORY_LABELS);
    expect(JSON.parse(chart.dataset.points ?? "[]")).toEqual([6, 6, 6, 6, 6, 6, 6, 6]);
  });

  it("lists recommendations and warnings as text", () => {
    const evil = "<img src=x onerror=alert(1)>";
    render(
      <Overview
        data={{ ...overview, recommendations: [evil, ...overview.recommendations], warnings: [evil] }}
        theme="light"
      />,
    );
    const recs = screen.getByTestId("recommendations");
    const items = within(recs).getAllByRole("listitem").map((li) => li.textContent);
    expect(items).toHaveLength(overview.recommendations.length + 1);
    expect(items[0]).toBe(evil);
    expect(items.filter((t) => /^DataLoader takes 33\.4% of the average step/.test(t ?? ""))).toHaveLength(1);
    expect(document.querySelector("img")).toBeNull();
    const warnings = screen.getByTestId("warnings");
    expect(warnings.querySelector("summary")?.textContent).toBe("1 warning while reading this file");
    expect(warnings.tagName).toBe("DETAILS");
  });

  it("shows each recommendation's rule and addressed time, the runtime calls and the About-this-trace notes", () => {
    const about = [{ kind: "work_outside_trace", text: "The host waits 60.00 ms in 1 blocking call (<b>x</b>)" }];
    render(<Overview data={{ ...overview, about }} theme="light" />);
    const lines = within(screen.getByTestId("recommendations")).getAllByTestId("recommendation-addressed");
    expect(lines.map((l) => l.textContent)).toEqual(
      (overview.recommendation_details ?? []).map((d) => expect.stringMatching(new RegExp(`^${d.rule} · addresses .+ \\(threshold .+\\)$`))),
    );
    expect(lines.at(-1)?.textContent).toBe("dataloader · addresses 59.26 ms per average step (threshold 8.88 ms)");
    const apis = within(screen.getByTestId("runtime-calls")).getAllByTestId("runtime-call-api").map((c) => c.textContent);
    expect(apis[0]).toBe(overview.runtime_calls?.rows[0]?.api);
    expect(screen.getByTestId("about-trace").textContent).toContain("(<b>x</b>)");
    expect(document.querySelector("b")).toBeNull();
  });

  it("shows a card that fails to render as an error without blanking the others", () => {
    const broken = { ...overview, gpus: null as unknown as OverviewReady["gpus"] };
    const spy = vi.spyOn(console, "error").mockImplementation(() => undefined);
    render(<Overview data={broken} theme="light" />);
    spy.mockRestore();
    expect(screen.getByTestId("error-card").textContent).toContain("GPU Summary failed to render");
    expect(screen.getByTestId("step-chart")).toBeTruthy();
    expect(valueOf("Device type")).toBe("GPU");
  });
});
