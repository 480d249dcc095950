"""Drive counters (issue 6): parsing nvme-cli and smartctl JSON into host/NAND bytes written,
the measured write amplification between two snapshots, 'unavailable' with a reason where a
target has no counters (loop devices, files), and the consistency summary's
``write_amplification_source`` on a loop device and on the simulator.

The JSON samples are crafted from the documented output formats: nvme-cli's
nvme-print-json.c (``json_smart_log``, ``json_endurance_log``), its OCP plugin
(``"Physical media units written": {"hi", "lo"}``, ``"Log page GUID"``), its Intel plugin
(``"Device stats": {"nand_bytes_written": {"normalized", "raw"}}``), and smartctl's
``-j`` output (``ata_smart_attributes.table[].{id, name, raw.value}``, ``logical_block_size``,
``nvme_smart_health_information_log``), with attribute names from smartmontools' drivedb.h.
"""
from __future__ import annotations

import json
import os

import pytest

from ssdlab.targets import counters as C

from conftest import SMALL_DRIVE, run_cli

GIB, MIB = 1 << 30, 1 << 20


# ----------------------------------------------------------------------------- samples


def nvme_smart_log(duw: int, style: str = "number") -> str:
    """``nvme smart-log -o json`` as nvme-cli prints it: 2.x (unquoted numbers), early 2.x
    (uint128 as quoted strings), 1.x (long double floats)."""
    val = {"number": duw, "string": str(duw), "float": float(duw)}[style]
    return json.dumps({
        "critical_warning": 0, "temperature": 313, "avail_spare": 100, "spare_thresh": 10, "percent_used": 1,
        "endurance_grp_critical_warning_summary": 0, "data_units_read": 28167888, "data_units_written": val,
        "host_read_commands": 561183142, "host_write_commands": 171788833, "controller_busy_time": 1354,
        "power_cycles": 2385, "power_on_hours": 1363, "unsafe_shutdowns": 133, "media_errors": 0,
        "num_err_log_entries": 608, "warning_temp_time": 0, "critical_comp_time": 0,
        "temperature_sensor_1": 313, "thm_temp1_trans_count": 0, "thm_temp2_trans_count": 0,
        "thm_temp1_total_time": 0, "thm_temp2_total_time": 0}, indent=2)


def ocp_c0(pmuw: int, guid: str = C.OCP_C0_GUID) -> str:
    return json.dumps({
        "Physical media units written": {"hi": pmuw >> 64, "lo": pmuw & ((1 << 64) - 1)},
        "Physical media units read": {"hi": 0, "lo": 467772386381824},
        "Bad user nand blocks - Raw": 0, "Bad user nand blocks - Normalized": 100,
        "Bad system nand blocks - Raw": 0, "Bad system nand blocks - Normalized": 100,
        "XOR recovery count": 0, "Uncorrectable read error count": 0,
        "Log page version": 3, "Log page GUID": guid}, indent=2)


def endurance_log(data_units: int, media_units: int) -> str:
    return json.dumps({"critical_warning": 0, "endurance_group_features": 0, "avl_spare": 100,
                       "avl_spare_threshold": 10, "percent_used": 0, "domain_identifier": 0,
                       "endurance_estimate": 0, "data_units_read": 100, "data_units_written": data_units,
                       "media_units_written": media_units, "host_read_cmds": 1, "host_write_cmds": 2,
                       "media_data_integrity_err": 0, "num_err_info_log_entries": 0,
                       "total_end_grp_cap": 0, "unalloc_end_grp_cap": 0}, indent=2)


def intel_log(nand: int, host: int) -> str:
    return json.dumps({"Intel Smart log": "nvme0n1", "Device stats": {
        "program_fail_count": {"normalized": 100, "raw": 0},
        "nand_bytes_written": {"normalized": 100, "raw": nand},
        "host_bytes_written": {"normalized": 100, "raw": host}}}, indent=2)


