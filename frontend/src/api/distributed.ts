// The `distributed?run=&span=` route (docs/http_api.md, "Distributed and insights"): the run's workers
// compared as ranks of one job at one span. Times are µs, sizes bytes, bandwidths GB/s.

export interface RankStep {
  step: string;
  computation_us: number;
  overlap_us: number;
  communication_us: number;
  other_us: number;
  total_us: number;
}

export interface CommOp {
  name: string;
  calls: number;
  total_bytes: number | null;
  mean_bytes: number | null;
  latency_us: number;
  transfer_us: number | null;
  sync_us: number | null;
}

export interface RankRow {
  rank: number;
  worker: string;
  /** Averages per step. */
  computation_us: number;
  overlap_us: number;
  communication_us: number;
  other_us: number;
  total_us: number;
  /** Sums over collectives. */
  transfer_us: number | null;
  sync_us: number | null;
  latency_us: number | null;
  steps: RankStep[];
  comm_ops: CommOp[];
}

export interface Collective {
  name: string;
  calls: number;
  bytes: number | null;
  transfer_us: number | null;
  sync_us: number | null;
  group_size: number | null;
  algbw_gbps: number | null;
  busbw_gbps: number | null;
  /** busbw ÷ algbw for this collective and communicator size (absent from older servers). */
  bus_factor?: number;
}

/** Per rank: how often it arrived last at a matched collective instance and how long the others waited. */
export interface Arrival {
  rank: number;
  instances: number;
  last: number;
  last_share: number;
  /** µs: the others' wait for this rank, summed over the instances it was last at, and per such instance. */
  wait_total_us: number;
  wait_mean_us: number;
  /** Binomial probability of being last this often by chance. */
  chance: number;
  straggler: boolean;
  by_type: { name: string; last: number; instances: number }[];
  /** The evidence in words. */
  text: string;
}

export interface Matching {
  method: string;
  by_type: { name: string; matched: number; unmatched: number }[];
  messages: string[];
}

export interface DistributedData {
  world_size: number | null;
  ranks_present: number;
  instances: { matched: number; total: number };
  stragglers: number[];
  /** Absent from older servers. */
  arrivals?: Arrival[];
  matching?: Matching;
  collectives: Collective[];
  ranks: RankRow[];
}

export interface DistributedResponse {
  state: "ready";
  run: string;
  span: string;
  /** Every span of the run. */
  spans: string[];
  /** The run's files at this span, and how many of them loaded (the ranks compared); absent from older servers. */
  files?: number;
  ranks_loaded?: number;
  /** Why `view` is null (the UI words it from the counts); null with a view. */
  reason?: string | null;
  messages: string[];
  view: DistributedData | null;
}

export function distributedUrl(run: string, span: string): string {
  const params = new URLSearchParams({ run, span });
  return `distributed?${params.toString()}`;
}
