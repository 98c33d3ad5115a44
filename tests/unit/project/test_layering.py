"""The import rules of tb_plugin (docs/ARCHITECTURE.md), checked on the source: every ``import`` and
``from … import`` of a tb_plugin module, at module level or inside a function, is an edge.

- no import cycles between modules;
- ``storage/`` imports nothing of ours outside ``storage/``;
- ``trace/`` imports nothing outside ``trace/``;
- ``artifacts/`` imports only ``storage/``, ``trace/`` and itself;
- ``analysis/`` imports only ``trace/``, ``artifacts/`` and itself;
- ``registry/`` never imports ``api/``, ``cli``, ``plugin``; ``api/`` never imports ``cli`` or ``plugin``;
- the top (the ``cli`` package, one module per command; ``plugin``, ``standalone``) is imported by nobody
  else; ``standalone`` (``kinetoscope serve``) mounts ``plugin``'s route table, and ``cli`` starts ``standalone``;
- ``interfaces/`` (notebook API, MCP server) imports the layers up to ``api/``, but never the HTTP routes
  (``api.routes``, ``api.routes_hang``): what they share with the routes (the tables' columns, paging)
  lives in modules of its own; ``public/`` only ``interfaces/``.
- ``errors`` (the error hierarchy), ``settings`` (the settings record) and ``logs`` (the module loggers)
  import nothing of ours, and every layer may import them.
"""

from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[3] / "tb_plugin"

# layer → the layers (top-level folders or modules of tb_plugin) it may import besides itself
ALLOWED = {
    "storage": set(),
    "trace": set(),
    "artifacts": {"storage", "trace"},
    "analysis": {"trace", "artifacts"},
    "registry": {"storage", "trace", "artifacts", "analysis"},
    "api": {"storage", "trace", "artifacts", "analysis", "registry"},
    # the notebook API and the MCP server: read the registry (and api/'s column lists and paging, never its
    # routes: ROUTES_ONLY), never cli/plugin
    "interfaces": {"storage", "trace", "artifacts", "analysis", "registry", "api"},
    "public": {"interfaces"},  # public/kinetoscope: the notebook API's published name (setup.py)
    "errors": set(),
    "settings": set(),
    "logs": set(),
}
BASE = ("errors", "settings", "logs")  # leaves every layer may import
TOP = ("cli", "plugin", "standalone")
# the HTTP routes: the routes' own, imported by plugin (and the tests), never by the notebook API or MCP
ROUTES_ONLY = ("tb_plugin.api.routes", "tb_plugin.api.routes_hang")


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: pathlib.Path, root: pathlib.Path, known: set[str]) -> set[str]:
    """The tb_plugin modules ``path`` imports (anywhere in the file), resolved to known module names."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # "from pkg import mod" is an edge to pkg.mod; "from mod import name" to mod
            targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix for a in node.names]
        for t in targets:
            while t and t not in known:  # "pkg.mod.func" → "pkg.mod"
                t = t.rpartition(".")[0]
            if t and t != name and t.split(".")[0] == root.name:
                out.add(t)
    return {t for t in out if t not in package_chain(name)}


def package_chain(name: str) -> set[str]:
    """The packages containing ``name`` (importing a submodule runs them: not an edge of its own)."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def graph(root: pathlib.Path = PACKAGE) -> dict[str, set[str]]:
    files = [p for p in root.rglob("*.py") if "static" not in p.parts]
    known = {module_name(p, root) for p in files}
    return {module_name(p, root): imports_of(p, root, known) for p in files}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def violations(edges: dict[str, set[str]]) -> list[str]:
    out = []
    for src, targets in edges.items():
        mine = layer(src)
        for dst in targets:
            theirs = layer(dst)
            if theirs == mine or dst == "tb_plugin" or theirs in BASE:
                continue
            if mine in ALLOWED and theirs not in ALLOWED[mine]:
                out.append(f"{src} imports {dst}")
            elif theirs in TOP and mine not in TOP:  # the top: imported by nobody
                out.append(f"{src} imports {dst}")
            elif dst in ROUTES_ONLY and mine in ("interfaces", "public"):
                out.append(f"{src} imports {dst}")
    return sorted(out)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), and self-loops."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_layers_import_only_downwards():
    assert violations(graph()) == []


def test_the_checker_sees_function_level_imports_and_cycles(tmp_path):
    """The checker itself: a function-level import is an edge, a two-module cycle is found, and an
    upward import from storage/ is a violation."""
    root = tmp_path / "tb_plugin"
    (root / "storage").mkdir(parents=True)
    (root / "registry").mkdir()
    for init in (root, root / "storage", root / "registry"):
        (init / "__init__.py").write_text("")
    (root / "storage" / "fs.py").write_text("def f():\n    from ..registry import runs\n")
    (root / "registry" / "runs.py").write_text("from ..storage.fs import f\n")
    edges = graph(root)
    assert edges["tb_plugin.storage.fs"] == {"tb_plugin.registry.runs"}
    assert cycles(edges) == [["tb_plugin.registry.runs", "tb_plugin.storage.fs"]]
    assert violations(edges) == ["tb_plugin.storage.fs imports tb_plugin.registry.runs"]


def test_the_checker_refuses_the_routes_to_the_notebook_and_mcp():
    """The notebook API and the MCP server take the tables' columns from ``api.table_columns``, never from
    the HTTP routes; the CLI and the plugin may import the routes."""
    edges = {
        "tb_plugin.interfaces.notebook": {"tb_plugin.api.routes", "tb_plugin.api.table_columns"},
        "tb_plugin.interfaces.mcp_tools": {"tb_plugin.api.routes_hang"},
        "tb_plugin.plugin": {"tb_plugin.api.routes"},
    }
    assert violations(edges) == [
        "tb_plugin.interfaces.mcp_tools imports tb_plugin.api.routes_hang",
        "tb_plugin.interfaces.notebook imports tb_plugin.api.routes",
    ]


MAX_MODULE_LINES = 530  # as `ruff format` lays code out (400 in the denser hand layout before it)


def test_no_module_over_the_line_limit():
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
