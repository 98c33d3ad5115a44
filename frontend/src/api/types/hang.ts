// Types of `hang` and `hang_entries` (docs/http_api.md, "GET hang"): why a job hung, from the
// flight-recorder dumps of a run.

export type HangKind = "missing_ranks" | "mismatch" | "not_started" | "not_completed" | "no_dump";

export interface HangOp {
  collective_seq_id: number;
  op: string | null;
}

export interface HangRankRow {
  rank: number;
  dump: "read" | "none" | "unreadable";
  last_enqueued?: HangOp | null;
  last_started?: HangOp | null;
  last_completed?: HangOp | null;
}

export interface HangGroup {
  pg_name: string | null;
  /** The group's id as the dumps give it: one number, or per rank when they differ. */
  pg_id: number | number[] | Record<string, number | number[]>;
  pg_desc: string;
  ranks: number[];
  ranks_from: "pg_config" | "dumps";
  per_rank: HangRankRow[];
  stuck: {
    collective_seq_id: number;
    op: string | null;
    ranks_present: number[];
    missing_ranks: number[];
    unknown_ranks: number[];
    ranks_without_dump: number[];
  } | null;
}

export interface HangFinding {
  kind: HangKind;
  pg_name: string | null;
  pg_desc: string | null;
  op: string | null;
  collective_seq_id: number | null;
  sizes: string | null;
  dtype: string | null;
  ranks_present: number[];
  missing_ranks: number[];
  detail: string;
  sentence: string;
  root_cause: boolean;
  explained_by: number | null;
  since_s?: number | null;
  field?: string;
  trace_ranks: number[];
  /** Ranks whose trace is loaded (rank → where the finding's instance stands in that trace). */
  in_traces?: Record<string, HangTraceLink>;
  /** One sentence: what the linked traces say of the finding (suspects first); "" when nothing to say. */
  trace_note?: string;
}

/** A rank's profiler trace seen from a finding: the group's last Seq there (−1: the trace records no Seq
 * of the group), whether the stuck instance is in it, the trace's kernel of that instance, its last step. */
export interface HangTraceLink {
  last_seq: number;
  has_instance: boolean;
  /** The trace's collective of the group and Seq (µs on the trace's clock), or null when absent. */
  instance?: { collective: string; ts_us: number; dur_us: number } | null;
  last_step: HangLastStep | null;
}

/** The trace's last recorded step: its window (µs), its longest outermost host ops, its last collectives. */
export interface HangLastStep {
  name: string;
  start_us?: number;
  end_us?: number;
  top_ops?: { name: string; dur_us: number }[];
  collectives: { collective: string; group: string | null; seq: number }[];
}

export interface HangRank {
  rank: number;
  path: string;
  rank_from: "field" | "name" | null;
  version: string | null;
  entries: number;
  states_tracked: boolean;
  timing: boolean;
  wrapped: boolean;
}

export interface HangResponse {
  state: "ready";
  run: string;
  dumps: number;
  verdict: string[];
  ranks: HangRank[];
  groups: HangGroup[];
  findings: HangFinding[];
  unreadable: { path: string; rank: number | null; error: string }[];
  traces: Record<string, { path: string; worker: string; span: string }>;
  /** The ranks' traces beside a folder's dumps that could not be read for linking (`kinetoscope hang --json`; absent when none). */
  trace_errors?: { rank: number; path: string; error: string }[];
}

export interface HangEntry {
  record_id: number | null;
  pg_id: number | null;
  pg_name: string | null;
  pg_desc: string | null;
  collective_seq_id: number | null;
  p2p_seq_id: number | null;
  op: string | null;
  state: string | null;
  sizes: string;
  dtypes: string;
  created_ns: number | null;
  started_ns: number | null;
  completed_ns: number | null;
  frames: string[];
}

export interface HangEntriesResponse {
  state: "ready";
  run: string;
  rank: number;
  path: string;
  entries_total: number;
  entries: HangEntry[];
}
