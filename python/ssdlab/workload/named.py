"""Named built-in workloads (``ssdlab run NAME``, ``ssdlab run --list``): workloads users quote
by name, each declared once as a :class:`Named` in :data:`NAMED`.

* ``cdm``: CrystalDiskMark 8's default set as fio jobs (:func:`cdm_job_text`), and its one
  results table from a run's per-group figures (:func:`cdm_table`).
* ``jesd219``: the JEDEC JESD219 enterprise endurance workload as one fio job
  (:func:`jesd219_job_text`).
* ``record``: the "seek, then access" workload of a scientific dataset (a header that
  indexes the records, then one record per variable and time step), a generated command
  stream for trace replay (:mod:`ssdlab.workload.record`); it has no job file.

Each entry's parameters are a frozen dataclass declared with
:func:`ssdlab.params.param` (name with its unit, flag, help, range), so a command
line can be built from them; :meth:`Named.job_text` takes them as keywords.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ..errors import UserError
from ..params import MAX_DURATION_S, check, declared, param, size
from . import record

_GiB = 1 << 30


# ============================================================================ the declaration
@dataclass(frozen=True)
class Named:
    """One built-in workload: ``name`` (what ``ssdlab run NAME`` takes), ``help`` (one line for
    ``--list``), ``description``, ``params`` (its parameters dataclass) and either ``text``
    (parameters -> fio job text) or, for a generated command stream, ``commands``
    (``commands(params, span_bytes)`` -> iterator of
    :data:`~ssdlab.targets.base.CommandChunk`), ``totals`` (``totals(params)`` -> dict of
    counts) and ``layout`` (``layout(params)`` -> bytes of the span it needs)."""

    name: str
    help: str
    description: str
    params: type
    text: Callable[[Any], str] | None = None
    commands: Callable | None = None
    totals: Callable | None = None
    layout: Callable | None = None
    #: ``table(groups)`` -> rows: the workload's own results table from a run's per-group
    #: summary (CrystalDiskMark's), and ``table_text(rows)`` to print it; None for none.
    table: Callable | None = None
    table_text: Callable | None = None

    @property
    def generated(self) -> bool:
        """True for a generated command stream (no job file)."""
        return self.text is None

    def make_params(self, **values) -> Any:
        """The parameters with ``values`` (field names, with units: ``size_bytes=...``) over the
        defaults, range-checked; :class:`UserError` names an unknown parameter and lists the
        known ones."""
        known = [f.name for f in dataclasses.fields(self.params)]
        unknown = [k for k in values if k not in known]
        if unknown:
            raise UserError(f"workload {self.name}: no parameter {unknown[0]!r}; its parameters are "
                            f"{', '.join(known)}")
        p = self.params(**values)
        check(p)
        return p

    def job_text(self, **values) -> str | None:
        """The fio job text with the parameters ``values`` over the defaults; None for a
        generated command stream (``record``)."""
        p = self.make_params(**values)
        return None if self.text is None else self.text(p)


def _value_text(v: Any, unit: str) -> str:
    """A default as ``--list`` shows it: sizes in KiB/MiB/GiB where exact."""
    if isinstance(v, tuple):
        return ",".join(_value_text(x, unit) for x in v)
    if v is None:
        return "all"
    if unit == "bytes" and isinstance(v, int) and v >= 1024:
        for shift, name in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
            if v % (1 << shift) == 0:
                return f"{v >> shift}{name}"
    return str(v)


def _defaults_text(params_cls) -> str:
    """The workload's options with their defaults, as given after its name."""
    out = []
    for f, p in declared(params_cls):
        if p.flag is None:
            continue
        if p.off_switch or p.switch:
            out.append(f"[{p.flag}]")
            continue
        out.append(f"{p.flag} {_value_text(f.default, p.unit or ('bytes' if f.name.endswith('_bytes') else ''))}")
    return "  ".join(out)


