"""The package's rooms and the arrows between them, read from its own source.

Imports only go downwards (numbers, then bytes, then Dask, then the study, then the faces), no two
modules import each other (directly or around a circle), a module imports at its top (an import inside a
function is an optional dependency, or a cost the module's docstring explains), no module takes another's
private name, and every module says what it exports in ``__all__``. The study package holds no class over
~200 lines and no function over ~80 (docstrings aside).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "biasdask"

#: the most lines of a class, and of a function (its docstring not counted), in the study package
MAX_CLASS, MAX_FUNCTION = 200, 80

#: floors, lowest first: a module may import from its own floor or one below, never above
FLOORS = (
    (
        "biasdask._version",
        "biasdask._interrupt",
        "biasdask.errors",
        "biasdask._dask_config",
        "biasdask._numba_cache",
        "biasdask.progress",
    ),
    ("biasdask._calls", "biasdask.stats", "biasdask.lexicon"),
    ("biasdask.io",),
    ("biasdask.engine",),
    ("biasdask.study",),
    ("biasdask.tables", "biasdask.plot", "biasdask.report", "biasdask.demo", "biasdask.cli", "biasdask"),
)

#: third-party packages a user may not have (extras of pyproject.toml) or that one platform lacks, and
#: biasdask's module that needs one of them (plot: matplotlib)
OPTIONAL = {"aiohttp", "botocore", "dask_gateway", "fcntl", "matplotlib", "sklearn", "wordfreq", "biasdask.plot"}

#: modules whose imports inside functions are a cost their docstring explains (the word after the module)
DEFERRED = {
    "biasdask.cli": "imports what it runs",
    "biasdask.tables": "scipy.stats",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _floor(module: str) -> int:
    for i, names in enumerate(FLOORS):
        if module in names or any(module.startswith(n + ".") for n in names if n != "biasdask"):
            return i
    raise AssertionError(f"{module} is on no floor of FLOORS")


def _imports(tree: ast.Module, module: str) -> list[tuple[ast.AST, str, list[str]]]:
    """(node, imported module, names taken from it) of every import of a biasdask module."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("biasdask"):
            names = [a.name for a in node.names]
            # "from biasdask.io import results" imports the module biasdask.io.results
            submodules = [f"{node.module}.{n}" for n in names if f"{node.module}.{n}" in MODULES]
            if submodules:
                out += [(node, m, []) for m in submodules]
            else:
                out.append((node, node.module, names))
        elif isinstance(node, ast.Import):
            out += [(node, a.name, []) for a in node.names if a.name.startswith("biasdask")]
    return [(node, target, names) for node, target, names in out if target != module]


def _graph() -> dict[str, set[str]]:
    return {m: {target for _, target, _ in _imports(tree, m)} for m, tree in TREES.items()}


def _in_functions(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return found


def test_imports_only_go_downwards():
    upward = [
        f"{m} (floor {_floor(m)}) imports {t} (floor {_floor(t)})"
        for m, targets in _graph().items()
        for t in targets
        if t != "biasdask" and _floor(t) > _floor(m)
    ]
    assert not upward, "\n".join(upward)


def test_no_module_imports_another_back_even_around_a_circle():
    graph = _graph()
    circles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, circles


def test_a_module_imports_at_its_top_unless_an_optional_dependency_or_a_documented_cost():
    found = []
    for m, tree in TREES.items():
        for node in _in_functions(tree):
            top = (node.module or "") if isinstance(node, ast.ImportFrom) else node.names[0].name
            names = {f"{top}.{a.name}" for a in node.names} if isinstance(node, ast.ImportFrom) else {top}
            if top.split(".")[0] in OPTIONAL or names & OPTIONAL:
                continue
            if m in DEFERRED and DEFERRED[m].split()[0] in (ast.get_docstring(tree) or ""):
                continue
            found.append(f"{MODULES[m].relative_to(PACKAGE.parent)}:{node.lineno} imports {top}")
    assert not found, "\n".join(found)


def test_no_module_takes_a_private_name_of_another():
    found = [
        f"{MODULES[m].relative_to(PACKAGE.parent)}:{node.lineno} takes {name} from {target}"
        for m, tree in TREES.items()
        for node, target, names in _imports(tree, m)
        for name in names
        if name.startswith("_") and not name.endswith("__")
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_lists_its_exports(module):
    tree = TREES[module]
    exported = [
        node
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        and any(
            isinstance(t, ast.Name) and t.id == "__all__"
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
    ]
    assert exported, f"{module} has no __all__"
    try:
        names = ast.literal_eval(exported[0].value)
    except ValueError:  # a package's public names imported lazily (biasdask, biasdask.stats): test_api.py
        return
    defined = {
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not n.name.startswith("_")
    }
    missing = sorted(defined - set(names))
    assert not missing, f"{module}: public but not in __all__: {missing}"


def test_the_study_has_no_long_class_or_function():
    long = []
    for m, tree in TREES.items():
        if not m.startswith("biasdask.study"):
            continue
        for node in ast.walk(tree):
            limit = MAX_CLASS if isinstance(node, ast.ClassDef) else MAX_FUNCTION
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                doc = node.body[0]
                if (
                    isinstance(doc, ast.Expr)
                    and isinstance(doc.value, ast.Constant)
                    and isinstance(doc.value.value, str)
                ):
                    size -= doc.end_lineno - doc.lineno + 1
                if size > limit:
                    long.append(f"{m}.{node.name}: {size} lines (at most {limit})")
    assert not long, "\n".join(long)
