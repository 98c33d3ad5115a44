"""A script without an ``if __name__ == "__main__":`` guard that analyses ranks in the local process
pool runs once (hardening round three, item 9: it ran again in every spawned worker, with
RuntimeError tracebacks)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

from conftest import REPO


def test_a_script_without_a_main_guard_runs_once(tmp_path):
    shutil.copytree(REPO / "samples" / "synthetic_ddp", tmp_path / "logs" / "ddp")
    script = tmp_path / "analyse.py"
    script.write_text(
        textwrap.dedent(f"""
        print("SCRIPT-RAN", flush=True)
        from tb_plugin.registry.executors.local import LocalExecutor
        from tb_plugin.registry.runs import RunRegistry
        reg = RunRegistry({str(tmp_path / "logs")!r})
        reg.scan()
        executor = LocalExecutor(workers=2)
        results = list(executor.map([reg.rank_job(st) for st in reg.files()]))
        assert executor.used_workers == 2
        print("RESULTS", sorted(r.error is None for r in results))
    """)
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("SCRIPT-RAN") == 1 and "RESULTS [True, True]" in done.stdout
    assert "RuntimeError" not in done.stderr and "Traceback" not in done.stderr
