import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { CriticalPathOverlay } from "../../api/types";
import overlay from "../../__fixtures__/distributed/critical_path_dlrm_rank4.json";
import { PathSummary } from "./PathSummary";

describe("PathSummary", () => {
  it("says how many segments of the path lie on this rank and how much of each step (DLRM rank 4)", () => {
    const doc = overlay as CriticalPathOverlay;
    render(<PathSummary doc={doc} error={null} loading={false} />);
    const step = doc.steps[0]!;
    expect(step.shown).toBe(2402);  // leaf work: every operator and launch on the path
    expect(screen.getByTestId("path-overlay-count").textContent).toBe("Critical path across ranks: 2,402 segments on rank 4");
    expect(screen.getByTestId("path-overlay-step").textContent).toMatch(/^ · step 10: 10\.10 ms of 19\.53 ms here; most time: untraced host work 3\.63 ms \(370\), /);
  });

  it("says when it cannot load, and while it loads", () => {
    const { rerender } = render(<PathSummary doc={null} error="HTTP 500" loading={false} />);
    expect(screen.getByText(/Cannot load the critical path: HTTP 500/)).toBeTruthy();
    rerender(<PathSummary doc={null} error={null} loading={true} />);
    expect(screen.getByText("Loading the critical path…")).toBeTruthy();
  });
});
