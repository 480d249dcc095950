"""Shared fixtures. Tests use small simulated drives (a few GiB) so the suite stays fast."""
from __future__ import annotations

import os
import shutil
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


def loop_problem(tools: tuple[str, ...] = ("fio",)) -> str | None:
    """Why real loop-device tests cannot run here (None if they can): ``tools`` missing, or
    no loop device could be made (needs root and /dev/loop-control)."""
    from ssdlab.targets.loop import LoopDevice, parse_size

    for tool in tools:
        if not shutil.which(tool):
            return f"{tool} is not installed (apt-get install fio util-linux e2fsprogs mount)"
    try:
        with LoopDevice(parse_size("1M")):
            pass
    except Exception as e:  # noqa: BLE001 - report whatever went wrong
        return str(e)
    return None


def require_loops(tools: tuple[str, ...] = ("fio",)) -> None:
    """Skips with SSDLAB_NO_LOOP=1; otherwise FAILS when loop devices cannot be used, so a CI
    machine that silently lost them is noticed."""
    if os.environ.get("SSDLAB_NO_LOOP") == "1":
        pytest.skip("SSDLAB_NO_LOOP=1: loop-device tests skipped")
    problem = loop_problem(tools)
    if problem:
        pytest.fail(f"cannot run on loop devices: {problem}. These tests need root, /dev/loop-control and "
                    f"{', '.join(tools)}; set SSDLAB_NO_LOOP=1 to skip them on a machine without loop devices.")


@pytest.fixture(scope="module")
def loops_ok():
    """Loop devices and fio are usable (see :func:`require_loops`)."""
    require_loops()


@pytest.fixture
def need_fio():
    if not shutil.which("fio"):
        pytest.fail("fio is not installed (apt-get install fio)")
