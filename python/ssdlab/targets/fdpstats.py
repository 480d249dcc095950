"""A real Flexible Data Placement (FDP) drive's own placement counters, read with nvme-cli
before and after each phase and reported in the columns the simulator reports them in.

What is read (nvme-cli's ``fdp`` plugin, JSON output):

- ``nvme fdp stats DEV -e ENDGID -o json``: the FDP Statistics log page (22h) of the
  namespace's endurance group: ``hbmw`` (Host Bytes with Metadata Written), ``mbmw`` (Media
  Bytes with Metadata Written) and ``mbe`` (Media Bytes Erased), each a 128-bit count of
  **bytes**. nvme-cli 2.4 and later print them as plain JSON numbers (decimal, beyond 2^64
  where the count is); 2.3 printed them as quoted decimal strings, with the locale's
  thousands separator. Their growth over a phase becomes the phase's ``fdp_hbmw_bytes``,
  ``fdp_mbmw_bytes`` and ``fdp_mbe_bytes`` (:data:`STATS_COLUMNS`), and
  ``write_amplification`` is Δmbmw / Δhbmw, the drive's own figure to the byte.
- ``nvme fdp usage DEV -e ENDGID -o json``: the Reclaim Unit Handle Usage log page (21h):
  ``{"nruh": n, "ruhus": [{"ruha": attributes}, ...]}``, one entry per reclaim unit handle,
  its attributes a bit field (bit 0: a host named the handle in a write, bit 1: the
  controller chose it; 0: unused). It holds no byte counts: a phase's ``fdp_handles`` lists
  each handle's ``ruha`` and what it means after the phase, where the simulator lists bytes
  and reclaim units per handle.

The simulator's ``fdp_ru_filled`` (reclaim units filled) has no log page on a real drive:
it is absent from a real drive's totals.

FDP is read where the target is an NVMe namespace (``/dev/nvmeXnY``, a partition of one, or
its generic character device ``/dev/ngXnY``), its controller reports FDP supported
(Identify Controller CTRATT bit 19, FDPS), its namespace an endurance group (Identify
Namespace ``endgid``), and ``nvme fdp stats`` succeeds on that group (it fails where FDP is
not enabled there). Anything else, nvme-cli missing included, gives no FDP figures and the
reason (:func:`probe`); never an exception. An output of nvme-cli that is not the format
above raises :class:`~ssdlab.errors.UserError` naming the command.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass

from ..errors import UserError
from .counters import Runner, _int, _json, _kernel_name, _run

__all__ = ["STATS_COLUMNS", "FdpDevice", "probe", "read", "phase_totals", "parse_stats", "parse_usage",
           "ruha_meaning"]

#: nvme fdp stats' fields (FDP Statistics log, bytes) -> the series column the simulator
#: reports the same counter in (``ssdlab.columns``).
STATS_COLUMNS = {"hbmw": "fdp_hbmw_bytes", "mbmw": "fdp_mbmw_bytes", "mbe": "fdp_mbe_bytes"}
#: Identify Controller CTRATT bit: Flexible Data Placement supported (FDPS).
CTRATT_FDPS = 1 << 19


@dataclass(frozen=True)
class FdpDevice:
    """An NVMe namespace with FDP enabled: the device nvme-cli is given, its endurance group."""

    device: str
    endgid: int

    def command(self, what: str) -> list[str]:
        """``nvme fdp stats|usage DEV -e ENDGID -o json``."""
        return ["nvme", "fdp", what, self.device, "-e", str(self.endgid), "-o", "json"]


def _cmd_text(cmd: list[str]) -> str:
    return "`" + " ".join(cmd) + "`"


def _parsed(text: str, cmd: list[str]) -> dict:
    try:
        return _json(text)
    except ValueError as e:
        raise UserError(f"{_cmd_text(cmd)} printed no JSON object ({e}); expected nvme-cli's JSON output. "
                        f"Run it by hand to see what it prints, and update nvme-cli if it is older than 2.3") from None


def parse_stats(text: str, cmd: list[str]) -> dict[str, int]:
    """``nvme fdp stats -o json`` (``cmd``, for messages): ``{"hbmw", "mbmw", "mbe"}`` [bytes].
    Raises UserError naming ``cmd`` when a counter is missing or not a whole number."""
    d = _parsed(text, cmd)
    out = {}
    for key in STATS_COLUMNS:
        v = d.get(key)
        n = None if isinstance(v, float) else _int(v)
        if n is None or n < 0:
            raise UserError(f"{_cmd_text(cmd)}: {key!r} is {'missing' if v is None else repr(v)}, not a byte count; "
                            f"expected nvme-cli's FDP Statistics output (hbmw, mbmw, mbe)")
        out[key] = n
    return out


def ruha_meaning(ruha: int) -> str:
    """What a Reclaim Unit Handle Attributes value says: ``unused``, ``host specified``,
    ``controller specified`` (bits 0 and 1)."""
    said = [name for bit, name in ((1, "host specified"), (2, "controller specified")) if ruha & bit]
    return ", ".join(said) or "unused"


def parse_usage(text: str, cmd: list[str]) -> list[dict]:
    """``nvme fdp usage -o json`` (``cmd``, for messages): per reclaim unit handle, in order,
    ``{"ruha": int, "usage": ruha_meaning(ruha)}``. Raises UserError naming ``cmd`` when the
    list is missing or an entry has no ``ruha``."""
    d = _parsed(text, cmd)
    ruhus = d.get("ruhus")
    if not isinstance(ruhus, list):
        raise UserError(f"{_cmd_text(cmd)}: no 'ruhus' list; expected nvme-cli's Reclaim Unit Handle Usage "
                        f"output (nruh, ruhus[].ruha)")
    out = []
    for i, e in enumerate(ruhus):
        ruha = _int(e.get("ruha")) if isinstance(e, dict) else None
        if ruha is None:
            raise UserError(f"{_cmd_text(cmd)}: ruhus[{i}] has no 'ruha'; expected nvme-cli's Reclaim Unit Handle "
                            f"Usage output")
        out.append({"ruha": ruha, "usage": ruha_meaning(ruha)})
    return out


def _namespace(device: str) -> str | None:
    """The NVMe namespace device nvme-cli is to read for ``device`` (a namespace, a
    partition of one, or a generic character device), or None where it is none of these."""
    try:
        st = os.stat(device)
    except OSError:
        return None
    real = os.path.realpath(device)
    if stat.S_ISCHR(st.st_mode):
        return real if re.fullmatch(r"/dev/ng\d+n\d+", real) else None
    if not stat.S_ISBLK(st.st_mode):
        return None
    _, whole = _kernel_name(device)
    return f"/dev/{whole}" if whole and re.fullmatch(r"nvme\d+(c\d+)?n\d+", whole) else None


def _failed(cmd: list[str], rc: int, err: str) -> str:
    lines = (err or "").strip().splitlines()
    return f"{_cmd_text(cmd)} failed (exit {rc}{': ' + lines[-1][:200] if lines else ''})"


def probe(device: str, run: Runner | None = None) -> FdpDevice | str:
    """The FDP namespace to read for ``device``, or why its FDP counters cannot be read (see
    the module docstring). ``run`` replaces the command runner (tests). Raises UserError only
    when ``nvme fdp stats`` succeeds but prints another format."""
    ns = _namespace(device)
    if ns is None:
        return f"{device} is not an NVMe namespace: no FDP counters"
    run = run or _run
    if run is _run and not shutil.which("nvme"):
        return "nvme-cli is not installed (apt-get install nvme-cli): no FDP counters"
    rc, out, _ = run(["nvme", "id-ctrl", ns, "-o", "json"])
    try:
        ctratt = _int(_json(out).get("ctratt")) if rc == 0 else None
    except ValueError:
        ctratt = None
    if ctratt is not None and not ctratt & CTRATT_FDPS:
        return f"{ns}'s controller does not support FDP (Identify Controller CTRATT bit 19 clear): no FDP counters"
    cmd = ["nvme", "id-ns", ns, "-o", "json"]
    rc, out, err = run(cmd)
    try:
        endgid = _int(_json(out).get("endgid")) if rc == 0 else None
    except ValueError:
        endgid = None
    if endgid is None:
        return f"{_failed(cmd, rc, err) if rc else _cmd_text(cmd) + ' shows no endgid'}: no FDP counters"
    if endgid == 0:
        return f"{ns} is in no endurance group (Identify Namespace endgid 0), which FDP needs: no FDP counters"
    dev = FdpDevice(ns, endgid)
    cmd = dev.command("stats")
    rc, out, err = run(cmd)
    if rc != 0:
        return f"FDP is not enabled in {ns}'s endurance group {endgid}: {_failed(cmd, rc, err)}"
    parse_stats(out, cmd)
    return dev


def read(dev: FdpDevice, run: Runner | None = None) -> dict:
    """The drive's FDP counters now: ``{"stats": parse_stats(...), "handles": parse_usage(...)
    or None, "notes": [...]}`` (a usage log that cannot be read is a note). Raises UserError
    naming the command when a command fails or prints another format."""
    run = run or _run
    snap: dict = {"notes": []}
    cmd = dev.command("stats")
    rc, out, err = run(cmd)
    if rc != 0:
        raise UserError(f"{_failed(cmd, rc, err)}; it succeeded when the run started")
    snap["stats"] = parse_stats(out, cmd)
    cmd = dev.command("usage")
    rc, out, err = run(cmd)
    if rc != 0:
        snap["handles"] = None
        snap["notes"].append(f"reclaim unit handle usage unavailable: {_failed(cmd, rc, err)}")
    else:
        snap["handles"] = parse_usage(out, cmd)
    return snap


def phase_totals(before: dict, after: dict) -> dict:
    """A phase's FDP totals from :func:`read` snapshots taken before and after it: the
    :data:`STATS_COLUMNS` [bytes], ``write_amplification`` (Δmbmw / Δhbmw, None when the host
    wrote nothing) and ``fdp_handles`` (each handle's usage after the phase, where read)."""
    d = {key: after["stats"][key] - before["stats"][key] for key in STATS_COLUMNS}
    if any(v < 0 for v in d.values()):
        raise UserError("the drive's FDP Statistics counters went backwards during the phase (FDP reconfigured or the "
                        "log reset?): no FDP figures for it")
    out: dict = {col: d[key] for key, col in STATS_COLUMNS.items()}
    out["write_amplification"] = d["mbmw"] / d["hbmw"] if d["hbmw"] else None
    if after.get("handles") is not None:
        out["fdp_handles"] = [dict(h) for h in after["handles"]]
    return out
