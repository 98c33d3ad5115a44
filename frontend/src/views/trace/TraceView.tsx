// The Trace view: a canvas timeline of one file (or every worker of the run on one clock). The server
// does the level of detail: each pan/zoom re-requests the window (debounced, stale requests aborted)
// while the previous answer keeps being drawn at the new scale. The jobs live in hooks of their own:
// metas (useTimelineMetas), window data (useTimelineWindow), search, event details, range statistics
// (useRangeStats, exact, from the server), input (useTimelineInput), drawing (useTimelineCanvas).
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { timelineEventUrl, traceFileUrl } from "../../api/routes";
import type { Selection, TimelineEvent } from "../../api/types";
import { Notice } from "../../components/Notice";
import { useDebounced } from "../../hooks/useDebounced";
import { useRemote } from "../../hooks/useRemote";
import type { Theme } from "../../hooks/useTheme";
import { formatNumber } from "../../util/format";
import type { FlowArrow } from "./draw";
import { EventDetails } from "./EventDetails";
import { buildLayout, clampWindow, focusWindow, formatTimeUs, hitTest, LABEL_W, rectOfRow, type Geometry, type TimeWindow } from "./math";
import { RangePanel } from "./RangePanel";
import { useTimelineTestHooks } from "./testHooks";
import { clockLabel, TraceToolbar } from "./TraceToolbar";
import { stepShown } from "./traceControls";
import { useTimelineCanvas, useWrapperWidth } from "./useTimelineCanvas";
import { useTimelineInput, type Selected } from "./useTimelineInput";
import { useTimelineMetas, workerSel } from "./useTimelineMetas";
import { useTimelineSearch } from "./useTimelineSearch";
import { useTimelineWindow } from "./useTimelineWindow";
import { useRangeStats, type Box } from "./useRangeStats";
import { pathRects } from "./pathOverlay";
import { PathSummary } from "./PathSummary";
import { usePathOverlay } from "./usePathOverlay";
import { replayAt, replayRects, replayText, type ReplayRect } from "./replayBands";
import { useReplayBands } from "./useReplayBands";

export interface TraceFocus {
  row: number;
  /** Changes on every request, so asking for the same row twice still jumps. */
  nonce: number;
  /** Turn the critical-path overlay on (a segment of the path was asked for). */
  path?: boolean;
}

interface TraceViewProps {
  selection: Selection;
  /** Every worker of the run that has this span ready (for "all ranks on one clock"). */
  workers?: string[];
  focus?: TraceFocus | null;
  theme?: Theme;
}

