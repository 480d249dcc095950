#!/usr/bin/env python3
"""Paired A/B timing of two builds: this work tree (A) against commit REV (B, built once into
/tmp/ssdlab-ab/REV), running the same benchmark script of this tree on each in turn, A B A B
..., and printing every figure's per-pair ratio A/B and their median. Pairing keeps a ratio
meaningful while the machine's load drifts; the runs write no records.

    benches/ab.py REV [--pairs 3] -- benches/bench_randrw.py --runs 1 --ios 3000000 --warmup 1

B is the Python package and native module of REV; A is this tree's ``python/`` with the module
built there (``make setup`` or ``maturin develop --release``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from records import AB_DIR, AB_FIGURES_ENV, ab_cargo_target  # noqa: E402


def build(rev: str) -> Path:
    """The ``python/`` folder of ``rev`` with its native module built in (cached per commit)."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=10", rev], capture_output=True, text=True)
    if sha.returncode != 0:
        raise SystemExit(f"ab.py: {rev!r} is not a commit of {ROOT}: {sha.stderr.strip()}")
    tree = AB_DIR / sha.stdout.strip()
    so = tree / "python" / "ssdlab" / "_native.abi3.so"
    if so.exists():
        return tree / "python"
    if not tree.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), sha.stdout.strip()], check=True)
    wheels = AB_DIR / "wheels" / tree.name
    print(f"building {rev} ({tree.name}) in {tree} ...", file=sys.stderr, flush=True)
    subprocess.run([str(Path(sys.executable).parent / "maturin"), "build", "--release", "-q", "-o", str(wheels)],
                   cwd=tree, check=True, env={**os.environ, "CARGO_TARGET_DIR": str(ab_cargo_target(tree))})
    wheel = max(wheels.glob("*.whl"), key=lambda p: p.stat().st_mtime)
    subprocess.run(["unzip", "-o", "-q", "-j", str(wheel), "ssdlab/_native.abi3.so", "-d", str(so.parent)], check=True)
    return tree / "python"


def run(pythonpath: Path, cmd: list[str]) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        env = {**os.environ, "PYTHONPATH": str(pythonpath), AB_FIGURES_ENV: f.name}
        proc = subprocess.run([sys.executable, *cmd], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"ab.py: {' '.join(cmd)} failed with PYTHONPATH={pythonpath}:\n{proc.stderr[-2000:]}")
        return json.loads(Path(f.name).read_text() or "{}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 usage="%(prog)s REV [--pairs N] -- BENCHMARK [OPTIONS]")
    ap.add_argument("rev", help="the baseline commit (B)")
    ap.add_argument("--pairs", type=int, default=3, help="A/B pairs (default: %(default)s)")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:split])
    cmd = argv[split + 1:]
    if not cmd:
        ap.error("name the benchmark after --, e.g. -- benches/bench_randrw.py --runs 1")
    base = build(a.rev)
    mine = ROOT / "python"
    ratios: dict[str, list[float]] = {}
    for i in range(a.pairs):
        order = [("A", mine), ("B", base)] if i % 2 == 0 else [("B", base), ("A", mine)]
        got = {arm: run(path, cmd) for arm, path in order}
        load = os.getloadavg()[0]
        line = []
        for k, v in got["A"].items():
            old = got["B"].get(k)
            if isinstance(v, (int, float)) and isinstance(old, (int, float)) and old:
                ratios.setdefault(k, []).append(v / old)
                line.append(f"{k} {v:,.4g}/{old:,.4g}")
        print(f"pair {i + 1} (load {load:.1f}): " + "; ".join(line), flush=True)
    print(f"A = this tree, B = {a.rev}; median of {a.pairs} per-pair ratios A/B:")
    for k, r in ratios.items():
        print(f"  {k:<34} {statistics.median(r):6.3f}  (min {min(r):.3f}, max {max(r):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
