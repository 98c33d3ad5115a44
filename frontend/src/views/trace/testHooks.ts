// The e2e hook `window.__kinetoscopeTimeline`: installed only under the test flag (util/testHooks.ts),
// so users' pages never carry it.
import { useEffect, useRef } from "react";
import { testHooksEnabled } from "../../util/testHooks";
import type { Hit, TimeWindow } from "./math";

export { TEST_HOOKS_KEY } from "../../util/testHooks";

export interface TimelineHooks {
  openedAt: number;
  firstPaintMs: number | null;
  requests: number;
  getWindow(): TimeWindow | null;
  setWindow(startUs: number, endUs: number): void;
  itemAt(xCss: number, yCss: number): Hit | null;
  rectOf(row: number, worker?: string): { x: number; y: number; w: number; h: number } | null;
  /** True when the data on screen was answered for the current window. */
  settled(): boolean;
  /** The counter rows laid out (expanded groups only). */
  counterRows(): { worker: string; name: string; unit: string }[];
  /** Each drawn worker's shift onto the shared clock (µs), as "All ranks on one clock" applies it. */
  offsets(): Record<string, number>;
  /** The critical-path overlay's bands drawn now (CSS px; empty when it is off). */
  pathRects(): { x: number; y: number; w: number; h: number; category: string }[];
  /** The CUDA graph replay bands drawn now (CSS px), with their index in their worker's set. */
  replayRects(): { x: number; y: number; w: number; h: number; i: number; worker: string; status: string }[];
}

declare global {
  interface Window {
    __kinetoscopeTimeline?: TimelineHooks;
  }
}

/** Installs `make()`'s hooks while mounted, when the test flag is set; `make` reads live state. */
export function useTimelineTestHooks(make: () => TimelineHooks): void {
  const maker = useRef(make);
  maker.current = make;
  useEffect(() => {
    if (!testHooksEnabled()) return;
    const hooks = maker.current();
    window.__kinetoscopeTimeline = hooks;
    return () => {
      if (window.__kinetoscopeTimeline === hooks) delete window.__kinetoscopeTimeline;
    };
  }, []);
}
