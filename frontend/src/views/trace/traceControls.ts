// What the Trace view's step picker and search counter show, from the view's state.
import type { TimelineStep } from "../../api/types";

/**
 * The index of the step whose window is the one shown (``win``, on the view's clock: the step's
 * times plus the worker's ``offset``, µs), or -1 when the view shows no single step. The step picker
 * shows that step after it is picked, and goes back to its prompt once the view is panned or zoomed.
 */
export function stepShown(
  steps: readonly TimelineStep[],
  offset: number,
  win: { start: number; end: number } | null,
): number {
  if (!win) return -1;
  const tol = Math.max(1e-3, 1e-9 * Math.abs(win.end)); // µs: rounding of the clamp, not a real difference
  return steps.findIndex((s) => Math.abs(s.start_us + offset - win.start) <= tol && Math.abs(s.end_us + offset - win.end) <= tol);
}

/**
 * The search counter: "8 matches" until one is visited (``current`` -1), then "3 of 8"; when the
 * server returned only the first ``shown`` of ``total``, "(first N)" says so.
 */
export function matchCountText(current: number, shown: number, total: number, format: (n: number) => string = String): string {
  const first = total > shown ? ` (first ${format(shown)})` : "";
  if (current < 0 || shown === 0) return `${format(total)} ${total === 1 ? "match" : "matches"}${first}`;
  return `${format(current + 1)} of ${format(total)}${first}`;
}