# ============================================================================ CrystalDiskMark
# Followed: CrystalDiskMark 8.0.6's source (github.com/hiyohiyo/CrystalDiskMark, tag commit
# 8f3cd04, DiskMarkDlg.cpp and DiskBench.cpp):
# * default profile: tests 0-3 = SEQ 1024 KiB Q8 T1, SEQ 1024 KiB Q1 T1, RND 4 KiB Q32 T1,
#   RND 4 KiB Q1 T1 (arrays type/size/queues/threads in DiskMarkDlg.cpp);
# * test size 1 GiB (combo index 6), test count 5 (index 4), measure time 5 s, interval 5 s;
#   test data random;
# * ExecDiskBenchAll runs the four read tests, then the four write tests, with an interval
#   (the drive idle) before every test but the first;
# * each test is one unmeasured 5 s run ("Preparing...") and then `count` measured runs of the
#   measure time, back to back; the table shows the best run (max MB/s);
# * DiskSpd options -b<size>K -o<queues> -t<threads> -W0 -S (no OS cache: fio direct=1),
#   -r for the random tests (uniform block-aligned offsets over the test file, drawn with
#   replacement: fio norandommap), -w0 / -w100; writes come from a random buffer (-Z<size>K),
#   as fio's default reused random buffers;
# * before the tests CDM creates the test file and fills it with random data (Init), so the
#   read tests read written blocks: the `prepare` group does that.
# Published CDM 8.0.x result files show the same: "Profile: Default", "Test: 1 GiB (x5)",
# "Time: Measure 5 sec / Interval 5 sec" (e.g. pastebin.com/G9NusL29, CDM 8.0.1).

#: CDM 8's default tests: (row label, job-name stem, rw for read / write, bs, iodepth).
CDM_TESTS = (
    ("SEQ1M Q8T1", "SEQ1M_Q8T1", ("read", "write"), "1m", 8),
    ("SEQ1M Q1T1", "SEQ1M_Q1T1", ("read", "write"), "1m", 1),
    ("RND4K Q32T1", "RND4K_Q32T1", ("randread", "randwrite"), "4k", 32),
    ("RND4K Q1T1", "RND4K_Q1T1", ("randread", "randwrite"), "4k", 1),
)
CDM_PREPARE = "prepare"
_CDM_NAME = re.compile(r"(?P<stem>[A-Z0-9]+_Q\d+T\d+)_(?P<dir>read|write)(?:_(?P<run>\d+))?")


@dataclass(frozen=True)
class CdmParams:
    size_bytes: int = param(_GiB, "--size", "CDM's test size: the region at the start of the drive the tests use",
                            unit="bytes", parse=size, low=1 << 20, multiple_of=1 << 20)
    runtime_s: int = param(5, "--runtime", "CDM's measure time: each measured run lasts this long", unit="s", low=1,
                           high=3600)
    interval_s: int = param(5, "--interval-time", "CDM's interval: the drive idles this long before every test but "
                            "the first", unit="s", low=0, high=3600)
    ramp_s: int = param(5, "--ramp", "CDM's unmeasured run before each test's measured runs", unit="s", low=0,
                        high=3600)
    count: int = param(1, "--count", "measured runs per test, back to back; the table shows the best, as CDM "
                       "does (CDM's default is 5)", low=1, high=9)
    prepare: bool = param(True, "--no-prepare", "first write the test region once sequentially, as CDM fills its "
                          "test file before the tests", off_switch=True)


def cdm_group_names(count: int = 1, prepare: bool = True) -> list[str]:
    """The job (and group) names of :func:`cdm_job_text`, in run order."""
    names = [CDM_PREPARE] if prepare else []
    for d in (0, 1):
        for _, stem, _, _, _ in CDM_TESTS:
            base = f"{stem}_{('read', 'write')[d]}"
            names += [base] + [f"{base}_{k}" for k in range(2, count + 1)]
    return names


def cdm_job_text(p: CdmParams) -> str:
    """CDM 8's default set as a fio job file: one group per run (``stonewall``)."""
    lines = ["; CrystalDiskMark 8 default profile (ssdlab run cdm): SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1,",
             "; RND4K Q1T1, the four reads then the four writes, as CrystalDiskMark 8.0.6 runs them.",
             f"; test size {p.size_bytes} bytes, measure {p.runtime_s} s, interval {p.interval_s} s, "
             f"unmeasured run {p.ramp_s} s, {p.count} measured run(s) per test",
             "[global]", "ioengine=libaio", "direct=1", f"size={p.size_bytes}", ""]
    first = True
    if p.prepare:
        lines += [f"[{CDM_PREPARE}]", "; CDM fills its test file before the tests", "stonewall", "rw=write",
                  "bs=1m", "iodepth=8", ""]
    for d in (0, 1):
        for _, stem, rws, bs, qd in CDM_TESTS:
            for run in range(1, p.count + 1):
                name = f"{stem}_{('read', 'write')[d]}" + (f"_{run}" if run > 1 else "")
                lines += [f"[{name}]", "stonewall", f"rw={rws[d]}", f"bs={bs}", f"iodepth={qd}", "time_based",
                          f"runtime={p.runtime_s}"]
                if rws[d].startswith("rand"):
                    lines.append("norandommap")
                if run == 1:
                    if p.ramp_s:
                        lines.append(f"ramp_time={p.ramp_s}")
                    if p.interval_s and not first:
                        lines.append(f"startdelay={p.interval_s}")
                first = False
                lines.append("")
    return "\n".join(lines)


