// The Trace view: a canvas timeline of one file (or every worker of the run on one clock). The server
// does the level of detail: each pan/zoom re-requests the window (debounced, stale requests aborted)
// while the previous answer keeps being drawn at the new scale.
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { fetchJson } from "../api/http";
import type { Selection } from "../api/types";
import { Notice } from "../components/Notice";
import { useDebounced } from "../hooks/useDebounced";
import type { Theme } from "../hooks/useTheme";
import { formatNumber } from "../util/format";
import { timelineEventUrl, timelineMetaUrl, timelineSearchUrl, timelineUrl, traceFileUrl } from "../api/routes";
import { openInPerfetto } from "../timeline/perfetto";
import { drawAxis, drawLanes, readPalette, sizeCanvas, type DrawState, type FlowArrow } from "../timeline/draw";
import {
  alignOffsets,
  AXIS_H,
  buildLayout,
  clampWindow,
  focusWindow,
  formatTimeUs,
  hitTest,
  keyAction,
  LABEL_W,
  panByPixels,
  rangeStats,
  rectOfRow,
  rowAt,
  wheelFactor,
  xToTime,
  zoomAround,
  type Bounds,
  type Geometry,
  type Hit,
  type TimeWindow,
} from "../timeline/math";
import type { TimelineEvent, TimelineMeta, TimelineResponse, TimelineSearchResponse } from "../api/types";
import { matchCountText, stepShown } from "../timeline/traceControls";

export interface TraceFocus {
  row: number;
  /** Changes on every request, so asking for the same row twice still jumps. */
  nonce: number;
}

interface TraceViewProps {
  selection: Selection;
  /** Every worker of the run that has this span ready (for "all ranks on one clock"). */
  workers?: string[];
  focus?: TraceFocus | null;
  theme?: Theme;
}

interface Match {
  worker: string;
  row: number;
  start: number;
  dur: number;
  track: number;
  name: string;
}

interface Selected {
  worker: string;
  row: number;
}

interface Box {
  t0: number;
  t1: number;
  y0: number;
  y1: number;
}

type Drag = { kind: "pan"; x: number; y: number; win: TimeWindow; moved: boolean } | { kind: "box"; x: number; y: number; t0: number; moved: boolean };

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
}

declare global {
  interface Window {
    __kinetoscopeTimeline?: TimelineHooks;
  }
}

const sel = (s: Selection, worker: string): Selection => ({ run: s.run, worker, span: s.span });
const abortError = (e: unknown) => e instanceof DOMException && e.name === "AbortError";

