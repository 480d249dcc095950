"""A real drive's own write counters: bytes the host wrote and bytes the drive wrote to NAND,
read before and after a test to measure the drive's write amplification.

:func:`read_counters` returns one snapshot::

    {"source": "nvme-smart-log" | "smartctl" | "unavailable",
     "host_write_bytes": int | None,   # bytes the host has written to the drive (lifetime)
     "nand_write_bytes": int | None,   # bytes the drive has programmed to NAND (lifetime)
     "reason": str,                    # where the numbers come from and in what units, or why none
     "device": "/dev/...", "model": str | None,
     "counters": {...},                # the raw counters read, with their units
     "wa_pair": {...} | None}          # the pair of counters to difference for write amplification

and :func:`write_amplification` turns two snapshots into ``(Δnand / Δhost, how)``. Every
parser takes the tool's JSON text, so recorded outputs can be replayed in tests.

What is read, and the units (sources in brackets):

NVMe (``nvme-cli``):

- host writes: SMART / Health Information log (02h) ``data_units_written`` from
  ``nvme smart-log -o json``: thousands of 512-byte units, rounded up, so one unit is
  512,000 bytes [NVMe Base Specification, SMART / Health Information log "Data Units
  Written"; the Linux nvmet fix 3bec2e37 quotes it; smartmontools prints it the same way].
- NAND writes, whichever the drive has, first that works:

  1. OCP Datacenter NVMe SSD "SMART / Health Information Extended" log (C0h), via
     ``nvme ocp smart-add-log -o json``: ``"Physical media units written": {"hi", "lo"}``,
     a 128-bit count of **bytes** written to NAND (the layout WDC's ``smart-add-log`` man page
     describes as "Physical NAND bytes written. The number of bytes written to NAND");
     accepted only when the log's GUID is the OCP one (nvme-cli's ``scao_guid``).
  2. Endurance Group Information log (09h, NVMe 1.4), ``nvme endurance-log -o json``:
     ``media_units_written`` and ``data_units_written`` in units of 10^9 bytes (rounded
     up) [Microsoft ``NVME_ENDURANCE_GROUP_LOG`` docs, "expressed in units of one
     billion"]. Ignored when the drive reports 0 media units (not implemented).
  3. Intel/Solidigm drives only (PCI vendor 8086h or 025Eh): the vendor additional SMART
     log (CAh), ``nvme intel smart-log-add --json``: ``nand_bytes_written`` (F4h) and
     ``host_bytes_written`` (F5h) raw counts in the same vendor unit (Solidigm's
     endurance_profiler uses 32 MB per count); write amplification is F4/F5 (a ratio needs
     no unit), and ``nand_write_bytes`` stays None because the unit is not documented here.

SATA (``smartctl -j -i -A``): attributes are matched by the **name** smartctl prints, which
comes from smartmontools' drive database (drivedb.h) and encodes the unit for that model:

==========================  ====================  ==========================================
smartctl attribute name     counts                unit
==========================  ====================  ==========================================
Total_LBAs_Written          host writes           logical blocks (smartctl's
                                                  ``logical_block_size``, default 512 B);
                                                  241 on most drives, 246 on Crucial/Micron
                                                  ("cumulative host sectors written",
                                                  Micron TN-FD-22)
Host_Writes_32MiB           host writes           32 MiB (Intel 225/241)
Host_Writes_GiB,            host writes           1 GiB (Phison, Indilinx, SanDisk, Seagate
Lifetime_Writes_GiB,                              IronWolf 125 ...)
Total_Writes_GiB
Host_Writes_MiB             host writes           1 MiB
NAND_Writes_1GiB,           NAND writes           1 GiB (Intel 249, Samsung CM871a/PM871
NAND_Writes_GiB,                                  249, Phison 233, SanDisk 233, SSSTC 243
Flash_Writes_GiB,                                 ...)
Total_NAND_Writes_GiB,
Total_NAND_Prog_Ct_GiB
NAND_Writes_32MiB,          NAND writes           32 MiB (Intel DC S3510/3610/3710 243,
Flash_Writes_32MiB                                Innodisk 233/245)
Host_Program_Page_Count     NAND pages programmed (Crucial/Micron 247)
                            for host data
FTL_Program_Page_Count,     NAND pages programmed (Crucial/Micron 248)
Bckgnd_Program_Page_Cnt     by the FTL (GC, wear
                            levelling)
==========================  ====================  ==========================================

On Crucial/Micron drives the write amplification is Micron's formula
WA = (Δ247 + Δ248) / Δ247 (Micron TN-FD-23, "Calculating the Write Amplification Factor"),
a ratio of NAND pages, so ``nand_write_bytes`` stays None there (page size not exposed).
A drive missing from smartctl's database shows generic names (241 "Total_LBAs_Written"
whatever it counts): run ``update-smart-drivedb`` first. Attribute names or units outside
this table are not guessed: the snapshot says 'unavailable' for what it cannot read.

An emulated drive (``ssdlab emulate``: a loop device over the emulator's drive file) is read
from its counters file (``ssdlab.targets.emu``): host and NAND bytes as the simulator counts
them (NAND work when the drive decides it, GC still queued on its dies included, as a phase's
totals on ``sim:`` count it), source ``ssdlab-emu``.

Other loop devices, files, device-mapper/md stacks, virtual disks (virtio, Xen), zram, network
block devices and SAS drives report 'unavailable' with the reason.

Counters have a resolution (512,000 B for NVMe host writes, 1 GiB for many SATA NAND
counters) and drives update NAND counters as their cache drains, so a short test gives a
coarse figure: :func:`write_amplification` states the relative resolution of its result.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path
from typing import Callable

from .. import stop
from . import emu

__all__ = [
    "read_counters",
    "write_amplification",
    "nvme_counters",
    "smartctl_counters",
    "parse_nvme_smart_log",
    "parse_ocp_smart_add_log",
    "parse_nvme_endurance_log",
    "parse_intel_smart_log_add",
    "parse_smartctl",
    "unavailable",
    "NVME_DATA_UNIT_BYTES",
    "ENDURANCE_UNIT_BYTES",
    "ATA_HOST_ATTRS",
    "ATA_NAND_ATTRS",
]

#: NVMe SMART log Data Units: thousands of 512-byte units.
NVME_DATA_UNIT_BYTES = 512 * 1000
#: NVMe Endurance Group log Data/Media Units: billions of bytes.
ENDURANCE_UNIT_BYTES = 10**9
#: nvme-cli's scao_guid (C5 AF 10 28 EA BF F2 A4 9C 4F 6F 7C C9 14 D5 AF) as it prints it.
OCP_C0_GUID = "0xafd514c97c6f4f9ca4f2bfea2810afc5"
#: PCI vendor ids whose CAh log has the Intel layout (Intel, Solidigm).
INTEL_VIDS = (0x8086, 0x025E)

_GIB, _MIB = 1 << 30, 1 << 20
#: smartctl attribute name -> (bytes per raw count, or "lba" for the logical block size).
ATA_HOST_ATTRS: dict[str, int | str] = {
    "Total_LBAs_Written": "lba",
    "Host_Writes_32MiB": 32 * _MIB,
    "Host_Writes_GiB": _GIB,
    "Lifetime_Writes_GiB": _GIB,
    "Total_Writes_GiB": _GIB,
    "Host_Writes_MiB": _MIB,
}
ATA_NAND_ATTRS: dict[str, int] = {
    "NAND_Writes_1GiB": _GIB,
    "NAND_Writes_GiB": _GIB,
    "Flash_Writes_GiB": _GIB,
    "Total_NAND_Writes_GiB": _GIB,
    "Total_NAND_Prog_Ct_GiB": _GIB,
    "NAND_Writes_32MiB": 32 * _MIB,
    "Flash_Writes_32MiB": 32 * _MIB,
}
ATA_HOST_PAGES = ("Host_Program_Page_Count",)
ATA_FTL_PAGES = ("FTL_Program_Page_Count", "Bckgnd_Program_Page_Cnt")

Runner = Callable[[list[str]], tuple[int, str, str]]


# ============================================================================ helpers


def _run(cmd: list[str], timeout: float = 30.0) -> tuple[int, str, str]:
    """(exit status, stdout, stderr); 127 when the program is missing, 124 on timeout."""
    try:
        r = stop.run(cmd, timeout)
    except FileNotFoundError:
        return 127, "", f"{cmd[0]}: not found"
    except subprocess.TimeoutExpired:
        return 124, "", f"`{' '.join(cmd)}` timed out after {timeout:g} s"
    except OSError as e:
        return 126, "", f"{cmd[0]}: {e}"
    return r.returncode, r.stdout, r.stderr


def _json(text: str) -> dict:
    """The first JSON object in ``text`` (tools sometimes print a line before it)."""
    text = text or ""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in the output")
    obj, _ = json.JSONDecoder().raw_decode(text[start:])
    if not isinstance(obj, dict):
        raise ValueError("the JSON output is not an object")
    return obj


def _int(v) -> int | None:
    """A counter as nvme-cli/smartctl print it: int, float (nvme-cli 1.x), decimal string
    (nvme-cli 2.x before numbers were unquoted, maybe with thousands separators), or a
    ``{"hi": .., "lo": ..}`` 128-bit pair. None if it is none of these."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(round(v)) if v == v and v not in (float("inf"), float("-inf")) else None
    if isinstance(v, str):
        s = v.strip().replace(",", "").replace("_", "")
        try:
            return int(s, 0) if s.lower().startswith("0x") else int(s)
        except ValueError:
            try:
                return int(round(float(s)))
            except ValueError:
                return None
    if isinstance(v, dict) and "lo" in v:
        lo, hi = _int(v.get("lo")), _int(v.get("hi", 0))
        if lo is None or hi is None:
            return None
        return (hi << 64) | lo
    return None


