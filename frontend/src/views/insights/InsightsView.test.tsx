import { fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import insightsH100 from "../../__fixtures__/distributed/insights_h100.json";
import insightsDlrm from "../../__fixtures__/distributed/insights_dlrm_rank0.json";
import { InsightsCard } from "./InsightsCard";
import { InsightsView } from "./InsightsView";
import { json, stubFetch } from "../../testing/fetch";

vi.mock("../../components/EChart", () => ({
  EChart: (props: { testId?: string; option: { xAxis?: { data?: string[] }; series?: { data?: unknown[] }[] } }) => (
    <div
      data-testid={props.testId ?? "echart"}
      data-x={JSON.stringify(props.option.xAxis?.data ?? [])}
      data-values={JSON.stringify(props.option.series?.[0]?.data ?? [])}
    />
  ),
}));

let requests: string[] = [];

beforeEach(() => {
  requests = stubFetch((url) => {
    if (url.startsWith("insights?")) return json(url.includes("run=h100") ? insightsH100 : insightsDlrm);
    return json({ error: "not found" }, 404);
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
  window.history.replaceState(null, "", window.location.href.split("#")[0]);
});

function pcts(bar: HTMLElement): number[] {
  return Array.from(bar.querySelectorAll<HTMLElement>("[data-pct]")).map((el) => Number(el.dataset.pct));
}

/** The h100 document as a CPU-only trace answers it: no GPU, stream, kernel or exposed GPU row. */
const cpuOnly = {
  ...insightsH100,
  idle: { ...insightsH100.idle, gpus: [], per_stream: [] },
  launch: { ...insightsH100.launch, kernels: 0 },
  exposed: { ...insightsH100.exposed, gpus: [] },
  recommendations: [],
};

describe("Insights of a CPU-only trace", () => {
  it("the tab says there is no device activity instead of zeros", async () => {
    requests = stubFetch(() => json(cpuOnly));
    render(<InsightsView selection={{ run: "cpu", worker: "w", span: "1" }} theme="light" />);
    expect((await screen.findByTestId("insights-no-device")).textContent).toMatch(/no device activity to analyse/);
    expect(screen.queryByTestId("launch-p50")).toBeNull();
    expect(screen.queryByTestId("gap-histogram")).toBeNull();
  });

  it("the Overview card says so too, with no exposed bar", async () => {
    requests = stubFetch(() => json(cpuOnly));
    render(<InsightsCard selection={{ run: "cpu", worker: "w", span: "1" }} />);
    expect((await screen.findByTestId("insights-no-device")).textContent).toMatch(/CPU-only/);
    expect(screen.queryByTestId("exposed-bar")).toBeNull();
  });

  it("a trace with kernels still gets its figures", async () => {
    render(<InsightsCard selection={{ run: "h100", worker: "w", span: "1" }} />);
    expect(await screen.findByTestId("exposed-bar")).toBeTruthy();
    expect(screen.queryByTestId("insights-no-device")).toBeNull();
  });
});

describe("InsightsView", () => {
  it("renders launch stats, histograms with labelled bins, and the exposed bar", async () => {
    render(<InsightsView selection={{ run: "h100", worker: "w", span: "1" }} theme="light" />);
    expect((await screen.findByTestId("launch-p50")).textContent).toBe("1.67 µs");
    expect(requests).toEqual(["insights?run=h100&worker=w&span=1"]);
    expect(screen.getByTestId("launch-p95").textContent).toBe("2.00 µs");
    expect(screen.getByTestId("short-kernel-share").textContent).toBe("65.0 %");
    const launch = screen.getByTestId("launch-histogram");
    expect(JSON.parse(launch.dataset.x ?? "[]").slice(0, 3)).toEqual(["0–1 µs", "1–2 µs", "2–5 µs"]);
    expect(JSON.parse(launch.dataset.x ?? "[]").at(-1)).toBe("≥10 ms");
    expect(JSON.parse(launch.dataset.values ?? "[]")).toEqual(insightsH100.launch.delay_histogram.counts);
    expect(JSON.parse(screen.getByTestId("gap-histogram").dataset.values ?? "[]")).toEqual(insightsH100.idle.gap_histogram.counts);
    const bar = screen.getByTestId("exposed-bar");
    const sum = pcts(bar).reduce((a, b) => a + b * 10, 0) / 10;
    expect(sum).toBe(100);
    expect(screen.getByTestId("idle-host-wait").textContent).toBe("4.06 ms");
  });

  it("lists host syncs by operator with their APIs", async () => {
    render(<InsightsView selection={{ run: "h100", worker: "w", span: "1" }} theme="light" />);
    const table = await screen.findByTestId("sync-table");
    const rows = within(table).getAllByRole("row").slice(1).map((r) => Array.from(r.querySelectorAll("td")).map((td) => td.textContent));
    // the sync called from Python inside ProfilerStep#6 is credited to no operator, not to the step
    expect(rows[0]).toEqual(["(no operator)", "2", "12 µs", "352 µs", "cudaDeviceSynchronize ×2"]);
    expect(rows[1]).toEqual(["aten::_local_scalar_dense", "1", "7.64 µs", "150 µs", "cudaStreamSynchronize ×1"]);
    expect(rows).toHaveLength(2);
  });
});

describe("InsightsCard", () => {
  it("shows idle totals, launch p50/p95 and a 100 % exposed bar (the recommendations are the Overview's card), and links to the tab", async () => {
    render(<InsightsCard selection={{ run: "job", worker: "worker0_step_12", span: "1" }} />);
    const card = await screen.findByTestId("insights-card");
    await within(card).findByTestId("exposed-bar");
    expect(within(card).getByTestId("card-launch-p50").textContent).not.toBe("–");
    expect(pcts(within(card).getByTestId("exposed-bar"))).toEqual([7.2, 38.3, 0.1, 54.4]);
    expect(within(card).queryByTestId("insights-recommendations")).toBeNull();
    const seen: string[] = [];
    const listener = () => seen.push(window.location.hash);
    window.addEventListener("hashchange", listener);
    fireEvent.click(within(card).getByTestId("open-insights"));
    window.removeEventListener("hashchange", listener);
    expect(seen.at(-1)).toContain("view=insights");
  });

});