export function TraceView({ selection, workers, focus, theme }: TraceViewProps) {
  const openedAt = useRef(performance.now());
  const [allRanks, setAllRanks] = useState(false);
  const activeWorkers = useMemo(
    () => (allRanks && workers && workers.length > 1 ? workers : [selection.worker]),
    [allRanks, workers, selection.worker],
  );
  const [metas, setMetas] = useState<Map<string, TimelineMeta>>(new Map());
  const [metaError, setMetaError] = useState<string | null>(null);
  const [win, setWinState] = useState<TimeWindow | null>(null);
  const [data, setData] = useState<Map<string, TimelineResponse>>(new Map());
  const [answered, setAnswered] = useState<Map<string, string>>(new Map());
  const [fetchError, setFetchError] = useState<string | null>(null);
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const [selected, setSelected] = useState<Selected | null>(null);
  const [details, setDetails] = useState<TimelineEvent | null>(null);
  const [detailsError, setDetailsError] = useState<string | null>(null);
  const [hover, setHover] = useState<{ cx: number; cy: number; hit: Hit } | null>(null);
  const [box, setBox] = useState<Box | null>(null);
  const [mode, setMode] = useState<"pan" | "select">("pan");
  const [searchText, setSearchText] = useState("");
  const [regex, setRegex] = useState(false);
  const [matches, setMatches] = useState<{ list: Match[]; total: number } | null>(null);
  const [searchError, setSearchError] = useState<string | null>(null);
  const [matchIdx, setMatchIdx] = useState(-1);
  const [perfetto, setPerfetto] = useState<string | null>(null);
  const [width, setWidth] = useState(0);
  const search = useDebounced(searchText, 300);

  const wrapRef = useRef<HTMLDivElement>(null);
  const axisRef = useRef<HTMLCanvasElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const firstPaint = useRef<number | null>(null);
  const requests = useRef(0);
  const drag = useRef<Drag | null>(null);
  const mouseT = useRef<number | null>(null);

  // ---- metadata of every shown worker
  const metaKey = activeWorkers.join("\u0000");
  useEffect(() => {
    const ctl = new AbortController();
    const missing = activeWorkers.filter((w) => !metas.has(w));
    if (missing.length === 0) return;
    Promise.all(missing.map((w) => fetchJson<TimelineMeta>(timelineMetaUrl(sel(selection, w)), ctl.signal)))
      .then((list) => {
        if (list.some((m) => m.state !== "ready" || !Array.isArray(m.tracks))) {
          setMetaError("The trace is still being parsed; try again in a moment.");
          return;
        }
        setMetas((prev) => {
          const next = new Map(prev);
          missing.forEach((w, i) => next.set(w, list[i]!));
          return next;
        });
      })
      .catch((e) => {
        if (!abortError(e)) setMetaError(String(e instanceof Error ? e.message : e));
      });
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [metaKey, selection.run, selection.span]);

  const ready = activeWorkers.every((w) => metas.has(w));
  const offsets = useMemo(() => {
    if (!ready) return new Map<string, number>();
    if (activeWorkers.length === 1) return new Map([[activeWorkers[0]!, 0]]);
    return alignOffsets(
      activeWorkers.map((w) => {
        const m = metas.get(w)!;
        return { worker: w, wall_origin_us: m.wall_origin_us, origin_us: m.origin_us, clock: m.clock };
      }),
    );
  }, [ready, activeWorkers, metas]);
  const bounds: Bounds | null = useMemo(() => {
    if (!ready) return null;
    let end = 0;
    for (const w of activeWorkers) end = Math.max(end, (offsets.get(w) ?? 0) + metas.get(w)!.end_us);
    return { start: 0, end: Math.max(end, 1) };
  }, [ready, activeWorkers, offsets, metas]);

  const setWin = useCallback(
    (w: TimeWindow) => setWinState(bounds ? clampWindow(w, bounds) : w),
    [bounds],
  );
  useEffect(() => {
    if (bounds && win === null) setWinState({ start: bounds.start, end: bounds.end });
  }, [bounds, win]);

  // ---- layout
  const countersByWorker = useRef(new Map<string, { name: string; unit: string }[]>());
  for (const [w, r] of data) if (!countersByWorker.current.has(w)) countersByWorker.current.set(w, r.counters.map((c) => ({ name: c.name, unit: c.unit })));
  const counterKey = activeWorkers.map((w) => (countersByWorker.current.get(w) ?? []).length).join(",");
  const layout = useMemo(
    () =>
      buildLayout(
        activeWorkers.filter((w) => metas.has(w)).map((w) => ({ worker: w, meta: metas.get(w)!, counters: countersByWorker.current.get(w) ?? [] })),
        collapsed,
      ),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [activeWorkers, metas, collapsed, counterKey],
  );
  const plotW = Math.max(50, width - LABEL_W - 8);
  const geometry: Geometry | null = win ? { win, x0: LABEL_W, width: plotW, y0: 0, offsets } : null;

  // ---- width
  useLayoutEffect(() => {
    const el = wrapRef.current;
    if (!el) return;
    const measure = () => setWidth(el.clientWidth || 1000);
    measure();
    if (typeof ResizeObserver === "undefined") return;
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  // ---- the window's data: debounced, stale requests aborted, the old answer kept meanwhile
  const winKey = win ? `${win.start}:${win.end}:${Math.round(plotW)}` : "";
  useEffect(() => {
    if (!win || !ready || width === 0) return;
    const ctl = new AbortController();
    const timer = setTimeout(() => {
      for (const w of activeWorkers) {
        const off = offsets.get(w) ?? 0;
        requests.current += 1;
        fetchJson<TimelineResponse>(timelineUrl(sel(selection, w), win.start - off, win.end - off, plotW), ctl.signal)
          .then((r) => {
            if (r.state !== "ready" || !Array.isArray(r.tracks)) return;
            setData((prev) => new Map(prev).set(w, r));
            setAnswered((prev) => new Map(prev).set(w, winKey));
            setFetchError(null);
          })
          .catch((e) => {
            if (!abortError(e)) setFetchError(String(e instanceof Error ? e.message : e));
          });
      }
    }, 30);
    return () => {
      clearTimeout(timer);
      ctl.abort();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [winKey, ready, metaKey, offsets]);

  // ---- details of the selected event
  useEffect(() => {
    setDetails(null);
    setDetailsError(null);
    if (!selected) return;
    const ctl = new AbortController();
    fetchJson<TimelineEvent>(timelineEventUrl(sel(selection, selected.worker), selected.row), ctl.signal)
      .then(setDetails)
      .catch((e) => {
        if (!abortError(e)) setDetailsError(String(e instanceof Error ? e.message : e));
      });
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [selected?.worker, selected?.row]);

  /** Zooms to an event (3× its duration) and selects it; fetches its times when not given. */
  const jumpTo = useCallback(
    (worker: string, row: number, start?: number, dur?: number) => {
      const off = offsets.get(worker) ?? 0;
      const go = (s: number, d: number) => {
        const f = focusWindow(s + off, d);
        setWin(f);
        setSelected({ worker, row });
      };
      if (start !== undefined && dur !== undefined) go(start, dur);
      else
        fetchJson<TimelineEvent>(timelineEventUrl(sel(selection, worker), row))
          .then((ev) => go(ev.start_us, ev.dur_us))
          .catch((e) => setDetailsError(String(e instanceof Error ? e.message : e)));
    },
    [offsets, setWin, selection],
  );

  // ---- "show in trace" from the tables
  useEffect(() => {
    if (focus && ready && bounds) jumpTo(selection.worker, focus.row);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [focus?.nonce, ready, bounds !== null]);

  // ---- search
  useEffect(() => {
    setMatchIdx(-1);
    setSearchError(null);
    const q = search.trim();
    if (q === "" || !ready) {
      setMatches(null);
      return;
    }
    const ctl = new AbortController();
    Promise.all(activeWorkers.map((w) => fetchJson<TimelineSearchResponse>(timelineSearchUrl(sel(selection, w), q, regex), ctl.signal)))
      .then((list) => {
        const all: Match[] = [];
        let total = 0;
        list.forEach((r, k) => {
          const w = activeWorkers[k]!;
          total += r.total;
          r.rows.forEach((row, i) =>
            all.push({ worker: w, row, start: r.start_us[i]!, dur: r.dur_us[i]!, track: r.track[i]!, name: r.name[i]! }),
          );
        });
        all.sort((a, b) => a.start + (offsets.get(a.worker) ?? 0) - (b.start + (offsets.get(b.worker) ?? 0)));
        setMatches({ list: all, total });
      })
      .catch((e) => {
        if (!abortError(e)) {
          setMatches(null);
          setSearchError(String(e instanceof Error ? e.message : e));
        }
      });
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [search, regex, ready, metaKey]);
  const matchSet = useMemo(() => new Set((matches?.list ?? []).map((m) => `${m.worker}:${m.row}`)), [matches]);
  const matchTimes = useMemo(() => (matches?.list ?? []).map((m) => m.start + (offsets.get(m.worker) ?? 0)), [matches, offsets]);
  const gotoMatch = (i: number) => {
    const list = matches?.list ?? [];
    if (list.length === 0) return;
    const k = ((i % list.length) + list.length) % list.length;
    setMatchIdx(k);
    const m = list[k]!;
    jumpTo(m.worker, m.row, m.start, m.dur);
  };

  // ---- flows of the selected event
  const flows: FlowArrow[] = useMemo(() => {
    if (!details || !selected) return [];
    return details.flows.map((f) => {
      const me = { worker: selected.worker, track: details.track, row: details.row, us: details.start_us };
      const other = { worker: selected.worker, track: f.track, row: f.row, us: f.start_us };
      const [a, b] = f.type === "launch" ? [other, me] : [me, other];
      return { fromWorker: a.worker, fromTrack: a.track, fromRow: a.row, fromUs: a.us, toWorker: b.worker, toTrack: b.track, toRow: b.row, toUs: b.us };
    });
  }, [details, selected]);

  // ---- drawing
  const boxRange = box ? { t0: box.t0, t1: box.t1 } : null;
  useLayoutEffect(() => {
    const axis = axisRef.current;
    const canvas = canvasRef.current;
    if (!axis || !canvas || !geometry || width === 0) return;
    const dpr = window.devicePixelRatio || 1;
    const state: DrawState = {
      layout,
      data,
      metas,
      g: geometry,
      width,
      height: Math.max(layout.height, 40),
      palette: readPalette(canvas),
      selected,
      matches: matchSet,
      matchTimes,
      flows,
      box: boxRange,
    };
    const actx = sizeCanvas(axis, width, AXIS_H, dpr);
    if (actx) drawAxis(actx, state, AXIS_H);
    const ctx = sizeCanvas(canvas, width, state.height, dpr);
    if (!ctx) return;
    const drawn = drawLanes(ctx, state);
    if (drawn > 0 && firstPaint.current === null) firstPaint.current = performance.now() - openedAt.current;
  });

  // ---- test and perf hooks
  const live = useRef({ win, layout, data, geometry, answered, winKey, activeWorkers, setWin, primary: selection.worker, offsets });
  live.current = { win, layout, data, geometry, answered, winKey, activeWorkers, setWin, primary: selection.worker, offsets };
  useEffect(() => {
    const hooks: TimelineHooks = {
      openedAt: openedAt.current,
      get firstPaintMs() {
        return firstPaint.current;
      },
      get requests() {
        return requests.current;
      },
      getWindow: () => live.current.win,
      setWindow: (s, e) => live.current.setWin({ start: s, end: e }),
      itemAt: (x, y) => {
        const l = live.current;
        return l.geometry ? hitTest(l.layout, l.data, l.geometry, x, y) : null;
      },
      rectOf: (row, worker) => {
        const l = live.current;
        return l.geometry ? rectOfRow(l.layout, l.data, l.geometry, worker ?? l.primary, row) : null;
      },
      settled: () => live.current.activeWorkers.every((w) => live.current.answered.get(w) === live.current.winKey),
      counterRows: () =>
        live.current.layout.rows.flatMap((r) => (r.kind === "counter" ? [{ worker: r.worker, name: r.name, unit: r.unit }] : [])),
      offsets: () => Object.fromEntries(live.current.offsets),
    } as TimelineHooks;
    window.__kinetoscopeTimeline = hooks;
    return () => {
      if (window.__kinetoscopeTimeline === hooks) delete window.__kinetoscopeTimeline;
    };
  }, []);

  // ---- input
  const local = (e: { clientX: number; clientY: number }) => {
    const r = canvasRef.current!.getBoundingClientRect();
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
    const els = [canvasRef.current, axisRef.current].filter((x): x is HTMLCanvasElement => x !== null);
    for (const el of els) el.addEventListener("wheel", onWheel, { passive: false });
    return () => {
      for (const el of els) el.removeEventListener("wheel", onWheel);
    };
  }, [ready]);

  const onMouseDown = (e: React.MouseEvent<HTMLCanvasElement>) => {
    if (!geometry || e.button !== 0) return;
    canvasRef.current?.focus();
    const p = local(e);
    if (e.shiftKey || mode === "select") {
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
        const sc = wrapRef.current?.querySelector(".timeline-scroll");
        if (sc) sc.scrollTop -= ev.movementY;
      } else setBox({ t0: d.t0, t1: xToTime(q.x, g.win, g.x0, g.width), y0: d.y, y1: q.y });
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

  const onClick = (p: { x: number; y: number }) => {
    const l = live.current;
    if (!l.geometry) return;
    const r = rowAt(l.layout, p.y - l.geometry.y0);
    if (r?.kind === "group") {
      setCollapsed((prev) => {
        const next = new Set(prev);
        if (next.has(r.key)) next.delete(r.key);
        else next.add(r.key);
        return next;
      });
      return;
    }
    const hit = hitTest(l.layout, l.data, l.geometry, p.x, p.y);
    if (!hit) {
      setSelected(null);
      setBox(null);
      return;
    }
    if (hit.count > 1) {
      const off = l.geometry.offsets.get(hit.worker) ?? 0;
      const pad = Math.max(hit.dur * 0.1, 0.01);
      setWin({ start: hit.start + off - pad, end: hit.start + off + hit.dur + pad });
      return;
    }
    setSelected({ worker: hit.worker, row: hit.row });
  };

  const onMouseMove = (e: React.MouseEvent<HTMLCanvasElement>) => {
    if (!geometry) return;
    const p = local(e);
    mouseT.current = p.x >= geometry.x0 ? xToTime(p.x, geometry.win, geometry.x0, geometry.width) : null;
    if (drag.current?.moved) return;
    const hit = hitTest(layout, data, geometry, p.x, p.y);
    setHover(hit ? { cx: e.clientX, cy: e.clientY, hit } : null);
  };

  const onKeyDown = (e: React.KeyboardEvent) => {
    if (!win || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape") {
      setBox(null);
      setSelected(null);
      return;
    }
    const next = keyAction(e.key, win, mouseT.current ?? undefined, bounds ?? undefined);
    if (next) {
      e.preventDefault();
      setWinState(next);
    }
  };

  // ---- box statistics
  const stats = useMemo(() => {
    if (!box) return null;
    let tracks: Set<string> | undefined;
    if (Math.abs(box.y1 - box.y0) > 4) {
      const lo = Math.min(box.y0, box.y1);
      const hi = Math.max(box.y0, box.y1);
      tracks = new Set(
        layout.rows.filter((r) => r.kind === "track" && r.y + r.h > lo && r.y < hi).map((r) => `${r.kind === "track" ? r.worker : ""}\u0000${r.kind === "track" ? r.track : ""}`),
      );
    }
    return rangeStats(data, offsets, box.t0, box.t1, tracks);
  }, [box, data, offsets, layout]);

  if (metaError) return <Notice kind="warning">Cannot load the timeline: {metaError}</Notice>;
  const primaryMeta = metas.get(selection.worker);
  const steps = primaryMeta?.steps ?? [];
  const fileUrl = traceFileUrl(selection);
  const nMatches = matches?.list.length ?? 0;
  const shownStep = stepShown(steps, offsets.get(selection.worker) ?? 0, win);

  return (
    <div className="trace-view" data-testid="trace-view" data-theme-name={theme}>
      <div className="view-controls trace-controls">
        <label className="selector">
          <span className="selector-label">Search</span>
          <input
            type="search"
            data-testid="timeline-search"
            placeholder="event name"
            value={searchText}
            onChange={(e) => setSearchText(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter") gotoMatch(e.shiftKey ? matchIdx - 1 : matchIdx + 1);
            }}
          />
        </label>
        <label className="check">
          <input type="checkbox" data-testid="timeline-regex" checked={regex} onChange={(e) => setRegex(e.target.checked)} /> regex
        </label>
        <span className="match-count" data-testid="match-count">
          {searchError ? searchError : matches ? matchCountText(matchIdx, nMatches, matches.total, formatNumber) : ""}
        </span>
        <button type="button" disabled={nMatches === 0} onClick={() => gotoMatch(matchIdx - 1)} data-testid="match-prev">
          ‹ Prev
        </button>
        <button type="button" disabled={nMatches === 0} onClick={() => gotoMatch(matchIdx + 1)} data-testid="match-next">
          Next ›
        </button>
        <label className="selector">
          <span className="selector-label">Step</span>
          <select
            data-testid="step-select"
            value={shownStep < 0 ? "" : String(shownStep)}
            onChange={(e) => {
              const st = steps[Number(e.target.value)];
              if (st) {
                const off = offsets.get(selection.worker) ?? 0;
                setWin({ start: st.start_us + off, end: st.end_us + off });
              }
            }}
          >
            <option value="">{steps.length ? "zoom to step…" : "no steps"}</option>
            {steps.map((s, i) => (
              <option key={`${s.step}-${i}`} value={i}>
                step {s.step} ({formatTimeUs(s.end_us - s.start_us)})
              </option>
            ))}
          </select>
        </label>
        <button type="button" data-testid="zoom-reset" onClick={() => bounds && setWin({ start: bounds.start, end: bounds.end })}>
          Reset zoom
        </button>
        <button
          type="button"
          className={mode === "select" ? "active" : undefined}
          aria-pressed={mode === "select"}
          data-testid="select-mode"
          title="Drag to select a time range (or shift-drag in pan mode)"
          onClick={() => setMode(mode === "select" ? "pan" : "select")}
        >
          Select range
        </button>
        {workers && workers.length > 1 ? (
          <label className="check">
            <input type="checkbox" data-testid="all-ranks" checked={allRanks} onChange={(e) => {
                setAllRanks(e.target.checked);
                setWinState(null);
                setSelected(null);
                setBox(null);
              }} /> All ranks on one clock
            {allRanks && ready ? (
              <span className="muted" data-testid="clock-source"> ({clockLabel(activeWorkers.map((w) => metas.get(w)?.clock))})</span>
            ) : null}
          </label>
        ) : null}
        <a className="csv-link" data-testid="trace-download" href={fileUrl} download>
          Download trace
        </a>
        <button
          type="button"
          data-testid="open-perfetto"
          title="Opens ui.perfetto.dev and sends it this trace; needs internet access"
          onClick={() => {
            setPerfetto("Opening Perfetto…");
            const name = `${selection.worker}.${selection.span}.pt.trace.json`;
            openInPerfetto(fileUrl, `${selection.run} / ${selection.worker} / ${selection.span}`, name)
              .then(() => setPerfetto(null))
              .catch((e) => setPerfetto(String(e instanceof Error ? e.message : e)));
          }}
        >
          Open in Perfetto (online)
        </button>
        {perfetto ? <span className="muted">{perfetto}</span> : null}
      </div>
      <div className="trace-hint muted">
        Wheel: zoom · drag: pan · shift-drag: select range · W/S zoom, A/D pan (click the timeline first) · click a slice for details
      </div>
      {fetchError ? <Notice kind="warning">Timeline request failed: {fetchError}</Notice> : null}
      {!ready ? <Notice>Loading the timeline…</Notice> : null}
      <div className="timeline" ref={wrapRef}>
        <canvas ref={axisRef} className="timeline-axis" data-testid="timeline-axis" />
        <div className="timeline-scroll">
          <canvas
            ref={canvasRef}
            className="timeline-canvas"
            data-testid="timeline-canvas"
            tabIndex={0}
            onMouseDown={onMouseDown}
            onMouseMove={onMouseMove}
            onMouseLeave={() => {
              setHover(null);
              mouseT.current = null;
            }}
            onKeyDown={onKeyDown}
          />
        </div>
        {hover ? (
          <div className="timeline-tooltip" data-testid="timeline-tooltip" style={{ left: hover.cx + 14, top: hover.cy + 14 }}>
            <div className="tt-name">{hover.hit.name}</div>
            <div>{formatTimeUs(hover.hit.dur)}</div>
            {hover.hit.count > 1 ? <div className="muted">{formatNumber(hover.hit.count)} events merged (click to zoom)</div> : null}
          </div>
        ) : null}
      </div>
      {stats && box ? (
        <div className="timeline-panel" data-testid="timeline-range">
          <div className="panel-head">
            <strong>Selected range: {formatTimeUs(stats.durationUs)}</strong>
            <span className="muted">
              {" "}
              {formatTimeUs(Math.min(box.t0, box.t1))} – {formatTimeUs(Math.max(box.t0, box.t1))} · {formatNumber(stats.count)} slices · {formatTimeUs(stats.totalUs)} total
            </span>
            <button type="button" onClick={() => setWin({ start: Math.min(box.t0, box.t1), end: Math.max(box.t0, box.t1) })}>
              Zoom to range
            </button>
            <button type="button" onClick={() => setBox(null)}>
              Clear
            </button>
          </div>
          <table className="data-table compact">
            <thead>
              <tr>
                <th>Name</th>
                <th className="num">Count</th>
                <th className="num">Time in range</th>
              </tr>
            </thead>
            <tbody>
              {stats.top.map((s) => (
                <tr key={s.name}>
                  <td className="name">{s.name}</td>
                  <td className="num">{formatNumber(s.count)}</td>
                  <td className="num">{formatTimeUs(s.totalUs)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {selected ? (
        <div className="timeline-panel" data-testid="timeline-details">
          {detailsError ? <Notice kind="warning">{detailsError}</Notice> : null}
          {details ? (
            <EventDetails ev={details} offset={offsets.get(selected.worker) ?? 0} onJump={(row, s, d) => jumpTo(selected.worker, row, s, d)} />
          ) : !detailsError ? (
            <span className="muted">Loading event…</span>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}

function argText(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

function EventDetails({ ev, onJump }: { ev: TimelineEvent; offset: number; onJump: (row: number, start: number, dur: number) => void }) {
  return (
    <div className="event-details">
      <div className="panel-head">
        <strong className="event-name" data-testid="event-name">
          {ev.name}
        </strong>
      </div>
      <table className="kv">
        <tbody>
          <tr>
            <th>Category</th>
            <td>{ev.category}</td>
          </tr>
          <tr>
            <th>Start</th>
            <td>{formatTimeUs(ev.start_us)}</td>
          </tr>
          <tr>
            <th>Duration</th>
            <td data-testid="event-duration">{formatTimeUs(ev.dur_us)}</td>
          </tr>
          {Object.entries(ev.args).map(([k, v]) => (
            <tr key={k}>
              <th>{k}</th>
              <td className="arg">{argText(v)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {ev.parents.length > 0 ? (
        <div className="event-links">
          <span className="muted">Parents: </span>
          {ev.parents.map((p, i) => (
            <span key={p.row}>
              {i > 0 ? " › " : ""}
              <button type="button" className="link-button" data-testid="event-parent" onClick={() => onJump(p.row, p.start_us, p.dur_us)}>
                {p.name}
              </button>
            </span>
          ))}
        </div>
      ) : null}
      {ev.flows.length > 0 ? (
        <div className="event-links">
          <span className="muted">Flows: </span>
          {ev.flows.map((f) => (
            <span key={`${f.type}-${f.row}`} className="flow-link">
              {f.type === "launch" ? "launched by " : "runs "}
              <button type="button" className="link-button" data-testid="event-flow" onClick={() => onJump(f.row, f.start_us, f.dur_us)}>
                {f.name}
              </button>{" "}
              <span className="muted">({formatTimeUs(f.dur_us)})</span>
            </span>
          ))}
        </div>
      ) : null}
    </div>
  );
}

/** How the ranks of "All ranks on one clock" are aligned (see docs/http_api.md timeline_meta). */
function clockLabel(clocks: (string | undefined)[]): string {
  const kinds = new Set(clocks.map((c) => c ?? "base_time"));
  if (kinds.size > 1) return "mixed clocks: raw timestamps";
  const [only] = kinds;
  if (only === "clock_sync") return "aligned on clock_sync_timestamp_us";
  if (only === "base_time") return "aligned on baseTimeNanoseconds";
  return "raw timestamps";
}
