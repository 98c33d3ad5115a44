// The `graphs` route (docs/http_api.md, "GET graphs"): CUDA graph replays and torch.compile regions.

/** `other_trace`: attributed from the capture in another trace of the run (`capture_file`). */
export type GraphStatus = "attributed" | "ambiguous" | "partial" | "no_capture" | "other_trace";

export interface GraphKernelRow {
  graph: number;
  name: string;
  op: string | null;
  frame: string | null;
  calls: number;
  total_us: number;
}

export interface GraphRow {
  graph: number;
  graph_id: number | null;
  replays: number;
  events_per_replay: number;
  kernel_us: number;
  busy_us: number;
  gap_us: number;
  launch_us: number;
  streams: number[];
  status: GraphStatus;
  method: string | null;
  capture: number | null;
  candidates: number[];
  /** With status `other_trace`: the run's trace whose capture attributed it. */
  capture_file?: string;
  note: string;
  kernels: GraphKernelRow[];
}

export interface GraphAdvice {
  rule: string;
  addressed_us: number;
  threshold_pct: number;
  text: string;
}

export interface CompiledRegionRow {
  name: string;
  calls: number;
  host_us: number;
  device_us: number;
  kernels: number;
  kernel_us: number;
  triton_kernels: number;
  triton_us: number;
}

export interface TritonKernelRow {
  name: string;
  kind: string | null;
  fused: string | null;
  region: string | null;
  calls: number;
  total_us: number;
  source_nodes: string[] | null;
  source_lines: string[] | null;
}

export interface CompileStepRow {
  step: string;
  step_us: number;
  regions: number;
  frames: number;
  versions: string[];
  recompilations: number;
  cache_lookup_us: number;
  between_us: number;
}

export interface GraphsReady {
  state: "ready";
  cuda_graphs: {
    replays: number;
    graphs: number;
    kernel_us: number;
    graph_kernel_us: number;
    graph_kernel_pct: number;
    graph_list: GraphRow[];
    accounting: { kernel_us: number; attributed_us: number; unattributed_us: number; from_graph_replay_us: number };
    advice: GraphAdvice[];
  };
  compiled: {
    regions: CompiledRegionRow[];
    triton_kernels: TritonKernelRow[];
    steps: CompileStepRow[];
    advice: GraphAdvice[];
  } | null;
}

/** `graph_replays?run=&worker=&span=`: each CUDA graph replay as a band per stream track it ran on (µs on the timeline's clock, as `timeline` items), in start order. */
export interface GraphReplayBands {
  state: "ready";
  /** Bands in the trace, and how many are listed (the first in time, past the server's cap). */
  total: number;
  shown: number;
  graphs: { graph: number; status: GraphStatus; replays: number }[];
  bands: {
    start_us: number[];
    end_us: number[];
    /** The timeline track (a stream) it is drawn on. */
    track: number[];
    replay: number[];
    graph: number[];
    /** The whole replay's kernels and busy µs (the union of its work over all its streams). */
    kernels: number[];
    busy_us: number[];
  };
}
