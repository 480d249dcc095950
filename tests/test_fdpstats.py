"""A real FDP drive's placement counters (``nvme fdp stats`` / ``nvme fdp usage``, nvme-cli
JSON) read around each phase into the columns the simulator reports them in.

The recorded outputs follow nvme-cli's printers (src/nvme-print-json.c ``json_nvme_fdp_stats``,
``json_nvme_fdp_usage``): ``hbmw``, ``mbmw``, ``mbe`` are 128-bit byte counts, printed as plain
JSON numbers since nvme-cli 2.4 (a string serialised without quotes) and as quoted decimal
strings, with the locale's thousands separator, by 2.3; the usage log is ``nruh`` and
``ruhus[].ruha`` (bit 0 host specified, bit 1 controller specified).
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from ssdlab import columns
from ssdlab.errors import UserError
from ssdlab.profiles import load_profile
from ssdlab.targets import fdpstats as F
from ssdlab.targets.base import JobSpec, PhaseResult
from ssdlab.targets.fio import FioTarget
from ssdlab.targets.sim import SimTarget
from ssdlab.workload.engine import group_summary

from conftest import SMALL_DRIVE

DEV = "/dev/nvme0n1"
BIG = 2**64 + 12_345  # a counter beyond 64 bits

# nvme-cli >= 2.4 (json-c, pretty): numbers unquoted, whatever their size.
STATS_NUMBERS = '{\n  "hbmw":%d,\n  "mbmw":%d,\n  "mbe":%d\n}\n'
# nvme-cli 2.3: quoted decimal strings, thousands separator from the locale.
STATS_STRINGS = '{\n  "hbmw":"%s",\n  "mbmw":"%s",\n  "mbe":"%s"\n}\n'
USAGE = '{\n  "nruh":4,\n  "ruhus":[\n    {"ruha":1},\n    {"ruha":0},\n    {"ruha":2},\n    {"ruha":3}\n  ]\n}\n'


def stats_cmd(endgid: int = 1) -> list[str]:
    return F.FdpDevice(DEV, endgid).command("stats")


def fake_nvme(outputs: dict[str, tuple[int, str]]):
    """A command runner replaying recorded outputs keyed by the nvme sub-command
    (``fdp stats``, ``id-ctrl``...); missing ones fail as nvme-cli does."""
    calls = []

    def run(cmd):
        calls.append(cmd)
        key = " ".join(cmd[1:3]) if cmd[1] == "fdp" else cmd[1]
        rc, out = outputs.get(key, (1, ""))
        return rc, out, "" if rc == 0 else "NVMe status: Invalid Field in Command: ...(0x2)"
    run.calls = calls
    return run


def fdp_drive(hbmw=10**9, mbmw=2 * 10**9, mbe=3 * 10**9, endgid=1, ctratt=1 << 19, usage=USAGE):
    return fake_nvme({"id-ctrl": (0, json.dumps({"vid": 0x144D, "ctratt": ctratt})),
                      "id-ns": (0, json.dumps({"nsze": 1000, "endgid": endgid})),
                      "fdp stats": (0, STATS_NUMBERS % (hbmw, mbmw, mbe)),
                      **({"fdp usage": (0, usage)} if usage is not None else {})})


# ----------------------------------------------------------------------------- parsers


def test_stats_parse_exactly_in_every_nvme_cli_format_beyond_64_bits():
    assert F.parse_stats(STATS_NUMBERS % (BIG, 2 * BIG, 7), stats_cmd()) == {"hbmw": BIG, "mbmw": 2 * BIG, "mbe": 7}
    plain = STATS_STRINGS % (BIG, 4096, 0)
    sep = STATS_STRINGS % (f"{BIG:,}", "4,096", "0")
    for text in (plain, sep):
        assert F.parse_stats(text, stats_cmd()) == {"hbmw": BIG, "mbmw": 4096, "mbe": 0}


@pytest.mark.parametrize("text, what", [
    ("Invalid Field in Command", "no JSON"),
    ('{"hbmw":1,"mbmw":2}', "'mbe' is missing"),
    ('{"hbmw":1,"mbmw":2.5,"mbe":3}', "'mbmw' is 2.5"),
    ('{"hbmw":"lots","mbmw":2,"mbe":3}', "'hbmw' is 'lots'"),
    ('{"hbmw":-1,"mbmw":2,"mbe":3}', "'hbmw' is -1"),
])
def test_malformed_stats_are_an_error_naming_the_command(text, what):
    with pytest.raises(UserError) as e:
        F.parse_stats(text, stats_cmd(3))
    assert "`nvme fdp stats /dev/nvme0n1 -e 3 -o json`" in str(e.value) and what in str(e.value)


def test_usage_lists_each_handle_and_what_its_attributes_say():
    got = F.parse_usage(USAGE, F.FdpDevice(DEV, 1).command("usage"))
    assert [h["ruha"] for h in got] == [1, 0, 2, 3]
    assert [h["usage"] for h in got] == ["host specified", "unused", "controller specified",
                                         "host specified, controller specified"]
    for bad in ('{"nruh":1}', '{"nruh":1,"ruhus":[{"rsvd":0}]}'):
        with pytest.raises(UserError, match="`nvme fdp usage /dev/nvme0n1 -e 1 -o json`"):
            F.parse_usage(bad, F.FdpDevice(DEV, 1).command("usage"))


# ----------------------------------------------------------------------------- detection


@pytest.fixture
def nvme_namespace(monkeypatch):
    """Every path counts as NVMe namespace /dev/nvme0n1 (there is none on this machine)."""
    monkeypatch.setattr(F, "_namespace", lambda device: DEV)


def test_an_fdp_namespace_is_found_with_its_endurance_group(nvme_namespace):
    run = fdp_drive(endgid=2)
    dev = F.probe("/dev/disk/by-id/nvme-x", run)
    assert dev == F.FdpDevice(DEV, 2)
    assert ["nvme", "fdp", "stats", DEV, "-e", "2", "-o", "json"] in run.calls


@pytest.mark.parametrize("drive, why", [
    (dict(ctratt=0), "does not support FDP (Identify Controller CTRATT bit 19 clear)"),
    (dict(endgid=0), "in no endurance group"),
])
def test_a_drive_without_fdp_gives_a_reason(nvme_namespace, drive, why):
    run = fdp_drive(**drive)
    got = F.probe(DEV, run)
    assert isinstance(got, str) and why in got
    assert not any(c[1] == "fdp" for c in run.calls)  # nothing more was asked of the drive


def test_fdp_not_enabled_is_the_stats_command_failing(nvme_namespace):
    run = fake_nvme({"id-ctrl": (0, json.dumps({"ctratt": 1 << 19})), "id-ns": (0, json.dumps({"endgid": 1}))})
    got = F.probe(DEV, run)
    assert isinstance(got, str) and got.startswith("FDP is not enabled in /dev/nvme0n1's endurance group 1")
    assert "`nvme fdp stats /dev/nvme0n1 -e 1 -o json` failed (exit 1: NVMe status: Invalid Field" in got


def test_missing_nvme_cli_and_other_devices_give_a_reason(tmp_path, monkeypatch):
    f = tmp_path / "img"
    f.write_bytes(b"")
    assert "is not an NVMe namespace" in F.probe(str(f))
    assert "is not an NVMe namespace" in F.probe(str(tmp_path / "missing"))
    monkeypatch.setattr(F, "_namespace", lambda device: DEV)
    monkeypatch.setattr(F.shutil, "which", lambda name: None)
    assert "nvme-cli is not installed" in F.probe(DEV)


def test_a_malformed_stats_output_at_the_probe_is_an_error(nvme_namespace):
    run = fdp_drive()
    run_bad = fake_nvme({"id-ctrl": (0, "{}"), "id-ns": (0, '{"endgid":1}'), "fdp stats": (0, '{"hbmw":1}')})
    assert isinstance(F.probe(DEV, run), F.FdpDevice)
    with pytest.raises(UserError, match="nvme fdp stats /dev/nvme0n1 -e 1 -o json"):
        F.probe(DEV, run_bad)


# ----------------------------------------------------------------------------- a phase's totals


def test_phase_totals_are_the_counters_growth_in_the_simulators_columns():
    dev = F.FdpDevice(DEV, 1)
    before = F.read(dev, fdp_drive(hbmw=BIG, mbmw=BIG, mbe=BIG))
    after = F.read(dev, fdp_drive(hbmw=BIG + 4 * 10**9, mbmw=BIG + 5 * 10**9, mbe=BIG + 3 * 10**9))
    t = F.phase_totals(before, after)
    assert t["fdp_hbmw_bytes"] == 4 * 10**9 and t["fdp_mbmw_bytes"] == 5 * 10**9 and t["fdp_mbe_bytes"] == 3 * 10**9
    assert t["write_amplification"] == pytest.approx(1.25)
    assert [h["usage"] for h in t["fdp_handles"]][:2] == ["host specified", "unused"]
    idle = F.phase_totals(before, before)
    assert idle["write_amplification"] is None and idle["fdp_mbe_bytes"] == 0
    with pytest.raises(UserError, match="went backwards"):
        F.phase_totals(after, before)


def _fio_target(fdp) -> FioTarget:
    """A FioTarget as a real FDP drive's would be after its probe (no device is opened)."""
    t = FioTarget.__new__(FioTarget)
    t._fdp = fdp
    return t