def unavailable(reason: str, device: str | None = None, **extra) -> dict:
    """A snapshot that says no counters could be read, and why."""
    return {"source": "unavailable", "host_write_bytes": None, "nand_write_bytes": None, "reason": reason,
            "device": device, "model": None, "counters": {}, "wa_pair": None, **extra}


def _fmt_bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", _GIB), ("MiB", _MIB), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    if n >= 10**6 and n % 1000 == 0:
        return f"{n:,} B"
    return f"{n} B"


# ============================================================================ parsers (JSON text in)


def parse_nvme_smart_log(text: str) -> dict:
    """``nvme smart-log -o json``: ``{"data_units_written": units, "host_write_bytes": bytes,
    "host_write_commands": n}``. Raises ValueError if the field is missing."""
    d = _json(text)
    units = _int(d.get("data_units_written"))
    if units is None:
        raise ValueError("no data_units_written in nvme smart-log output")
    return {"data_units_written": units, "host_write_bytes": units * NVME_DATA_UNIT_BYTES,
            "host_write_commands": _int(d.get("host_write_commands"))}


def parse_ocp_smart_add_log(text: str) -> dict:
    """``nvme ocp smart-add-log -o json`` (OCP C0h log): ``{"physical_media_units_written":
    bytes, "nand_write_bytes": bytes}``. Raises ValueError if the field is missing or the
    log's GUID is not the OCP one (the C0h page then belongs to another vendor's layout)."""
    d = _json(text)
    guid = None
    for k, v in d.items():
        if k.lower().replace("_", " ") in ("log page guid",):
            guid = str(v).strip().lower()
    if guid is not None and guid.replace("0x", "").lstrip("0") != OCP_C0_GUID.replace("0x", "").lstrip("0"):
        raise ValueError(f"log C0h has GUID {guid}, not the OCP SMART extended log's {OCP_C0_GUID}")
    val = None
    for k, v in d.items():
        if k.lower().replace("_", " ") == "physical media units written":
            val = _int(v)
    if val is None:
        raise ValueError("no 'Physical media units written' in nvme ocp smart-add-log output")
    return {"physical_media_units_written": val, "nand_write_bytes": val}


