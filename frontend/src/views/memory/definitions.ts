// Header definitions of the memory tables.
export const MEM_STAT_DEFS: Record<string, string> = {
  calls: "Number of calls of the operator in the range.",
  size_increase_bytes:
    "Allocated minus freed bytes during the operator, including its children (a free counts for the operator running when it happens).",
  self_size_increase_bytes:
    "Allocated minus freed bytes of the operator's own memory events (children excluded).",
  allocations: "Number of allocations during the operator, including its children.",
  self_allocations: "Number of allocations of the operator itself (children excluded).",
  allocation_bytes: "Total bytes allocated during the operator, including its children.",
  self_allocation_bytes: "Total bytes allocated by the operator itself (children excluded).",
  self_not_freed_bytes:
    "Bytes the operator itself allocated that no free in the trace releases (needs Addr in the trace; a dash without it).",
};

/** The server's default sort of the memory statistics (largest allocation size first). */
export const DEFAULT_MEMORY_STAT_SORT = "allocation_bytes";

export const MEM_EVENT_DEFS: Record<string, string> = {
  op: "The operator that made the allocation.",
  size_bytes: "Bytes allocated.",
  alloc_us: "When the block was allocated (time since the trace's first event).",
  free_us: "When it was freed; a dash when it outlived the trace.",
  duration_us: "Lifetime: free time minus allocation time.",
  addr: "The block's device address.",
};

export const RECONSTRUCTED_NOTICE =
  "this trace has no Total Allocated; the curve is the running sum of allocation sizes";
