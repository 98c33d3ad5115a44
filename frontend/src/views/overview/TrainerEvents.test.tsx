import { render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { OverviewExtras } from "../../api/types";
import composer from "../../__fixtures__/diff/overview_composer.json";
import { sampleTimeText, SystemMetrics, systemMetricsOption } from "./SystemMetrics";
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
  it("plots the series with several samples, time in ms, never below 0", () => {
    const option = systemMetricsOption(
      [
        { name: "cpu/cpu_percent", ts_us: [0, 1500], values: [10, 20] },
        { name: "disk/read", ts_us: [500, 2500], values: [1, 2] },
      ],
      "#000",
    );
    const series = option.series as { name: string; type: string; data: number[][] }[];
    expect(series.map((s) => [s.name, s.type])).toEqual([["cpu/cpu_percent", "line"], ["disk/read", "line"]]);
    expect(series[0]!.data).toEqual([[0, 10], [1.5, 20]]);
    expect(option.xAxis).toMatchObject({ min: 0, name: "Time from the first step (ms)" });
  });

  it("starts the axis at the first sample when one comes before the first step", () => {
    const option = systemMetricsOption([{ name: "cpu/cpu_percent", ts_us: [-722, 1278], values: [1, 2] }], "#000");
    const series = option.series as { data: number[][] }[];
    expect(series[0]!.data).toEqual([[0, 1], [2, 2]]);
    expect(option.xAxis).toMatchObject({ min: 0, name: "Time from the first sample (ms)" });
  });

  it("shows a series with one sample as a value, not a chart", () => {
    // the trial's composer rank_0: one cpu/cpu_percent sample 722 µs before the first step was a dot on a -0.8…0 ms axis
    render(<SystemMetrics metrics={[{ name: "cpu/cpu_percent", ts_us: [-722], values: [12.345] }]} theme="light" />);
    expect(screen.queryByTestId("system-metrics-chart")).toBeNull();
    const cells = [...screen.getByTestId("system-metrics-values").querySelectorAll("th, td")].map((c) => c.textContent);
    expect(cells).toEqual(["cpu/cpu_percent", "12.35", "722 \u00b5s before the first step"]);
    expect(screen.getByTestId("system-metrics-hint").textContent).toBe("1 series, 1 sample.");
  });

  it("plots only the series with several samples when both kinds are present", () => {
    render(
      <SystemMetrics
        metrics={[
          { name: "a", ts_us: [0, 10], values: [1, 2] },
          { name: "b", ts_us: [5], values: [3] },
        ]}
        theme="light"
      />,
    );
    expect(screen.getByTestId("system-metrics-chart")).toBeTruthy();
    expect(screen.getByTestId("system-metrics-values").textContent).toContain("b");
    expect(sampleTimeText(0)).toBe("at the first step");
    expect(sampleTimeText(1500)).toBe("1.50 ms after the first step");
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