export function TraceView({ selection, workers, focus, theme }: TraceViewProps) {
  const openedAt = useRef(performance.now());
  const [allRanks, setAllRanks] = useState(false);
  const activeWorkers = useMemo(
    () => (allRanks && workers && workers.length > 1 ? workers : [selection.worker]),
    [allRanks, workers, selection.worker],
  );
  const { metas, ready, error: metaError, offsets, bounds } = useTimelineMetas(selection, activeWorkers);
  const [showPath, setShowPath] = useState(focus?.path === true);
  const path = usePathOverlay(selection, activeWorkers, showPath);
  const [showReplays, setShowReplays] = useState(false);
  const replays = useReplayBands(selection, activeWorkers, showReplays);
  /** The replay band under the mouse (hover) and the one clicked (pinned below the toolbar). */
  const [replayHover, setReplayHover] = useState<{ cx: number; cy: number; band: ReplayRect } | null>(null);
  const [replayPinned, setReplayPinned] = useState<ReplayRect | null>(null);
  const [win, setWinState] = useState<TimeWindow | null>(null);
  const setWin = useCallback((w: TimeWindow) => setWinState(bounds ? clampWindow(w, bounds) : w), [bounds]);
  useEffect(() => {
    if (bounds && win === null) setWinState({ start: bounds.start, end: bounds.end });
  }, [bounds, win]);
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const [selected, setSelected] = useState<Selected | null>(null);
  const [box, setBox] = useState<Box | null>(null);
  const [selectMode, setSelectMode] = useState(false);
  const [searchText, setSearchText] = useState("");
  const [regex, setRegex] = useState(false);
  const search = useTimelineSearch(selection, activeWorkers, offsets, useDebounced(searchText, 300), regex, ready);

  const wrapRef = useRef<HTMLDivElement>(null);
  const axisRef = useRef<HTMLCanvasElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const width = useWrapperWidth(wrapRef);
  const plotW = Math.max(50, width - LABEL_W - 8);
  const view = useTimelineWindow(selection, activeWorkers, offsets, win, plotW, ready && width > 0);
  const data = view.data;

  // ---- layout: counter rows appear once a worker's first window answered with them
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
  const geometry: Geometry | null = win ? { win, x0: LABEL_W, width: plotW, y0: 0, offsets } : null;

  // ---- the selected event's details; a jump to a row whose times are unknown waits for them
  const eventState = useRemote<TimelineEvent>(selected ? timelineEventUrl(workerSel(selection, selected.worker), selected.row) : null);
  const details = eventState.kind === "ready" ? eventState.data : null;
  const detailsError = eventState.kind === "fetch-error" || eventState.kind === "file-error" ? eventState.error : null;
  const pendingJump = useRef<Selected | null>(null);
  const p = pendingJump.current;
  if (details && p && selected && p.row === details.row && p.row === selected.row && p.worker === selected.worker) {
    // zoom in the render that shows the details (state set while rendering: React renders again first)
    pendingJump.current = null;
    setWin(focusWindow(details.start_us + (offsets.get(p.worker) ?? 0), details.dur_us));
  }

  /** Zooms to an event (3× its duration) and selects it; waits for its details when the times are not given. */
  const jumpTo = useCallback(
    (worker: string, row: number, start?: number, dur?: number) => {
      setSelected({ worker, row });
      if (start !== undefined && dur !== undefined) {
        pendingJump.current = null;
        setWin(focusWindow(start + (offsets.get(worker) ?? 0), dur));
      } else pendingJump.current = { worker, row };
    },
    [offsets, setWin],
  );
  // "show in trace" from the tables
  useEffect(() => {
    if (focus?.path) setShowPath(true);
    if (focus && ready && bounds) jumpTo(selection.worker, focus.row);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [focus?.nonce, ready, bounds !== null]);

  const matchList = useMemo(() => search.matches?.list ?? [], [search.matches]);
  const matchSet = useMemo(() => new Set(matchList.map((m) => `${m.worker}:${m.row}`)), [matchList]);
  const matchTimes = useMemo(() => matchList.map((m) => m.start + (offsets.get(m.worker) ?? 0)), [matchList, offsets]);
  const gotoMatch = (i: number) => {
    if (matchList.length === 0) return;
    const k = ((i % matchList.length) + matchList.length) % matchList.length;
    search.setIndex(k);
    const m = matchList[k]!;
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

  const bands = geometry ? path.segments.flatMap((p) => pathRects(layout, geometry, p)) : [];
  const replayBands = geometry && showReplays ? replays.sets.flatMap((r) => replayRects(layout, geometry, r)) : [];
  const replaySet = (band: ReplayRect) => replays.sets.find((r) => r.worker === band.worker);
  const replayLines = (band: ReplayRect) => {
    const set = replaySet(band);
    return set ? replayText(set, band.i) : [];
  };
  const drawState = geometry
    ? { layout, data, metas, g: geometry, width, selected, matches: matchSet, matchTimes, flows, box: box ? { t0: box.t0, t1: box.t1 } : null, path: bands, replays: replayBands }
    : null;
  const firstPaint = useTimelineCanvas({ axis: axisRef, canvas: canvasRef }, drawState, openedAt.current);
  const stats = useRangeStats(selection, activeWorkers, offsets, layout, box);
  const { hover, handlers } = useTimelineInput(
    { canvas: canvasRef, axis: axisRef, wrap: wrapRef },
    { geometry, layout, data, bounds, selectMode, setWin, setWinRaw: setWinState },
    {
      setBox,
      setSelected,
      toggleGroup: (key) =>
        setCollapsed((prev) => {
          const next = new Set(prev);
          if (next.has(key)) next.delete(key);
          else next.add(key);
          return next;
        }),
    },
    ready,
  );

  // ---- e2e and perf hooks (only under the test flag)
  const live = useRef({ win, layout, data, geometry, settled: view.settled, setWin, primary: selection.worker, offsets, requests: view.requests, bands, replayBands });
  live.current = { win, layout, data, geometry, settled: view.settled, setWin, primary: selection.worker, offsets, requests: view.requests, bands, replayBands };
  useTimelineTestHooks(() => ({
    openedAt: openedAt.current,
    get firstPaintMs() {
      return firstPaint.current;
    },
    get requests() {
      return live.current.requests;
    },
    getWindow: () => live.current.win,
    setWindow: (s, e) => live.current.setWin({ start: s, end: e }),
    itemAt: (x, y) => (live.current.geometry ? hitTest(live.current.layout, live.current.data, live.current.geometry, x, y) : null),
    rectOf: (row, worker) => {
      const l = live.current;
      return l.geometry ? rectOfRow(l.layout, l.data, l.geometry, worker ?? l.primary, row) : null;
    },
    settled: () => live.current.settled,
    counterRows: () => live.current.layout.rows.flatMap((r) => (r.kind === "counter" ? [{ worker: r.worker, name: r.name, unit: r.unit }] : [])),
    offsets: () => Object.fromEntries(live.current.offsets),
    pathRects: () => live.current.bands,
    replayRects: () => live.current.replayBands,
  }));

  /** The replay band under a mouse event on the canvas (CSS px from its corner), or null. */
  function replayAtEvent(e: React.MouseEvent<HTMLCanvasElement>): ReplayRect | null {
    if (replayBands.length === 0 || !canvasRef.current) return null;
    const r = canvasRef.current.getBoundingClientRect();
    return replayAt(replayBands, e.clientX - r.left, e.clientY - r.top);
  }

  if (metaError) return <Notice kind="warning">Cannot load the timeline: {metaError}</Notice>;
  const steps = metas.get(selection.worker)?.steps ?? [];
  const fileUrl = traceFileUrl(selection);
  const primaryOffset = offsets.get(selection.worker) ?? 0;

  return (
    <div className="trace-view" data-testid="trace-view" data-theme-name={theme}>
      <TraceToolbar
        selection={selection}
        fileUrl={fileUrl}
        searchText={searchText}
        onSearchText={setSearchText}
        regex={regex}
        onRegex={setRegex}
        matchIdx={search.index}
        shown={matchList.length}
        total={search.matches ? search.matches.total : null}
        searchError={search.error}
        onMatch={gotoMatch}
        steps={steps}
        shownStep={stepShown(steps, primaryOffset, win)}
        onStep={(i) => {
          const st = steps[i];
          if (st) setWin({ start: st.start_us + primaryOffset, end: st.end_us + primaryOffset });
        }}
        onReset={() => bounds && setWin({ start: bounds.start, end: bounds.end })}
        selectMode={selectMode}
        onSelectMode={setSelectMode}
        allRanks={workers && workers.length > 1 ? { on: allRanks, clock: allRanks && ready ? clockLabel(activeWorkers.map((w) => metas.get(w)?.clock)) : null } : null}
        criticalPath={showPath}
        onCriticalPath={setShowPath}
        graphReplays={showReplays}
        onGraphReplays={(on) => {
          setShowReplays(on);
          setReplayHover(null);
          setReplayPinned(null);
        }}
        onAllRanks={(on) => {
          setAllRanks(on);
          setWinState(null);
          setSelected(null);
          setBox(null);
        }}
      />
      <div className="trace-hint muted">
        Wheel: zoom · drag: pan · shift-drag: select range · W/S zoom, A/D pan (click the timeline first) · click a slice for details
      </div>
      {showPath ? <PathSummary doc={path.doc} error={path.error} loading={path.loading} ranksDrawn={activeWorkers.length > 1 ? path.workersDrawn : undefined} /> : null}
      {showReplays ? (
        <div className="trace-hint" data-testid="graph-replays-summary">
          {replays.error ? (
            <Notice kind="warning">Cannot load the graph replays: {replays.error}</Notice>
          ) : replays.total === null ? (
            <span className="muted">Loading graph replays…</span>
          ) : replays.total === 0 ? (
            <span className="muted">No CUDA graph replays in this trace.</span>
          ) : (
            <span>
              {formatNumber(replays.total)} replay bands
              {replays.shown !== null && replays.shown < replays.total ? ` (the first ${formatNumber(replays.shown)} in time drawn)` : ""}
              {replayPinned ? <> · <b data-testid="graph-replay-pinned">{replayLines(replayPinned).join(" · ")}</b></> : " · click a band for its replay"}
            </span>
          )}
        </div>
      ) : null}
      {view.error ? <Notice kind="warning">Timeline request failed: {view.error}</Notice> : null}
      {!ready ? <Notice>Loading the timeline…</Notice> : null}
      <div className="timeline" ref={wrapRef}>
        <canvas ref={axisRef} className="timeline-axis" data-testid="timeline-axis" />
        <div className="timeline-scroll">
          <canvas
            ref={canvasRef}
            className="timeline-canvas"
            data-testid="timeline-canvas"
            tabIndex={0}
            {...handlers}
            onMouseMove={(e) => {
              handlers.onMouseMove(e);
              const band = replayAtEvent(e);
              setReplayHover(band ? { cx: e.clientX, cy: e.clientY, band } : null);
            }}
            onMouseDown={(e) => {
              handlers.onMouseDown(e);
              const band = replayAtEvent(e);
              if (band) setReplayPinned(band);
            }}
            onMouseLeave={() => {
              handlers.onMouseLeave();
              setReplayHover(null);
            }}
          />
        </div>
        {hover || replayHover ? (
          <div
            className="timeline-tooltip"
            data-testid="timeline-tooltip"
            style={{ left: (hover ?? replayHover)!.cx + 14, top: (hover ?? replayHover)!.cy + 14 }}
          >
            {hover ? (
              <>
                <div className="tt-name">{hover.hit.name}</div>
                <div>{formatTimeUs(hover.hit.dur)}</div>
                {hover.hit.count > 1 ? <div className="muted">{formatNumber(hover.hit.count)} events merged (click to zoom)</div> : null}
              </>
            ) : null}
            {replayHover
              ? replayLines(replayHover.band).map((line, k) => (
                  <div key={k} className={k === 0 ? "tt-name" : "muted"} data-testid="graph-replay-tooltip">
                    {line}
                  </div>
                ))
              : null}
          </div>
        ) : null}
      </div>
      {stats && box ? (
        <RangePanel
          box={box}
          stats={stats}
          onZoom={() => setWin({ start: Math.min(box.t0, box.t1), end: Math.max(box.t0, box.t1) })}
          onClear={() => setBox(null)}
        />
      ) : null}
      {selected ? (
        <div className="timeline-panel" data-testid="timeline-details">
          {detailsError ? <Notice kind="warning">{detailsError}</Notice> : null}
          {details ? (
            <EventDetails ev={details} onJump={(row, s, d) => jumpTo(selected.worker, row, s, d)} />
          ) : !detailsError ? (
            <span className="muted">Loading event…</span>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}
