"""``ssdlab/_native.pyi`` describes the compiled module: the same public names, the same
methods and attributes of each class, the same parameters of each function and method
(read from the stub with :mod:`ast`, from the module with :mod:`inspect`)."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from ssdlab import _native

STUB = Path(_native.__file__).with_name("_native.pyi")


def _public(names) -> set[str]:
    return {n for n in names if not n.startswith("_")}


def _stub() -> dict[str, ast.AST]:
    tree = ast.parse(STUB.read_text())
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
    return out


def _params(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.args + fn.args.kwonlyargs if a.arg != "self"]


def _native_params(obj) -> list[str] | None:
    try:
        return [p for p in inspect.signature(obj).parameters if p != "self"]
    except (TypeError, ValueError):
        return None  # no text signature (a getter)


def test_the_stub_names_what_the_module_has():
    stub = _stub()
    assert _public(stub) == _public(dir(_native)) - {"annotations"}, "stub and module differ"


@pytest.mark.parametrize("name", sorted(n for n, node in _stub().items() if isinstance(node, ast.FunctionDef)))
def test_functions_take_the_stubs_parameters(name):
    assert _native_params(getattr(_native, name)) == _params(_stub()[name])


@pytest.mark.parametrize("name", sorted(n for n, node in _stub().items() if isinstance(node, ast.ClassDef)))
def test_classes_have_the_stubs_methods(name):
    cls = getattr(_native, name)
    node = _stub()[name]
    methods = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
    own = _public(n for n in vars(cls) if not isinstance(getattr(cls, n), type))
    if issubclass(cls, BaseException):
        assert not methods and not own - {"args", "with_traceback", "add_note"}, name
        return
    assert _public(methods) == own, name
    for m, f in methods.items():
        if m == "__init__":
            continue
        params = _native_params(getattr(cls, m))
        if params is not None:
            assert params == _params(f), f"{name}.{m}"
    if "__init__" in methods:
        assert _native_params(cls) == _params(methods["__init__"]), f"{name}()"


def test_the_check_catches_a_stub_that_lacks_a_method(monkeypatch, tmp_path):
    lacking = tmp_path / "_native.pyi"
    lacking.write_text(STUB.read_text().replace("    def counters(self) -> dict[str, Any]: ...\n", ""))
    monkeypatch.setattr(__import__(__name__), "STUB", lacking)
    with pytest.raises(AssertionError, match="Simulator"):
        test_classes_have_the_stubs_methods("Simulator")
