"""ssdlab.workload.named: the built-in workloads' job files read back by ssdlab's fio parser
must hold what CrystalDiskMark 8 and JESD219 define (the expected values are written out here
from the sources, not taken from the module), and fio itself must accept every job file."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from ssdlab.errors import UserError
from ssdlab.workload import named, parse_job_text

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

#: CrystalDiskMark 8.0.6 default profile, in the order it runs: (job name, rw, bs, iodepth).
CDM_RUN_ORDER = [
    ("SEQ1M_Q8T1_read", "read", MiB, 8), ("SEQ1M_Q1T1_read", "read", MiB, 1),
    ("RND4K_Q32T1_read", "randread", 4 * KiB, 32), ("RND4K_Q1T1_read", "randread", 4 * KiB, 1),
    ("SEQ1M_Q8T1_write", "write", MiB, 8), ("SEQ1M_Q1T1_write", "write", MiB, 1),
    ("RND4K_Q32T1_write", "randwrite", 4 * KiB, 32), ("RND4K_Q1T1_write", "randwrite", 4 * KiB, 1),
]

#: JESD219 enterprise workload transfer sizes and shares.
JESD219_SHARES = {512: 4, 1024: 1, 1536: 1, 2048: 1, 2560: 1, 3072: 1, 3584: 1, 4096: 67, 8192: 10, 16384: 7,
                  32768: 3, 65536: 3}

VARIANTS = [("cdm", {}), ("cdm", {"count": 3, "prepare": False, "interval_s": 0}), ("jesd219", {}),
            ("jesd219", {"read_pct": 40, "small_writes": "as-4k", "qd": 256})]


def _workload(name, **kw):
    return parse_job_text(named.get(name).job_text(**kw), source=f"<{name}>")


def _host(job) -> dict:
    return {o.name: o.value for o in job.host_options}


# ---------------------------------------------------------------------------- cdm
def test_cdm_default_groups_follow_crystaldiskmark_8():
    w = _workload("cdm")
    assert all(len(g) == 1 for g in w.groups)
    jobs = [g[0] for g in w.groups]
    assert [j.name for j in jobs] == ["prepare"] + [n for n, *_ in CDM_RUN_ORDER]
    prep = jobs[0]
    assert (prep.rw, prep.bs_min_bytes[1], prep.size_bytes, prep.time_based) == ("write", MiB, GiB, False)
    for i, (job, (name, rw, bs, qd)) in enumerate(zip(jobs[1:], CDM_RUN_ORDER)):
        d = 0 if "read" in rw else 1
        assert (job.rw, job.bs_min_bytes[d], job.bs_max_bytes[d], job.iodepth) == (rw, bs, bs, qd), name
        assert job.size_bytes == GiB and job.offset_bytes == 0
        assert job.time_based and job.runtime_us == 5_000_000
        assert job.ramp_time_us == 5_000_000
        # the interval: idle before every test but the first
        assert job.startdelay_us == (0 if i == 0 else 5_000_000), name
        assert job.norandommap == rw.startswith("rand")
        assert _host(job).get("direct") == "1"
        assert _host(job).get("ioengine") == "libaio"


def test_cdm_parameters_and_repeated_runs():
    w = _workload("cdm", size_bytes=256 * MiB, runtime_s=2, interval_s=3, ramp_s=0, count=3)
    jobs = [g[0] for g in w.groups]
    assert len(jobs) == 1 + 8 * 3
    assert [j.name for j in jobs] == named.cdm_group_names(3)
    assert [j.name for j in jobs[1:4]] == [
        "SEQ1M_Q8T1_read", "SEQ1M_Q8T1_read_2", "SEQ1M_Q8T1_read_3"]
    for j in jobs:
        assert j.size_bytes == 256 * MiB
        assert j.ramp_time_us == 0
    # repeated runs follow their test at once; the interval comes before each new test
    delays = {j.name: j.startdelay_us for j in jobs}
    assert delays["SEQ1M_Q8T1_read"] == 0 and delays["SEQ1M_Q8T1_read_2"] == 0
    assert delays["SEQ1M_Q1T1_read"] == 3_000_000 and delays["SEQ1M_Q8T1_write"] == 3_000_000
    assert all(j.runtime_us == 2_000_000 for j in jobs[1:])


def test_cdm_ramp_only_before_the_first_run():
    jobs = [g[0] for g in _workload("cdm", count=2).groups]
    ramps = {j.name: j.ramp_time_us for j in jobs}
    assert ramps["RND4K_Q32T1_write"] == 5_000_000 and ramps["RND4K_Q32T1_write_2"] == 0


def _group(name, direction, mbps, iops):
    return {"name": name, "directions": {direction: {"mbps_mean": mbps, "iops_mean": iops}}}


def test_cdm_table_layout_best_run_and_missing():
    groups = [_group("prepare", "write", 999.0, 1.0),
              _group("SEQ1M_Q8T1_read", "read", 500.0, 476.8), _group("SEQ1M_Q8T1_read_2", "read", 550.0, 524.5),
              _group("SEQ1M_Q1T1_read", "read", 480.0, 457.8),
              _group("RND4K_Q32T1_read", "read", 300.0, 73242.0),
              _group("RND4K_Q1T1_read", "read", 40.0, 9765.6),
              _group("SEQ1M_Q8T1_write", "write", 450.0, 429.2),
              _group("RND4K_Q32T1_write", "write", 250.0, 61035.0), _group("RND4K_Q1T1_write", "write", 120.0, 29297.0)]
    rows = named.cdm_table(groups)
    assert [r["test"] for r in rows] == ["SEQ1M Q8T1", "SEQ1M Q1T1", "RND4K Q32T1", "RND4K Q1T1"]
    assert rows[0] == {"test": "SEQ1M Q8T1", "read_mbps": 550.0, "read_iops": 524.5, "write_mbps": 450.0,
                       "write_iops": 429.2}
    assert rows[1]["write_mbps"] is None and rows[1]["read_mbps"] == 480.0
    assert (rows[2]["read_iops"], rows[3]["write_iops"]) == (73242.0, 29297.0)
    text = named.cdm_table_text(rows).splitlines()
    assert len(text) == 5 and "Read MB/s" in text[0] and "Write MB/s" in text[0]
    assert text[1].startswith("SEQ1M Q8T1") and "550.00" in text[1] and "450.00" in text[1]
    assert "[    73242]" in text[3]


def test_cdm_table_names_are_the_job_names():
    w = _workload("cdm", count=2)
    groups = [_group(g[0].name, g[0].directions[0], float(i), float(i)) for i, g in enumerate(w.groups)]
    rows = named.cdm_table(groups)
    assert all(r["read_mbps"] is not None and r["write_mbps"] is not None for r in rows)


# ---------------------------------------------------------------------------- jesd219
def test_jesd219_job_holds_the_standard():
    (job,), = _workload("jesd219").groups
    assert job.rw == "randwrite" and job.random
    shares = {s.bs_bytes: s.pct for s in job.bssplit[1]}
    assert shares == JESD219_SHARES
    assert sum(shares.values()) == 100
    d = job.random_distribution
    assert d.kind == "zoned"
    assert [(z.access_pct, z.size_pct) for z in d.zones] == [(50, 5), (30, 15), (20, 80)]
    assert job.ba_bytes[1] == 4096
    assert job.size_bytes is None and job.offset_bytes == 0     # the whole LBA range
    assert job.norandommap and job.refill_buffers
    assert (job.iodepth, job.time_based, job.runtime_us) == (32, True, 600_000_000)
    assert _host(job).get("direct") == "1"


def test_jesd219_reads_and_4k_variant():
    (job,), = _workload("jesd219", read_pct=40, small_writes="as-4k", qd=64, runtime_s=30).groups
    assert (job.rw, job.rwmix_read_pct, job.iodepth, job.runtime_us) == ("randrw", 40, 64, 30_000_000)
    for d in (0, 1):
        shares = {s.bs_bytes: s.pct for s in job.bssplit[d]}
        assert min(shares) == 4096 and shares[4096] == 77 and sum(shares.values()) == 100
        assert {b: p for b, p in shares.items() if b > 4096} == {b: p for b, p in JESD219_SHARES.items() if b > 4096}


# ---------------------------------------------------------------------------- fio itself
def _fio_parse(tmp_path, text) -> subprocess.CompletedProcess:
    path = tmp_path / "job.fio"
    path.write_text(text)
    return subprocess.run(["fio", "--parse-only", str(path)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name,kw", VARIANTS)
def test_fio_accepts_the_job_text(tmp_path, name, kw):
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed: fio --parse-only cannot check the job text")
    r = _fio_parse(tmp_path, named.get(name).job_text(**kw))
    assert r.returncode == 0, r.stderr


def test_fio_parse_only_refuses_broken_zones(tmp_path):
    """The check above can fail: fio refuses zone shares adding up to more than 100 while it
    parses (a bssplit over 100 it would only refuse when the job starts)."""
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    text = named.get("jesd219").job_text().replace("20/80", "30/80")
    assert _fio_parse(tmp_path, text).returncode != 0


# ---------------------------------------------------------------------------- registry
def test_get_unknown_names_the_known_ones():
    with pytest.raises(UserError) as e:
        named.get("nope")
    for n in ("cdm", "jesd219", "record"):
        assert n in str(e.value)
    assert "nope" in str(e.value)


def test_unknown_or_out_of_range_parameter():
    with pytest.raises(UserError, match="runtime_s"):
        named.get("cdm").job_text(duration=3)
    with pytest.raises(UserError, match="count"):
        named.get("cdm").job_text(count=0)
    with pytest.raises(UserError, match="read-pct"):
        named.get("jesd219").job_text(read_pct=101)


def test_record_is_a_generated_stream():
    n = named.get("record")
    assert n.generated and n.job_text() is None
    assert callable(n.commands) and callable(n.totals) and callable(n.layout)
    assert not named.get("cdm").generated


def test_listing_names_every_workload_and_its_parameters():
    lines = named.listing()
    for n in named.NAMED.values():
        line = next(i for i, text in enumerate(lines) if text.startswith(n.name + " "))
        assert n.help in lines[line]
    assert any("--size 1GiB" in line for line in lines) and any("[--no-prepare]" in line for line in lines)
    assert any("--records 16KiB,1MiB,16MiB,100MiB" in line for line in lines)