def smartctl_ata(model: str, attrs: list[tuple[int, str, int]], lbs: int = 512) -> str:
    return json.dumps({
        "json_format_version": [1, 0],
        "smartctl": {"version": [7, 3], "argv": ["smartctl", "-j", "-i", "-A", "/dev/sda"], "exit_status": 0},
        "device": {"name": "/dev/sda", "info_name": "/dev/sda [SAT]", "type": "sat", "protocol": "ATA"},
        "model_name": model, "serial_number": "X", "logical_block_size": lbs, "physical_block_size": 4096,
        "ata_smart_attributes": {"revision": 1, "table": [
            {"id": i, "name": n, "value": 99, "worst": 99, "thresh": 0, "when_failed": "",
             "flags": {"value": 50, "string": "-O--CK ", "prefailure": False},
             "raw": {"value": raw, "string": str(raw)}} for i, n, raw in attrs]}}, indent=2)


SAMSUNG_860 = [(5, "Reallocated_Sector_Ct", 0), (9, "Power_On_Hours", 1000), (177, "Wear_Leveling_Count", 12),
               (241, "Total_LBAs_Written", 87654321)]
INTEL_530 = [(9, "Power_On_Hours_and_Msec", 100), (225, "Host_Writes_32MiB", 30000),
             (233, "Media_Wearout_Indicator", 98), (241, "Host_Writes_32MiB", 30000),
             (242, "Host_Reads_32MiB", 5000), (249, "NAND_Writes_1GiB", 2000)]
MX500 = [(173, "Ave_Block-Erase_Count", 40), (246, "Total_LBAs_Written", 123456789),
         (247, "Host_Program_Page_Count", 1000000), (248, "FTL_Program_Page_Count", 500000)]


# ----------------------------------------------------------------------------- parsers


@pytest.mark.parametrize("style", ["number", "string", "float"])
def test_nvme_smart_log_data_units_are_512000_bytes(style):
    p = C.parse_nvme_smart_log(nvme_smart_log(19397424, style))
    assert p["data_units_written"] == 19397424
    assert p["host_write_bytes"] == 19397424 * 512_000
    assert p["host_write_commands"] == 171788833


def test_ocp_log_is_bytes_and_128_bit_and_checks_guid():
    assert C.parse_ocp_smart_add_log(ocp_c0(527805403860992))["nand_write_bytes"] == 527805403860992
    big = (3 << 64) + 12345
    assert C.parse_ocp_smart_add_log(ocp_c0(big))["nand_write_bytes"] == big
    with pytest.raises(ValueError, match="GUID"):
        C.parse_ocp_smart_add_log(ocp_c0(1, guid="0x0123456789abcdef0123456789abcdef"))


def test_endurance_log_units_are_10e9_bytes():
    p = C.parse_nvme_endurance_log(endurance_log(1000, 3500))
    assert p["host_write_bytes"] == 1000 * 10**9 and p["nand_write_bytes"] == 3500 * 10**9


def test_intel_log_raw_counts():
    assert C.parse_intel_smart_log_add(intel_log(700, 200)) == {"nand_bytes_written": 700, "host_bytes_written": 200}


def test_smartctl_samsung_host_lbas_only():
    s = C.parse_smartctl(smartctl_ata("Samsung SSD 860 EVO 500GB", SAMSUNG_860))
    assert s["source"] == "smartctl" and s["model"] == "Samsung SSD 860 EVO 500GB"
    assert s["host_write_bytes"] == 87654321 * 512
    assert s["nand_write_bytes"] is None and s["wa_pair"] is None
    assert "Total_LBAs_Written" in s["reason"] and "NAND writes unavailable" in s["reason"]


def test_smartctl_total_lbas_use_the_logical_block_size():
    s = C.parse_smartctl(smartctl_ata("4Kn SSD", SAMSUNG_860, lbs=4096))
    assert s["host_write_bytes"] == 87654321 * 4096


def test_smartctl_intel_32mib_host_and_1gib_nand():
    s = C.parse_smartctl(smartctl_ata("INTEL SSDSC2BW240A4", INTEL_530))
    assert s["host_write_bytes"] == 30000 * 32 * MIB
    assert s["nand_write_bytes"] == 2000 * GIB
    assert s["wa_pair"]["unit"] == "bytes"
    assert "32 MiB" in s["reason"] and "1 GiB" in s["reason"]