def _figure(group: Mapping, direction: str, key: str) -> float | None:
    v = ((group.get("directions") or {}).get(direction) or {}).get(key)
    return None if v is None else float(v)


def cdm_table(per_group_results: Iterable[Mapping]) -> list[dict]:
    """CDM's results table from a run's per-group figures.

    ``per_group_results``: the groups of an ``ssdlab run cdm`` summary (``summary["groups"]``),
    each ``{"name": job name, "directions": {"read"|"write": {"mbps_mean": MB/s,
    "iops_mean": IOPS}}}``; groups whose name is not one of :func:`cdm_group_names` (the
    ``prepare`` group) are left out. Returns one row per CDM test in CDM's order:
    ``{"test": "SEQ1M Q8T1", "read_mbps", "write_mbps", "read_iops", "write_iops"}`` (MB/s =
    10^6 bytes/s, as CDM counts); of several measured runs the best (highest MB/s) counts, as
    in CDM; None where the test did not run."""
    best: dict[tuple[str, str], tuple[float, float | None]] = {}
    for g in per_group_results:
        m = _CDM_NAME.fullmatch(str(g.get("name", "")))
        if not m:
            continue
        mbps, iops = _figure(g, m["dir"], "mbps_mean"), _figure(g, m["dir"], "iops_mean")
        if mbps is None:
            continue
        key = (m["stem"], m["dir"])
        if key not in best or mbps > best[key][0]:
            best[key] = (mbps, iops)
    rows = []
    for label, stem, _, _, _ in CDM_TESTS:
        row: dict = {"test": label}
        for d in ("read", "write"):
            mbps, iops = best.get((stem, d), (None, None))
            row[f"{d}_mbps"], row[f"{d}_iops"] = mbps, iops
        rows.append(row)
    return rows


def cdm_table_text(rows: list[dict]) -> str:
    """The table as CDM shows it: one line per test, Read and Write in MB/s (IOPS for the RND4K
    tests in brackets)."""
    def cell(mbps, iops, rnd):
        if mbps is None:
            return f"{'-':>22}"
        text = f"{mbps:10.2f}"
        return text + (f" [{iops:9.0f}]" if rnd and iops is not None else " " * 12)

    out = [f"{'':<12}{'Read MB/s':>22}{'Write MB/s':>22}"]
    for r in rows:
        rnd = r["test"].startswith("RND")
        out.append(f"{r['test']:<12}{cell(r['read_mbps'], r['read_iops'], rnd)}"
                   f"{cell(r['write_mbps'], r['write_iops'], rnd)}")
    return "\n".join(out)


# ============================================================================ JESD219
# Followed: JEDEC JESD219 (September 2010) / JESD219A (July 2012), enterprise endurance
# workload, as published in Seagate's summary (tomshardware.com, "SSD Endurance: Data
# Integrity is Marathon, Not a Sprint", Endurance Workloads): transfer sizes 512 B 4 %, 1 KiB,
# 1.5 KiB, 2 KiB, 2.5 KiB, 3 KiB, 3.5 KiB 1 % each, 4 KiB 67 %, 8 KiB 10 %, 16 KiB 7 %,
# 32 KiB 3 %, 64 KiB 3 %; writes over 100 % of the user LBA range, 50 % of accesses in the
# first 5 %, 30 % in the next 15 %, 20 % in the remaining 80 %; random data. Alignment as fio's
# examples/jesd219.fio (from Jeff Furlong, HGST) writes it: blockalign=4k, every transfer
# starts on a 4 KiB boundary (the standard's own alignment clause was not at hand). The same
# example mixes 40 % reads in; the standard's endurance workload is writes, the default here.

#: The enterprise workload's transfer sizes [bytes] and their shares [%].
JESD219_SPLIT = ((512, 4), (1024, 1), (1536, 1), (2048, 1), (2560, 1), (3072, 1), (3584, 1),
                 (4096, 67), (8192, 10), (16384, 7), (32768, 3), (65536, 3))
#: (access %, LBA range %) of its zones, from the start of the drive.
JESD219_ZONES = ((50, 5), (30, 15), (20, 80))
SMALL_WRITES = ("standard", "as-4k")