def parse_nvme_endurance_log(text: str) -> dict:
    """``nvme endurance-log -o json`` (log 09h): ``{"data_units_written", "media_units_written"}``
    (units of 10^9 bytes) and both in bytes. Raises ValueError if a field is missing."""
    d = _json(text)
    data, media = _int(d.get("data_units_written")), _int(d.get("media_units_written"))
    if data is None or media is None:
        raise ValueError("no data_units_written / media_units_written in nvme endurance-log output")
    return {"data_units_written": data, "media_units_written": media,
            "host_write_bytes": data * ENDURANCE_UNIT_BYTES, "nand_write_bytes": media * ENDURANCE_UNIT_BYTES}


def parse_intel_smart_log_add(text: str) -> dict:
    """``nvme intel smart-log-add --json`` (Intel/Solidigm CAh log): raw ``nand_bytes_written``
    (F4h) and ``host_bytes_written`` (F5h) counts. Raises ValueError if they are missing."""
    d = _json(text)
    stats = d.get("Device stats") if isinstance(d.get("Device stats"), dict) else d
    out = {}
    for key in ("nand_bytes_written", "host_bytes_written"):
        e = stats.get(key)
        raw = _int(e.get("raw")) if isinstance(e, dict) else _int(e)
        if raw is None:
            raise ValueError(f"no {key} in nvme intel smart-log-add output")
        out[key] = raw
    return out


