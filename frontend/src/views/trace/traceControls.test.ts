import { describe, expect, it } from "vitest";
import { matchCountText, stepShown } from "./traceControls";

const STEPS = [
  { step: "5", start_us: 100, end_us: 200 },
  { step: "6", start_us: 200, end_us: 350 },
];

describe("step picker", () => {
  it("shows the step whose window is on screen, on the view's clock", () => {
    expect(stepShown(STEPS, 0, { start: 200, end: 350 })).toBe(1);
    expect(stepShown(STEPS, 1000, { start: 1100, end: 1200 })).toBe(0);
    expect(stepShown(STEPS, 0, { start: 200.0000001, end: 349.9999999 })).toBe(1);
  });

  it("goes back to the prompt when the view is not one step", () => {
    expect(stepShown(STEPS, 0, { start: 100, end: 350 })).toBe(-1);
    expect(stepShown(STEPS, 0, { start: 210, end: 350 })).toBe(-1);
    expect(stepShown(STEPS, 0, null)).toBe(-1);
    expect(stepShown([], 0, { start: 0, end: 1 })).toBe(-1);
  });
});

describe("search counter", () => {
  it("says how many match before one is visited", () => {
    expect(matchCountText(-1, 8, 8)).toBe("8 matches");
    expect(matchCountText(-1, 1, 1)).toBe("1 match");
    expect(matchCountText(-1, 0, 0)).toBe("0 matches");
    expect(matchCountText(-1, 1000, 5000, (n) => n.toLocaleString("en-US"))).toBe("5,000 matches (first 1,000)");
  });

  it("says which one is shown once Next is pressed", () => {
    expect(matchCountText(0, 8, 8)).toBe("1 of 8");
    expect(matchCountText(7, 8, 8)).toBe("8 of 8");
    expect(matchCountText(2, 1000, 5000)).toBe("3 of 5000 (first 1000)");
  });
});