def test_smartctl_micron_page_counts_give_micron_wa():
    before = C.parse_smartctl(smartctl_ata("Crucial_CT500MX500SSD1", MX500))
    assert before["host_write_bytes"] == 123456789 * 512
    assert before["nand_write_bytes"] is None  # pages, not bytes
    after_attrs = [(173, "Ave_Block-Erase_Count", 41), (246, "Total_LBAs_Written", 123456789 + 8_000_000),
                   (247, "Host_Program_Page_Count", 1000000 + 40000), (248, "FTL_Program_Page_Count", 500000 + 60000)]
    after = C.parse_smartctl(smartctl_ata("Crucial_CT500MX500SSD1", after_attrs))
    wa, how = C.write_amplification(before, after)
    assert wa == pytest.approx(1 + 60000 / 40000)  # Micron: 1 + Δ248/Δ247
    assert "Host_Program_Page_Count" in how and "FTL_Program_Page_Count" in how


def test_smartctl_unknown_attributes_and_sas_are_unavailable():
    s = C.parse_smartctl(smartctl_ata("Mystery SSD", [(9, "Power_On_Hours", 5), (241, "Unknown_Attribute", 7)]))
    assert s["source"] == "unavailable" and "update-smart-drivedb" in s["reason"]
    sas = json.dumps({"smartctl": {"exit_status": 0}, "device": {"name": "/dev/sdb", "protocol": "SCSI"},
                      "scsi_error_counter_log": {}})
    s = C.parse_smartctl(sas)
    assert s["source"] == "unavailable" and "SAS" in s["reason"]


def test_smartctl_nvme_gives_host_bytes_only():
    text = json.dumps({"smartctl": {"exit_status": 0}, "device": {"name": "/dev/nvme0", "protocol": "NVMe"},
                       "model_name": "Samsung SSD 970", "nvme_smart_health_information_log": {
                           "data_units_read": 12345678, "data_units_written": 87654321}})
    s = C.parse_smartctl(text)
    assert s["host_write_bytes"] == 87654321 * 512_000 and s["nand_write_bytes"] is None


# ----------------------------------------------------------------------------- nvme-cli pipeline


def fake_nvme(outputs: dict[str, tuple[int, str]]):
    """A command runner replaying recorded outputs keyed by the nvme sub-command."""
    calls = []

    def run(cmd):
        calls.append(cmd)
        key = " ".join(cmd[1:3]) if cmd[1] in ("ocp", "intel") else cmd[1]
        rc, out = outputs.get(key, (1, ""))
        return rc, out, "" if rc == 0 else "NVMe status: Invalid Log Page(0x109)"
    run.calls = calls
    return run


def test_nvme_ocp_drive_measures_wa_in_bytes():
    idc = (0, json.dumps({"vid": 0x1344, "mn": "Micron 7450 PRO"}))
    before = C.nvme_counters("/dev/nvme0n1", fake_nvme({"smart-log": (0, nvme_smart_log(1_000_000)),
                                                        "id-ctrl": idc, "ocp smart-add-log": (0, ocp_c0(10**15))}))
    # 64 GB written by the host (125,000 data units), 160 GB by the drive to NAND.
    after = C.nvme_counters("/dev/nvme0n1", fake_nvme({"smart-log": (0, nvme_smart_log(1_125_000)),
                                                       "id-ctrl": idc,
                                                       "ocp smart-add-log": (0, ocp_c0(10**15 + 160 * 10**9))}))
    assert before["source"] == "nvme-smart-log" and before["model"] == "Micron 7450 PRO"
    assert before["host_write_bytes"] == 1_000_000 * 512_000 and before["nand_write_bytes"] == 10**15
    wa, how = C.write_amplification(before, after)
    assert wa == pytest.approx(160e9 / 64e9)
    assert how.startswith("drive counters") and "OCP" in how


def test_nvme_endurance_group_log_when_no_ocp():
    def outs(data, media):
        return {"smart-log": (0, nvme_smart_log(5)), "id-ctrl": (0, json.dumps({"vid": 0x144D})),
                "id-ns": (0, json.dumps({"endgid": 1})), "endurance-log": (0, endurance_log(data, media))}
    before, after = (C.nvme_counters("/dev/nvme0n1", fake_nvme(outs(d, m))) for d, m in ((100, 250), (200, 500)))
    assert before["nand_write_bytes"] == 250 * 10**9
    wa, _ = C.write_amplification(before, after)
    assert wa == pytest.approx(2.5)


