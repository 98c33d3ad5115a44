// Tooltip text for the Distributed and Insights views, from docs/http_api.md ("Distributed and
// insights") and the docstring of tb_plugin/analysis/insights.py.
export const DIST_DEFS = {
  computation:
    "Computation (µs per step): time when only computation kernels run on this rank's GPU, with no communication at the same time.",
  overlap: "Overlap (µs per step): time when computation and communication kernels run at the same time.",
  communication:
    "Communication (µs per step): time when only communication kernels run (communication not hidden behind computation).",
  other: "Other (µs per step): the rest of the step: neither computation nor communication on the GPU.",
  transfer:
    "Transfer (µs): the minimum duration of a collective instance across ranks, i.e. the time the data movement itself takes. Summed over collectives.",
  sync: "Sync (µs): a rank's duration of a collective minus its transfer time: the time spent waiting for the other ranks.",
  latency: "Latency (µs): a rank's total time in collectives, transfer + sync.",
  algbw: "Algorithm bandwidth (GB/s) = bytes ÷ transfer time.",
  busbw:
    "Bus bandwidth (GB/s) = algbw × 2(n−1)/n for all-reduce, × (n−1)/n for all-gather, reduce-scatter and all-to-all, × 1 otherwise. n is the communicator's size (Group size, Process Group Ranks, else the job's world size), not the number of ranks loaded.",
  straggler:
    "Straggler: the rank the others wait for. At each matched collective the rank with the shortest kernel arrived last (the kernels end together; no clock alignment needed). A straggler is last at ≥ 50 % of ≥ 3 instances, far more often than chance (p < 1 %), and the others wait for it ≥ 5 % of a typical instance and ≥ 5 µs.",
  lastAt: "Last at: the matched collective instances at which this rank arrived last (its kernel was the shortest) / the instances it took part in.",
  waited: "Others waited: the mean time the other ranks waited for this rank at the instances it was last at (µs).",
  instances:
    "Collective instances matched across ranks / all instances seen. Kernels match by sequence number (Seq) where the trace has it, else in order after aligning the ranks' windows; a pair whose dtype or size differs is never a match.",
  groupTime:
    "Time (µs): the group's collective kernel time on a rank (transfer + waiting), the mean over its loaded ranks; the per-rank rows give each.",
  groupExposed:
    "Exposed (µs): the group's collective kernel time on a rank not overlapped by computation kernels (another group's communication hides nothing), the mean over its loaded ranks.",
  groupRole:
    "Role, read from the group's description words: shard → FSDP shard, replicate → FSDP replicate, fsdp/hsdp → FSDP, tp → TP, pp → PP, ep/expert/moe → EP, cp → CP, ddp/dp → DDP, default → world. Empty when the description says none.",
  groupBandwidth:
    "Bandwidth (GB/s) = the group's bytes ÷ its kernel time. Kernel time includes waiting for the other ranks, so this is a lower bound of the algorithm bandwidth.",
  criticalPath:
    "Critical path: the chain of dependent work from the step's start to its end across the ranks (kernels after their launch and the previous kernel of their stream, host work in order on the thread that launches or waits for the device work, blocking calls after the work they wait for, the autograd thread's work inside backward(), a collective after the last rank arrives), found backward from the step's end. Its length is the step's span over the loaded ranks.",
  pathCategory:
    "Kernel: device work; Launch / CPU: leaf host work (the innermost operator or runtime call; annotations are context, never a segment; time inside an annotation with nothing traced is 'untraced host work'); Communication: a collective kernel after the last rank arrived; Waiting: a host blocked in a sync or idle, a thread blocked on the autograd thread, device work waiting for its launch.",
  pathItems: "Work on the path grouped by name: its total time on the path and the number of its segments.",
  pathAt: "At: from the step's start on the common clock (the path's start).",
  pathLate: "Late rank: for a collective, the rank whose kernel started last; the path continues on that rank.",
} as const;

export const INSIGHT_DEFS = {
  idle:
    "GPU idle time, per GPU over the steps window: the window minus the union of busy time (kernels, memcpy, memset) over all the GPU's streams. Each idle gap is split by the work that ended it. Host wait + short gaps + other = idle ≤ window.",
  hostWait:
    "Host wait: the launch call of the work that ended the gap returned late, at or after the gap's midpoint — the GPU had nothing queued and waited for the launch. Work launched early in the gap waited for something else. Work on streams that carry only communication or only copies never counts as host wait.",
  shortGap: "Short gap: not a host wait, and shorter than the short-gap threshold (10 µs).",
  otherGap: "Other: idle gaps that are neither host waits nor short gaps (e.g. queued work waiting on a dependency, communication, the end of the trace).",
  perStream:
    "Per stream: the same split over one stream alone (window minus that stream's busy time). Streams overlap, so these are never added into a GPU total.",
  launchDelay: "Launch delay of a kernel = its start − the end of its launch call, floored at 0. It is launch overhead plus queueing.",
  launchOverhead:
    "Launch overhead: the part of a kernel's launch delay during which its GPU (all streams) was idle — the GPU waited for the launch itself.",
  queueing: "Queueing: the part of a kernel's launch delay during which its GPU was busy with earlier work.",
  launchUnion:
    "Time-union: the time inside the steps window covered by at least one kernel's launch-overhead (or queueing) interval, per GPU, added over GPUs. Kernels' delays overlap, so their sum would not be a time.",
  shortKernels:
    "Short-kernel share: the share of kernels whose duration is below the duration of the CPU call that launched them (shorter than their launch overhead).",
  exposed:
    "Exposed time of each GPU over the steps window, in this order, each part excluding the ones before it: computation (non-communication kernels), exposed communication, exposed memcpy/memset, idle. The four add up to the window.",
  syncs:
    "Host synchronization: cuda_sync events and the host calls that blocked on the device (synchronize calls, blocking copies such as a D2H cudaMemcpyAsync into pageable memory), the operator that issued each (the innermost operator, never a ProfilerStep), and the GPU idle time after each: from its end to the next device work start on any stream of the same process's GPUs.",
  gpuIdleAfter:
    "GPU idle after (µs): from the end of the synchronizing call to the next device work start on the process's GPUs, as a time-union (calls that overlap one idle span count it once), per operator and in all.",
} as const;