def parse_smartctl(text: str) -> dict:
    """``smartctl -j -i -A DEV``: a counters snapshot (the dict :func:`read_counters`
    returns) for an ATA drive by the attribute table in the module docstring, or for an
    NVMe drive (host writes only) from ``nvme_smart_health_information_log``."""
    d = _json(text)
    dev = (d.get("device") or {}).get("name")
    model = d.get("model_name") or d.get("model_family")
    exit_status = _int((d.get("smartctl") or {}).get("exit_status")) or 0
    msgs = "; ".join(str(m.get("string", "")) for m in (d.get("smartctl") or {}).get("messages") or []
                     if isinstance(m, dict))
    nvme_log = d.get("nvme_smart_health_information_log")
    if isinstance(nvme_log, dict) and _int(nvme_log.get("data_units_written")) is not None:
        units = _int(nvme_log["data_units_written"])
        return {"source": "smartctl", "host_write_bytes": units * NVME_DATA_UNIT_BYTES, "nand_write_bytes": None,
                "reason": ("host writes: NVMe SMART log Data Units Written via smartctl (x 512,000 bytes); "
                           "NAND writes unavailable: install nvme-cli so ssdlab can read the OCP C0h or "
                           "Endurance Group logs where the drive has them"),
                "device": dev, "model": model,
                "counters": {"data_units_written": {"raw": units, "unit_bytes": NVME_DATA_UNIT_BYTES}},
                "wa_pair": None}
    table = (d.get("ata_smart_attributes") or {}).get("table")
    if not isinstance(table, list) or not table:
        proto = (d.get("device") or {}).get("protocol")
        if proto == "SCSI":
            why = ("a SCSI/SAS device: ssdlab reads ATA SMART attributes and NVMe logs only "
                   "(SAS write counters are host-side)")
        else:
            why = f"smartctl found no ATA SMART attributes (exit status {exit_status}{': ' + msgs if msgs else ''})"
        return unavailable(why, dev, model=model)
    lbs = _int(d.get("logical_block_size")) or 512
    attrs: dict[str, tuple[int, int]] = {}  # name -> (id, raw)
    for a in table:
        if not isinstance(a, dict):
            continue
        name, raw = a.get("name"), _int((a.get("raw") or {}).get("value") if isinstance(a.get("raw"), dict) else a.get("raw"))
        if isinstance(name, str) and raw is not None and name not in attrs:
            attrs[name] = (_int(a.get("id")) or 0, raw)
    counters: dict = {}
    host = nand = None
    notes = []
    for name, unit in ATA_HOST_ATTRS.items():
        if name in attrs:
            aid, raw = attrs[name]
            ub = lbs if unit == "lba" else int(unit)
            counters[name] = {"id": aid, "raw": raw, "unit_bytes": ub}
            host = raw * ub
            unit_txt = f"{ub}-byte logical blocks" if unit == "lba" else _fmt_bytes(ub)
            notes.append(f"host writes: attribute {aid} {name} x {unit_txt}")
            if unit == "lba" and aid == 241:
                notes[-1] += " (the unit smartctl's name implies; a drive missing from smartmontools' database may count otherwise: run update-smart-drivedb)"
            break
    for name, unit in ATA_NAND_ATTRS.items():
        if name in attrs:
            aid, raw = attrs[name]
            counters[name] = {"id": aid, "raw": raw, "unit_bytes": unit}
            nand = raw * unit
            notes.append(f"NAND writes: attribute {aid} {name} x {_fmt_bytes(unit)}")
            break
    hp = next((n for n in ATA_HOST_PAGES if n in attrs), None)
    fp = next((n for n in ATA_FTL_PAGES if n in attrs), None)
    wa_pair = None
    if hp and fp:
        (hid, hraw), (fid, fraw) = attrs[hp], attrs[fp]
        counters[hp] = {"id": hid, "raw": hraw, "unit": "NAND pages"}
        counters[fp] = {"id": fid, "raw": fraw, "unit": "NAND pages"}
        wa_pair = {"host": hraw, "nand": hraw + fraw, "unit": "NAND pages", "host_resolution": 1, "nand_resolution": 1,
                   "what": f"Micron: (attr {hid} {hp} + attr {fid} {fp}) / attr {hid}"}
        notes.append(f"write amplification from NAND page counts (attributes {hid} {hp} + {fid} {fp}) / {hid}, "
                     f"Micron's formula; bytes written to NAND unavailable (page size not exposed)")
    elif host is not None and nand is not None:
        hname = next(n for n in ATA_HOST_ATTRS if n in counters)
        nname = next(n for n in ATA_NAND_ATTRS if n in counters)
        wa_pair = {"host": host, "nand": nand, "unit": "bytes", "host_resolution": counters[hname]["unit_bytes"],
                   "nand_resolution": counters[nname]["unit_bytes"], "what": f"smartctl {nname} / {hname}"}
    if host is None and nand is None and wa_pair is None:
        return unavailable("smartctl shows no write counter ssdlab knows the unit of (known names: "
                           + ", ".join(list(ATA_HOST_ATTRS) + list(ATA_NAND_ATTRS) + list(ATA_HOST_PAGES) + list(ATA_FTL_PAGES))
                           + "); update smartmontools' drive database with update-smart-drivedb", dev, model=model)
    if host is None:
        notes.append("host writes unavailable (no host-write attribute with a known unit)")
    if nand is None and wa_pair is None:
        notes.append("NAND writes unavailable: this drive exposes no NAND-write attribute with a known unit")
    return {"source": "smartctl", "host_write_bytes": host, "nand_write_bytes": nand, "reason": "; ".join(notes),
            "device": dev, "model": model, "counters": counters, "wa_pair": wa_pair}


