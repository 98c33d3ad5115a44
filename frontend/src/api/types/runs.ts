// Types of `runs` (docs/http_api.md, "GET runs"): the registry of runs, workers, spans and artifacts.

export type SpanState = "queued" | "loading" | "ready" | "error";

export interface SpanInfo {
  /** 1-based position among the worker's files, as a string. */
  span: string;
  /** Path relative to the logdir. */
  path: string;
  size_bytes: number;
  state: SpanState;
  /** 0..1; meaningful while state is "loading". */
  progress: number;
  error: string | null;
  warnings: string[];
  /** About this file, nothing to act on; absent from an older server. */
  notes?: string[];
  /** ADDED: [memory] events on some device / a module hierarchy; null until loaded, absent from older servers. */
  has_memory?: boolean | null;
  has_modules?: boolean | null;
  /** ADDED: while queued, how many files load before it (0: next); absent from older servers. */
  queued_before?: number | null;
}

export interface WorkerInfo {
  worker: string;
  spans: SpanInfo[];
}

export type ArtifactKind = "snapshot" | "memory_timeline" | "memprofiler_stats" | "memprofiler_log" | "memory_html" | "flight_recorder";

export interface ArtifactInfo {
  /** Path relative to the logdir; the `path` parameter of the snapshot routes. */
  path: string;
  kind: ArtifactKind;
  size_bytes: number;
  state: "queued" | "loading" | "ready" | "error" | string;
  error: string | null;
  /** ADDED: the trace a `*.pt.trace.memory.*` export was written beside; absent on older servers. */
  trace?: { worker: string; span: string } | null;
  /** ADDED: rank (Composer exports, snapshots with rank<N> in their path) and Composer batch. */
  rank?: number | null;
  batch?: number | null;
  /** ADDED: a snapshot whose file name says it was dumped on an OOM. */
  taken_on_oom?: boolean;
}

export interface RunInfo {
  /** Path relative to the logdir with "/" separators; "." is the logdir itself. */
  name: string;
  workers: WorkerInfo[];
  /** Allocator snapshots and memory-timeline exports of the run; absent on old servers. */
  artifacts?: ArtifactInfo[];
}

export interface RunsResponse {
  logdir: string;
  /** files_queued ADDED: files waiting to load; absent from older servers. */
  loading: { files_total: number; files_done: number; files_queued?: number };
  runs: RunInfo[];
  /** Logdir-level notes, e.g. symlinks the listing did not follow; absent on old servers. */
  notices?: string[];
}

/** Which file the UI shows. */
export interface Selection {
  run: string;
  worker: string;
  span: string;
}
