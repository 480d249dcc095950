"""The package's layers follow the data's path and import downward only: the base (units,
errors, the target contract...) under the results store, the workloads, the targets, the
analysis, the charts and report, the test procedures, the studies built of them (grid, fit)
and the command line on top. No module imports one on a higher floor, and no modules import
each other in a circle (imports inside functions count; the ``if __name__ == "__main__":``
block of a module run as a script does not, as it runs in ``__main__``, not in the module)."""
from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

import ssdlab

PACKAGE = Path(ssdlab.__file__).parent

#: The floors, lowest first: module names (fnmatch patterns; a package is its ``__init__``).
#: A module may import modules of its own floor or a lower one.
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("ssdlab", "ssdlab._native", "ssdlab.errors", "ssdlab.units", "ssdlab.stop", "ssdlab.params",
              "ssdlab.files", "ssdlab.profiles", "ssdlab.traces", "ssdlab.targets.base", "ssdlab.progress",
              "ssdlab.columns")),
    ("results store", ("ssdlab.journal", "ssdlab.results")),
    ("workloads", ("ssdlab.workload", "ssdlab.workload.*", "ssdlab.fio_logs")),
    ("targets", ("ssdlab.targets", "ssdlab.targets.*")),
    ("analysis", ("ssdlab.analysis", "ssdlab.pts.spec", "ssdlab.pts.steady")),
    ("charts and report", ("ssdlab.charts", "ssdlab.report", "ssdlab.plots")),
    ("procedures", ("ssdlab.procedures", "ssdlab.procedures.*", "ssdlab.pts", "ssdlab.pts.*")),
    ("studies", ("ssdlab.grid", "ssdlab.fit", "ssdlab.fit.*")),
    ("command line", ("ssdlab.cli", "ssdlab.entry", "ssdlab.__main__", "ssdlab.commands", "ssdlab.commands.*")),
]


def module_name(path: Path) -> str:
    parts = ("ssdlab",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "vendor" not in p.relative_to(PACKAGE).parts}
MODULES.setdefault("ssdlab._native", PACKAGE / "_native.abi3.so")


def _script_block(node: ast.AST) -> bool:
    """``if __name__ == "__main__":``"""
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and ast.unparse(node.test).replace("'", '"') == '__name__ == "__main__"')


def imported_modules(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute name) of every import in ``path`` (or in ``source``, read as that file),
    also those inside functions but not those of its script block; ``from . import x`` counts
    as importing ``package.x``."""
    package = ".".join(("ssdlab",) + path.relative_to(PACKAGE).parent.parts)
    tree = ast.parse(path.read_text() if source is None else source, str(path))
    skipped = {id(n) for block in tree.body if _script_block(block) for n in ast.walk(block)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(node.lineno, f"{module}.{a.name}") for a in node.names]
    return found


def _module_of(name: str) -> str | None:
    """The package's module an imported name lives in (``ssdlab.units.parse_size`` ->
    ``ssdlab.units``), None outside the package."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {module it imports: line of the first such import}, within the package."""
    graph: dict[str, dict[str, int]] = {}
    for name, path in MODULES.items():
        edges = graph.setdefault(name, {})
        if path.suffix != ".py":
            continue
        for line, imported in imported_modules(path):
            target = _module_of(imported)
            if target is not None and target != name:
                edges.setdefault(target, line)
    return graph


def floor_of(module: str) -> int | None:
    for i, (_, patterns) in enumerate(FLOORS):
        if any(fnmatch.fnmatchcase(module, p) for p in patterns):
            return i
    return None


