"""The one registry interface (registry/interface.py): both registries implement all of it, a registry
missing a method cannot be constructed, every registry method the interfaces call is in it, and under
``--logdir_spec`` (MultiRegistry) the Trace view's routes answer as they do for one logdir."""

from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path

import pytest
from conftest import load_everything
from synth.snapshot_trace import paired_snapshot, paired_trace

from tb_plugin import api
from tb_plugin.registry.interface import Registry
from tb_plugin.registry.multi import MultiRegistry
from tb_plugin.registry.runs import RunRegistry

PACKAGE = Path(__file__).resolve().parents[3] / "tb_plugin"
# the layers that hold a registry: every ``registry.<name>`` they use must be in the interface
CALLERS = ["api", "interfaces", "plugin.py", "standalone.py", "registry/report.py", "registry/graph_siblings.py"]
NOT_METHODS = {"logdir"}  # attributes of the interface that are not methods
# of the RunRegistry an interface constructs itself: read by interfaces/mcp_app.py; the spare snapshot
# reader kept by cli/report.py and interfaces/notebook.py
OWN_RUN_REGISTRY = {"fs", "root", "keep_spare_reader"}


def test_both_registries_implement_the_whole_interface(tmp_path):
    assert issubclass(RunRegistry, Registry) and issubclass(MultiRegistry, Registry)
    assert not RunRegistry.__abstractmethods__ and not MultiRegistry.__abstractmethods__
    RunRegistry(str(tmp_path))
    MultiRegistry([("a", str(tmp_path)), ("b", str(tmp_path))])


@pytest.mark.parametrize("missing", sorted(Registry.__abstractmethods__))
def test_a_registry_missing_one_method_is_not_constructed(missing):
    """Dropping any one method of the interface from a complete registry is a TypeError at construction."""
    methods = {name: (lambda self, *a, **k: None) for name in Registry.__abstractmethods__ if name != missing}
    if "error" in methods:
        methods["error"] = property(lambda self: None)
    incomplete = type("Incomplete", (Registry,), methods)
    with pytest.raises(TypeError, match=missing):
        incomplete()
    complete = type("Complete", (incomplete,), {missing: lambda self, *a, **k: None})
    complete()


def _used_names(path: Path) -> set[str]:
    """``X`` of every ``registry.X`` / ``self.registry.X`` / ``self._registry.X`` in a module."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute):
            holder = node.value
            held = (
                holder.id
                if isinstance(holder, ast.Name)
                else holder.attr
                if isinstance(holder, ast.Attribute) and isinstance(holder.value, ast.Name)
                else None
            )
            if held in ("registry", "_registry"):
                names.add(node.attr)
    return names


def test_every_registry_method_the_interfaces_call_is_in_the_interface():
    files = [p for c in CALLERS for p in ((PACKAGE / c).rglob("*.py") if (PACKAGE / c).is_dir() else [PACKAGE / c])]
    used = set().union(*(_used_names(p) for p in files))
    assert {"views", "snapshot_counters", "snapshot_trace", "critical_path_overlay"} <= used  # the scan sees calls
    assert used - set(Registry.__abstractmethods__) - NOT_METHODS - OWN_RUN_REGISTRY == set()


def _logdir(root: Path, shift_us: int = 0) -> Path:
    """A run ``paired``: a trace and an allocator snapshot of the same process (tests/synth/snapshot_trace.py)."""
    (root / "paired").mkdir(parents=True)
    (root / "paired" / "host.pt.trace.json").write_text(json.dumps(paired_trace()))
    (root / "paired" / "rank0_memory_snapshot.pickle").write_bytes(pickle.dumps(paired_snapshot(shift_us), protocol=5))
    return root


def _trace_view(reg: Registry, run: str) -> dict:
    """The Trace view's requests for the one trace of ``run`` (and its snapshot), as JSON text."""
    file = {"run": run, "worker": "host", "span": "1"}
    snap = {"run": run, "path": f"{run}/rank0_memory_snapshot.pickle"}
    answers = {
        "timeline_meta": api.timeline_meta(reg, file),
        "timeline": api.timeline(reg, dict(file, width_px="800")),
        "critical_path": api.critical_path(reg, file),
        "snapshot_attribution": api.snapshot_attribution(reg, snap),
        "snapshot_ranks": api.snapshot_ranks(reg, snap),
        "overview": api.overview(reg, file),
        "graphs": api.graphs(reg, file),
    }
    for name, (code, _) in answers.items():
        assert code == 200, (run, name)
    return answers


def test_logdir_spec_answers_the_trace_view_like_one_logdir(tmp_path):
    """Two logdirs under MultiRegistry: the timeline (with the snapshot's counter track), the
    critical-path overlay, snapshot attribution and ranks answer 200, and what one logdir answers
    alone, the run names aside."""
    a, b = _logdir(tmp_path / "a"), _logdir(tmp_path / "b")
    multi = load_everything(MultiRegistry([("a", str(a)), ("b", str(b))]))
    single = load_everything(RunRegistry(str(a)))
    alone = json.dumps(_trace_view(single, "paired"), sort_keys=True)
    for name in ("a", "b"):
        both = _trace_view(multi, f"{name}/paired")
        counters = both["timeline"][1]["counters"]
        assert any(c.get("snapshot") == f"{name}/paired/rank0_memory_snapshot.pickle" for c in counters)
        assert both["snapshot_attribution"][1]["trace"]["path"] == f"{name}/paired/host.pt.trace.json"
        assert json.dumps(both, sort_keys=True).replace(f"{name}/paired", "paired") == alone


def test_a_logdir_that_could_not_be_opened_has_no_filesystem_and_says_why(tmp_path):
    """``opened_fs`` (what a file's load and ``fs_of`` use) raises the registry's own ``error`` when
    the logdir could not be opened, and is the listing's filesystem when it could."""
    from tb_plugin.storage.remote import StorageError

    bad = RunRegistry("ftp://127.0.0.1:1/logs")  # an unsupported scheme: never opened
    assert bad.fs is None and bad.error and "unsupported URL scheme" in bad.error
    with pytest.raises(StorageError, match="unsupported URL scheme"):
        _ = bad.opened_fs
    good = RunRegistry(str(tmp_path))
    assert good.opened_fs is good.fs is not None
