"""Shared test helpers and the test-selection rules (docs/TESTING.md).

Real traces are read from the external sample corpus: ``$KINETOSCOPE_SAMPLES``, else ``../shared/samples``
beside the repository (never copied into the repo). Tests that read it carry ``@pytest.mark.corpus``;
without the corpus they are skipped (one summary line says how to get it), except in CI (``CI`` set),
where a missing corpus is an error. Markers: ``corpus`` (external samples), ``emulator`` (storage
emulators on loopback), ``e2e`` (everything under ``tests/e2e/``, given by its folder), ``browser``
(a test that uses the ``browser`` fixture: headless chromium), ``integration`` (everything under
``tests/integration/``, given by its folder)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = Path(os.environ.get("KINETOSCOPE_SAMPLES", REPO.parent / "shared" / "samples"))
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
HAVE_CORPUS = SAMPLES.is_dir()
CHROMIUM = Path(os.environ.get("KINETOSCOPE_CHROMIUM", "/usr/bin/chromium"))
MARKERS = {
    "corpus": "reads the external sample corpus ($KINETOSCOPE_SAMPLES or ../shared/samples)",
    "emulator": "runs storage emulators (moto, gcp-storage-emulator, Azurite) on loopback",
    "e2e": "end to end: a real server, a subprocess or a browser (every test under tests/e2e/)",
    "integration": "several layers with real services or the whole stack (every test under tests/integration/)",
    "browser": "drives headless chromium ($KINETOSCOPE_CHROMIUM or /usr/bin/chromium)",
}
# why a test is skipped for want of something: the reason's first words, by what enables it (the
# summary counts the skip reports, so it also works when pytest-xdist workers did the collecting)
SKIP_REASONS = {
    "corpus": "sample corpus missing",
    "emulator": "no Node/npm for Azurite",
    "browser": "no chromium at",
}


def pytest_configure(config) -> None:
    for name, what in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {what}")
    if IN_CI and not HAVE_CORPUS:
        raise pytest.UsageError(
            f"CI is set but the sample corpus is missing: {SAMPLES} "
            "(set KINETOSCOPE_SAMPLES; docs/TESTING.md says how to rebuild it)"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    """The folder and fixture markers, added before ``-m`` selects."""
    folders = {REPO / "tests" / "e2e": pytest.mark.e2e, REPO / "tests" / "integration": pytest.mark.integration}
    for item in items:
        for parent in Path(str(item.path)).parents:
            if parent in folders:
                item.add_marker(folders[parent])
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
    items.sort(key=_run_order)


# The slow folders first (browsers, servers, emulators, subprocesses), in collection order within each:
# run in 2 processes a module at a time (run_tests.sh: --dist loadfile --no-loadscope-reorder), a long
# module that started last would leave one process idle while the other finishes it. Before them, the
# modules whose early reader and decode workers fork only in a process with no other thread: a test
# process that ran the cloud or Dask tests keeps their libraries' threads (fsspec's IO loop, Dask's) for
# good, and their forked cases would be skipped there
RUN_ORDER = (
    "tests/unit/artifacts/test_early_reader.py",
    "tests/unit/trace/test_forked_worker.py",
    "tests/e2e/",
    "tests/integration/",
    "tests/unit/project/",
)


def _run_order(item) -> int:
    """The item's place in :data:`RUN_ORDER` (after them all: the rest)."""
    path = Path(str(item.path))
    rel = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else ""
    return next((i for i, folder in enumerate(RUN_ORDER) if rel.startswith(folder)), len(RUN_ORDER))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session) -> None:
    """Skip the selected tests that cannot run here (outside CI only), counted for the summary."""
    no_browser = (not CHROMIUM.exists() or os.environ.get("KINETOSCOPE_NO_BROWSER")) and not IN_CI
    for item in session.items:
        if item.get_closest_marker("corpus") and not HAVE_CORPUS:
            item.add_marker(pytest.mark.skip(reason=f"{SKIP_REASONS['corpus']}: {SAMPLES}"))
        elif item.get_closest_marker("emulator") and os.environ.get("KINETOSCOPE_NO_EMULATORS") and not IN_CI:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASONS["emulator"]))
        elif item.get_closest_marker("browser") and no_browser:
            item.add_marker(pytest.mark.skip(reason=f"{SKIP_REASONS['browser']} {CHROMIUM}"))


