// In the UI: idle per GPU (never more than the window), the launch delay split,
// per-stream idle labelled per stream, and the note for steps cut at the profiler's end.
import { render, screen, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { GpuIdle, InsightsReady } from "../../api/types";
import type { OverviewReady } from "../../api/types";
import overviewFixture from "../../__fixtures__/overview_resnet50.json";
import insightsDlrm from "../../__fixtures__/distributed/insights_dlrm_rank0.json";
import insightsH100 from "../../__fixtures__/distributed/insights_h100.json";
import { InsightsCard } from "./InsightsCard";
import { streamIdleOption } from "../distributed/charts";
import { InsightsContent } from "./InsightsView";
import { Overview } from "../overview/Overview";
import { json, stubFetch } from "../../testing/fetch";

vi.mock("../../components/EChart", () => ({
  EChart: (props: { testId?: string }) => <div data-testid={props.testId ?? "echart"} />,
}));

const dlrm = insightsDlrm as unknown as InsightsReady;
const h100 = insightsH100 as unknown as InsightsReady;

beforeEach(() => {
  stubFetch(() => json(dlrm));
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("idle per GPU", () => {
  it("the fixtures hold one GPU whose idle is within its window and whose parts add up", () => {
    for (const doc of [dlrm, h100]) {
      for (const g of doc.idle.gpus) {
        expect(g.idle_us).toBeLessThanOrEqual(g.window_us);
        expect(g.host_wait_us + g.short_gap_us + g.other_us).toBeCloseTo(g.idle_us, 6);
      }
    }
  });

  it("the Insights tab shows the GPU's idle as a share of the window, and the launch delay split", () => {
    render(<InsightsContent data={dlrm} theme="light" />);
    expect(screen.getByTestId("idle-total").textContent).toBe("7.87 ms (54.4 % of the window)");
    expect(screen.getByTestId("idle-host-wait").textContent).toBe("5.57 ms"); // launches that returned late only
    expect(screen.getByTestId("overhead-p50-p95").textContent).toBe("2.00 µs / 22 µs");
    // the union of the kernels' queueing intervals in the window, not their 13.80 ms sum
    expect(screen.getByTestId("queueing-union").textContent).toBe("2.29 ms");
    expect(screen.queryByTestId("graph-use")).toBeNull();
  });

  it("labels communication-only streams in the per-stream chart", () => {
    const option = streamIdleOption(dlrm.idle.per_stream, "#000") as { yAxis: { data: string[] } };
    expect(option.yAxis.data).toContain("GPU 0 stream 7");
    expect(option.yAxis.data.some((t) => t.endsWith("(communication only)"))).toBe(true);
  });

  it("shows one row per GPU when a trace has several", () => {
    const first = h100.idle.gpus[0] as GpuIdle;
    const two: InsightsReady = { ...h100, idle: { ...h100.idle, gpus: [first, { ...first, device: 1, host_wait_us: 1000 }] } };
    render(<InsightsContent data={two} theme="light" />);
    expect(screen.getByTestId("idle-host-wait-gpu0").textContent).toBe("4.06 ms");
    expect(screen.getByTestId("idle-host-wait-gpu1").textContent).toBe("1.00 ms");
  });

  it("the Overview's Insights card shows the GPU idle and launch overhead p50", async () => {
    render(<InsightsCard selection={{ run: "job", worker: "worker0_step_12", span: "1" }} />);
    const card = await screen.findByTestId("insights-card");
    expect((await within(card).findByTestId("idle-total")).textContent).toBe("7.87 ms (54.4 % of the window)");
    expect(within(card).getByTestId("card-overhead-p50").textContent).toBe("2.00 µs");
  });
});

describe("steps cut at the profiler's end", () => {
  const overview = overviewFixture as unknown as OverviewReady;

  it("shows a note naming the step, its annotation's end and where it was cut", () => {
    const clipped = {
      ...overview,
      configuration: { ...overview.configuration, clipped_steps: [{ step: "1", host_end_us: 13336315.8, clipped_to_us: 1673.2 }] },
    };
    render(<Overview data={clipped} theme="light" />);
    expect(screen.getByTestId("clipped-steps-note").textContent).toBe(
      "Step 1: its annotation runs to 13.34 s, past the end of the profiler; it is cut at 1.67 ms, where the profile ends.",
    );
  });

  it("shows no note when no step was cut", () => {
    render(<Overview data={overview} theme="light" />);
    expect(screen.queryByTestId("clipped-steps-note")).toBeNull();
  });
});
