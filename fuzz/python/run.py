"""Runs one Python fuzz target under atheris (libFuzzer for Python, coverage of ssdlab's code).

    python fuzz/python/run.py TARGET [libFuzzer options and corpus directories...]

TARGET is one of fiojob, fio_logs, profiles (see targets.py for what counts as a crash).
A crash prints the exception and the input, writes it as ``crash-*`` (libFuzzer's
``-artifact_prefix``) and exits non-zero. ``fuzz/run.sh`` passes the time budget, the
corpus directories and the limits.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "python"))

import atheris  # noqa: E402

with atheris.instrument_imports(include=["ssdlab"]):
    import ssdlab.fio_logs  # noqa: E402,F401
    import ssdlab.profiles  # noqa: E402,F401
    import ssdlab.workload.fiojob  # noqa: E402,F401

import targets  # noqa: E402


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in targets.TARGETS:
        sys.exit(f"usage: run.py {{{','.join(targets.TARGETS)}}} [libFuzzer args]")
    check = targets.TARGETS[sys.argv[1]]
    # Relative `include`s of job files resolve in the sandbox, not wherever we were started.
    os.chdir(targets.SANDBOX)

    def one_input(data: bytes) -> None:
        check(data)

    atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
