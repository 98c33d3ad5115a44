// Column definitions shown as header tooltips; they restate docs/http_api.md and the docstring of
// tb_plugin/analysis/operators.py.
export const OP_DEFS = {
  calls: "Number of calls (events) in the group.",
  host_self_us:
    "Host self time: the operator's duration minus its direct child operators minus its own runtime/driver calls (kernel launches, memcpy calls).",
  host_total_us: "Host total time: the operator's duration on the CPU, children included.",
  device_self_us:
    "Device self time: GPU time (kernels, memcpy, memset) of the work its own launches started.",
  device_total_us: "Device total time: device self time plus the device total time of its child operators.",
  graph_replay_self_us:
    "From graph replay: the part of device self time replayed from a CUDA graph whose capture this operator made (matched in the same trace).",
  tc_eligible: "Whether the operator can use tensor cores (a tensor-core-capable op or its backward node).",
  tc_self_pct: "Share of the operator's self kernel time spent in tensor-core kernels.",
  tc_total_pct: "Share of the operator's total kernel time (children included) spent in tensor-core kernels.",
  flops: "Floating-point operations, the sum of the flops argument (recorded with with_flops=True).",
  tflops_per_s: "FLOPs divided by device total time, in TFLOP/s.",
} as const;

export const KERNEL_DEFS = {
  op: "The operator that launched the kernel.",
  grid: "Grid dimensions of the launch.",
  block: "Block dimensions of the launch.",
  registers_per_thread: "Registers per thread.",
  shared_memory_bytes: "Shared memory per block, bytes.",
  tc_eligible: "Whether the launching operator can use tensor cores.",
  calls: "Number of launches.",
  total_us: "Total GPU time of all launches.",
  mean_us: "Mean duration of one launch.",
  min_us: "Shortest launch.",
  max_us: "Longest launch.",
  blocks_per_sm: "Blocks per SM, weighted by duration: grid blocks divided by the number of SMs.",
  achieved_occupancy_pct: "Estimated achieved occupancy, weighted by duration.",
  tensor_cores: "Whether the kernel runs on tensor cores.",
} as const;

export const MODULE_DEFS = {
  occurrences: "Number of calls with the same path from the root module.",
  operators: "Operator calls whose innermost module is this one.",
  host_total_us: "Host total time: the sum of the durations of its calls.",
  host_self_us: "Host self time: host total minus its children's host totals.",
  device_total_us: "Device total time: device self plus its children's device totals.",
  device_self_us:
    "Device self time: device self time of the operators whose innermost module is this one, plus the backward operators linked to them.",
  graph_replay_self_us:
    "From graph replay: the part of device self time replayed from CUDA graphs whose capture this module's operators made.",
} as const;
