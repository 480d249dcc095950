"""Several jobs sharing one simulated drive (``SimTarget.run_workload({"jobs": [...]})``).

Oracles: the jobs' totals add up to the phase's; a QD1 reader waits longer beside a QD32
writer than alone; four copies at QD8 move as many IOs as one job at QD32, a quarter each;
a start delay leaves the first intervals without the job's IOs; same seed, same results;
keys are checked per job and named ``jobs[i].key``.
"""
from __future__ import annotations

import pytest

from ssdlab.profiles import load_profile
from ssdlab.targets.base import JobSpec
from ssdlab.targets.sim import SimTarget

from conftest import SMALL_DRIVE

READER = {"name": "reader", "read_fraction": 1.0, "qd": 1, "duration_s": 1.0}
WRITER = {"name": "writer", "qd": 32, "duration_s": 1.0}


def filled(seed: int = 3) -> SimTarget:
    t = SimTarget(load_profile("default", SMALL_DRIVE), seed=seed)
    t.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32))
    return t


@pytest.fixture(scope="module")
def reader_alone_and_shared():
    alone = filled().run_workload({"jobs": [READER], "interval_s": 0.1})
    shared = filled().run_workload({"jobs": [READER, WRITER], "interval_s": 0.1})
    return alone, shared


def test_job_totals_add_up_to_the_phase(reader_alone_and_shared):
    _, r = reader_alone_and_shared
    t = r.totals
    assert [j["name"] for j in t["jobs"]] == ["reader", "writer"]
    reader, writer = t["jobs"]
    assert set(reader) == {"name", "queue_depth", "read_ios", "read_bytes", "read_latency_us"}
    assert set(writer) == {"name", "queue_depth", "write_ios", "write_bytes", "write_latency_us"}
    assert reader["read_ios"] == t["read_ios"] and writer["write_ios"] == t["write_ios"]
    assert reader["read_bytes"] + writer.get("read_bytes", 0) == t["host_read_bytes"]
    assert writer["write_bytes"] == t["host_write_bytes"] == 4096 * t["write_ios"]
    assert reader["read_ios"] + writer["write_ios"] == t["ios"]
    assert r.complete and len(r.series["t_s"]) == 10


def test_a_qd1_reader_waits_longer_beside_a_writer(reader_alone_and_shared):
    alone, shared = reader_alone_and_shared
    lat_alone = alone.totals["jobs"][0]["read_latency_us"]["p50"]
    lat_shared = shared.totals["jobs"][0]["read_latency_us"]["p50"]
    assert lat_shared > 1.5 * lat_alone, (lat_alone, lat_shared)
    assert shared.totals["jobs"][0]["read_ios"] < alone.totals["jobs"][0]["read_ios"]


def test_numjobs_copies_split_the_ios_of_one_job_at_the_summed_depth():
    one = filled().run_workload({"read_fraction": 1.0, "qd": 32, "duration_s": 1.0})
    copies = [{"name": f"r{i}", "read_fraction": 1.0, "qd": 8, "duration_s": 1.0} for i in range(4)]
    four = filled().run_workload({"jobs": copies, "interval_s": 0.5})
    assert four.totals["ios"] == pytest.approx(one.totals["ios"], rel=0.05)
    for job in four.totals["jobs"]:
        assert job["read_ios"] / four.totals["ios"] == pytest.approx(0.25, abs=0.02), job["name"]


def test_startdelay_shifts_a_jobs_first_io():
    late = {"name": "late", "read_fraction": 1.0, "qd": 4, "duration_s": 0.3, "startdelay_s": 0.5}
    light = {**WRITER, "write_rate_iops": 5000.0}
    r = filled().run_workload({"jobs": [light, late], "interval_s": 0.1})
    reads = r.series["read_iops"]
    assert (reads[:5] == 0).all() and (reads[5:8] > 0).all() and reads[9] == 0, reads
    assert r.totals["jobs"][1]["read_ios"] == r.totals["read_ios"] > 0


def test_same_seed_same_results():
    spec = {"jobs": [{"read_fraction": 0.5, "qd": 4, "number_ios": 20_000}] * 3, "interval_s": 0.05}
    a, b = filled(seed=9).run_workload(spec), filled(seed=9).run_workload(spec)
    assert a.totals == b.totals
    assert (a.series["iops"] == b.series["iops"]).all()
    assert [j["name"] for j in a.totals["jobs"]] == ["job0", "job1", "job2"]


def test_one_job_without_delay_runs_as_its_dict_alone():
    spec = {"read_fraction": 0.7, "qd": 16, "number_ios": 50_000, "interval_s": 0.05}
    a = filled(seed=2).run_workload({**spec, "name": "solo"})
    b = filled(seed=2).run_workload({"jobs": [{k: v for k, v in spec.items() if k != "interval_s"}], "interval_s": 0.05})
    assert (a.series["iops"] == b.series["iops"]).all()
    assert a.totals["jobs"][0]["name"] == "solo"
    assert {k: v for k, v in a.totals["jobs"][0].items() if k != "name"} == \
        {k: v for k, v in b.totals["jobs"][0].items() if k != "name"}


@pytest.mark.parametrize("spec, key", [
    ({"jobs": [{}, {"write_bs_bytes": 4097}]}, r"jobs\[1\].write_bssplit"),
    ({"jobs": [{"interval_s": 1.0}]}, "interval_s"),
    ({"jobs": [{"startdelay_s": -1}]}, "startdelay_s"),
    ({"jobs": [{}], "qd": 4}, "qd"),
    ({"jobs": "job"}, "jobs"),
    ({"jobs": []}, "jobs"),
])
def test_bad_jobs_are_refused_by_name(spec, key):
    t = SimTarget(load_profile("default", SMALL_DRIVE), seed=1)
    with pytest.raises(ValueError, match=key):
        t.run_workload(spec)
    assert t.run_workload({"jobs": [{"number_ios": 10}] * 2}).totals["ios"] == 20