# ============================================================================ readers (run the tools)


def nvme_counters(dev: str, run: Runner | None = None) -> dict:
    """Read an NVMe drive's counters with nvme-cli (see the module docstring)."""
    run = run or _run
    if run is _run and not shutil.which("nvme"):
        if shutil.which("smartctl"):
            return smartctl_counters(dev, run)
        return unavailable("nvme-cli is not installed (apt-get install nvme-cli)", dev)
    rc, out, err = run(["nvme", "smart-log", dev, "-o", "json"])
    try:
        smart = parse_nvme_smart_log(out)
    except ValueError as e:
        return unavailable(f"`nvme smart-log {dev}` failed (exit {rc}): {(err or str(e)).strip()[:300]}", dev)
    model = None
    rc, out, err = run(["nvme", "id-ctrl", dev, "-o", "json"])
    vid = None
    try:
        ctrl = _json(out)
        model = str(ctrl.get("mn", "")).strip() or None
        vid = _int(ctrl.get("vid"))
    except ValueError:
        pass
    counters = {"data_units_written": {"raw": smart["data_units_written"], "unit_bytes": NVME_DATA_UNIT_BYTES,
                                       "log": "SMART / Health Information (02h)"}}
    host = smart["host_write_bytes"]
    host_txt = "host writes: SMART log (02h) Data Units Written x 512,000 bytes"
    tried = []
    # 1. OCP C0h: NAND bytes.
    rc, out, err = run(["nvme", "ocp", "smart-add-log", dev, "-o", "json"])
    try:
        ocp = parse_ocp_smart_add_log(out) if rc == 0 else None
    except ValueError as e:
        ocp, err = None, str(e)
    if ocp is not None:
        counters["physical_media_units_written"] = {"raw": ocp["nand_write_bytes"], "unit_bytes": 1,
                                                    "log": "OCP SMART / Health Information Extended (C0h)"}
        return {"source": "nvme-smart-log", "host_write_bytes": host, "nand_write_bytes": ocp["nand_write_bytes"],
                "reason": f"{host_txt}; NAND writes: OCP C0h log Physical Media Units Written (bytes)",
                "device": dev, "model": model, "counters": counters,
                "wa_pair": {"host": host, "nand": ocp["nand_write_bytes"], "unit": "bytes",
                            "host_resolution": NVME_DATA_UNIT_BYTES, "nand_resolution": 1,
                            "what": "OCP C0h Physical Media Units Written / SMART Data Units Written"}}
    msg = (err or "").strip().splitlines()
    tried.append("OCP C0h log: " + (msg[-1][:120] if msg else "not supported"))
    # 2. Endurance Group log 09h: both in 10^9 bytes.
    egid = 1
    rc, out, _ = run(["nvme", "id-ns", dev, "-o", "json"])
    try:
        egid = _int(_json(out).get("endgid")) or 1
    except ValueError:
        pass
    rc, out, err = run(["nvme", "endurance-log", dev, f"--group-id={egid}", "-o", "json"])
    try:
        eg = parse_nvme_endurance_log(out) if rc == 0 else None
    except ValueError as e:
        eg, err = None, str(e)
    if eg is not None and eg["media_units_written"] > 0:
        counters["endurance_group"] = {"group_id": egid, "data_units_written": eg["data_units_written"],
                                       "media_units_written": eg["media_units_written"],
                                       "unit_bytes": ENDURANCE_UNIT_BYTES, "log": "Endurance Group Information (09h)"}
        return {"source": "nvme-smart-log", "host_write_bytes": host, "nand_write_bytes": eg["nand_write_bytes"],
                "reason": (f"{host_txt}; NAND writes: Endurance Group {egid} log (09h) Media Units Written x 10^9 bytes; "
                           f"write amplification from that log's Media/Data Units Written (1 GB resolution)"),
                "device": dev, "model": model, "counters": counters,
                "wa_pair": {"host": eg["host_write_bytes"], "nand": eg["nand_write_bytes"], "unit": "bytes",
                            "host_resolution": ENDURANCE_UNIT_BYTES, "nand_resolution": ENDURANCE_UNIT_BYTES,
                            "what": f"Endurance Group {egid} log Media Units Written / Data Units Written"}}
    tried.append("Endurance Group log 09h: " + ("reports 0 media units" if eg is not None else "not supported"))
    # 3. Intel / Solidigm vendor log CAh.
    if vid in INTEL_VIDS:
        rc, out, err = run(["nvme", "intel", "smart-log-add", dev, "--json"])
        try:
            il = parse_intel_smart_log_add(out) if rc == 0 else None
        except ValueError as e:
            il, err = None, str(e)
        if il is not None:
            counters["intel_smart_log_add"] = {**il, "unit": "vendor count (same for both)", "log": "Intel/Solidigm CAh"}
            return {"source": "nvme-smart-log", "host_write_bytes": host, "nand_write_bytes": None,
                    "reason": (f"{host_txt}; NAND writes: Intel/Solidigm CAh log nand_bytes_written (F4h) in vendor "
                               f"counts, so no byte figure; write amplification from F4h/F5h (host_bytes_written), "
                               f"same unit"),
                    "device": dev, "model": model, "counters": counters,
                    "wa_pair": {"host": il["host_bytes_written"], "nand": il["nand_bytes_written"], "unit": "vendor count",
                                "host_resolution": 1, "nand_resolution": 1,
                                "what": "Intel/Solidigm CAh nand_bytes_written (F4h) / host_bytes_written (F5h)"}}
        tried.append("Intel CAh log: " + ((err or "failed").strip()[:120]))
    return {"source": "nvme-smart-log", "host_write_bytes": host, "nand_write_bytes": None,
            "reason": (f"{host_txt}; NAND writes unavailable: the NVMe standard SMART log has none and this drive "
                       f"offers no log ssdlab can read them from ({'; '.join(tried)})"),
            "device": dev, "model": model, "counters": counters, "wa_pair": None}