def upward_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    """Each import of a module on a higher floor than the importer's."""
    out = []
    for module, edges in graph.items():
        for target, line in edges.items():
            if floor_of(target) > floor_of(module):
                out.append(f"{module}:{line} ({FLOORS[floor_of(module)][0]}) imports {target} "
                           f"({FLOORS[floor_of(target)][0]})")
    return out


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The groups of modules that import each other in a loop (strongly connected
    components of more than one module, or a module importing itself), Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in graph.get(v, ()):
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_relative_imports_are_resolved():
    path = PACKAGE / "procedures" / "consistency.py"
    names = [m for _, m in imported_modules(path)]
    assert "ssdlab.procedures.declare.Test" in names and "ssdlab.analysis" in names
    graph = import_graph()
    assert "ssdlab.procedures.declare" in graph["ssdlab.procedures.consistency"]
    assert "ssdlab.stop" in graph["ssdlab.entry"] and "ssdlab.cli" in graph["ssdlab.entry"]  # inside main()


def test_every_module_has_a_floor():
    assert len(MODULES) > 60
    assert [m for m in MODULES if floor_of(m) is None] == []


def test_no_module_imports_a_higher_floor():
    assert upward_imports(import_graph()) == []


def test_no_modules_import_each_other_in_a_circle():
    assert circles(import_graph()) == []


def test_the_checks_catch_a_planted_upward_import_and_circle():
    graph = import_graph()
    graph["ssdlab.units"]["ssdlab.cli"] = 7  # the base importing the command line
    assert upward_imports(graph) == ["ssdlab.units:7 (base) imports ssdlab.cli (command line)"]
    assert any({"ssdlab.units", "ssdlab.cli"} <= set(c) for c in circles(graph))
    graph = import_graph()
    graph["ssdlab.analysis"]["ssdlab.pts.steady"] = 3  # same floor, but around in a loop
    graph["ssdlab.pts.steady"]["ssdlab.analysis"] = 5
    assert upward_imports(graph) == [] and circles(graph) == [["ssdlab.analysis", "ssdlab.pts.steady"]]


def test_imports_inside_functions_count_and_the_script_block_does_not():
    source = ("from .. import units\n\ndef f():\n    from ..procedures import run\n\n"
              "if __name__ == '__main__':\n    from ssdlab.entry import main\n")
    found = imported_modules(PACKAGE / "targets" / "planted.py", source)
    assert found == [(1, "ssdlab.units"), (4, "ssdlab.procedures.run")]


def hidden_imports(path: Path, source: str | None = None) -> list[str]:
    """Imports inside a function of a package module that the file also imports at its top:
    a dependency written twice, the second time where it hides (or works around a circle).
    Imports under ``if TYPE_CHECKING:`` are not at the top (they do not run)."""
    text = path.read_text() if source is None else source
    tree = ast.parse(text, str(path))
    top_lines = {n.lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    top, inner = {}, {}
    for line, imported in imported_modules(path, text):
        target = _module_of(imported)
        if target is not None:
            (top if line in top_lines else inner).setdefault(target, line)
    return [f"{module_name(path)}:{line} imports {m} again" for m, line in inner.items() if m in top]


def test_no_module_imports_inside_a_function_what_it_imports_at_its_top():
    assert [h for name, path in MODULES.items() if path.suffix == ".py" for h in hidden_imports(path)] == []


def test_the_hidden_import_check_catches_a_planted_one():
    source = ("from .. import fio_logs\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import units\n\n"
              "def f():\n    from ..fio_logs import read_log\n    from .. import units\n")
    assert hidden_imports(PACKAGE / "targets" / "planted.py", source) == [
        "ssdlab.targets.planted:7 imports ssdlab.fio_logs again"]


#: The command line: nothing below it may import it.
COMMAND_LINE = ("ssdlab.cli", "ssdlab.commands")
BELOW_THE_COMMAND_LINE = sorted((PACKAGE / "procedures").glob("*.py")) + [PACKAGE / "grid.py"]


@pytest.mark.parametrize("path", BELOW_THE_COMMAND_LINE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_procedures_do_not_import_the_command_line(path):
    wrong = [f"{path.name}:{line} imports {m}" for line, m in imported_modules(path)
             if any(m == c or m.startswith(c + ".") for c in COMMAND_LINE)]
    assert not wrong, wrong
