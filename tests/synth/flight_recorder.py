"""Known-answer flight-recorder dumps built from the schema (PyTorch 2.9–2.10 field names).

A :class:`Job` plays a schedule of collectives on its ranks: each call says which ranks enter it and
how far they get (``scheduled``/``started``/``completed``); every rank keeps its own sequence number
per group, record ids and a ring buffer of ``buffer`` entries (the oldest dropped first), and its
``pg_status`` as NCCL's watchdog keeps it. :meth:`Job.dumps` gives each rank's dump dict;
:func:`write` writes them as pickles (protocol 2–5) or JSON.
"""

from __future__ import annotations

import json
import os
import pickle

T0_NS = 1_795_000_000_000_000_000
STEP_NS = 1_000_000  # 1 ms between two ops of the schedule


class Job:
    def __init__(
        self,
        world: int,
        groups: dict[str, tuple[str, list[int]]],
        buffer: int = 2000,
        timing: bool = True,
        backend: str = "nccl",
    ) -> None:
        """``groups``: name → (description, ranks). Group ids (``pg_id``) are given per rank in the
        order the rank belongs to the groups, as each process counts its own."""
        self.world, self.groups, self.buffer, self.timing, self.backend = world, groups, buffer, timing, backend
        self.entries: dict[int, list[dict]] = {r: [] for r in range(world)}
        self.next_record = {r: 0 for r in range(world)}
        self.seq = {(r, g): 0 for r in range(world) for g in groups}
        self.p2p_seq = {r: 0 for r in range(world)}
        self.status = {(r, g): [-1, -1, -1] for r in range(world) for g in groups}
        self.pg_id = {}
        for r in range(world):
            mine = [g for g, (_, ranks) in groups.items() if r in ranks]
            for i, g in enumerate(mine):
                self.pg_id[(r, g)] = i
        self.clock = T0_NS

    def _add(self, rank: int, entry: dict) -> None:
        entry["record_id"] = self.next_record[rank]
        self.next_record[rank] += 1
        buf = self.entries[rank]
        buf.append(entry)
        if len(buf) > self.buffer:
            del buf[0]

    def collective(
        self,
        group: str,
        op: str,
        sizes=((1024,),),
        dtype: str = "Float",
        ranks=None,
        state: str | dict = "completed",
        rank_sizes: dict | None = None,
        frames=None,
    ) -> None:
        """``ranks`` (default: all of the group) enqueue the next instance of ``op`` in ``group``;
        ``state``: how far they got (a dict rank → state for different ones)."""
        desc, members = self.groups[group]
        self.clock += STEP_NS
        for r in members if ranks is None else ranks:
            self.seq[(r, group)] += 1
            seq = self.seq[(r, group)]
            st = state if isinstance(state, str) else state.get(r, "completed")
            size = [list(s) for s in (rank_sizes or {}).get(r, sizes)]
            started = self.clock + 1000 if st in ("started", "completed") and self.timing else None
            completed = self.clock + 5000 if st == "completed" and self.timing else None
            self._add(
                r,
                {
                    "frames": frames or [],
                    "pg_id": self.pg_id[(r, group)],
                    "process_group": (group, desc),
                    "collective_seq_id": seq,
                    "p2p_seq_id": 0,
                    "op_id": seq,
                    "profiling_name": f"{self.backend}:{op}",
                    "time_created_ns": self.clock + r,
                    "input_sizes": size,
                    "input_dtypes": [dtype],
                    "output_sizes": size,
                    "output_dtypes": [dtype],
                    "state": st,
                    "time_discovered_started_ns": started,
                    "time_discovered_completed_ns": completed,
                    "retired": st == "completed",
                    "timeout_ms": 600000,
                    "is_p2p": False,
                    "thread_id": "1",
                    "thread_name": "python",
                },
            )
            status = self.status[(r, group)]
            status[0] = seq
            if st in ("started", "completed"):
                status[1] = seq
            if st == "completed":
                status[2] = seq

    def p2p(self, group: str, src: int, dst: int, sizes=((256,),), send: bool = True, recv: bool = True) -> None:
        """A send from ``src`` to ``dst`` (on ``src``) and its recv (on ``dst``), each only when asked."""
        desc, _ = self.groups[group]
        self.clock += STEP_NS
        for rank, kind, on in ((src, "send", send), (dst, "recv", recv)):
            if not on:
                continue
            self.p2p_seq[rank] += 1
            self._add(
                rank,
                {
                    "frames": [],
                    "pg_id": self.pg_id[(rank, group)],
                    "process_group": (group, desc),
                    "collective_seq_id": 0,
                    "p2p_seq_id": self.p2p_seq[rank],
                    "op_id": self.p2p_seq[rank],
                    "profiling_name": f"{self.backend}:{kind} {src}->{dst}",
                    "time_created_ns": self.clock,
                    "input_sizes": [list(s) for s in sizes],
                    "input_dtypes": ["Float"],
                    "output_sizes": [list(s) for s in sizes],
                    "output_dtypes": ["Float"],
                    "state": "completed",
                    "time_discovered_started_ns": self.clock + 10,
                    "time_discovered_completed_ns": self.clock + 20,
                    "retired": True,
                    "timeout_ms": 600000,
                    "is_p2p": True,
                    "thread_id": "1",
                    "thread_name": "python",
                },
            )

    def dumps(self, with_rank: bool = False) -> dict[int, dict]:
        """rank → its dump dict (``pg_config`` ranks as text, ``pg_status`` keyed by pg id as text)."""
        out = {}
        for r in range(self.world):
            mine = [g for g, (_, ranks) in self.groups.items() if r in ranks]
            out[r] = {
                "version": "2.10",
                "comm_lib_version": "2.21.5",
                "pg_config": {g: {"name": g, "desc": self.groups[g][0], "ranks": str(self.groups[g][1])} for g in mine},
                "pg_status": {
                    str(self.pg_id[(r, g)]): {
                        "last_enqueued_collective": self.status[(r, g)][0],
                        "last_started_collective": self.status[(r, g)][1],
                        "last_completed_collective": self.status[(r, g)][2],
                    }
                    for g in mine
                },
                "entries": list(self.entries[r]),
            }
            if with_rank:
                out[r]["rank"] = r
        return out


def write(
    folder: str,
    dumps: dict[int, dict],
    protocol: int = 2,
    form: str = "pickle",
    prefix: str = "nccl_trace_rank_",
    ranks=None,
) -> list[str]:
    """Write each rank's dump (only ``ranks`` when given) as ``<prefix><rank>`` (pickle) or
    ``<prefix><rank>.json``; the paths written."""
    os.makedirs(folder, exist_ok=True)
    paths = []
    for r, dump in dumps.items():
        if ranks is not None and r not in ranks:
            continue
        if form == "json":
            path = os.path.join(folder, f"{prefix}{r}.json")
            with open(path, "w") as f:
                json.dump(dump, f)
        else:
            path = os.path.join(folder, f"{prefix}{r}")
            with open(path, "wb") as f:
                pickle.dump(dump, f, protocol=protocol)
        paths.append(path)
    return paths


def healthy(job: Job, steps: int = 3) -> None:
    """``steps`` steps of an all_reduce in each group and an all_gather on the world group ("0")."""
    for _ in range(steps):
        for g in job.groups:
            job.collective(g, "all_reduce")
        job.collective("0", "_allgather_base", sizes=((4096,),))
