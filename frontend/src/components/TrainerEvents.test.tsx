import { render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { OverviewExtras } from "../api/overviewExtras";
import composer from "../__fixtures__/diff/overview_composer.json";
import { SystemMetrics, systemMetricsOption } from "./SystemMetrics";
import { TrainerEvents } from "./TrainerEvents";

vi.mock("./EChart", () => ({
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

  it("renders nothing without metrics", () => {
    render(<SystemMetrics metrics={[]} theme="light" />);
    expect(screen.queryByTestId("system-metrics-chart")).toBeNull();
  });
});
