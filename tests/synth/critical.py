"""Synthetic traces whose critical path is known by construction (µs).

:func:`chain_doc`: one rank, one step ``[0, 1000]`` on the main thread (pid 1, tid 1):

- ``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`` [0, 200];
- ``aten::mm`` [200, 230] launching (``cudaLaunchKernel`` [210, 215]) ``gemm_A`` [220, 520] on stream 7;
- ``aten::relu`` [230, 240] launching ([232, 236]) ``relu_B`` [520, 620] on stream 7 (behind A);
- ``aten::item`` [240, 700] holding ``cudaStreamSynchronize`` [250, 630] (it waits for B);
- ``optimizer_step`` [700, 900]; nothing traced in [900, 1000].

The path, backward from 1000: host gap [900, 1000] (waiting), ``optimizer_step`` [700, 900] and
``aten::item`` [620, 700] (cpu), the sync jumps to ``relu_B`` [520, 620], which waited on ``gemm_A``
[220, 520] (stream order), whose launch ended at 215 ([215, 220] waiting), then ``aten::mm``
[200, 215] and the data loader [0, 200] (cpu): kernel 400, cpu 495, waiting 105.

:func:`dataloader_job`: ranks in steps of ``STEP_US``; per step and rank ``r``: the data loader for
``dl[step][r]`` µs, then ``aten::mm`` (10 µs; its launch ends 5 µs in) launching ``gemm`` (100 µs,
starting 10 µs after the loader), then ``record_param_comms`` launching an NCCL all-reduce on stream
20 that starts when ``gemm`` ends (an event wait: after its launch) and ends ``TRANSFER_US`` after the
last rank's arrival on every rank; ``aten::item`` holds a ``cudaStreamSynchronize`` that returns 5 µs
after it; the step ends 10 µs after the all-reduce. Rank ``r``'s clock reads true time −
``1000·r`` µs and it writes ``baseTimeNanoseconds`` = ``1000·r`` µs, so the common clock is true time.
"""

from __future__ import annotations

import json

from tb_plugin.trace.decode import decode_trace

from .events import complete

STEP_US = 2000.0
TRANSFER_US = 50.0
DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


class _Doc:
    def __init__(self, offset: float = 0.0):
        self.events: list[dict] = []
        self.corr = 0
        self.offset = offset

    def x(self, name, cat, ts, dur, tid=1, **args):
        self.events.append(complete(name, cat, ts + self.offset, dur, tid, **args))

    def launch(self, ts, dur, kernel, k_ts, k_dur, stream=7, **args):
        self.corr += 1
        self.x("cudaLaunchKernel", "cuda_runtime", ts, dur, correlation=self.corr)
        self.x(kernel, "kernel", k_ts, k_dur, correlation=self.corr, device=0, stream=stream, **args)


def chain_doc() -> dict:
    d = _Doc()
    d.x("ProfilerStep#1", "user_annotation", 0, 1000)
    d.x(DATALOADER, "cpu_op", 0, 200)
    d.x("aten::mm", "cpu_op", 200, 30)
    d.launch(210, 5, "gemm_A", 220, 300)
    d.x("aten::relu", "cpu_op", 230, 10)
    d.launch(232, 4, "relu_B", 520, 100)
    d.x("aten::item", "cpu_op", 240, 460)
    d.x("cudaStreamSynchronize", "cuda_runtime", 250, 380)
    d.x("optimizer_step", "cpu_op", 700, 200)
    return {"schemaVersion": 1, "traceEvents": d.events}


CHAIN_EXPECTED = {
    "length_us": 1000.0,
    "by_category": {"kernel": 400.0, "cpu": 495.0, "communication": 0.0, "waiting": 105.0},
    "segments": [
        ("kernel", "gemm_A", 220.0, 300.0),
        ("cpu", DATALOADER, 0.0, 200.0),
        ("cpu", "optimizer_step", 700.0, 200.0),
        ("kernel", "relu_B", 520.0, 100.0),
        ("waiting", "idle (host)", 900.0, 100.0),
        ("cpu", "aten::item", 630.0, 70.0),
        ("cpu", "aten::mm", 200.0, 10.0),
        ("cpu", "cudaStreamSynchronize", 620.0, 10.0),
        ("cpu", "cudaLaunchKernel", 210.0, 5.0),
        ("waiting", "idle", 215.0, 5.0),
    ],
    "host_blocked_us": 370.0,
}