def smartctl_counters(dev: str, run: Runner | None = None) -> dict:
    """Read an ATA (or NVMe, host writes only) drive's counters with smartctl."""
    run = run or _run
    if run is _run and not shutil.which("smartctl"):
        return unavailable("smartmontools is not installed (apt-get install smartmontools)", dev)
    rc, out, err = run(["smartctl", "-j", "-i", "-A", dev])
    try:
        snap = parse_smartctl(out)
    except ValueError:
        return unavailable(f"`smartctl -j -i -A {dev}` failed (exit {rc}): {(err or out).strip()[:300]}", dev)
    snap["device"] = snap.get("device") or dev
    return snap


# ============================================================================ the entry point


def _kernel_name(path: str) -> tuple[str | None, str | None]:
    """(kernel name, whole-disk kernel name) of a block device node, or (None, why)."""
    try:
        st = os.stat(path)
    except OSError as e:
        return None, f"{path}: {e.strerror}"
    if not stat.S_ISBLK(st.st_mode):
        return None, None
    sysd = Path(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
    try:
        real = sysd.resolve(strict=True)
    except OSError:
        return os.path.basename(os.path.realpath(path)), os.path.basename(os.path.realpath(path))
    name = real.name
    whole = real.parent.name if (real / "partition").exists() else name
    return name, whole


def read_counters(device_path: str | os.PathLike, run: Runner | None = None) -> dict:
    """The drive's lifetime host and NAND write counters now (see the module docstring).

    ``device_path``: a block device (``/dev/nvme0n1``, ``/dev/sda``, a partition: its drive is
    read), an NVMe controller (``/dev/nvme0``), or anything else (a file, a loop device...),
    which gives an 'unavailable' snapshot with the reason. Never raises for a device it cannot
    read; ``run`` replaces the command runner (tests)."""
    path = os.fspath(device_path)
    if path.startswith("file:"):
        path = path[5:]
    t = time.time()
    if not os.path.exists(path):
        return unavailable(f"{path} does not exist", path, read_unix_s=t)
    try:
        st = os.stat(path)
    except OSError as e:
        return unavailable(f"{path}: {e.strerror}", path, read_unix_s=t)
    if stat.S_ISREG(st.st_mode):
        return unavailable("a regular file: the drive under its filesystem also carries the filesystem's and "
                           "other programs' writes, so its counters would not measure this test", path, read_unix_s=t)
    real = os.path.realpath(path)
    if stat.S_ISCHR(st.st_mode):
        if re.fullmatch(r"/dev/nvme\d+", real):
            snap = nvme_counters(real, run)
        else:
            snap = unavailable(f"{path} is a character device that is not an NVMe controller", path)
        snap["read_unix_s"] = t
        return snap
    if not stat.S_ISBLK(st.st_mode):
        return unavailable(f"{path} is not a block device", path, read_unix_s=t)
    name, whole = _kernel_name(path)
    if name is None:
        return unavailable(whole or f"{path}: unknown device", path, read_unix_s=t)
    dev = f"/dev/{whole}"
    note = f" (partition {name}: counters are the whole drive's)" if whole != name else ""
    why = None
    if whole.startswith("loop") and (emulated := emu.counters_file(dev)):
        snap = emu_counters(emulated, dev)
        snap["read_unix_s"] = t
        return snap
    if whole.startswith("loop"):
        why = ("a loop device: no drive of its own; its writes go to a backing file through a filesystem "
               "and the page cache, so there are no host/NAND counters to read")
    elif whole.startswith(("dm-", "md")):
        why = "a device-mapper/md device: writes are spread over other devices; test a physical drive for its counters"
    elif whole.startswith(("vd", "xvd")):
        why = "a virtual disk (virtio/Xen): the hypervisor does not pass the drive's SMART counters through"
    elif whole.startswith(("zram", "ram", "pmem", "nbd", "rbd", "nullb")):
        why = f"{whole} is not a flash drive with SMART counters"
    elif whole.startswith("mmcblk"):
        why = "an eMMC/SD device: it exposes no standard write counters"
    if why:
        return unavailable(why, dev, read_unix_s=t)
    if re.fullmatch(r"nvme\d+(c\d+)?n\d+", whole):
        snap = nvme_counters(dev, run)
    elif re.fullmatch(r"sd[a-z]+", whole):
        snap = smartctl_counters(dev, run)
    else:
        snap = unavailable(f"{dev}: ssdlab reads counters from NVMe (nvme-cli) and SATA (smartctl) drives only", dev)
    if note:
        snap["reason"] += note
    snap["read_unix_s"] = t
    return snap


def emu_counters(path: Path, dev: str) -> dict:
    """The snapshot of an emulated drive (``ssdlab emulate``) from its counters file ``path``:
    host and NAND bytes as the simulated drive counts them (bytes, exact to its 4 KiB unit; NAND
    work as decided, so a phase's delta is the simulator's figure for it even when GC it decided
    runs on after its end)."""
    try:
        d = emu.read(path)
    except (OSError, ValueError) as e:
        return unavailable(f"{dev} is over an emulated drive whose counters could not be read ({e})", dev)
    host, nand = d["host_write_bytes"], d["nand_write_bytes"]
    counters = {k: {"raw": d[k], "unit_bytes": 1} for k in ("host_write_bytes", "nand_write_bytes", "gc_copied_bytes")}
    counters["erases"] = {"raw": d["erases"], "unit_bytes": None}
    return {"source": "ssdlab-emu", "host_write_bytes": host, "nand_write_bytes": nand,
            "reason": f"emulated drive's counters ({path}): host and NAND bytes written, in bytes",
            "device": dev, "model": "ssdlab emulated drive", "counters": counters,
            "wa_pair": {"host": host, "nand": nand, "unit": "bytes", "host_resolution": 1, "nand_resolution": 4096,
                        "what": "emulated drive's NAND bytes written (as decided) / host bytes written"}}


def write_amplification(before: dict | None, after: dict | None) -> tuple[float | None, str]:
    """``(Δnand / Δhost, how it was measured)`` between two :func:`read_counters` snapshots;
    ``(None, "unavailable: <reason>")`` when it cannot be measured."""
    if not before or not after:
        return None, "unavailable: drive counters were not read"
    for s in (after, before):
        if s.get("source") == "unavailable":
            return None, f"unavailable: {s.get('reason')}"
    pb, pa = before.get("wa_pair"), after.get("wa_pair")
    if not pb or not pa:
        return None, f"unavailable: {after.get('reason')}"
    if pb.get("what") != pa.get("what") or pb.get("unit") != pa.get("unit"):
        return None, "unavailable: the counters read before and after the test differ in kind"
    dh, dn = pa["host"] - pb["host"], pa["nand"] - pb["nand"]
    unit = pa["unit"]
    if dh <= 0:
        return None, (f"unavailable: the drive's host-write counter did not move ({pa['what']}; "
                      f"resolution {pa['host_resolution']} {'bytes' if unit == 'bytes' else unit})")
    if dn < 0:
        return None, "unavailable: the NAND-write counter went backwards (counters reset during the test?)"
    wa = dn / dh
    # Each counter is read with up to one unit of rounding at each end.
    rel = pa["host_resolution"] / dh + (pa["nand_resolution"] / dn if dn else float("inf"))
    if unit == "bytes":
        delta = f"Δnand {dn:,} B / Δhost {dh:,} B"
    else:
        delta = f"Δnand {dn:,} / Δhost {dh:,} {unit}"
    res = f"±{100 * rel:.2g}% from counter resolution" if rel != float("inf") else "NAND counter did not move"
    return wa, f"drive counters ({before.get('source')}: {pa['what']}): {delta}; {res}"