def test_nvme_intel_vendor_log_only_on_intel_or_solidigm():
    outs = {"smart-log": (0, nvme_smart_log(5)), "intel smart-log-add": (0, intel_log(700, 200))}
    other = C.nvme_counters("/dev/nvme0n1", fake_nvme({**outs, "id-ctrl": (0, json.dumps({"vid": 0x144D}))}))
    assert other["nand_write_bytes"] is None and other["wa_pair"] is None
    assert "NAND writes unavailable" in other["reason"]
    intel = C.nvme_counters("/dev/nvme0n1", fake_nvme({**outs, "id-ctrl": (0, json.dumps({"vid": 0x8086}))}))
    assert intel["wa_pair"]["nand"] == 700 and intel["nand_write_bytes"] is None
    assert "vendor" in intel["reason"]


def test_nvme_without_nand_counters_gives_host_bytes_and_says_why():
    run = fake_nvme({"smart-log": (0, nvme_smart_log(42)), "id-ctrl": (0, json.dumps({"vid": 0x144D}))})
    s = C.nvme_counters("/dev/nvme0n1", run)
    assert s["host_write_bytes"] == 42 * 512_000 and s["nand_write_bytes"] is None
    assert "NAND writes unavailable" in s["reason"]
    wa, how = C.write_amplification(s, s)
    assert wa is None and how.startswith("unavailable:") and "NAND" in how
    failed = C.nvme_counters("/dev/nvme0n1", fake_nvme({}))
    assert failed["source"] == "unavailable" and "smart-log" in failed["reason"]


def test_write_amplification_edge_cases():
    s = C.parse_smartctl(smartctl_ata("INTEL SSDSC2BW240A4", INTEL_530))
    wa, how = C.write_amplification(s, s)
    assert wa is None and "did not move" in how
    assert C.write_amplification(None, s)[0] is None
    gone = C.unavailable("a loop device: no drive")
    assert C.write_amplification(gone, gone) == (None, "unavailable: a loop device: no drive")


# ----------------------------------------------------------------------------- real paths


def test_regular_file_and_missing_path_are_unavailable(tmp_path):
    f = tmp_path / "img"
    f.write_bytes(b"\0" * 4096)
    s = C.read_counters(f)
    assert s["source"] == "unavailable" and "regular file" in s["reason"]
    assert s["host_write_bytes"] is None and s["nand_write_bytes"] is None
    assert C.read_counters(tmp_path / "nope")["source"] == "unavailable"


@pytest.mark.realtime
@pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")
def test_loop_device_reports_unavailable_with_reason(tmp_path):
    from ssdlab.targets.fio import LoopTarget

    with LoopTarget("16MB", tmp_path / "w", directory=tmp_path) as t:
        s = t.counters()
        assert s["source"] == "unavailable"
        assert "loop device" in s["reason"]
        assert s["host_write_bytes"] is None and s["nand_write_bytes"] is None
        assert C.read_counters(t.path)["reason"] == s["reason"]


@pytest.mark.realtime
@pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")
def test_consistency_on_a_loop_device_says_wa_unavailable(tmp_path):
    out = tmp_path / "loop"
    run_cli("consistency", "--target", "loop:64MB", "--duration", "2", "--out", str(out), "--no-progress")
    s = json.loads((out / "summary.json").read_text())
    assert s["write_amplification"] is None
    assert s["write_amplification_source"].startswith("unavailable")
    assert "loop device" in s["write_amplification_source"]
    assert s["drive_counters_before"]["source"] == "unavailable"
    assert s["drive_counters_after"]["source"] == "unavailable"


def test_consistency_on_the_simulator_says_exact(tmp_path):
    from ssdlab.procedures import consistency
    from ssdlab.targets import open_target

    target = open_target("sim:default", sets=SMALL_DRIVE)
    s = consistency.run(target, consistency.ConsistencyParams(duration_s=20), tmp_path / "sim", progress=False)
    assert s["write_amplification_source"] == "simulator (exact)"
    assert s["write_amplification"] is not None and s["write_amplification"] >= 1.0
    assert "drive_counters_before" not in s
