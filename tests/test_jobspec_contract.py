"""Every field of a JobSpec is a control both kinds of target obey: changed alone, it changes
what the simulator measures and the fio job file a real drive runs. A field neither reads
(as a per-job seed once was) is a setting that claims to do something and does nothing.

The drive has its first half written, so that where a job reads (its offset and span) shows
in what it measures: the controller answers reads of never-written units without the NAND.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ssdlab.profiles import load_profile
from ssdlab.targets.base import JobSpec
from ssdlab.targets.fio import FioTarget
from ssdlab.targets.sim import SimTarget

MiB = 1 << 20
DRIVE = ("blocks_per_plane=64", "pages_per_block=64", "user_capacity_bytes=1792MiB")
CAPACITY = 1792 * MiB

#: A timed job and a sized one, over the written first quarter of the drive.
TIMED = JobSpec("base", "randread", bs_bytes=4096, qd=8, offset_bytes=0, span_bytes=CAPACITY // 4,
                duration_s=0.2, interval_s=0.1)
SIZED = dataclasses.replace(TIMED, duration_s=None, io_bytes=4 * MiB)

#: Per field, the base job and the field's other value (``io_bytes`` counts only where no
#: duration is set).
CHANGES = {
    "name": (TIMED, "other"),
    "pattern": (TIMED, "randwrite"),
    "bs_bytes": (TIMED, 16384),
    "qd": (TIMED, 1),
    "offset_bytes": (TIMED, CAPACITY // 2),
    "span_bytes": (TIMED, CAPACITY),
    "duration_s": (TIMED, 0.3),
    "io_bytes": (SIZED, 8 * MiB),
    "interval_s": (TIMED, 0.05),
}
#: Fields that name a phase rather than say what it does: the simulator's figures ignore them.
LABELS = {"name"}


def test_every_field_has_a_change_here():
    assert {f.name for f in dataclasses.fields(JobSpec)} == set(CHANGES)


def _measured(job: JobSpec) -> tuple:
    """What the simulator measures for ``job`` on a fresh drive with its first half written."""
    t = SimTarget(load_profile("default", DRIVE), seed=1)
    assert t.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32, span_bytes=CAPACITY // 2)).complete
    r = t.run_phase(job)
    totals = sorted((k, v) for k, v in r.totals.items() if isinstance(v, (int, float)))
    return totals, {k: np.asarray(v).tobytes() for k, v in sorted(r.series.items())}


@pytest.mark.parametrize("field", sorted(set(CHANGES) - LABELS))
def test_each_field_changes_what_the_simulator_measures(field):
    base, value = CHANGES[field]
    assert _measured(base) != _measured(dataclasses.replace(base, **{field: value}))


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_each_field_changes_the_fio_job_file(tmp_path, field):
    base, value = CHANGES[field]
    t = FioTarget(f"file:{tmp_path}/drive.img", tmp_path, size_bytes=CAPACITY, dry_run=True)
    assert t.job_text(base) != t.job_text(dataclasses.replace(base, **{field: value}))


def test_the_checks_catch_a_field_nothing_reads(monkeypatch):
    """A field added to JobSpec that no target reads: the simulator measures the same, and
    the field list no longer matches the changes above."""
    ghost = dataclasses.make_dataclass("Ghost", [("ghost", int, dataclasses.field(default=1))], bases=(JobSpec,),
                                       frozen=True)
    a, b = ghost(**dataclasses.asdict(TIMED)), ghost(**dataclasses.asdict(TIMED), ghost=2)
    assert _measured(a) == _measured(b)
    assert {f.name for f in dataclasses.fields(ghost)} != set(CHANGES)
