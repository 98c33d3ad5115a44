// Mouse, wheel and keyboard on the timeline canvas: wheel zooms around the pointer (sideways pans),
// drag pans (or, shift-held or in select mode, draws a range box), a click selects a slice, zooms into
// a merged item or folds a group; W/S/A/D zoom and pan; Escape clears.
import { useEffect, useRef, useState, type RefObject } from "react";
import type { TimelineResponse } from "../../api/types";
import { hitTest, keyAction, panByPixels, rowAt, wheelFactor, xToTime, zoomAround, type Bounds, type Geometry, type Hit, type Layout, type TimeWindow } from "./math";
import type { Box } from "./useRangeStats";

type Drag = { kind: "pan"; x: number; y: number; win: TimeWindow; moved: boolean } | { kind: "box"; x: number; y: number; t0: number; moved: boolean };

export interface Selected {
  worker: string;
  row: number;
}

/** What the handlers read at event time (kept in a ref: the listeners outlive renders). */
export interface LiveView {
  geometry: Geometry | null;
  layout: Layout;
  data: ReadonlyMap<string, TimelineResponse>;
  bounds: Bounds | null;
  selectMode: boolean;
  setWin: (w: TimeWindow) => void;
  /** Sets the window as given (keys: already clamped). */
  setWinRaw: (w: TimeWindow) => void;
}

export interface TimelineActions {
  setBox: (b: Box | null) => void;
  setSelected: (s: Selected | null) => void;
  toggleGroup: (key: string) => void;
}

export function useTimelineInput(
  refs: { canvas: RefObject<HTMLCanvasElement | null>; axis: RefObject<HTMLCanvasElement | null>; wrap: RefObject<HTMLDivElement | null> },
  view: LiveView,
  actions: TimelineActions,
  attached: boolean,
) {
  const live = useRef(view);
  live.current = view;
  const act = useRef(actions);
  act.current = actions;
  const drag = useRef<Drag | null>(null);
  const mouseT = useRef<number | null>(null);
  const [hover, setHover] = useState<{ cx: number; cy: number; hit: Hit } | null>(null);

  const local = (e: { clientX: number; clientY: number }) => {
    const r = refs.canvas.current!.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  };

  useEffect(() => {
    const onWheel = (e: WheelEvent) => {
      const g = live.current.geometry;
      if (!g || e.shiftKey) return;
      e.preventDefault();
      const target = e.currentTarget as HTMLCanvasElement;
      const x = e.clientX - target.getBoundingClientRect().left;
      if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        live.current.setWin(panByPixels(g.win, -e.deltaX, g.width));
        return;
      }
      const t = xToTime(Math.max(g.x0, Math.min(g.x0 + g.width, x)), g.win, g.x0, g.width);
      live.current.setWin(zoomAround(g.win, wheelFactor(e.deltaY, e.deltaMode, e.ctrlKey), t));
    };
    const els = [refs.canvas.current, refs.axis.current].filter((x): x is HTMLCanvasElement => x !== null);
    for (const el of els) el.addEventListener("wheel", onWheel, { passive: false });
    return () => {
      for (const el of els) el.removeEventListener("wheel", onWheel);
    };
  }, [attached, refs.canvas, refs.axis]);

  const onClick = (p: { x: number; y: number }) => {
    const l = live.current;
    if (!l.geometry) return;
    const r = rowAt(l.layout, p.y - l.geometry.y0);
    if (r?.kind === "group") {
      act.current.toggleGroup(r.key);
      return;
    }
    const hit = hitTest(l.layout, l.data, l.geometry, p.x, p.y);
    if (!hit) {
      act.current.setSelected(null);
      act.current.setBox(null);
      return;
    }
    if (hit.count > 1) {
      const off = l.geometry.offsets.get(hit.worker) ?? 0;
      const pad = Math.max(hit.dur * 0.1, 0.01);
      l.setWin({ start: hit.start + off - pad, end: hit.start + off + hit.dur + pad });
      return;
    }
    act.current.setSelected({ worker: hit.worker, row: hit.row });
  };

  const onMouseDown = (e: React.MouseEvent<HTMLCanvasElement>) => {
    const geometry = live.current.geometry;
    if (!geometry || e.button !== 0) return;
    refs.canvas.current?.focus();
    const p = local(e);
    if (e.shiftKey || live.current.selectMode) {
      const t0 = xToTime(p.x, geometry.win, geometry.x0, geometry.width);
      drag.current = { kind: "box", x: p.x, y: p.y, t0, moved: false };
    } else drag.current = { kind: "pan", x: p.x, y: p.y, win: geometry.win, moved: false };
    const onMove = (ev: MouseEvent) => {
      const d = drag.current;
      const g = live.current.geometry;
      if (!d || !g) return;
      const q = local(ev);
      if (Math.abs(q.x - d.x) + Math.abs(q.y - d.y) > 3) d.moved = true;
      if (!d.moved) return;
      if (d.kind === "pan") {
        live.current.setWin(panByPixels(d.win, q.x - d.x, g.width));
        const sc = refs.wrap.current?.querySelector(".timeline-scroll");
        if (sc) sc.scrollTop -= ev.movementY;
      } else act.current.setBox({ t0: d.t0, t1: xToTime(q.x, g.win, g.x0, g.width), y0: d.y, y1: q.y });
    };
    const onUp = (ev: MouseEvent) => {
      window.removeEventListener("mousemove", onMove);
      window.removeEventListener("mouseup", onUp);
      const d = drag.current;
      drag.current = null;
      if (d && !d.moved) onClick(local(ev));
    };
    window.addEventListener("mousemove", onMove);
    window.addEventListener("mouseup", onUp);
  };

  const onMouseMove = (e: React.MouseEvent<HTMLCanvasElement>) => {
    const { geometry, layout, data } = live.current;
    if (!geometry) return;
    const p = local(e);
    mouseT.current = p.x >= geometry.x0 ? xToTime(p.x, geometry.win, geometry.x0, geometry.width) : null;
    if (drag.current?.moved) return;
    const hit = hitTest(layout, data, geometry, p.x, p.y);
    setHover(hit ? { cx: e.clientX, cy: e.clientY, hit } : null);
  };

  const onMouseLeave = () => {
    setHover(null);
    mouseT.current = null;
  };

  const onKeyDown = (e: React.KeyboardEvent) => {
    const { geometry, bounds } = live.current;
    if (!geometry || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape") {
      act.current.setBox(null);
      act.current.setSelected(null);
      return;
    }
    const next = keyAction(e.key, geometry.win, mouseT.current ?? undefined, bounds ?? undefined);
    if (next) {
      e.preventDefault();
      live.current.setWinRaw(next);
    }
  };

  return { hover, handlers: { onMouseDown, onMouseMove, onMouseLeave, onKeyDown } };
}
