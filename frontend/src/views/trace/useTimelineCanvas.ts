// The timeline's two canvases: the axis and the lanes, redrawn after every render at the device's
// pixel ratio; the wrapper's width is measured (and followed on resize). Records the first paint (ms
// after opening) for the perf hook.
import { useLayoutEffect, useRef, useState, type RefObject } from "react";
import { drawAxis, drawLanes, readPalette, sizeCanvas, type DrawState } from "./draw";
import { AXIS_H } from "./math";

export function useWrapperWidth(wrap: RefObject<HTMLDivElement | null>): number {
  const [width, setWidth] = useState(0);
  useLayoutEffect(() => {
    const el = wrap.current;
    if (!el) return;
    const measure = () => setWidth(el.clientWidth || 1000);
    measure();
    if (typeof ResizeObserver === "undefined") return;
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, [wrap]);
  return width;
}

/** Draws `state` (null: nothing to draw yet); returns the first paint's time in ms after `openedAt`. */
export function useTimelineCanvas(
  refs: { axis: RefObject<HTMLCanvasElement | null>; canvas: RefObject<HTMLCanvasElement | null> },
  state: Omit<DrawState, "palette" | "height"> | null,
  openedAt: number,
): RefObject<number | null> {
  const firstPaint = useRef<number | null>(null);
  useLayoutEffect(() => {
    const axis = refs.axis.current;
    const canvas = refs.canvas.current;
    if (!axis || !canvas || !state || state.width === 0) return;
    const dpr = window.devicePixelRatio || 1;
    const full: DrawState = { ...state, height: Math.max(state.layout.height, 40), palette: readPalette(canvas) };
    const actx = sizeCanvas(axis, state.width, AXIS_H, dpr);
    if (actx) drawAxis(actx, full, AXIS_H);
    const ctx = sizeCanvas(canvas, state.width, full.height, dpr);
    if (!ctx) return;
    const drawn = drawLanes(ctx, full);
    if (drawn > 0 && firstPaint.current === null) firstPaint.current = performance.now() - openedAt;
  });
  return firstPaint;
}
