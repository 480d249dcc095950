"""The guard that keeps real-time tests apart: ``make test-python`` runs most tests on both
cores at once, and a test whose figures follow the wall clock (fio on a loop device, the
emulated drive, a command stopped at a timed moment) must carry the ``realtime`` mark, which
makes it run alone. In a parallel worker, an unmarked test that starts such a command fails
(``conftest._realtime_alone``)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import realtime_reason


@pytest.mark.parametrize("argv", [
    ["fio", "job.fio"],
    ["/usr/bin/fio", "--output-format=json", "--name=x", "--filename=/tmp/f"],
    [sys.executable, "-m", "ssdlab", "consistency", "--target", "loop:64MiB"],
    [sys.executable, "-m", "ssdlab", "run", "job.fio", "--target=emu:default"],
    [sys.executable, "-m", "ssdlab", "sweep", "--target", "file:/tmp/x.img"],
    [sys.executable, "-m", "ssdlab", "consistency", "--target", "/dev/nvme0n1", "--i-know-this-destroys-data"],
    [b"fio", b"job.fio"],
    "fio --name=x --filename=/tmp/f --size=4k",
    f"{sys.executable} -m ssdlab consistency --target 'loop:64MiB'",
])
def test_commands_whose_figures_follow_the_wall_clock_are_found(argv):
    assert realtime_reason(argv) is not None


@pytest.mark.parametrize("argv", [
    ["fio", "--parse-only", "--debug=parse", "--name=x", "--rw=randread"],
    ["fio", "--showcmd", "s.fio"],
    ["fio", "--version"],
    ["fio", "--cmdhelp=all"],
    [sys.executable, "-m", "ssdlab", "consistency", "--target", "sim:default", "--duration", "5"],
    [sys.executable, "-m", "ssdlab", "trace", "run", "t.trace", "--out", "loop"],
    ["sh", "-c", "true"],
    "fio --showcmd s.fio",
])
def test_commands_that_do_no_timed_io_are_not(argv):
    assert realtime_reason(argv) is None


@pytest.mark.skipif("PYTEST_XDIST_WORKER" not in os.environ, reason="the guard acts in parallel workers only")
def test_an_unmarked_test_that_starts_fio_beside_others_fails():
    with pytest.raises(pytest.fail.Exception, match="mark it @pytest.mark.realtime"):
        subprocess.Popen(["fio", "--name=x", "--filename=/nonexistent", "--size=4k"])
