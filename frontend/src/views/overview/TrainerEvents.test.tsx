import { render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { OverviewExtras } from "../../api/types";
import composer from "../../__fixtures__/diff/overview_composer.json";
import { SystemMetrics, systemMetricsOption } from "./SystemMetrics";
import { TrainerEvents } from "./TrainerEvents";

vi.mock("../../components/EChart", () => ({
  EChart: (props: { testId?: string }) => <div data-testid={props.testId} />,
}));

const extras = composer as unknown as OverviewExtras;

describe("Trainer events card", () => {
  it("lists the Composer engine events with total and mean per step", () => {
    render(<TrainerEvents events={extras.trainer_events} />);
    const card = screen.getByTestId("trainer-events");
    const rows = within(card).getAllByTestId("trainer-event-row");
    expect(rows).toHaveLength(extras.trainer_events!.length);
    const names = rows.map((r) => r.querySelector("td")?.textContent);
    expect(names).toContain("event/forward");
    expect(names).toContain("event/backward");
    const fwd = rows.find((r) => r.querySelector("td")?.textContent === "event/forward")!;
    expect([...fwd.querySelectorAll("td")].map((td) => td.textContent)).toEqual(["event/forward", "475 \u00b5s", "79 \u00b5s"]);
    expect(within(card).getByRole("tooltip").textContent).toMatch(/not part of it/);
  });

  it("renders nothing without events", () => {
    const { container } = render(<TrainerEvents events={[]} />);
    expect(container.innerHTML).toBe("");
    render(<TrainerEvents events={undefined} />);
    expect(screen.queryByTestId("trainer-events")).toBeNull();
  });
});

describe("System metrics card", () => {
  it("plots one series per counter with time in ms", () => {
    render(<SystemMetrics metrics={extras.system_metrics} theme="light" />);
    expect(screen.getByTestId("system-metrics-chart")).toBeTruthy();
    const option = systemMetricsOption(
      [
        { name: "cpu/cpu_percent", ts_us: [0, 1500], values: [10, 20] },
        { name: "memory/rss", ts_us: [-722], values: [3] },
      ],
      "#000",
    );
    const series = option.series as { name: string; type: string; data: number[][] }[];
    expect(series.map((s) => [s.name, s.type])).toEqual([["cpu/cpu_percent", "line"], ["memory/rss", "line"]]);
    expect(series[0]!.data).toEqual([[0, 10], [1.5, 20]]);
    expect(series[1]!.data).toEqual([[-0.722, 3]]);
  });

  it("gives one sample a time axis from the first step to it, not ECharts' padding", () => {
    // the trial's composer rank_0: one cpu/cpu_percent sample 722 µs before the first step drew an axis
    // from -1.1 to -0.3 ms, leaving out the first step
    const x = (metrics: { name: string; ts_us: number[]; values: number[] }[]) =>
      systemMetricsOption(metrics, "#000").xAxis as { min?: number; max?: number; scale?: boolean };
    expect(x([{ name: "cpu/cpu_percent", ts_us: [-722], values: [0] }])).toMatchObject({ min: -0.8, max: 0 });
    expect(x([{ name: "a", ts_us: [2500], values: [1] }, { name: "b", ts_us: [2500], values: [2] }])).toMatchObject({ min: 0, max: 3 });
    expect(x([{ name: "a", ts_us: [0], values: [1] }])).toMatchObject({ min: 0, max: 1 });
    expect(x([{ name: "a", ts_us: [40], values: [1] }])).toMatchObject({ min: 0, max: 0.04 });
    // two or more times: fitted to the data
    const two = x([{ name: "a", ts_us: [0, 1500], values: [1, 2] }]);
    expect(two.scale).toBe(true);
    expect(two.min).toBeUndefined();
  });

  it("says there is nothing to plot for series without samples", () => {
    render(<SystemMetrics metrics={[{ name: "cpu/cpu_percent", ts_us: [], values: [] }]} theme="light" />);
    expect(screen.getByTestId("system-metrics-hint").textContent).toBe("1 series, 0 samples: nothing to plot.");
    expect(screen.queryByTestId("system-metrics-chart")).toBeNull();
  });

  it("renders nothing without metrics", () => {
    render(<SystemMetrics metrics={[]} theme="light" />);
    expect(screen.queryByTestId("system-metrics-chart")).toBeNull();
  });
});
