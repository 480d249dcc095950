"""NVMe flexible data placement in fio's own options: the example job files (written to the
options of fio's ``uring-cmd-fdp.fio`` and ``xnvme-fdp.fio``) run on the simulator, each job
writing through its placement ids; on a loop device ``ssdlab run`` refuses them naming the
fio release or the engine and device they need. Loop-device tests need root and loop
devices; they fail (not skip) without them unless SSDLAB_NO_LOOP=1."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import SMALL_DRIVE, run_cli, set_args
from ssdlab.targets.fio import fio_version
from ssdlab.workload import fiojob, tofio

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
URING = EXAMPLES / "fdp-uring-cmd.fio"
XNVME = EXAMPLES / "fdp-xnvme.fio"
#: A small drive with FDP (8 handles, initially isolated) and room for their open blocks.
FDP_DRIVE = SMALL_DRIVE + ["user_capacity_bytes=6GiB", "fdp=1"]
XNVME_ENV = {"FIO_RW": "randwrite", "FIO_IODEPTH": "4", "FIO_BS": "8k"}
needs_loop = pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")


def _run(tmp_path: Path, jobfile: Path, env: dict | None = None) -> dict:
    out = tmp_path / "out"
    run_cli("run", str(jobfile), "--target", "sim:default", *set_args(FDP_DRIVE), "--out", str(out),
            "--no-progress", env=env)
    return json.loads((out / "summary.json").read_text())


def _host_bytes(group: dict) -> list[int]:
    return [h["host_write_bytes"] for h in group["fdp_handles"]]


def test_uring_cmd_example_runs_each_job_through_its_placement_ids(tmp_path):
    # fio's runtime of 1000 s shortened to 3 s, the rest as written.
    short = tmp_path / "fdp.fio"
    short.write_text(URING.read_text().replace("runtime=1000", "runtime=3"))
    g = _run(tmp_path, short)["groups"][0]
    written = {j["name"]: j["write_bytes"] for j in g["jobs"]}
    per_handle = _host_bytes(g)
    # Round robin per write command: write-heavy's writes spread evenly over ids 0-3,
    # write-mid's over 4 and 5, write-light's all on 6; handle 7 takes none.
    for ids, job in (((0, 1, 2, 3), "write-heavy"), ((4, 5), "write-mid"), ((6,), "write-light")):
        for i in ids:
            assert per_handle[i] == pytest.approx(written[job] / len(ids), abs=4096), (job, i)
    assert per_handle[7] == 0 and sum(per_handle) == g["host_write_bytes"]


def test_xnvme_example_runs_both_jobs_on_ids_4_and_5(tmp_path):
    g = _run(tmp_path, XNVME, env=XNVME_ENV)["groups"][0]
    per_handle = _host_bytes(g)
    # [default] and [override] each write 2 MiB, alternating over ids 4 and 5.
    assert per_handle == [0, 0, 0, 0, 2 << 20, 2 << 20, 0, 0]


@pytest.mark.parametrize("sets, line, said", [
    ([], 17, "job 'write-heavy', option fdp: flexible data placement needs a drive with it; profile 'default' has none: set its key fdp"),
    (["fdp=1", "fdp_reclaim_unit_handles=4"], 33,
     "job 'write-mid', option plids: placement id 4 is not one of the drive's 4 reclaim unit handles (ids 0 to 3"),
])
def test_placement_the_drive_cannot_take_is_an_error_at_its_line(tmp_path, sets, line, said):
    """fdp=1 on a drive without FDP, or a placement id past the drive's handles: an error
    naming the job file's line and the profile key, not the simulator's refusal as a traceback."""
    proc = run_cli("run", str(URING), "--target", "sim:default", *set_args(SMALL_DRIVE + sets),
                   "--out", str(tmp_path / "o"), "--no-progress", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{URING}:{line}: {said}" in proc.stderr, proc.stderr


def test_a_passthrough_engine_gets_no_page_cache_note():
    job = fiojob.parse_job_text("[a]\nrw=randwrite\nioengine=io_uring_cmd\n[b]\nrw=randwrite\nioengine=libaio\n")
    assert [any("direct=0" in n for n in j.host_notes) for j in job.jobs] == [False, True]


def test_fio_target_checks_version_engine_and_device():
    w = fiojob.parse_job_file(str(URING))
    with pytest.raises(fiojob.WorkloadError, match=r"needs fio 3\.34 or later; the installed fio is fio-3\.33"):
        tofio.check_placement(w, "fio-3.33", "/dev/ng0n1")
    with pytest.raises(fiojob.WorkloadError, match=r"generic character device.*the target is /dev/loop3"):
        tofio.check_placement(w, "fio-3.41", "/dev/loop3")
    tofio.check_placement(w, "fio-3.41", "/dev/ng0n1")
    x = fiojob.parse_job_file(str(XNVME), environ=XNVME_ENV)
    with pytest.raises(fiojob.WorkloadError, match="ioengine=io_uring_cmd.*xnvme.*ioengine=psync"):
        tofio.check_placement(x, "fio-3.41", "/dev/ng0n1")
    # The 3.38 names need 3.38.
    new = fiojob.parse_job_text("[a]\nrw=randwrite\ndataplacement=fdp\nplids=1-3\nioengine=io_uring_cmd\n")
    with pytest.raises(fiojob.WorkloadError, match=r"needs fio 3\.38"):
        tofio.check_placement(new, "fio-3.36", "/dev/ng0n1")


@pytest.mark.realtime
@needs_loop
@pytest.mark.parametrize("jobfile", [URING, XNVME])
def test_on_a_loop_device_the_examples_name_the_fio_release_they_need(tmp_path, jobfile):
    proc = run_cli("run", str(jobfile), "--target", "loop:64MB", "--out", str(tmp_path / "o"), "--no-progress",
                   check=False, env=XNVME_ENV)
    assert proc.returncode == 2, proc.stderr
    # Debian 12's fio (3.33) lacks the options; a newer one needs the engine and device.
    newer = tofio.fio_release(fio_version()) >= (3, 34)
    needle = ("ioengine=io_uring_cmd" if jobfile == XNVME else "generic character device") if newer else \
        "needs fio 3.34 or later"
    assert needle in proc.stderr and "Traceback" not in proc.stderr