def dataloader_docs(dl: list[list[float]]) -> list[dict]:
    """One document per rank; ``dl[step][rank]``: that rank's data-loading time in that step."""
    n_ranks = len(dl[0])
    docs = [_Doc(-1000.0 * r) for r in range(n_ranks)]
    for k, per_rank in enumerate(dl):
        base = k * STEP_US
        end = base + max(per_rank) + 110.0 + TRANSFER_US
        for r, d in enumerate(docs):
            t = base + per_rank[r]
            d.x(f"ProfilerStep#{k + 1}", "user_annotation", base, end + 10.0 - base)
            d.x(DATALOADER, "cpu_op", base, per_rank[r])
            d.x("aten::mm", "cpu_op", t, 10)
            d.launch(t + 2, 3, "gemm", t + 10, 100)
            comm = {
                "Collective name": "allreduce",
                "dtype": "Float",
                "In msg nelems": 1024,
                "Out msg nelems": 1024,
                "Group size": n_ranks,
                "Process Group Name": "0",
            }
            d.x("record_param_comms", "cpu_op", t + 10, 10, **comm)
            d.launch(t + 12, 3, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 110, end - (t + 110), stream=20, **comm)
            d.x("aten::item", "cpu_op", t + 20, end + 10.0 - (t + 20))
            d.x("cudaStreamSynchronize", "cuda_runtime", t + 25, end + 5.0 - (t + 25))
    return [
        {
            "schemaVersion": 1,
            "traceEvents": d.events,
            "baseTimeNanoseconds": int(1e6 * r),
            "distributedInfo": {"backend": "nccl", "rank": r, "world_size": n_ranks},
        }
        for r, d in enumerate(docs)
    ]


def dataloader_job(dl: list[list[float]]):
    """``(rank, worker, trace)`` per rank of :func:`dataloader_docs`."""
    return [(r, f"rank{r}", decode_trace(json.dumps(doc).encode())) for r, doc in enumerate(dataloader_docs(dl))]


def dataloader_expected(dl: list[list[float]], step: int) -> dict:
    """The path of step ``step`` (0-based) when one rank ``q`` loads longest and the walk starts on
    rank ``r`` (the lowest rank: every rank's step ends together): on ``r``, ``aten::item``'s last 10 µs
    (cpu) and the all-reduce's transfer (communication, late rank ``q``, ``r`` waited
    ``dl[q] − dl[r]``); on ``q``: ``gemm`` (kernel 100), 5 µs between its launch and its start
    (waiting), ``aten::mm``'s first 5 µs and the data loader (cpu)."""
    per_rank = dl[step]
    q = max(range(len(per_rank)), key=lambda i: (per_rank[i], -i))
    r = 0
    out = {"length_us": max(per_rank) + 110.0 + TRANSFER_US + 10.0, "late": q, "walker": r}
    if q == r:
        out["by_rank"] = {r: out["length_us"]}
    else:
        out["by_rank"] = {r: 10.0 + TRANSFER_US, q: per_rank[q] + 110.0}
        out["wait_us"] = per_rank[q] - per_rank[r]
    out["by_category"] = {
        "kernel": 100.0,
        "cpu": 10.0 + 5.0 + per_rank[q],
        "communication": TRANSFER_US,
        "waiting": 5.0,
    }
    return out


