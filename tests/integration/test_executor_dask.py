"""Scale-out on Dask: the report computed on a 2-worker ``distributed.LocalCluster`` (loopback,
started here) equals the local process pool's, byte for byte; failures fall back or stay one rank's.

The 64-rank job is built by benchmarks/rank_job.py out of the 8 DLRM ranks of the corpus: DLRM rank
``r % 8`` renamed ``worker{r}`` with ``distributedInfo.rank = r``, ``world_size = 64``.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import socket
import sys

import numpy as np
import pytest
from conftest import REPO, sample

from tb_plugin.cli import main
from tb_plugin.cli.report import run_report
from tb_plugin.registry.executors import RankJob, RankResult, dask_address, open_executor, reduce_rank, run_ranks
from tb_plugin.registry.executors.task import unpack
from tb_plugin.registry.runs import RunRegistry

distributed = pytest.importorskip("distributed")
sys.path.insert(0, os.path.join(str(REPO), "benchmarks"))
from rank_job import build_rank_job

DLRM = "dlrm_8ranks"
RANK_AGGREGATE_BOUND = 2048  # bytes: distributed + insights aggregate of one DLRM rank (measured 717)
# bytes: everything a worker returns for a DLRM rank, report tables included (measured ~8.5 KB; ~15 KB
# since the critical path's chains travel too, 9 chains of ~700 bytes on a DLRM rank; 18.0 KB since the
# overview carries the runtime-calls table, the one recommendation list and the graphs section)
RESULT_BOUND = 24 * 1024
CHAIN_BOUND = 1024  # bytes per critical-path chain (a step's or a collective's; ten segments and ten items; measured ~700 mean, 1.1 KB max)


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0"
    ) as c:
        yield c.scheduler_address.replace("tcp://", "dask://")


@pytest.fixture(scope="module")
def job64(tmp_path_factory):
    out = tmp_path_factory.mktemp("ranks64")
    build_rank_job(str(out), ranks=64, copies=1)
    return out


def _report(logdir, executor, no_cache=True) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_report(str(logdir), None, True, not no_cache, out, err, executor=executor)
    return code, out.getvalue(), err.getvalue()


def test_dask_address():
    assert dask_address("dask://sched:8786") == "tcp://sched:8786"
    assert dask_address("dask://sched") == "tcp://sched:8786"
    assert dask_address("tls://10.0.0.1:9000") == "tls://10.0.0.1:9000"
    assert dask_address("ray://x:1") is None and dask_address("dask://") is None


def test_local_pool_size_spec():
    messages = []
    assert open_executor("local:3", messages.append).workers == 3
    assert open_executor("local", messages.append).workers is None and messages == []
    assert open_executor("local:zero", messages.append).workers is None
    assert messages == ["executor local:zero: expected local:N with N ≥ 1; using the local process pool"]


@pytest.mark.corpus
def test_dlrm_report_identical_on_dask(cluster, capsys):
    assert main(["report", str(sample(DLRM)), "--json", "--executor", cluster]) == 0
    on_dask, err = capsys.readouterr()
    assert main(["report", str(sample(DLRM)), "--json"]) == 0  # the default: local pool, parse cache
    local = capsys.readouterr().out
    assert on_dask == local
    assert "Dask cluster at tcp://127.0.0.1" in err and "(2 workers)" in err
    assert sum(1 for line in err.splitlines() if line.startswith("[")) == 8 and "[8/8] " in err  # progress per rank
    run = json.loads(on_dask)["runs"][0]
    assert run["distributed"]["world_size"] == 8 and [r["rank"] for r in run["distributed"]["ranks"]] == list(range(8))
    assert all(w["insights"]["exposed"]["compute_us"] > 0 for w in run["workers"])


@pytest.mark.corpus
def test_64_rank_report_identical_on_dask(cluster, job64):
    code, on_dask, err = _report(job64, cluster)
    assert code == 0, err
    code, local, _ = _report(job64, "local")
    assert code == 0
    assert on_dask == local
    code, pooled, err_pool = _report(job64, "local:2")  # the same through 2 spawned processes
    assert code == 0 and pooled == local and "on 2 worker processes" in err_pool
    run = json.loads(on_dask)["runs"][0]
    dist = run["distributed"]
    assert dist["world_size"] == 64 and [r["rank"] for r in dist["ranks"]] == list(range(64))
    assert [r["worker"] for r in dist["ranks"]] == [f"worker{r}_step_12" for r in range(64)]
    assert dist["messages"] == []  # every rank from distributedInfo, no clash
    # rank r is DLRM rank r % 8: its computation time repeats every 8 ranks
    comp = [r["computation_us"] for r in dist["ranks"]]
    assert comp[8:16] == comp[:8] and len(set(comp[:8])) > 1
    assert "[64/64] " in err


@pytest.mark.corpus
def test_unreachable_scheduler_falls_back_to_local(capsys):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = _report(sample(DLRM), f"dask://127.0.0.1:{port}")
    assert code == 0
    assert f"cannot use the Dask scheduler at tcp://127.0.0.1:{port}" in err and "using the local process pool" in err
    assert out == _report(sample(DLRM), "local")[1]


def test_dask_not_installed_falls_back(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed → ImportError
    messages = []
    executor = open_executor("dask://127.0.0.1:8786", messages.append)
    assert executor.description == "the local process pool"
    assert messages == [
        "executor dask://127.0.0.1:8786: Dask is not installed here (pip install 'kinetoscope[dask]'); "
        "using the local process pool"
    ]
    messages.clear()
    open_executor("ray://head:10001", messages.append)
    assert "unknown executor 'ray://head:10001'" in messages[0]


@pytest.mark.corpus
def test_env_var_selects_executor(cluster, monkeypatch, capsys):
    monkeypatch.setenv("KINETOSCOPE_EXECUTOR", cluster)
    assert main(["report", str(sample(DLRM)), "--json", "--no-cache"]) == 0
    out, err = capsys.readouterr()
    assert "Dask cluster at" in err
    monkeypatch.delenv("KINETOSCOPE_EXECUTOR")
    assert main(["report", str(sample(DLRM)), "--json", "--no-cache"]) == 0
    assert capsys.readouterr().out == out


@pytest.mark.corpus
def test_one_corrupt_rank_is_that_ranks_error_only(cluster, tmp_path):
    logdir = tmp_path / "job"
    shutil.copytree(sample(DLRM), logdir)
    for p in logdir.iterdir():
        p.chmod(0o644)
    bad = next(p for p in sorted(logdir.iterdir()) if p.name.startswith("worker3_"))
    bad.write_bytes(bad.read_bytes()[:200_000] + b"\x00garbage")  # truncated mid-event
    code, on_dask, err = _report(logdir, cluster)
    assert code == 1
    code_local, local, _ = _report(logdir, "local")
    assert code_local == 1 and on_dask == local
    run = json.loads(on_dask)["runs"][0]
    by_worker = {w["worker"]: w for w in run["workers"]}
    assert by_worker["worker3_step_12"]["error"] and by_worker["worker3_step_12"]["overview"] is None
    assert all(w["error"] is None and w["overview"] for name, w in by_worker.items() if name != "worker3_step_12")
    dist = run["distributed"]
    assert [r["rank"] for r in dist["ranks"]] == [0, 1, 2, 4, 5, 6, 7]
    assert any(m.startswith(f"{bad.name}: not analysed (") for m in dist["messages"])
    assert f"{bad.name}: failed: " in err and f"kinetoscope: {bad.name}: " in err


@pytest.mark.corpus
def test_worker_returns_only_small_aggregates(cluster):
    """Measured per DLRM rank: the distributed + insights aggregate is 717 bytes pickled without the
    critical path's chains (~700 bytes each, one per step and per collective: 6.2 KB); the whole
    result with the report's (compressed) tables about 15 KB — against ~0.9 MB of trace and ~0.5 MB
    of parsed columns. No numpy array (no event column) is in it."""
    client = distributed.Client(dask_address(cluster), set_as_default=False)
    try:
        paths = sorted(sample(DLRM).iterdir())
        jobs = [RankJob(key=p.name, url=str(p), version="v", size=p.stat().st_size, tables=True) for p in paths]
        results = client.gather(client.map(reduce_rank, jobs, pure=False))
    finally:
        client.close()
    for res in results:
        assert res.error is None
        core = {k: res.aggregate[k] for k in ("distributed", "insights")}
        core["distributed"] = {k: v for k, v in core["distributed"].items() if k != "critical_path"}
        assert 300 < len(pickle.dumps(core)) <= RANK_AGGREGATE_BOUND
        chains = res.aggregate["distributed"]["critical_path"]  # one chain per step and per collective
        n_chains = len(chains["steps"]) + len(chains["comm"]["chain"])
        assert len(pickle.dumps(chains)) <= CHAIN_BOUND * n_chains
        assert len(pickle.dumps(res)) <= RESULT_BOUND
        tables = unpack(res.aggregate["tables"])
        assert len(tables["kernels"]) > 10 and len(pickle.dumps(tables)) > 4 * len(res.aggregate["tables"])
        assert not _has_array(core) and not _has_array(tables)
        assert len(res.aggregate["distributed"]["comm"]["dur"]) == 8  # 8 NCCL kernels per DLRM rank


def _has_array(obj) -> bool:
    if isinstance(obj, np.ndarray):
        return True
    if isinstance(obj, dict):
        return any(_has_array(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_has_array(v) for v in obj)
    return False


@pytest.mark.corpus
def test_lost_ranks_run_again_locally():
    """A rank the executor lost (worker killed) is analysed on this machine, with a message."""
    path = next(iter(sorted(sample(DLRM).iterdir())))
    job = RankJob(key="r0", url=str(path), version="v", size=path.stat().st_size)

    class Losing:
        description = "a flaky cluster"

        def map(self, jobs):
            for j in jobs:
                yield RankResult(key=j.key, lost=True, error="KilledWorker: gone")

        def close(self):
            pass

    seen, messages = [], []
    results = list(run_ranks(Losing(), [job], lambda d, t, r: seen.append((d, t, r.key)), messages.append))
    assert [r.error for r in results] == [None] and results[0].aggregate["distributed"]["distributed_info"]["rank"] == 0
    assert seen == [(1, 1, "r0")]
    assert messages == [
        "1 of 1 ranks were lost by a flaky cluster (KilledWorker: gone); analysing them on this machine instead"
    ]


@pytest.mark.corpus
def test_registry_distributed_view_through_env_executor(cluster, monkeypatch):
    """TensorBoard's path: $KINETOSCOPE_EXECUTOR sends the distributed view's unloaded ranks to Dask."""
    local = RunRegistry(str(sample(DLRM)))
    local.scan()
    expected = local.distributed(".", "1")
    monkeypatch.setenv("KINETOSCOPE_EXECUTOR", cluster)
    reg = RunRegistry(str(sample(DLRM)))
    reg.scan()
    try:
        got = reg.distributed(".", "1")
    finally:
        reg.stop()
    assert got == expected and got["view"]["world_size"] == 8
    assert all(st.state == "queued" for st in reg.files())  # nothing parsed in this process
    monkeypatch.setenv("KINETOSCOPE_EXECUTOR", "dask://127.0.0.1:1")
    reg = RunRegistry(str(sample(DLRM)))
    reg.scan()
    got = reg.distributed(".", "1")
    assert got["view"] == expected["view"]
    assert "cannot use the Dask scheduler at tcp://127.0.0.1:1" in got["messages"][0]


@pytest.mark.corpus
@pytest.mark.emulator
def test_dask_workers_read_their_ranks_from_the_bucket(tmp_path, monkeypatch, capsys):
    """Against a real S3 server (moto on loopback): the Dask workers, separate processes that know only
    the SDK's own environment (AWS_ENDPOINT_URL, keys), open each rank's s3:// URL themselves; the report
    equals the local-disk report byte for byte (paths in it are logdir-relative)."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    from emulators import Emulator, clear_fsspec_instances

    local = tmp_path / "local" / "dlrm"
    shutil.copytree(sample(DLRM), local)
    assert main(["report", str(local.parent), "--json", "--no-cache"]) == 0
    expected = capsys.readouterr().out

    emu = Emulator("s3").start()
    try:
        for k, v in emu.env.items():  # before the cluster starts: its worker processes inherit them
            monkeypatch.setenv(k, v)
        clear_fsspec_instances()
        emu.make_bucket()
        emu.upload(sample(DLRM), "dlrm")
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0"
        ) as c:
            address = c.scheduler_address.replace("tcp://", "dask://")
            with distributed.Client(c) as client:
                worker_pids = set(client.run(os.getpid).values())
            assert main(["report", emu.url(), "--json", "--no-cache", "--executor", address]) == 0
        got, err = capsys.readouterr()
    finally:
        emu.kill()
        clear_fsspec_instances()
    assert got == expected
    ran_on = {
        int(line.rsplit(" process ", 1)[1].rstrip(")"))
        for line in err.splitlines()
        if line.startswith("[") and line.rstrip().endswith(")")
    }
    assert ran_on and ran_on <= worker_pids and os.getpid() not in ran_on  # every rank read by a Dask worker
