#!/usr/bin/env python3
"""Runs one of the Rust crates' benchmarks (``cargo bench``) and records its figures, as the
Python benchmarks record theirs (benches/records/NAME.jsonl).

    benches/bench_cargo.py CRATE BENCH [-- ARGS]
    benches/bench_cargo.py ssdsim steady_state -- 32G 256G
    benches/bench_cargo.py ssdsim replay -- --write-gb 200
    benches/bench_cargo.py ssdtrace parse

The benchmark's own table is printed as it runs; its figures are read from that table by the
column names of its header line, one figure per row and column (``32G_io_per_cpu_s``,
``32G_check``...). Under benches/ab.py the crate is built and run in the tree of the build
being measured (the parent of ``PYTHONPATH``), so two builds' Rust benchmarks pair as the
Python ones do.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from records import AB_FIGURES_ENV, Recorder, ab_cargo_target  # noqa: E402

#: Header column -> figure name (with its unit), per benchmark; the first column names the row.
COLUMNS = {
    "steady_state": {"median IO/s": "io_per_s", "IO/CPU-s": "io_per_cpu_s", "WA": "wa",
                     "setup s": "setup_s", "check": "check"},
    "replay": {"commands": "commands", "wall s": "wall_s", "CPU s": "cpu_s", "cmd/CPU-s": "cmd_per_cpu_s",
               "WA": "wa", "check": "check"},
    "parse": {"median lines/s": "lines_per_s", "MB/s": "mb_per_s"},
}
#: Benchmarks whose table has one row and no row name column.
SINGLE_ROW = {"replay"}


def figures(bench: str, text: str) -> dict[str, float | str]:
    """The figures of ``bench``'s printed table ``text``: for every data row, each column named
    in :data:`COLUMNS` as ``ROW_FIGURE`` (``FIGURE`` for a one-row table). Raises ValueError
    naming the benchmark when no header line with those columns is found."""
    wanted = COLUMNS[bench]
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if all(name in line for name in wanted):
            header = line
            break
    else:
        raise ValueError(f"{bench}: no table with the columns {', '.join(wanted)} in its output")
    # Header names are two or more spaces apart (a name may hold one space); a data row has
    # as many whitespace-separated fields as the header has names.
    names = re.split(r"\s{2,}", header.strip())
    out: dict[str, float | str] = {}
    for row in lines[i + 1:]:
        fields = row.split()
        if len(fields) != len(names):
            break
        prefix = "" if bench in SINGLE_ROW else fields[0] + "_"
        for name, value in zip(names, fields):
            if name not in wanted:
                continue
            try:
                # A check hash stays a string even when its hex digits read as a number.
                out[prefix + wanted[name]] = value if name == "check" else float(value)
            except ValueError:
                out[prefix + wanted[name]] = value
    if not out:
        raise ValueError(f"{bench}: its table has no rows")
    return out


def build_tree(environ) -> tuple[Path, dict]:
    """The tree to build and run the benchmark in, and cargo's environment: this tree, or
    under benches/ab.py the measured build's (the parent of ``PYTHONPATH``), a baseline's
    built in a target directory of its own (:func:`records.ab_cargo_target`)."""
    env = dict(environ)
    tree = HERE.parent
    if environ.get(AB_FIGURES_ENV) and environ.get("PYTHONPATH"):
        tree = Path(environ["PYTHONPATH"].split(os.pathsep)[0]).resolve().parent
        if tree != HERE.parent:
            env["CARGO_TARGET_DIR"] = str(ab_cargo_target(tree))
    return tree, env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 usage="%(prog)s CRATE BENCH [-- ARGS]")
    ap.add_argument("crate", help="the crate: ssdsim or ssdtrace")
    ap.add_argument("bench", choices=sorted(COLUMNS), help="the crate's benchmark")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:split])
    args = argv[split + 1:]
    tree, env = build_tree(os.environ)
    rec = Recorder(a.bench, {"args": " ".join(args)})
    cmd = ["cargo", "bench", "-q", "-p", a.crate, "--bench", a.bench, "--", *args]
    proc = subprocess.run(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        print(f"bench_cargo.py: `{' '.join(cmd)}` in {tree} failed (exit {proc.returncode})", file=sys.stderr)
        return 1
    try:
        rec.write(figures(a.bench, proc.stdout))
    except ValueError as e:
        print(f"bench_cargo.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
