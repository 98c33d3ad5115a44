"""Read an allocator-snapshot pickle in a child process, so a hostile pickle costs only that file.

Unpickling runs C code on the file's structure: a pickle that names no global can still crash the
process (a deeply nested tuple hashed as a dict key overflows the C stack) or hang it (tuples that
share halves hash in 2^depth steps); see :mod:`.unpickle`. When the bytes cannot rule that out
(:func:`~.unpickle.tuple_nesting_bound` above :data:`~.unpickle.IN_PROCESS_NESTING`, which is every
real snapshot of some size), the pickle is sent to ``python -m tb_plugin.artifacts.snapshot`` on stdin;
the child (:func:`~.snapshot.child_main`) unpickles and parses it and answers the packed columns (:func:`~.snapshot.pack_snapshot`:
a JSON header and flat arrays) as an ``.npz`` on stdout. This process never unpickles the file. The
child's crash (a signal), its time limit (:func:`time_limit_s`) or its error message becomes the
file's :class:`SnapshotError`. The child's memory is returned to the system when it exits.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Iterable

import numpy as np
import orjson

BASE_TIME_S = 30.0  # the child's time limit: this much, plus PER_MB_TIME_S for each MB of pickle
PER_MB_TIME_S = 2.0  # real snapshots parse at ~0.03 s per MB; 60× headroom for a slow, busy machine
EXIT_REFUSED = 3  # the child's exit status for a file it refused (the message is on stderr)
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class SnapshotError(Exception):
    """The file is not a readable allocator snapshot. The message is shown as is."""


def time_limit_s(size: int) -> float:
    """How long the child may take on a pickle of ``size`` bytes (s)."""
    return BASE_TIME_S + PER_MB_TIME_S * size / 1e6


def parse_in_child(data: bytes) -> tuple[dict, dict]:
    """The packed snapshot (header, arrays) of the pickle ``data``, parsed in a child process.

    Raises :class:`SnapshotError` with the child's message, or saying that it crashed
    (with the signal's name) or ran out of time."""
    return parse_blocks_in_child([data], len(data))


def parse_blocks_in_child(blocks: Iterable, size: int) -> tuple[dict, dict]:
    """:func:`parse_in_child` of the pickle that ``blocks`` (bytes-like) make up, written to the child
    as they come: this process holds one block at a time, never the file. ``size``: the pickle's
    size in bytes (the child's buffer; a guess for a gzip file: the child grows it). An exception
    from ``blocks`` (a read error, a bound) ends the child and is raised as it is."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [_PACKAGE_PARENT, os.environ.get("PYTHONPATH")])),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    limit = time_limit_s(size)
    try:
        # cwd: ``-m`` puts the working folder first on the path; the child must import this package
        child = subprocess.Popen([sys.executable, "-m", "tb_plugin.artifacts.snapshot", str(size)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 cwd=_PACKAGE_PARENT, env=env)
    except OSError as exc:
        raise SnapshotError(f"cannot start the process that reads snapshots: {exc}") from None
    out: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda name, f: out.__setitem__(name, f.read()), args=(name, f), daemon=True)
               for name, f in (("stdout", child.stdout), ("stderr", child.stderr))]
    for t in readers:
        t.start()
    deadline = time.monotonic() + limit
    try:
        try:
            for block in blocks:
                child.stdin.write(block)
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(child.args, limit)
        except BrokenPipeError:  # the child ended early (refused the file, crashed): its answer says why
            pass
        finally:
            try:
                child.stdin.close()
            except BrokenPipeError:
                pass
        child.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise SnapshotError(f"reading this pickle took more than {limit:.0f} s, the limit for its size: "
                            "it is not a memory snapshot (a hostile or corrupt file?)") from None
    except BaseException:  # the blocks' own error (too big, unreadable): the child is not left running
        child.kill()
        child.wait()
        raise
    for t in readers:
        t.join()
    done = subprocess.CompletedProcess(child.args, child.returncode, out.get("stdout", b""), out.get("stderr", b""))
    if done.returncode == EXIT_REFUSED:
        raise SnapshotError(done.stderr.decode("utf-8", "replace").strip()[-2000:])
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        raise SnapshotError(f"reading this pickle crashed the reader ({name}): it is not a memory snapshot "
                            "(values nested too deeply: a hostile or corrupt file?)")
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise SnapshotError(f"the snapshot reader failed (exit status {done.returncode}): {tail[0][:500]}")
    try:
        with np.load(io.BytesIO(done.stdout), allow_pickle=False) as npz:
            header = orjson.loads(npz["header"].tobytes())
            arrays = {k: npz[k] for k in npz.files if k != "header"}
    except (OSError, ValueError, KeyError, orjson.JSONDecodeError) as exc:
        raise SnapshotError(f"the snapshot reader answered unreadable data: {exc}") from None
    return header, arrays