def _result() -> PhaseResult:
    return PhaseResult(job=JobSpec("w", "randwrite"), series={}, totals={"host_write_bytes": 7}, notes=[])


def test_a_phase_on_an_fdp_drive_gains_the_columns_and_a_failed_read_is_a_note(monkeypatch):
    t = _fio_target(F.FdpDevice(DEV, 1))
    monkeypatch.setattr(F, "_run", fdp_drive(usage=None))
    before = t._fdp_read()
    monkeypatch.setattr(F, "_run", fdp_drive(hbmw=3 * 10**9, mbmw=10 * 10**9, usage=None))
    r = t._with_fdp(_result(), before, True)
    assert r.totals["fdp_hbmw_bytes"] == 2 * 10**9 and r.totals["write_amplification"] == pytest.approx(4.0)
    assert "fdp_handles" not in r.totals
    assert any("reclaim unit handle usage unavailable" in n and "nvme fdp usage" in n for n in r.notes)
    # The drive stops answering (or prints garbage) after the phase: a note, the phase's figures kept.
    for broken in (fake_nvme({}), fake_nvme({"fdp stats": (0, "garbage")})):
        monkeypatch.setattr(F, "_run", broken)
        r = t._with_fdp(_result(), before, True)
        assert r.totals == {"host_write_bytes": 7} and r.error is None
        assert any(n.startswith("FDP counters unavailable for this phase: `nvme fdp stats") for n in r.notes)
    # ... or before it.
    r = t._with_fdp(_result(), t._fdp_read(), True)
    assert r.totals == {"host_write_bytes": 7} and "FDP counters unavailable" in r.notes[-1]


