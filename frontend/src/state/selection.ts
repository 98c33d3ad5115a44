// Turns what the hash asks for into a selection that exists, falling back level by level to the first
// run with traces (runs of memory files only come last), worker and span.
import type { RunInfo, RunsResponse, Selection, SpanInfo, WorkerInfo } from "../api/types";
import type { PartialSelection } from "./hashState";

/** The run to open when none is asked for: the first with trace files, else the first (memory files only). */
export function defaultRun(runs: RunInfo[]): RunInfo | undefined {
  return runs.find((r) => r.workers.length > 0) ?? runs[0];
}

export function resolveSelection(runs: RunInfo[], wanted: PartialSelection): Selection | null {
  const run = runs.find((r) => r.name === wanted.run) ?? defaultRun(runs);
  if (!run) return null;
  const worker = run.workers.find((w) => w.worker === wanted.worker) ?? run.workers[0];
  // A run with memory artifacts but no trace files is selected by run alone.
  if (!worker) return run.artifacts?.length ? { run: run.name, worker: "", span: "" } : null;
  const span = worker.spans.find((s) => s.span === wanted.span) ?? worker.spans[0];
  if (!span) return null;
  return { run: run.name, worker: worker.worker, span: span.span };
}

export function findRun(runs: RunInfo[], name: string): RunInfo | undefined {
  return runs.find((r) => r.name === name);
}

export function findWorker(run: RunInfo | undefined, worker: string): WorkerInfo | undefined {
  return run?.workers.find((w) => w.worker === worker);
}

export function findSpan(data: RunsResponse | null, sel: Selection | null): SpanInfo | undefined {
  if (!data || !sel) return undefined;
  return findWorker(findRun(data.runs, sel.run), sel.worker)?.spans.find((s) => s.span === sel.span);
}

/** True while any file in the registry still has to be parsed. */
export function isAnythingLoading(data: RunsResponse): boolean {
  if (data.loading.files_done < data.loading.files_total) return true;
  return data.runs.some((r) =>
    r.workers.some((w) => w.spans.some((s) => s.state === "queued" || s.state === "loading")),
  );
}

export function sameSelection(a: Selection | null, b: Selection | null): boolean {
  if (a === null || b === null) return a === b;
  return a.run === b.run && a.worker === b.worker && a.span === b.span;
}
