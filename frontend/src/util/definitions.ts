// Tooltip text for metric labels. Same meaning as the Definitions section of docs/http_api.md, in the
// UI's own words, with units.
export const DEFINITIONS = {
  stepTime:
    "Step time (µs): wall time from the start of a profiler step to its end. The end is extended " +
    "so that GPU work launched during the step, which may finish later, is counted in that step.",
  breakdown:
    "Breakdown (µs): every microsecond of a step is assigned to exactly one category, the first " +
    "one active at that moment in this order: Kernel, Memcpy, Memset, Communication, Runtime, " +
    "DataLoader, CPU Exec, Other. The categories of a step add up to its step time.",
  gpuUtilization:
    "GPU Utilization (%): the share of the steps window during which at least one kernel was " +
    "running on this GPU. Busy time ÷ window length × 100.",
  smEfficiency:
    "Est. SM Efficiency (%): estimated share of the GPU's streaming multiprocessors kept busy, " +
    "averaged over time across the steps window. At each moment it is the sum of blocks per SM of " +
    "the kernels running, capped at 1. Requires kernel launch dimensions in the trace; time when a " +
    "kernel without them runs is left out of the average.",
  achievedOccupancy:
    "Est. Achieved Occupancy (%): estimated ratio of active warps to the maximum warps an SM can " +
    "hold, averaged over kernels and weighted by each kernel's duration. Kernels whose occupancy " +
    "the profiler could not compute (it writes 0 for them, e.g. Hopper GEMM and attention kernels " +
    "with large shared memory) are left out of the average.",
  tensorCores:
    "Kernel time using Tensor Cores (%): time of kernels that use Tensor Cores ÷ total time of all " +
    "kernels launched by operators × 100.",
  matrixCores:
    "Kernel time using Matrix Cores (%): time of kernels that use AMD matrix cores (MFMA/WMMA) ÷ total " +
    "time of all kernels launched by operators × 100.",
} as const;

export type DefinitionKey = keyof typeof DEFINITIONS;