def test_a_drive_without_fdp_adds_nothing_and_says_why_where_jobs_place_data():
    t = _fio_target("FDP is not enabled in /dev/nvme0n1's endurance group 1: ...")
    assert t._fdp_read() is None
    placed = t._with_fdp(_result(), None, True)
    assert placed.totals == {"host_write_bytes": 7} and placed.notes == [f"FDP counters: {t._fdp}"]
    assert t._with_fdp(_result(), None, False).notes == []


# ----------------------------------------------------------------------------- one column table


def test_a_real_fdp_drive_reports_in_the_simulators_columns():
    """The byte counters a real drive's phase gains are the simulator's FDP byte columns, by
    the one column table, and a group summary reads both the same way."""
    fdp_bytes = {c.name for c in columns.drive_columns() if c.needs == "fdp" and c.unit == "bytes"}
    assert set(F.STATS_COLUMNS.values()) == fdp_bytes
    for key, name in F.STATS_COLUMNS.items():
        assert f"({key.upper()})" in columns.declared()[name].label  # the log page's own name
    sim = SimTarget(load_profile("default", SMALL_DRIVE + ["fdp=1", "fdp_reclaim_unit_handles=2"]))
    s = sim.run_workload({"io_bytes": 1 << 26, "interval_s": 1.0, "placement_ids": [0, 1]})
    dev = F.FdpDevice(DEV, 1)
    real = F.phase_totals(F.read(dev, fdp_drive()), F.read(dev, fdp_drive(hbmw=2 * 10**9, mbmw=3 * 10**9)))
    sim_keys = {k for k in s.totals if k.startswith("fdp_")} | {"write_amplification"}
    assert set(real) <= sim_keys and sim_keys - set(real) == {"fdp_ru_filled"}  # no log page counts RUs filled
    step = type("Step", (), {"name": "g"})()
    for totals in (s.totals, real):
        g = group_summary(step, PhaseResult(job=JobSpec("w", "randwrite"), series={}, totals=dict(totals)))
        assert fdp_bytes <= set(g) and g["write_amplification"] is not None and "fdp_handles" in g
    np.testing.assert_equal(s.totals["fdp_hbmw_bytes"], s.totals["host_write_bytes"])


@pytest.mark.realtime
def test_targets_without_fdp_say_so_in_their_description(loops_ok, tmp_path):
    from ssdlab.targets.fio import LoopTarget

    with LoopTarget("64MiB", tmp_path / "w") as t:
        assert t.describe()["fdp_counters"].endswith("is not an NVMe namespace: no FDP counters")
        r = t.run_phase(JobSpec("w", "randwrite", io_bytes=1 << 20, interval_s=0.5))
        assert not any(k.startswith("fdp_") for k in r.totals) and not any("FDP" in n for n in r.notes)
    f = FioTarget(f"file:{tmp_path / 'img'}", tmp_path / "w2", size_bytes=1 << 20)
    assert f.describe()["fdp_counters"] == "no FDP counters on a file or in a dry run"
    f.close()