def _skipped_for_want(terminalreporter) -> dict[str, int]:
    """Skipped tests by what would enable them (``SKIP_REASONS``), from the skip reports."""
    counts: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        for kind, prefix in SKIP_REASONS.items():
            if reason.startswith(prefix):
                counts[kind] = counts.get(kind, 0) + 1
    return counts


def pytest_terminal_summary(terminalreporter) -> None:
    """One line per kind of test skipped for want of something, naming what enables it."""
    skipped = _skipped_for_want(terminalreporter)
    if skipped.get("corpus"):
        terminalreporter.write_line(
            f"{skipped['corpus']} tests skipped: they read the sample corpus, not found at {SAMPLES}; set "
            "KINETOSCOPE_SAMPLES to its folder or place it at ../shared/samples (docs/TESTING.md: where each file "
            "comes from)"
        )
    if skipped.get("emulator"):
        terminalreporter.write_line(
            f"{skipped['emulator']} storage-emulator tests skipped: install Node and npm (sudo apt-get install nodejs "
            "npm), then ./run_tests.sh --setup-only installs Azurite"
        )
    if skipped.get("browser"):
        terminalreporter.write_line(
            f"{skipped['browser']} browser tests skipped: install chromium (sudo apt-get install chromium) or set "
            "KINETOSCOPE_CHROMIUM to a chromium binary"
        )


def _utf8_text(value):
    """``value`` with every string encodable as UTF-8 (lone surrogates, e.g. from a hostile file name in
    a captured log line, become ``\\udXXX`` escapes), through lists, tuples and dicts."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, (list, tuple)):
        return type(value)(_utf8_text(v) for v in value)
    if isinstance(value, dict):
        return {k: _utf8_text(v) for k, v in value.items()}
    return value


@pytest.hookimpl(hookwrapper=True)
def pytest_report_to_serializable(config, report):
    """A test report as pytest-xdist sends it from a worker, with text it can encode: a worker whose
    report held a lone surrogate died with an internal error and took its remaining tests with it."""
    outcome = yield
    data = outcome.get_result()
    if data is not None:
        outcome.force_result(_utf8_text(data))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own parse-cache directory."""
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True, scope="module")
def _registries_stopped():
    """Every registry a test module starts (in its tests or its fixtures, a ``create_app`` client too) is
    stopped when the module ends and its threads (scan, artifacts, load) joined: a registry left running
    kept its threads in the test process, and the early readers, which fork only when no other thread
    runs, were skipped in every later test of that process."""
    from tb_plugin.registry.runs import RunRegistry

    started: list[RunRegistry] = []
    start = RunRegistry.start

    def recorded_start(self: RunRegistry) -> RunRegistry:
        started.append(self)
        return start(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RunRegistry, "start", recorded_start)
        yield
    for registry in started:
        registry.stop()
    for registry in started:
        for thread in registry._threads:
            thread.join(30)


@pytest.fixture
def runner_threads_fork_safe(monkeypatch):
    """The test runner's own threads (pytest-xdist's execnet I/O thread in a worker) count as safe to
    fork beside, as the plugin's cache writer does: a test of where the product forks then sees the
    threads the product would see."""
    from tb_plugin.trace import decode_workers

    runner = tuple(t.name for t in threading.enumerate() if t is not threading.current_thread())
    monkeypatch.setattr(decode_workers, "_FORK_SAFE_THREADS", decode_workers._FORK_SAFE_THREADS + runner)