def pipeline_docs() -> list[dict]:
    """Two pipeline stages, one step. Stage 0: ``gemm0`` [10, 310] (launched in ``aten::mm`` [0, 10],
    launch ends at 5), then a send [310, 360] (an event wait on ``gemm0``). Stage 1: its recv kernel
    starts at 10 and waits for stage 0 until 310, ends at 360; ``gemm1`` [360, 560] waits on it; a
    sync in ``aten::item`` [20, 570] returns at 565; steps [0, 370] and [0, 570].

    The path from 570 (stage 1 ends last): ``aten::item`` [560, 570] (cpu), ``gemm1`` [360, 560]
    (kernel), the recv's transfer [310, 360] (communication on rank 1, late rank 0, waited 300), then on
    rank 0 ``gemm0`` [10, 310] (kernel), [5, 10] waiting, ``aten::mm`` [0, 5] (cpu): kernel 500, cpu 15,
    communication 50, waiting 5; rank 0 310, rank 1 260."""
    comm = {"dtype": "Float", "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 2, "Process Group Name": "0"}
    docs = []
    for r in range(2):
        d = _Doc()
        kernel = "ncclDevKernel_SendRecv"
        if r == 0:
            d.x("aten::mm", "cpu_op", 0, 10)
            d.launch(2, 3, "gemm0", 10, 300)
            d.x("record_param_comms", "cpu_op", 10, 10, **{"Collective name": "send", **comm})
            d.launch(12, 3, kernel, 310, 50, stream=20, **{"Collective name": "send", **comm})
            d.x("aten::item", "cpu_op", 20, 350)
            d.x("cudaStreamSynchronize", "cuda_runtime", 20, 345)
            d.x("ProfilerStep#1", "user_annotation", 0, 370)
        else:
            d.x("record_param_comms", "cpu_op", 0, 10, **{"Collective name": "recv", **comm})
            d.launch(2, 3, kernel, 10, 350, stream=20, **{"Collective name": "recv", **comm})
            d.x("aten::mm", "cpu_op", 10, 10)
            d.launch(12, 3, "gemm1", 360, 200)
            d.x("aten::item", "cpu_op", 20, 550)
            d.x("cudaStreamSynchronize", "cuda_runtime", 20, 545)
            d.x("ProfilerStep#1", "user_annotation", 0, 570)
        docs.append(
            {
                "schemaVersion": 1,
                "traceEvents": d.events,
                "distributedInfo": {"backend": "nccl", "rank": r, "world_size": 2},
            }
        )
    return docs


def wait_event_doc(recorded: bool = True) -> dict:
    """One rank, one step ``[0, 600]``, a recorded cross-stream wait that timing alone misreads (µs).
    ``gemm_X`` [10, 300] on stream 7 (launched in ``aten::mm`` [0, 20], launch ends at 5), ``gemm_Y``
    [30, 350] on stream 9 (``aten::add`` [20, 40], launch ends at 25), ``cudaEventRecord`` after X on
    stream 7 and ``cudaStreamWaitEvent`` on stream 20 (CUPTI's "Stream Wait Event" with its record's
    correlation, when ``recorded``), then ``relu_Z`` [400, 500] on stream 20 (``aten::relu`` [45, 60],
    launch ends at 50); ``aten::item`` [60, 590] holds a sync returning at 505.

    Recorded: Z waited for X. The path from 600: [590, 600] waiting, ``aten::item`` [500, 590] (cpu),
    Z [400, 500], [300, 400] waiting, X [10, 300], [5, 10] waiting, ``aten::mm`` [0, 5]: kernel 390, cpu
    95, waiting 115. Not recorded, the wait is inferred from timing on Y (the work that ended last
    before Z): Z, [350, 400] waiting, Y [30, 350], [25, 30] waiting, ``aten::add`` [20, 25] and
    ``aten::mm`` [0, 20]: kernel 420, cpu 115, waiting 65."""
    d = _Doc()
    d.x("ProfilerStep#1", "user_annotation", 0, 600)
    d.x("aten::mm", "cpu_op", 0, 20)
    d.launch(2, 3, "gemm_X", 10, 290)
    d.x("aten::add", "cpu_op", 20, 20)
    d.launch(22, 3, "gemm_Y", 30, 320, stream=9)
    d.corr += 1
    d.x("cudaEventRecord", "cuda_runtime", 41, 1, correlation=d.corr)
    d.corr += 1
    d.x("cudaStreamWaitEvent", "cuda_runtime", 43, 1, correlation=d.corr)
    if recorded:
        d.events.append(
            {
                "ph": "X",
                "cat": "cuda_sync",
                "name": "Stream Wait Event",
                "pid": 0,
                "tid": 20,
                "ts": 44,
                "dur": 0,
                "args": {
                    "cuda_sync_kind": "Stream Wait Event",
                    "correlation": d.corr,
                    "stream": 20,
                    "wait_on_stream": 7,
                    "wait_on_cuda_event_record_corr_id": d.corr - 1,
                    "device": 0,
                },
            }
        )
    d.x("aten::relu", "cpu_op", 45, 15)
    d.launch(46, 4, "relu_Z", 400, 100, stream=20)
    d.x("aten::item", "cpu_op", 60, 530)
    d.x("cudaStreamSynchronize", "cuda_runtime", 60, 445)
    return {"schemaVersion": 1, "traceEvents": d.events}


WAIT_EXPECTED = {
    True: {"kernel": 390.0, "cpu": 95.0, "communication": 0.0, "waiting": 115.0},
    False: {"kernel": 420.0, "cpu": 115.0, "communication": 0.0, "waiting": 65.0},
}
