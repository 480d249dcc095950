"""Shared fixtures. Tests use small simulated drives (a few GiB) so the suite stays fast."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"

#: A scaled-down default drive: same dies, planes, pages and timings, 64 blocks per plane
#: (8 GiB of NAND), 7 GiB user capacity (12.5 % spare).
SMALL_DRIVE = ["blocks_per_plane=64", "user_capacity_bytes=7GiB"]


def set_args(overrides=SMALL_DRIVE) -> list[str]:
    out: list[str] = []
    for kv in overrides:
        out += ["--set", kv]
    return out


def run_cli(*args: str, check: bool = True, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs ``python -m ssdlab.cli ARGS`` in a subprocess (the real command line)."""
    proc = subprocess.run([sys.executable, "-m", "ssdlab.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    if check and proc.returncode != 0:
        raise AssertionError(f"ssdlab {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def small_drive() -> list[str]:
    return list(SMALL_DRIVE)
