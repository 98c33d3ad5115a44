import { describe, expect, it } from "vitest";
import { drawAxis, type DrawState } from "./draw";

/** A 2D context that records each label and its x; 6 px per character. */
function recordingContext() {
  const labels: { text: string; x: number; w: number }[] = [];
  const noop = () => undefined;
  const ctx = new Proxy(
    {
      fillText: (text: string, x: number) => labels.push({ text, x, w: text.length * 6 }),
      measureText: (text: string) => ({ width: text.length * 6 }),
    } as Record<string, unknown>,
    { get: (t, k) => (k in t ? t[k as string] : noop), set: () => true },
  );
  return { ctx: ctx as unknown as CanvasRenderingContext2D, labels };
}

describe("the Trace view's time axis", () => {
  it("keeps the last tick label inside the plot instead of cutting it at the right edge", () => {
    const { ctx, labels } = recordingContext();
    const x0 = 200;
    const width = 1000;
    // a 0–49.9 ms window: ticks every 5 ms, the last (45 ms) 98 px from the edge; at 49.99 ms it is 2 px
    const state = {
      g: { win: { start: 0, end: 50_010 }, x0, width, y0: 0, offsets: new Map() },
      width: x0 + width,
      palette: { surface: "#fff", border: "#ccc", muted: "#666", text: "#000" },
      matchTimes: [],
      box: null,
    } as unknown as DrawState;
    drawAxis(ctx, state, 24);
    const ticks = labels.filter((l) => l.text.endsWith(" ms") && !l.text.startsWith("Window"));
    expect(ticks.map((l) => l.text)).toContain("50 ms");
    for (const l of ticks) expect(l.x + l.w, l.text).toBeLessThanOrEqual(x0 + width);
    const last = ticks.find((l) => l.text === "50 ms")!;
    expect(last.x).toBeLessThan(x0 + width - last.w); // drawn left of its tick
    const first = ticks.find((l) => l.text === "0 ms")!;
    expect(first.x).toBe(x0 + 3.5); // the others stay right of theirs
  });
});