@dataclass(frozen=True)
class Jesd219Params:
    qd: int = param(32, "--qd", "queue depth", low=1, high=65535)
    runtime_s: int = param(600, "--runtime", "how long the workload runs", unit="s", low=1,
                           high=int(MAX_DURATION_S))
    read_pct: int = param(0, "--read-pct", "share of reads mixed in (the standard's workload writes only; fio's "
                          "example jesd219.fio uses 40)", unit="%", low=0, high=100)
    small_writes: str = param("standard", "--small-writes", "transfers below 4 KiB (10 % of them): 'standard' "
                              "keeps them (needs 512-byte sectors), 'as-4k' counts them as 4 KiB transfers "
                              "(for drives and the simulator mapping 4 KiB units)", choices=SMALL_WRITES)


def jesd219_split(small_writes: str = "standard") -> tuple[tuple[int, int], ...]:
    """(bytes, %) of the transfer sizes; ``as-4k`` folds the sizes below 4 KiB into 4 KiB."""
    if small_writes == "standard":
        return JESD219_SPLIT
    small = sum(pct for b, pct in JESD219_SPLIT if b < 4096)
    return tuple((b, pct + (small if b == 4096 else 0)) for b, pct in JESD219_SPLIT if b >= 4096)


def jesd219_job_text(p: Jesd219Params) -> str:
    """The JESD219 enterprise endurance workload as one fio job over the whole drive."""
    split = ":".join(f"{b}/{pct}" for b, pct in jesd219_split(p.small_writes))
    zones = ":".join(f"{a}/{r}" for a, r in JESD219_ZONES)
    rw = ["rw=randwrite"] if p.read_pct == 0 else ["rw=randrw", f"rwmixread={p.read_pct}"]
    return "\n".join([
        "; JEDEC JESD219 enterprise endurance workload (ssdlab run jesd219): random transfers of 512 B to",
        "; 64 KiB in the standard's shares, 50 % of accesses in the first 5 % of the LBA range, 30 % in the",
        "; next 15 %, 20 % in the remaining 80 %; every transfer on a 4 KiB boundary; fresh random data",
        "[jesd219]", "ioengine=libaio", "direct=1", *rw, f"bssplit={split}", "blockalign=4k",
        f"random_distribution=zoned:{zones}", "norandommap", "refill_buffers", f"iodepth={p.qd}", "time_based",
        f"runtime={p.runtime_s}", ""])


# ============================================================================ the registry
_ENTRIES = (
    Named("cdm", "CrystalDiskMark 8's default set: SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1, the reads "
          "then the writes",
          "CrystalDiskMark 8's default profile as fio jobs: each test one group over a 1 GiB region, time-based, "
          "after an unmeasured run and an idle interval, as CrystalDiskMark 8.0.6 runs them; cdm_table() makes "
          "its results table.",
          CdmParams, text=cdm_job_text, table=cdm_table, table_text=cdm_table_text),
    Named("jesd219", "JEDEC JESD219 enterprise endurance workload: random writes 512 B-64 KiB, 50/30/20 % of "
          "accesses in 5/15/80 % of the LBA range",
          "The JESD219 enterprise endurance workload as one fio job: bssplit with the standard's transfer-size "
          "shares, random_distribution=zoned:50/5:30/15:20/80, 4 KiB-aligned, fresh random data.",
          Jesd219Params, text=jesd219_job_text),
    Named("record", "scientific dataset records: a header index, then one record per variable and time step; "
          "look up in the header, then read or write the record",
          record.__doc__.split("\n\n", 1)[0].replace("\n", " "),
          record.RecordParams, commands=record.commands, totals=record.totals, layout=record.layout),
)

#: Every built-in workload by name.
NAMED: dict[str, Named] = {n.name: n for n in _ENTRIES}


def get(name: str) -> Named:
    """The built-in workload ``name``; :class:`UserError` listing the known names otherwise."""
    try:
        return NAMED[name]
    except KeyError:
        raise UserError(f"no built-in workload {name!r}; the built-in workloads are {', '.join(NAMED)}") from None


def listing() -> list[str]:
    """Lines for ``ssdlab run --list``: each workload's name and help, then its options with
    their defaults (``ssdlab run NAME OPTION VALUE...``)."""
    width = max(len(n) for n in NAMED)
    out = []
    for n in NAMED.values():
        kind = "generated command stream" if n.generated else "fio job"
        out.append(f"{n.name:<{width}}  {n.help} ({kind})")
        out.append(f"{'':<{width}}    {_defaults_text(n.params)}")
    return out
