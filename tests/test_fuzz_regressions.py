"""Inputs the Python fuzz targets (fuzz/python/targets.py) once crashed on, and their seeds,
replayed through the same checks: each must now be read or refused with a clear error.
A new crash found by ``fuzz/run.sh`` goes into ``fuzz/regressions/TARGET/`` under a name
saying what it broke, and shows up here as a test of that name. (The Rust targets replay
their regressions in ``fuzz/run.sh`` itself, under libFuzzer.)"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ / "python"))

import targets  # noqa: E402

def _inputs(kind: str) -> list:
    """Every input in ``fuzz/KIND/TARGET/`` (regressions or seeds) of each Python target."""
    out = []
    for target in targets.TARGETS:
        folder = FUZZ / kind / target
        for f in sorted(folder.glob("*")) if folder.is_dir() else []:
            out.append(pytest.param(target, f, id=f"{target}/{f.name}"))
    return out


@pytest.mark.parametrize("target,path", _inputs("regressions"))
def test_regression_input_no_longer_crashes(target, path):
    targets.TARGETS[target](path.read_bytes())


@pytest.mark.parametrize("target,path", _inputs("seeds"))
def test_seed_input_passes_its_target(target, path):
    targets.TARGETS[target](path.read_bytes())


def test_the_check_catches_a_crash(monkeypatch):
    """The checks can fail: a reader error that is not the project's user-facing one is a crash."""
    from ssdlab.workload import fiojob

    def broken(*a, **k):
        raise KeyError("bug")

    monkeypatch.setattr(fiojob, "parse_job_text", broken)
    with pytest.raises(targets.FuzzCrash, match="KeyError"):
        targets.TARGETS["fiojob"](b"[a]\nrw=write\n")
