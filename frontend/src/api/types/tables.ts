// Types of the tables (docs/http_api.md, "Tables"): operators, operator_stacks, kernels, modules.
import type { OverviewError, OverviewLoading } from "./overview";

/** Loading / failed answers share the overview's shape. */
export type TableNotReady = OverviewLoading | OverviewError;

export type OperatorGroupBy = "operator" | "input_shape" | "call_stack";

export type KernelGroupBy = "kernel" | "kernel_op_config";

export type SortOrder = "asc" | "desc";

export interface TopItem {
  name: string;
  value: number;
}

export interface OperatorRow {
  key: string;
  name: string;
  input_shape: string | null;
  call_stack: string | null;
  calls: number;
  host_self_us: number;
  host_total_us: number;
  device_self_us: number;
  device_total_us: number;
  /** The part of device_self_us replayed from a CUDA graph this operator captured; absent from older servers. */
  graph_replay_self_us?: number;
  tc_eligible: boolean;
  tc_self_pct: number | null;
  tc_total_pct: number | null;
  flops: number | null;
  tflops_per_s: number | null;
  /** Event row of the longest call ("show in trace"); absent from older servers. */
  longest_row?: number;
}

export type OperatorTimeKey = "device_self_us" | "device_total_us" | "host_self_us" | "host_total_us";

export interface OperatorsReady {
  state: "ready";
  group_by: OperatorGroupBy;
  has_device: boolean;
  default_sort: string;
  sort?: string;
  order?: SortOrder;
  offset?: number;
  total_rows: number;
  rows: OperatorRow[];
  top: Record<OperatorTimeKey, TopItem[]>;
}

export interface StackFrame {
  text: string;
  file: string | null;
  line: number | null;
  function: string | null;
}

export interface OperatorStack {
  calls: number;
  host_self_us: number;
  host_total_us: number;
  device_self_us: number;
  device_total_us: number;
  frames: StackFrame[];
  /** Index in `frames` where this stack parts from stacks ending in the same innermost frame. */
  differs_at?: number | null;
}

export interface OperatorStacksReady {
  state?: "ready";
  stacks: OperatorStack[];
}

export interface KernelRow {
  key: string;
  name: string;
  op: string | null;
  grid: string | null;
  block: string | null;
  registers_per_thread: number | null;
  shared_memory_bytes: number | null;
  tc_eligible: boolean | null;
  calls: number;
  total_us: number;
  mean_us: number;
  min_us: number;
  max_us: number;
  blocks_per_sm: number | null;
  achieved_occupancy_pct: number | null;
  tensor_cores: boolean;
  longest_row?: number;
}

export interface KernelsReady {
  state: "ready";
  group_by: KernelGroupBy;
  sort?: string;
  order?: SortOrder;
  offset?: number;
  total_rows: number;
  rows: KernelRow[];
  top: TopItem[];
  tensor_core: { tensor_core_us: number; other_us: number };
}

export interface ModuleNode {
  name: string;
  occurrences: number;
  operators: number;
  host_total_us: number;
  host_self_us: number;
  device_total_us: number;
  device_self_us: number;
  /** The part of device_self_us replayed from CUDA graphs its operators captured; absent from older servers. */
  graph_replay_self_us?: number;
  children: ModuleNode[];
}

export interface ModulesReady {
  state: "ready";
  modules: ModuleNode[] | null;
}