def flight_recorder_dump(path) -> bool:
    """A sample file that is a flight-recorder dump, by its first bytes as the product sniffs it
    (``samples/fr_gloo_skip``'s JSON form is named ``*.json`` but holds no trace)."""
    from tb_plugin.storage.sniff import FLIGHT_RECORDER_HEAD, looks_like_flight_recorder

    with open(path, "rb") as f:
        head = f.read(FLIGHT_RECORDER_HEAD)
    return looks_like_flight_recorder(head)


def sample(rel: str) -> Path:
    """The corpus file or folder ``rel``. Only a test marked ``corpus`` may call it: without the corpus such
    a test is skipped before it runs, so a call without it means the mark is missing."""
    path = SAMPLES / rel
    if not HAVE_CORPUS:
        pytest.fail(f"this test reads the sample corpus ({rel}) but is not marked @pytest.mark.corpus")
    if not path.exists():
        pytest.fail(f"sample missing from the corpus: {path} (docs/TESTING.md says where it comes from)")
    return path


def sample_ranks(rel: str) -> list[tuple]:
    """``(rank, worker, trace)`` for each ``*.pt.trace.json`` of the sample folder ``rel``, in file-name
    order (worker ``w<i>``), as distributed_view takes them."""
    import glob

    from tb_plugin.analysis.distributed import rank_of_info
    from tb_plugin.trace.decode import decode_trace

    ranks = []
    for i, f in enumerate(sorted(glob.glob(str(sample(rel) / "*.pt.trace.json")))):
        tr = decode_trace(open(f, "rb").read())
        ranks.append((rank_of_info(tr.distributed, f, i)[0], f"w{i}", tr))
    return ranks


def settled(client, url: str, sleep_s: float = 0.1) -> dict:
    """The JSON a Flask test ``client`` gets at ``url`` once it is no longer loading or queued (600 tries)."""
    import time

    for _ in range(600):
        doc = client.get(url).get_json()
        if doc.get("state") not in ("loading", "queued"):
            return doc
        time.sleep(sleep_s)
    raise AssertionError(f"{url} still loading")


def loaded_registry(root: Path, **kwargs):
    """A RunRegistry over ``root`` (``kwargs`` as RunRegistry takes them), scanned, every file loaded."""
    from tb_plugin.registry.runs import RunRegistry

    return load_everything(RunRegistry(str(root), **kwargs), artifacts=False)


def load_everything(reg, artifacts: bool = True):
    """``reg`` (any Registry) scanned, every file loaded and, with ``artifacts``, every artifact too."""
    reg.scan()
    for st in reg.files():
        reg.load(st)
    for art in reg.artifacts() if artifacts else ():
        reg.load_artifact(art)
    return reg


def diff_query(base_run: str, exp_run: str, worker: str = "worker0", span: str = "1") -> dict:
    """The ``diff`` route's query comparing span ``span`` of ``worker`` in two runs."""
    return {
        "base_run": base_run,
        "base_worker": worker,
        "base_span": span,
        "exp_run": exp_run,
        "exp_worker": worker,
        "exp_span": span,
    }


def write_json(path: Path, doc, gz: bool = False) -> Path:
    data = json.dumps(doc).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def x(name, cat, ts, dur, pid=1, tid=1, **args):
    """A complete ('X') event."""
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = {
            k.replace("_", " ") if k not in ("correlation", "device", "stream") else k: v for k, v in args.items()
        }
    return ev


def cli_json(*args: str) -> dict:
    """The document ``kinetoscope ARGS --json`` prints, run from the repository root (this checkout's
    ``tb_plugin``)."""
    out = subprocess.run(
        [sys.executable, "-m", "tb_plugin.cli", *args, "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(out.stdout)


def run_async(fn, *args):
    """``anyio.run(fn, *args)`` on a thread of its own: an event loop a browser test left running on
    this thread (Playwright's sync API) would make ``anyio.run`` refuse to start."""
    import concurrent.futures

    import anyio

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, fn, *args).result()
