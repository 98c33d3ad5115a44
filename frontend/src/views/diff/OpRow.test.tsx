import { cleanup, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import type { DiffOperator } from "../../api/types/diff";
import { OpRow } from "./DiffTables";

const times = { calls: 1, host_self_us: 10, host_total_us: 800, device_self_us: 0, device_total_us: 0 };

function op(moved_from: string[] | null): DiffOperator {
  return {
    name: "Optimizer.step#AdamW.step",
    path: ["Optimizer.step#AdamW.step"],
    status: "slower",
    change_pct: 66.3,
    change_us: 511,
    reason: "changed",
    moved_from,
    has_children: true,
    baseline: times,
    experiment: { ...times, host_total_us: 1311 },
    delta: { ...times, calls: 0, host_self_us: 0, host_total_us: 511 },
    cumulative_delta_us: 511,
  };
}

describe("OpRow", () => {
  afterEach(cleanup);

  it("marks a moved operator with its baseline path", () => {
    render(<table><tbody><OpRow op={op(["ProfilerStep", "Optimizer.step#AdamW.step"])} onOpen={() => {}} /></tbody></table>);
    const badge = screen.getByTestId("diff-moved");
    expect(badge.textContent).toContain("moved");
    expect(badge.getAttribute("title")).toContain("ProfilerStep \u203a Optimizer.step#AdamW.step");
    expect(screen.getByTestId("diff-status").textContent).toBe("slower");
  });

  it("has no moved badge otherwise", () => {
    render(<table><tbody><OpRow op={op(null)} onOpen={() => {}} /></tbody></table>);
    expect(screen.queryByTestId("diff-moved")).toBeNull();
  });
});
