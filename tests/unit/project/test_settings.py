"""The settings record (``tb_plugin/settings.py``): every ``KINETOSCOPE_*`` variable parsed in one
place, a setting given explicitly to an entry point wins over the environment, and no module below
the entry points reads these variables."""

from __future__ import annotations

import ast
import pathlib

from tb_plugin.interfaces import mcp_bound, notebook
from tb_plugin.plugin import KinetoscopePlugin
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.settings import ENV_NAMES, Settings, current
from tb_plugin.storage.read import default_max_bytes, max_trace_bytes

PACKAGE = pathlib.Path(__file__).resolve().parents[3] / "tb_plugin"
# modules that touch os.environ for other reasons: a child process's environment, the storage emulators',
# numpy's NUMPY_MADVISE_HUGEPAGE (trace/heap.py)
OTHER_ENVIRONMENT = {"artifacts/child_pipes.py", "artifacts/flight_recorder.py", "storage/remote.py", "trace/heap.py"}


def test_every_variable_parsed_with_its_default():
    assert Settings.from_env({}) == Settings()
    env = {
        "KINETOSCOPE_MEMORY_BUDGET_MB": "512",
        "KINETOSCOPE_MAX_TRACE_BYTES": "1e8",
        "KINETOSCOPE_STREAM_ABOVE_BYTES": "0",
        "KINETOSCOPE_DECODE_WORKERS": "0",
        "KINETOSCOPE_CACHE_DIR": "/c",
        "KINETOSCOPE_EXECUTOR": " local:2 ",
        "KINETOSCOPE_MCP_MAX_ANSWER_BYTES": "8192",
        "KINETOSCOPE_TABLES": "records",
    }
    assert set(env) == set(ENV_NAMES.values())
    got = Settings.from_env(env)
    assert got == Settings(512.0, 100_000_000, 0, 1, "/c", "local:2", 8192, "records")
    assert got.memory_budget_bytes == 512 << 20
    bad = dict.fromkeys(env, "x")  # a malformed number is the default, never a crash (text is text)
    assert Settings.from_env(bad) == Settings(cache_dir="x", executor="x")
    assert Settings.from_env({"KINETOSCOPE_MAX_TRACE_BYTES": "1e999"}).max_trace_bytes is None  # inf: no limit
    assert Settings.from_env({"KINETOSCOPE_MAX_TRACE_BYTES": "-5"}).max_trace_bytes is None


def test_settings_are_an_immutable_value():
    """Equal and hashed by value, a dataclass's repr, immutable, pickled and copied whole."""
    import copy
    import pickle

    import pytest

    a = Settings(memory_budget_mb=7, executor="local:1")
    assert a == Settings(7, None, None, None, None, "local:1") and hash(a) == hash(Settings(7, executor="local:1"))
    assert a != Settings() and a != (7, None, None, None, None, "local:1", 32 << 10, "dataframe")
    assert repr(a) == (
        "Settings(memory_budget_mb=7, max_trace_bytes=None, stream_above_bytes=None, decode_workers=None, "
        "cache_dir=None, executor='local:1', mcp_max_answer_bytes=32768, tables='dataframe')"
    )
    with pytest.raises(AttributeError):
        a.executor = "dask://x:1"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del a.cache_dir
    with pytest.raises(AttributeError):
        a.other = 1  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(a)) == a == copy.copy(a) == copy.deepcopy(a)
    assert tuple(ENV_NAMES) == Settings.__slots__  # every setting has its variable, in the same order


def test_a_library_call_reads_the_environment_as_it_is(monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", str(3 << 20))
    monkeypatch.setenv("KINETOSCOPE_MCP_MAX_ANSWER_BYTES", "100")  # below the floor: 4096
    monkeypatch.setenv("KINETOSCOPE_TABLES", "records")
    assert current().max_trace_bytes == max_trace_bytes() == 3 << 20
    assert mcp_bound.max_answer_bytes() == 4096
    assert notebook.table([{"a": 1}], ["a"]) == [{"a": 1}]
    monkeypatch.delenv("KINETOSCOPE_MAX_TRACE_BYTES")
    assert max_trace_bytes() == default_max_bytes()


def test_explicit_settings_override_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("KINETOSCOPE_MEMORY_BUDGET_MB", "99")
    monkeypatch.setenv("KINETOSCOPE_EXECUTOR", "dask://127.0.0.1:1")
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "from-env"))
    chosen = Settings(memory_budget_mb=7, executor="local:1", cache_dir=str(tmp_path / "given"))
    reg = RunRegistry(str(tmp_path), settings=chosen)
    assert reg._loader.view_cache.budget_bytes() == 7 << 20 and reg.executor == "local:1"

    class Context:
        logdir = str(tmp_path)
        flags = None

    tab = KinetoscopePlugin(Context(), settings=chosen)  # type: ignore[arg-type]
    try:
        registry = tab._registry
        assert isinstance(registry, RunRegistry) and registry.settings is chosen
        assert registry._loader.view_cache.budget_bytes() == 7 << 20 and registry.executor == "local:1"
        assert registry.cache is not None and registry.cache.root.startswith(str(tmp_path / "given"))
    finally:
        tab._registry.stop()
    # without explicit settings the entry point reads the environment (once)
    tab = KinetoscopePlugin(Context())  # type: ignore[arg-type]
    try:
        assert tab._registry._loader.view_cache.budget_bytes() == 99 << 20
        assert tab._registry.cache.root.startswith(str(tmp_path / "from-env"))
    finally:
        tab._registry.stop()


def _reads_environment(tree: ast.AST) -> bool:
    """Whether the module touches ``os.environ`` / ``os.getenv`` (or imports them from ``os``)."""
    names = {"environ", "environb", "getenv", "getenvb"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names and getattr(node.value, "id", None) == "os":
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "os" and any(a.name in names for a in node.names):
            return True
    return False


def test_no_module_below_the_entry_points_reads_the_variables():
    readers = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "settings.py" or "static" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        if _reads_environment(tree):
            readers.add(rel)
            named = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)} & set(ENV_NAMES.values())
            assert not named, f"{rel} reads the environment and names {sorted(named)}"
    assert readers <= OTHER_ENVIRONMENT, sorted(readers - OTHER_ENVIRONMENT)
