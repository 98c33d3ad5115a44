import { useCallback, useEffect, useState } from "react";
import { ErrorBoundary } from "./components/ErrorBoundary";
import { FileProgress } from "./components/FileProgress";
import { Notice } from "./components/Notice";
import { Selectors } from "./components/Selectors";
import { useHashSelection } from "./hooks/useHashSelection";
import { useView, type ViewId } from "./hooks/useView";
import { useOverview } from "./hooks/useOverview";
import { useRuns } from "./hooks/useRuns";
import { useTheme } from "./hooks/useTheme";
import { findRun, findSpan } from "./state/selection";
import { SelectedFile } from "./views/SelectedFile";
import { SnapshotView } from "./views/snapshots/SnapshotView";
import { DistributedView } from "./views/distributed/DistributedView";
import { DiffView } from "./views/diff/DiffView";
import { HangView } from "./views/hang/HangView";
import type { TraceFocus } from "./views/trace/TraceView";
import type { Selection } from "./api/types";
import { focusFor, type PlacedFocus } from "./state/traceFocus";

/** The whole plugin page: selectors and progress on top, the selected file's view below. */
export function App() {
  const theme = useTheme();
  const { data, error } = useRuns();
  const { selection, select } = useHashSelection(data);
  const span = findSpan(data, selection);
  const overview = useOverview(selection, span?.state);
  const [view, setView] = useView();
  // "show in trace": the focus is kept with the selection it was made in (state/traceFocus.ts)
  const [placedFocus, setPlacedFocus] = useState<PlacedFocus<TraceFocus> | null>(null);
  const showInTrace = useCallback(
    (row: number) => {
      if (!selection) return;
      setPlacedFocus((prev) => ({ focus: { row, nonce: (prev?.focus.nonce ?? 0) + 1 }, at: selection }));
      setView("trace");
    },
    [setView, selection],
  );
  // the critical path's "show in trace": another worker of the run, so the focus is placed at it, and
  // the Trace view opens with the path overlaid
  const showRankInTrace = useCallback(
    (at: Selection, row: number) => {
      select(at);
      setPlacedFocus((prev) => ({ focus: { row, nonce: (prev?.focus.nonce ?? 0) + 1, path: true }, at }));
      setView("trace");
    },
    [select, setView],
  );
  const traceFocus = focusFor(placedFocus, selection);
  // a new selection forgets it: coming back later opens the whole trace, nothing selected
  useEffect(() => {
    if (placedFocus && !traceFocus) setPlacedFocus(null);
  }, [placedFocus, traceFocus]);
  const run = data && selection ? findRun(data.runs, selection.run) : undefined;
  const runWorkers = (run?.workers ?? [])
    .filter((w) => w.spans.some((s) => s.span === selection?.span && s.state === "ready"))
    .map((w) => w.worker);
  // The Module tab exists only when the trace has module information, Memory only when it has
  // [memory] events: the server says so per file in `runs` (has_modules / has_memory).
  const hasModules = span?.state === "ready" && span.has_modules === true;
  const hasMemory = span?.state === "ready" && span.has_memory === true;
  // Snapshots: when the run has memory artifacts; Hang: when it has flight-recorder dumps.
  const allArtifacts = run?.artifacts ?? [];
  const artifacts = allArtifacts.filter((a) => a.kind !== "flight_recorder");
  const hasDumps = allArtifacts.length > artifacts.length;
  // Distributed: the run's workers compared as ranks when it has two or more; a single rank's own
  // process groups and critical path when it has one.
  const hasWorkers = (run?.workers.length ?? 0) >= 1;
  const artifactsOnly = run !== undefined && run.workers.length === 0 && (artifacts.length > 0 || hasDumps);
  const showHang = hasDumps && (view === "hang" || (artifactsOnly && artifacts.length === 0));
  const showArtifacts = artifacts.length > 0 && !showHang && (artifactsOnly || view === "snapshots");
  const allTabs: { id: ViewId; label: string }[] = [
    { id: "overview", label: "Overview" },
    { id: "operator", label: "Operator" },
    { id: "kernel", label: "GPU Kernel" },
    ...(hasModules || view === "module" ? [{ id: "module" as ViewId, label: "Module" }] : []),
    { id: "trace", label: "Trace" },
    ...(hasMemory || view === "memory" ? [{ id: "memory" as ViewId, label: "Memory" }] : []),
    ...(artifacts.length > 0 ? [{ id: "snapshots" as ViewId, label: "Snapshots" }] : []),
    { id: "insights", label: "Insights" },
    ...(hasWorkers || view === "distributed" ? [{ id: "distributed" as ViewId, label: "Distributed" }] : []),
    { id: "diff", label: "Diff" },
    ...(hasDumps ? [{ id: "hang" as ViewId, label: "Hang" }] : []),
  ];
  const tabs = artifactsOnly ? allTabs.filter((t) => t.id === "snapshots" || t.id === "hang") : allTabs;

  return (
    <div className="app" data-theme={theme}>
      <header className="toolbar">
        <div className="brand">Kinetoscope</div>
        {data && selection ? <Selectors runs={data.runs} selection={selection} onSelect={select} /> : null}
        <nav className="view-tabs" role="tablist" aria-label="Views">
          {tabs.map((t) => (
            <button
              key={t.id}
              type="button"
              role="tab"
              className="view-tab"
              data-testid={["trace", "memory", "distributed", "insights", "diff", "hang"].includes(t.id) ? `${t.id}-tab` : `tab-${t.id}`}
              aria-selected={t.id === "hang" ? showHang : view === t.id || (showArtifacts && artifactsOnly && t.id === "snapshots")}
              onClick={() => setView(t.id)}
            >
              {t.label}
            </button>
          ))}
        </nav>
      </header>
      <main className="content">
        {error ? (
          <Notice kind="warning">
            {data ? "Lost contact with the server; showing the last known state. " : "Cannot load the run list. "}
            {error}
          </Notice>
        ) : null}
        {!data && !error ? <Notice>Loading the run list…</Notice> : null}
        {(data?.notices ?? []).map((text) => (
          <Notice key={text} kind="warning">
            <span data-testid="logdir-notice">{text}</span>
          </Notice>
        ))}
        {data && data.runs.length === 0 ? (
          <Notice>
            No PyTorch profiler traces found under {data.logdir}. Files named *.pt.trace.json(.gz) appear here as
            soon as they are written.
          </Notice>
        ) : null}
        {data && selection ? (
          <>
            <FileProgress loading={data.loading} run={findRun(data.runs, selection.run)} />
            {showHang && run ? (
              <ErrorBoundary key={`hang\u0000${run.name}`}>
                <HangView
                  run={run.name}
                  onOpenTrace={(worker, spanId) => {
                    select({ run: run.name, worker, span: spanId });
                    setView("overview");
                  }}
                />
              </ErrorBoundary>
            ) : view === "diff" && !artifactsOnly ? (
              <ErrorBoundary key="diff">
                <DiffView runs={data.runs} current={selection} theme={theme} />
              </ErrorBoundary>
            ) : view === "distributed" && run && !showArtifacts ? (
              <ErrorBoundary key={`distributed\u0000${run.name}`}>
                <DistributedView run={run.name} theme={theme} onShowInTrace={showRankInTrace} />
              </ErrorBoundary>
            ) : showArtifacts && run ? (
              <ErrorBoundary key={`artifacts\u0000${run.name}`}>
                <SnapshotView
                  run={run.name}
                  artifacts={artifacts}
                  theme={theme}
                  onOpenTrace={(worker, spanId) => {
                    select({ run: run.name, worker, span: spanId });
                    setView("overview");
                  }}
                />
              </ErrorBoundary>
            ) : span ? (
              <ErrorBoundary key={`${selection.run}\u0000${selection.worker}\u0000${selection.span}`}>
                <SelectedFile
                  selection={selection}
                  span={span}
                  overview={overview}
                  theme={theme}
                  view={view}
                  workers={runWorkers}
                  traceFocus={traceFocus}
                  onShowInTrace={showInTrace}
                />
              </ErrorBoundary>
            ) : null}
          </>
        ) : null}
      </main>
    </div>
  );
}
