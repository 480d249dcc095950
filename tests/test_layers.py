"""The package's layers import downward only: the test procedures (and the grid runner above
them) never import the command line (``ssdlab.cli``, ``ssdlab.commands``), which is built on
top of them from their declarations."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ssdlab

PACKAGE = Path(ssdlab.__file__).parent
#: The command line: nothing below it may import it.
COMMAND_LINE = ("ssdlab.cli", "ssdlab.commands")
BELOW_THE_COMMAND_LINE = sorted((PACKAGE / "procedures").glob("*.py")) + [PACKAGE / "grid.py"]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``path``, also those inside functions;
    ``from . import x`` counts as importing ``package.x``."""
    package = ".".join(("ssdlab",) + path.relative_to(PACKAGE).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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


def test_relative_imports_are_resolved():
    path = PACKAGE / "procedures" / "consistency.py"
    names = [m for _, m in imported_modules(path)]
    assert "ssdlab.procedures.declare.Test" in names and "ssdlab.analysis" in names


@pytest.mark.parametrize("path", BELOW_THE_COMMAND_LINE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_procedures_do_not_import_the_command_line(path):
    wrong = [f"{path.name}:{line} imports {m}" for line, m in imported_modules(path)
             if any(m == c or m.startswith(c + ".") for c in COMMAND_LINE)]
    assert not wrong, wrong
