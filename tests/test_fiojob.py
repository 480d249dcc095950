"""ssdlab.workload.fiojob: fio job files and options, with the real fio as the oracle.

* Values: fio's own parser (``fio --parse-only --debug=parse`` prints every option's parsed
  number) must give what ssdlab's parser gives, for sizes under both kb_base, times, counts;
  values ssdlab refuses are ones fio reads differently from their text (``1.5g`` = 1 byte).
* Job structure: ``fio --showcmd`` (fio's reading of a job file as command-line options)
  parsed by ssdlab equals ssdlab's reading of the file; fio's JSON ``groupid`` and its
  process log (which jobs it starts together, where a stonewall waits) give the groups.
* Meaning: fio runs the original job file and ssdlab's canonical print-out of it with the
  null engine, logging every I/O (``write_iolog``); both I/O streams must be identical.
* Round trip: parse(print(parse(x))) == parse(x) for random valid job files (seeded, bounded).
"""
from __future__ import annotations

import json
import os
import random
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ssdlab.errors import UserError
from ssdlab.workload import (
    BlockSizeShare,
    RandomDistribution,
    WorkloadError,
    Zone,
    format_job_file,
    parse_command_line,
    parse_job_file,
    parse_job_text,
)
from ssdlab.workload import fiojob as F

FIO_TIMEOUT_S = 60


# ============================================================================ fio helpers
def fio_parse(args: list[str], cwd: Path | None = None, env: dict | None = None) -> tuple[int, list]:
    """``fio --parse-only --debug=parse ARGS``: fio's exit status and, per option it handled,
    (option, value, [(ret, out), ...] for each part it parsed: ret 0 = parsed, out = number)."""
    p = subprocess.run(["fio", "--parse-only", "--debug=parse", *args], capture_output=True, text=True,
                       cwd=cwd, env=env, timeout=FIO_TIMEOUT_S)
    out: list = []
    for line in (p.stdout + p.stderr).splitlines():
        m = re.search(r"parse\s+\d+\s+handle_option=([^,]+), ptr=(.*)$", line)
        if m:
            out.append((m.group(1), m.group(2), []))
            continue
        m = re.search(r"parse\s+\d+\s+ret=(\d+), out=(\d+)$", line)
        if m and out:
            out[-1][2].append((int(m.group(1)), int(m.group(2))))
    return p.returncode, out


def fio_values(options: list[str], values: list[str], pre: list[str] = ()) -> dict[str, list[int]]:
    """fio's number for each value of each option (first part), from one fio invocation."""
    rc, res = fio_parse(["--name=oracle", *pre, *[f"--{o}={v}" for o in options for v in values]])
    assert rc == 0, res
    out = {}
    for option in options:
        got = [parts[0] for name, _, parts in res if name == option]
        assert len(got) == len(values)
        assert all(ret == 0 for ret, _ in got), list(zip(values, got))
        out[option] = [n for _, n in got]
    return out


def fio_run(text: str, cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs fio on ``text`` in ``cwd``; fio and its job processes are killed if it overruns."""
    cwd.mkdir(parents=True, exist_ok=True)
    (cwd / "job.fio").write_text(text)
    proc = subprocess.Popen(["fio", *args, "job.fio"], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=FIO_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _kill_fio_jobs_in(cwd)          # fio's job processes run in sessions of their own (setsid)
        proc.communicate()
        raise AssertionError(f"fio ran over {FIO_TIMEOUT_S} s on:\n{text}") from None
    assert proc.returncode == 0, stderr[-2000:]
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def _kill_fio_jobs_in(cwd: Path) -> None:
    """Kills the processes this test started in ``cwd`` (a directory of its own)."""
    for proc_dir in Path("/proc").iterdir():
        if proc_dir.name.isdigit():
            try:
                if os.readlink(proc_dir / "cwd") == str(cwd.resolve()):
                    os.kill(int(proc_dir.name), signal.SIGKILL)
            except OSError:
                pass


def iologs(cwd: Path) -> dict[str, list[list[str]]]:
    """Every ``*.log`` iolog in ``cwd``: its I/Os as [file, op, offset, length], time stamps
    and file open/close lines left out."""
    out = {}
    for f in sorted(cwd.glob("*.log")):
        rows = [line.split()[1:] for line in f.read_text().splitlines()[1:]]
        out[f.name] = [r for r in rows if r[1] not in ("add", "open", "close")]
    return out


def fio_json(stdout: str) -> dict:
    return json.loads(stdout[stdout.index("{"):])


def fio_stages(debug_output: str) -> list[int]:
    """How many jobs fio starts in each go: forks between its 'stonewall wait' lines."""
    stages, n, waiting = [], 0, False
    for line in debug_output.splitlines():
        if "will fork" in line or "will pthread_create" in line:
            if waiting and n:
                stages.append(n)
                n = 0
            waiting = False
            n += 1
        elif "stonewall wait" in line:
            waiting = True
    return stages + ([n] if n else [])


def where_of(text: str, needle: str) -> int:
    """1-based number of the first line of ``text`` holding ``needle``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# ============================================================================ values vs fio
SIZES = ["0", "1", "4096", "4k", "4K", "4kb", "4KB", "4kB", "4Kb", "4KiB", "4kib", "4KIB", "1m", "1M", "1MiB",
         "1mb", "2g", "2G", "2GiB", "1t", "1TiB", "1p", "1PiB", "512b", "512B", "0x10", "0X1f", "0xffff", "7",
         "100", "3g", "123456789", "10m", "16KiB", "64kb", "1gb", "1GB", "1tb", "+8k"]
PERCENTS = ["50%", "100%", "1%", "0%", "7%"]


@pytest.mark.parametrize("kb_base", [1024, 1000])
def test_sizes_are_what_fio_reads(need_fio, kb_base):
    fio = fio_values(["size"], SIZES + PERCENTS, [f"--kb_base={kb_base}"])["size"]
    for text, expected in zip(SIZES + PERCENTS, fio):
        mine = F._size(text, kb_base, pct=True)
        if isinstance(mine, F._Pct):
            mine = 2 ** 64 - 1 - mine.pct          # fio keeps a percentage as -1 - pct
        assert mine == expected, (text, kb_base)
    # fio's compatibility mode: with kb_base=1024, KiB is the decimal unit
    assert F._size("4KiB", 1024) == 4000 and F._size("4KiB", 1000) == 4096
    assert F._size("4kB", 1024) == 4096 and F._size("4kB", 1000) == 4000


def test_sizes_in_a_job_file_and_kb_base_first(need_fio, tmp_path):
    # fio sorts kb_base before a section's other options: size=1k is 1000 although written first
    text = "[global]\nkb_base=1000\nbs=512\n[a]\nsize=2k\n[b]\nsize=1k\nkb_base=1024\n[c]\nsize=3KiB\n"
    (tmp_path / "k.fio").write_text(text)
    rc, res = fio_parse([str(tmp_path / "k.fio")])
    fio = [parts[0][1] for name, _, parts in res if name == "size"]
    jobs = parse_job_text(text).jobs
    assert rc == 0 and fio == [2000, 1024, 3072]
    assert [j.size_bytes for j in jobs] == fio


def test_times_are_what_fio_reads(need_fio):
    values = ["0", "1", "10", "250", "10s", "10S", "3ms", "3MS", "10us", "10usec", "7msec", "2m", "1h"]
    default_s = {"runtime": True, "ramp_time": True, "startdelay": True, "thinktime": False,
                 "thinktime_spin": False, "thinktime_iotime": True}
    fio = fio_values(list(default_s), values)
    for option, numbers in fio.items():
        for text, expected in zip(values, numbers):
            assert F._time_us(text, default_s[option]) == expected, (option, text)
    assert fio_values(["runtime"], ["1d"])["runtime"] == [F._time_us("1d", True)]
    # the parsed jobs hold those microseconds
    job = parse_command_line(["--name=t", "--runtime=2m", "--thinktime=3ms", "--thinktime_iotime=5",
                              "--time_based", "--ramp_time=1500ms"]).jobs[0]
    assert (job.runtime_us, job.thinktime_us, job.thinktime_iotime_us, job.ramp_time_us) == \
        (120_000_000, 3000, 5_000_000, 1_500_000)


def test_counts_take_size_units_as_in_fio(need_fio):
    values = ["1", "32", "1k", "0x20", "2K"]
    options = ["iodepth", "number_ios", "thinktime_blocks", "buffer_compress_chunk", "rate_iops", "fsync"]
    for option, numbers in fio_values(options, values).items():
        assert [F._int(v, 1024) for v in values] == numbers, option


# Values ssdlab refuses: what fio would make of them (its own number), and what the text says.
MISREAD = [
    ("size", "1.5g", 1.5 * 2 ** 30),             # fio stops at the '.': 1 byte
    ("size", "50.5%", None),                     # 50 bytes, not a percentage
    ("size", "4q", None),                        # unknown unit: 4 bytes
    ("size", "150%", None),                      # no percentage above 100: a huge size
    ("bs", "0x10k", 16 * 1024),                  # a unit after hex is dropped: 16 bytes
    ("bs", "8192:0x4000", 8192),                 # the '0x' of the write part makes the read part 0x8192
    ("randseed", "10x", 10),                     # "0x" anywhere: read as hex, 16
    ("runtime", "10sec", 10 * 10 ** 6),          # fio knows s, not sec: 10 microseconds
    ("runtime", "1.5s", 1.5 * 10 ** 6),          # 1 s
    ("thinktime", "1.5ms", 1500),                # 1 microsecond
    ("thinktime_iotime", "10min", 600 * 10 ** 6),  # 10 microseconds
    ("number_ios", "1e3", 1000),                 # 1
    ("iodepth", "4:8", None),                    # fio keeps 4, ignores 8
]


def test_refused_values_are_ones_fio_misreads(need_fio):
    rc, res = fio_parse(["--name=x", *[f"--{o}={v}" for o, v, _ in MISREAD]])
    assert rc == 0, "fio accepts all of them"
    fio = {(name, value): parts for name, value, parts in res}
    for option, value, meant in MISREAD:
        parts = fio[(option, value)]
        assert parts[0][0] == 0, (option, value)
        if meant is not None:
            assert parts[0][1] != meant, (option, value)
        with pytest.raises(WorkloadError) as e:
            parse_command_line(["--name=x", f"--{option}={value}"])
        msg = str(e.value)
        assert f"--{option}={value}" in msg and "command line argument 2" in msg, msg
    # and what the messages say fio does
    with pytest.raises(WorkloadError, match=r"would be 1 byte.*e\.g\. 1536m"):
        parse_command_line(["--name=x", "--size=1.5g"])
    with pytest.raises(WorkloadError, match="would read this as 10 microseconds"):
        parse_command_line(["--name=x", "--runtime=10sec"])


def test_space_after_equals_is_refused_because_fio_reads_it_literally(need_fio, tmp_path):
    text = "[x]\nsize = 4k\n"
    (tmp_path / "s.fio").write_text(text)
    rc, res = fio_parse([str(tmp_path / "s.fio")])
    assert [parts for name, _, parts in res if name == "size"] == [[(0, 4)]]    # 4 bytes
    with pytest.raises(WorkloadError, match=r"s\.fio:2: size = 4k: a value must follow '=' directly.*size=4k"):
        parse_job_file(tmp_path / "s.fio")


def test_silently_ignored_text_is_refused(need_fio):
    # fio accepts these and drops part of them without a word
    rc, _ = fio_parse(["--name=x", "--rw=randread,", "--random_distribution=random:5", "--rw=randread:0",
                       "--bssplit=4k/80:8k/30", "--bs=4k,8k,16k,32k"])
    assert rc == 0
    for arg, why in (("--rw=randread,", "ignores the rest"), ("--random_distribution=random:5", "takes no parameter"),
                     ("--rw=randread:0", "N >= 1"), ("--bssplit=4k/80:8k/30", "add up to 110%"),
                     ("--bs=4k,8k,16k,32k", "at most three values")):
        with pytest.raises(WorkloadError, match=why):
            parse_command_line(["--name=x", arg])


def test_fio_refuses_these_too(need_fio):
    # per-direction zone lists (fio 3.33 cannot match 'zoned:...,...'), unknown patterns, ...
    for args, why in ((["--rw=randrw", "--random_distribution=zoned:50/10:50/90,100/100"], "cannot parse separate"),
                      (["--rw=randwritte"], "did you mean randwrite"), (["--iodepth=0"], "at least 1"),
                      (["--bsrange=4k"], "not a range"), (["--random_distribution=zipf:1"], "not 1.0")):
        p = subprocess.run(["fio", "--parse-only", "--name=x", *args], capture_output=True, text=True,
                           timeout=FIO_TIMEOUT_S)
        assert "failed parsing" in p.stderr or "out of range" in p.stderr, (args, p.stderr)
        with pytest.raises(WorkloadError, match=why):
            parse_command_line(["--name=x", *args])


def test_bare_bool_is_refused_like_fio(need_fio, tmp_path):
    (tmp_path / "d.fio").write_text("[x]\nsize=1m\ndirect\n")
    p = subprocess.run(["fio", "--parse-only", str(tmp_path / "d.fio")], capture_output=True, text=True)
    assert "requires an argument" in p.stdout + p.stderr
    with pytest.raises(WorkloadError, match=r"d\.fio:3: direct: needs a value: write =1 or =0"):
        parse_job_file(tmp_path / "d.fio")
    # fio's "set" options may be bare
    job = parse_job_text("[x]\ntime_based\nruntime=1\nnorandommap\nrw=randwrite\n").jobs[0]
    assert job.time_based and job.norandommap


# ============================================================================ read,write,trim parts
def test_read_write_trim_parts_follow_fio():
    def bs(value: str, old: str = "") -> tuple:
        args = ["--name=x"] + ([f"--bs={old}"] if old else []) + [f"--bs={value}"]
        return parse_command_line(args).jobs[0].bs_min_bytes

    k = 1024
    assert bs("8k") == (8 * k, 8 * k, 8 * k)
    assert bs("8k,32k") == (8 * k, 32 * k, 32 * k)          # the last part carries on
    assert bs("8k,32k,") == (8 * k, 32 * k, 4 * k)          # ... unless a comma ends it
    assert bs(",8k") == (4 * k, 8 * k, 8 * k)               # an empty part keeps the value
    assert bs(",8k,") == (4 * k, 8 * k, 4 * k)
    assert bs("8k:16k") == (8 * k, 16 * k, 16 * k)          # ':' and '-' split plain numbers too
    assert bs(",,2k", "1k,2k,3k") == (k, 2 * k, 2 * k)
    job = parse_command_line(["--name=x", "--rate=1m,,3m"]).jobs[0]
    assert job.rate_bytes_per_s == (2 ** 20, 0, 3 * 2 ** 20)
    assert parse_command_line(["--name=x", "--rate_iops=,500"]).jobs[0].rate_iops == (0, 500, 500)
    assert parse_command_line(["--name=x", "--rate=,5m"]).jobs[0].rate_bytes_per_s == (0, 5 * 2 ** 20, 5 * 2 ** 20)


def test_bssplit_shares_as_fio_computes_them():
    def split(value: str) -> tuple:
        return parse_command_line(["--name=x", f"--bssplit={value}"]).jobs[0].bssplit

    # HOWTO: 50% 4k, 25% 1k and 32k; sorted by share as fio keeps them
    r = split("4k/50:1k/:32k/")[0]
    assert r == (BlockSizeShare(1024, 25), BlockSizeShare(32768, 25), BlockSizeShare(4096, 50))
    # three blanks share 100 as 33/33/33; the 1% left goes to the last, where fio falls back
    assert [s.pct for s in split("4k:8k:16k")[0]] == [33, 33, 34]
    assert split("4k")[0] == (BlockSizeShare(4096, 100),)
    # separate read and write lists; a blank direction keeps bs
    job = parse_command_line(["--name=x", "--bssplit=2k/50:4k/50,4k/90:8k/10", "--rw=randrw"]).jobs[0]
    assert job.bssplit[1] == (BlockSizeShare(8192, 10), BlockSizeShare(4096, 90)) == job.bssplit[2]
    assert (job.bs_min_bytes, job.bs_max_bytes) == ((2048, 4096, 4096), (4096, 8192, 8192))
    job = parse_command_line(["--name=x", "--bs=16k", "--bssplit=,4k/50:8k/50,"]).jobs[0]
    assert job.bssplit[0] == () == job.bssplit[2] and job.bs_min_bytes == (16384, 4096, 16384)


def test_distributions():
    def dist(value: str) -> RandomDistribution:
        return parse_command_line(["--name=x", "--rw=randread", f"--random_distribution={value}"]
                                  ).jobs[0].random_distribution

    assert dist("zipf") == RandomDistribution("zipf", zipf_theta=1.1)            # fio's defaults
    assert dist("pareto") == RandomDistribution("pareto", pareto_h=0.2)
    assert dist("zipf:1.2:0.25") == RandomDistribution("zipf", zipf_theta=1.2, center_frac=0.25)
    assert dist("normal:5") == RandomDistribution("normal", normal_dev_pct=5.0)
    assert dist("zoned:60/10:30/20:8/30:2/40").zones == (Zone(60, 10), Zone(30, 20), Zone(8, 30), Zone(2, 40))
    assert dist("zoned:60/10:30/:10/").zones == (Zone(60, 10), Zone(30, 45), Zone(10, 45))
    assert dist("zoned_abs:60/20g:40/100g").zones == (Zone(60, size_bytes=20 * 2 ** 30),
                                                      Zone(40, size_bytes=100 * 2 ** 30))
    job = parse_command_line(["--name=x", "--rw=randread", "--random_distribution=pareto:0.9"]).jobs[0]
    assert job.norandommap                    # fio turns off the random map for skewed distributions
    for bad, why in (("zipf:1", "not 1.0"), ("pareto:1.5", "between 0 and 1"), ("zoned:50/10:40/90", "add up to 90%"),
                     ("zoned:100", "needs its size"), ("normal:3:2", "between 0 and 1"), ("zoned", "needs the zones")):
        with pytest.raises(WorkloadError, match=why):
            dist(bad)


def test_zones_are_what_fio_computes(need_fio):
    """fio's parse debug prints each zone as access/size after filling in blank sizes."""
    specs = ["zoned:60/10:30/20:8/30:2/40", "zoned:60/10:30/:10/", "zoned:50/0:50/50", "zoned:34/:33/:33/",
             "zoned:10/5:90/", "zoned_abs:60/20g:40/1m", "zoned_abs:50/4KiB:50"]
    p = subprocess.run(["fio", "--parse-only", "--debug=parse", "--name=x", "--rw=randread",
                        *[f"--random_distribution={s}" for s in specs]], capture_output=True, text=True,
                       timeout=FIO_TIMEOUT_S)
    blocks = re.split(r"zone ddir 0 \(nr=\d+\): \n", p.stdout + p.stderr)[1:]
    fio = [re.findall(r"\t\d+: (\d+)/(\d+)", b.split("zone ddir 1")[0]) for b in blocks]
    assert len(fio) == len(specs)
    for spec, zones in zip(specs, fio):
        mine = parse_command_line(["--name=x", "--rw=randread", f"--random_distribution={spec}"]
                                  ).jobs[0].random_distribution.zones
        assert [(z.access_pct, z.size_pct if z.size_pct is not None else z.size_bytes) for z in mine] == \
            [(int(a), int(b)) for a, b in zones], spec


def test_rw_modifiers_rwmix_and_fixups():
    j = parse_command_line(["--name=x", "--rw=randread:8"]).jobs[0]
    assert (j.rw, j.rw_new_offset_every_ios, j.rw_skip_bytes) == ("randread", 8, 0)
    j = parse_command_line(["--name=x", "--rw=write:4k"]).jobs[0]
    assert (j.rw_new_offset_every_ios, j.rw_skip_bytes) == (1, 4096)
    j = parse_command_line(["--name=x", "--rw=read:-8k"]).jobs[0]      # fio's backward stride
    assert (j.rw_new_offset_every_ios, j.rw_skip_bytes) == (1, -8192)
    j = parse_command_line(["--name=x", "--readwrite=rw", "--rwmixread=30", "--rwmixwrite=80"]).jobs[0]
    assert (j.rw, j.rwmix_read_pct, j.directions) == ("rw", 20, ("read", "write"))   # the last one wins
    j = parse_command_line(["--name=x", "--buffer_compress_percentage=100"]).jobs[0]
    assert (j.zero_buffers, j.buffer_compress_pct, j.refill_buffers) == (True, 0, False)
    j = parse_command_line(["--name=x", "--buffer_compress_percentage=60"]).jobs[0]
    assert (j.buffer_compress_pct, j.refill_buffers) == (60, True)
    j = parse_command_line(["--name=x", "--randseed=42", "--thinktime=10", "--thinktime_spin=50"]).jobs[0]
    assert (j.randseed, j.randrepeat, j.seed, j.thinktime_spin_us) == (42, False, 42, 10)
    j = parse_command_line(["--name=x", "--rw=randwrite", "--ba=512"]).jobs[0]
    assert j.ba_bytes == (512, 512, 512) and j.norandommap
    j = parse_command_line(["--name=x", "--rw=write", "--ba=512", "--size=50%", "--offset=10%"]).jobs[0]
    assert j.ba_bytes == (4096,) * 3 and not j.norandommap and (j.size_pct, j.offset_pct) == (50, 10)
    j = parse_command_line(["--name=x", "--fsync=32", "--end_fsync=1", "--startdelay=1-5"]).jobs[0]
    assert (j.fsync_every_writes, j.end_fsync, j.startdelay_us, j.startdelay_max_us) == (32, True, 10 ** 6, 5 * 10 ** 6)


# ============================================================================ job structure vs fio
STRUCTURE = """\
; comments ; and # anywhere
[global]
ioengine=null   ; host-only
bs=8k # a comment
size=${SZ}
kb_base=1000
[seq]
rw=write
include inc.fio
numjobs=2
[rand]
stonewall
rw=randread
iodepth=16
bs=4k,16k
[mixed]
new_group
rw=randrw
rwmixread=70
offset_increment=1m
numjobs=3
"""


def test_job_file_reading_matches_fio_showcmd(need_fio, tmp_path):
    (tmp_path / "inc.fio").write_text("# included\niodepth=4\nbssplit=8k/50:16k/\n")
    (tmp_path / "s.fio").write_text(STRUCTURE)
    env = {**os.environ, "SZ": "2m"}
    p = subprocess.run(["fio", "--showcmd", "s.fio"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    argv = shlex.split(p.stdout)[1:]
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        mine = parse_job_file("s.fio", environ={"SZ": "2m"})
    finally:
        os.chdir(old)
    fio = parse_command_line(argv, environ={})
    # fio's command line renames nothing: jobs, groups, values and host options agree
    assert fio.groups == mine.groups
    assert [j.name for j in mine.jobs] == ["seq", "seq", "rand", "mixed", "mixed", "mixed"]
    assert mine.jobs[0].size_bytes == 2_000_000 and mine.jobs[0].iodepth == 4
    assert mine.sources == ("s.fio", "inc.fio")


@pytest.mark.realtime
def test_groups_and_names_match_fio_runs(need_fio, tmp_path):
    # name= renames a job; its numjobs copies keep the section's name, as fio names them
    text = STRUCTURE.replace("${SZ}", "256k").replace("include inc.fio\n", "name=sequential\n")
    w = parse_job_text(text)
    run = fio_run(text, tmp_path, "--output-format=json")
    jobs = fio_json(run.stdout)["jobs"]
    assert [(j["jobname"], j["groupid"]) for j in jobs] == [(j.name, j.report_group) for j in w.jobs]
    assert [j.name for j in w.jobs] == ["sequential", "seq", "rand", "mixed", "mixed", "mixed"]
    dbg = fio_run(text, tmp_path, "--debug=process")
    assert fio_stages(dbg.stdout + dbg.stderr) == [len(g) for g in w.groups] == [2, 4]
    # a [global] stonewall puts every job in its own group; several job files are separated
    g = parse_job_text("[global]\nstonewall\n[a]\n[b]\n[c]\nnumjobs=2\n")
    assert [len(x) for x in g.groups] == [1, 1, 2] and [j.report_group for j in g.jobs] == [0, 1, 2, 2]


def test_several_job_files_and_command_line(tmp_path):
    (tmp_path / "one.fio").write_text("[global]\nbs=8k\n[a]\nrw=write\n")
    (tmp_path / "two.fio").write_text("[b]\nrw=read\n[c]\nrw=read\n")
    w = parse_command_line(["--iodepth=8", "--output-format=json", "--name=cl", "--rw=randwrite", "--bs", "16k",
                            str(tmp_path / "one.fio"), str(tmp_path / "two.fio")])
    assert [j.name for j in w.jobs] == ["cl", "a", "b", "c"]
    assert [len(g) for g in w.groups] == [2, 2]              # the second job file starts with a stonewall
    assert [j.iodepth for j in w.jobs] == [8, 8, 1, 1]       # command-line defaults reach the first file only
    assert [j.bs_min_bytes[0] for j in w.jobs] == [16384, 8192, 4096, 4096]
    assert [o.text() for o in w.program_options] == ["output-format=json"]
    w = parse_command_line(["--section=c", str(tmp_path / "two.fio")])
    assert [j.name for j in w.jobs] == ["c"]
    with pytest.raises(WorkloadError, match="--readonly"):
        parse_command_line(["--readonly", str(tmp_path / "one.fio")])


# ============================================================================ meaning: I/O streams
SPELL_SIZES = [512, 1024, 2048, 4096, 8192, 16384, 65536]


def _spell(n: int, rng: random.Random, kb: int) -> str:
    forms = [str(n)]
    if kb == 1024:
        for u, m in (("k", 1024), ("m", 1024 ** 2)):
            if n % m == 0:
                q = n // m
                forms += [f"{q}{u}", f"{q}{u.upper()}", f"{q}{u}b", f"{q}{u.upper()}B"]
        if n % 1000 == 0:
            forms.append(f"{n // 1000}KiB")
    else:
        if n % 1000 == 0:
            forms.append(f"{n // 1000}k")
        if n % 1024 == 0:
            forms.append(f"{n // 1024}KiB")
    if rng.random() < 0.1:
        forms.append(hex(n))
    return rng.choice(forms)


def _tri(rng: random.Random, vals: list, fmt) -> str:
    a, b, c = (fmt(rng.choice(vals)) for _ in range(3))
    colon = f"{a}:{b}" if "0x" not in a + b else f"{a},{b}"   # fio reads "4k:0x1000" all as hex
    return rng.choice([a, f"{a},{b}", f"{a},{b},{c}", f",{b}", f"{a},", f"{a},{b},", f",{b},", colon])


def _split_list(rng: random.Random, kb: int) -> str:
    """bssplit entries: some with a share, some blank (fio shares the rest among them; each
    blank must get at least 1%), the given shares adding up to at most 100."""
    sizes = rng.sample(SPELL_SIZES, rng.randint(1, 4))
    blank = [rng.random() < 0.3 for _ in sizes]
    given = len(sizes) - sum(blank)
    total = rng.randint(given, 100 - sum(blank)) if given else 0
    cuts = sorted(rng.sample(range(1, total), given - 1)) if given > 1 else []
    shares = iter(b - a for a, b in zip([0, *cuts], [*cuts, total]))
    out = []
    for b, is_blank in zip(sizes, blank):
        if is_blank:
            out.append(f"{_spell(b, rng, kb)}/" if rng.random() < 0.5 else _spell(b, rng, kb))
        else:
            out.append(f"{_spell(b, rng, kb)}/{next(shares)}")
    return ":".join(out)


def _zones(rng: random.Random) -> str:
    n = rng.randint(2, 4)
    acc, left = [], 100
    for _ in range(n - 1):
        acc.append(rng.randint(0, left))
        left -= acc[-1]
    acc.append(left)
    sizes, sleft = [], 100
    for _ in range(n):
        s = rng.randint(1, sleft) if sleft and rng.random() < 0.7 else None
        sizes.append(s)
        sleft -= s or 0
    return "zoned:" + ":".join(f"{a}/{'' if s is None else s}" for a, s in zip(acc, sizes))


def random_job(rng: random.Random, stream: bool) -> list[str]:
    """Options of a random valid job. ``stream``: only what gives fio a repeatable I/O stream
    and ends (no numjobs copies sharing a log, no time-driven rate, random seed or threads;
    no trims with skewed distributions or trim+write pairs, on which fio 3.33 can spin)."""
    kb = 1000 if rng.random() < 0.15 else 1024
    o = ["kb_base=1000"] if kb == 1000 else []
    rw = rng.choice([r for r in F.RW_VALUES if not (stream and "trimwrite" in r)])
    if rw in F._RANDOM_RW and rng.random() < 0.2:
        rw += f":{rng.randint(1, 8)}"
    elif rw not in F._RANDOM_RW and rng.random() < 0.1:
        rw += f":{_spell(rng.choice([4096, 8192]), rng, kb)}"
    o.append(f"{rng.choice(['rw', 'readwrite'])}={rw}")
    r = rng.random()
    if r < 0.4:
        o.append("bs=" + _tri(rng, [4096, 8192, 16384], lambda n: _spell(n, rng, kb)))
    elif r < 0.6:
        a, b, c = (_spell(x, rng, kb) for x in (4096, 16384, 8192))
        o.append("bsrange=" + rng.choice([f"{a}-{b}", f"{c}-{a},{a}-{_spell(65536, rng, kb)}", f"{a}:{c}"]))
    elif r < 0.85:
        parts = [_split_list(rng, kb) for _ in range(3)]
        o.append("bssplit=" + rng.choice([parts[0], f"{parts[0]},{parts[1]}", f"{parts[0]},,{parts[2]}",
                                          f"{parts[0]},{parts[1]},{parts[2]}"]))
    if rng.random() < 0.4:
        o.append(f"rwmix{rng.choice(['read', 'write'])}={rng.randint(0, 100)}")
    if rng.random() < 0.3:
        o.append("percentage_random=" + _tri(rng, [0, 25, 50, 100], str))
    r = rng.random()
    if stream and "trim" in rw:
        pass
    elif r < 0.15:
        o.append(f"random_distribution=zipf:{rng.choice(['0.8', '1.2', '1.5'])}")
    elif r < 0.25:
        o.append(f"random_distribution=pareto:{rng.choice(['0.2', '0.5'])}" + rng.choice(["", ":0.25"]))
    elif r < 0.35:
        o.append(f"random_distribution=normal:{rng.choice(['5', '20.5'])}" + rng.choice(["", ":0.5"]))
    elif r < 0.5:
        o.append("random_distribution=" + _zones(rng))
    if not stream and rng.random() < 0.1:
        o.append(f"size={rng.randint(1, 100)}%")
    else:
        o.append(f"size={_spell(rng.choice([256 * 1024, 512 * 1024, 1024 * 1024]), rng, kb)}")
    optional = [
        (0.2, lambda: f"io_size={_spell(rng.choice([128 * 1024, 256 * 1024]), rng, kb)}"),
        (0.2, lambda: f"number_ios={rng.randint(1, 100)}"),
        (0.2, lambda: f"offset={_spell(rng.choice([0, 65536]), rng, kb)}" if stream or rng.random() < 0.5
         else f"offset={rng.randint(0, 50)}%"),
        (0.3, lambda: f"iodepth={rng.randint(1, 64)}"),
        (0.2, lambda: rng.choice(["norandommap", "norandommap=1", "norandommap=0"])),
        (0.2, lambda: f"randseed={rng.randint(0, 10 ** 6)}"),
        (0.15, lambda: f"loops={rng.randint(1, 3)}"),
        (0.15, lambda: f"{rng.choice(['fsync', 'fdatasync'])}={rng.randint(1, 8)}"),
        (0.15, lambda: f"ba={_spell(rng.choice([512, 4096]), rng, kb)}"),
        (0.1, lambda: "bs_is_seq_rand=1"),
        (0.2, lambda: f"buffer_compress_percentage={rng.randint(0, 100)}"),
        (0.1, lambda: "refill_buffers=" + rng.choice(["0", "1"])),
        (0.1, lambda: "zero_buffers"),
        (0.2, lambda: f"runtime={rng.choice(['60', '1m', '30s', '2000ms'])}"),
        (0.2, lambda: f"thinktime={rng.choice(['0', '1', '5us'])}"),
        (0.1, lambda: "end_fsync=1"),
        (0.2, lambda: rng.choice(["direct=1", "group_reporting", "scramble_buffers=0", "invalidate=0", "verify=0",
                                  "random_generator=tausworthe", "thread" if not stream else "unit_base=8"])),
    ]
    if not stream:
        optional += [(0.2, lambda: f"numjobs={rng.randint(1, 4)}"),
                     (0.2, lambda: f"offset_increment={rng.choice(['1m', '10%'])}"),
                     (0.2, lambda: "rate=" + _tri(rng, [1 << 20, 2 << 20], lambda n: _spell(n, rng, kb))),
                     (0.1, lambda: "rate_iops=" + _tri(rng, [100, 2000], str)),
                     (0.1, lambda: "randrepeat=0"), (0.1, lambda: "time_based=1"),
                     (0.1, lambda: f"startdelay={rng.choice(['1', '2-3'])}"),
                     (0.1, lambda: f"thinktime_blocks={rng.randint(1, 64)}"),
                     (0.1, lambda: "thinktime_blocks_type=issue"),
                     (0.1, lambda: f"thinktime_iotime={rng.randint(1, 9)}s"),
                     (0.1, lambda: "rate_process=poisson"), (0.1, lambda: "exitall")]
    o += [make() for p, make in optional if rng.random() < p]
    rng.shuffle(o)
    if "time_based=1" in o and not any(x.startswith("runtime") for x in o):
        o.append("runtime=10")
    if any(x.startswith("rate=") for x in o):
        o = [x for x in o if not x.startswith("rate_iops")]
    return o


GLOBAL_OPTIONS = ["bs=8k", "bs=,16k", "iodepth=4", "kb_base=1000", "rwmixread=80", "norandommap",
                  "randseed=1234", "percentage_random=50", "buffer_compress_percentage=30", "thinktime=2",
                  "bssplit=4k/60:8k/40", "direct=1", "loops=2", "group_reporting"]


def random_job_file(rng: random.Random, stream: bool, jobs: int | None = None) -> str:
    """A random valid job file: maybe a [global] with options the jobs inherit or override."""
    lines = ["; random job file"]
    if rng.random() < 0.6:
        lines += ["[global]", "ioengine=null", *rng.sample(GLOBAL_OPTIONS, rng.randint(0, 4))]
    for j in range(jobs or rng.randint(1, 4)):
        lines.append(f"[j{j}]")
        if j and rng.random() < 0.2:
            lines.append("stonewall")
        if j and rng.random() < 0.1:
            lines.append("new_group")
        lines.append("ioengine=null")
        if stream:
            lines.append(f"write_iolog=j{j}.log")
        lines += [opt + (" ; comment" if rng.random() < 0.05 else "") for opt in random_job(rng, stream)]
    return "\n".join(lines) + "\n"


def test_random_job_files_read_as_fio_showcmd_reads_them(need_fio, tmp_path):
    """fio's own reading of random job files (--showcmd: the same jobs as command-line
    options) parsed by ssdlab equals ssdlab's reading of the files."""
    rng = random.Random(11)
    for n in range(12):
        text = random_job_file(rng, stream=False)
        path = tmp_path / f"r{n}.fio"
        path.write_text(text)
        p = subprocess.run(["fio", "--showcmd", str(path)], capture_output=True, text=True, timeout=FIO_TIMEOUT_S)
        assert p.returncode == 0, p.stderr
        assert parse_command_line(shlex.split(p.stdout)[1:], environ={}) == parse_job_file(path), text


@pytest.mark.realtime
def test_canonical_form_gives_fio_the_same_io(need_fio, tmp_path):
    """fio runs a random job file and ssdlab's canonical print-out of it; every job's I/O
    stream (direction, offset, length, flushes) must be identical."""
    rng = random.Random(20240603)
    text = random_job_file(rng, stream=True, jobs=30)
    w = parse_job_text(text)
    canon = format_job_file(w)
    assert parse_job_text(canon) == w
    fio_run(text, tmp_path / "original", "--output=/dev/null")
    fio_run(canon, tmp_path / "canonical", "--output=/dev/null")
    original, printed = iologs(tmp_path / "original"), iologs(tmp_path / "canonical")
    assert len(original) == 30 and sum(len(v) for v in original.values()) > 1000
    for name in original:
        assert original[name] == printed[name], name


def test_round_trip_of_random_job_files():
    """parse(print(parse(x))) == parse(x) for random valid job files (seeded, ~2 s)."""
    rng = random.Random(7)
    deadline, n = time.monotonic() + 2.0, 0
    while time.monotonic() < deadline or n < 50:
        text = random_job_file(rng, stream=False)
        w = parse_job_text(text)
        canon = format_job_file(w)
        assert parse_job_text(canon) == w, text
        assert format_job_file(parse_job_text(canon)) == canon
        n += 1


# ============================================================================ real-world job files
CDM = """\
; CrystalDiskMark-like: the four figures, one after another, each its own group
[global]
ioengine=libaio
direct=1
filename=${TARGET}
size=1g
runtime=5
time_based
ramp_time=1
group_reporting
norandommap
randrepeat=0
refill_buffers

[SEQ1M-Q8T1]
stonewall
rw=read
bs=1m
iodepth=8

[SEQ1M-Q1T1]
stonewall
rw=read
bs=1m
iodepth=1

[RND4K-Q32T16]
stonewall
rw=randread
bs=4k
iodepth=32
numjobs=16

[RND4K-Q1T1]
stonewall
rw=randread
bs=4k
iodepth=1
"""

JESD219 = """\
# JESD219-like enterprise workload: 40 % reads, a size mix, a hot region
[global]
ioengine=io_uring
direct=1
filename=${TARGET}
thread
group_reporting
time_based
runtime=10m
ramp_time=30s
iodepth=32
numjobs=4
norandommap
randrepeat=0
refill_buffers
buffer_compress_percentage=0

[jesd219]
rw=randrw
rwmixread=40
bssplit=512/4:1k/1:1536/1:2k/1:2560/1:3k/1:3584/1:4k/67:8k/10:16k/7:32k/3:64k/3
random_distribution=zoned:50/5:30/15:20/80
ba=512
"""

ZIPF_BURSTS = """\
; 70/30 mix on a zipf-hot working set, in bursts: 20 ms of I/O, then 30 ms idle
[global]
ioengine=libaio
direct=1
filename=${TARGET}

[mixed-zipf]
rw=randrw
rwmixread=70
bs=4k,16k
iodepth=16
random_distribution=zipf:1.2
thinktime=30ms
thinktime_blocks=256
thinktime_iotime=20ms
rate_iops=2000,1000
buffer_compress_percentage=50
buffer_compress_chunk=4k
size=80%
time_based
runtime=1h
"""


def _fast(text: str, target: str) -> str:
    """The job file as fio can run it here in a moment: psync on a small file, short runs."""
    return (text.replace("${TARGET}", target).replace("ioengine=libaio", "ioengine=psync")
            .replace("ioengine=io_uring", "ioengine=psync").replace("runtime=5\n", "runtime=100ms\n")
            .replace("size=1g\n", "size=8m\n")
            .replace("runtime=10m", "runtime=200ms").replace("runtime=1h", "runtime=200ms")
            .replace("ramp_time=1\n", "ramp_time=0\n").replace("ramp_time=30s", "ramp_time=0")
            .replace("direct=1", "direct=0").replace("group_reporting\n", ""))   # one JSON entry per job


def _same_structure_as_fio(text: str, tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"\0" * (16 << 20))
    fast = _fast(text, str(target))
    w = parse_job_text(fast)
    run = fio_run(fast, tmp_path / "run", "--output-format=json")
    assert [(j["jobname"], j["groupid"]) for j in fio_json(run.stdout)["jobs"]] == \
        [(j.name, j.report_group) for j in w.jobs]
    dbg = fio_run(fast, tmp_path / "dbg", "--debug=process")
    assert fio_stages(dbg.stdout + dbg.stderr) == [len(g) for g in w.groups]
    assert parse_job_text(format_job_file(w)) == w


@pytest.mark.realtime
def test_crystaldiskmark_like(need_fio, tmp_path):
    w = parse_job_text(CDM, source="cdm.fio", environ={"TARGET": "/dev/nvme1n1"})
    assert [len(g) for g in w.groups] == [1, 1, 16, 1]
    assert [(g[0].name, g[0].rw, g[0].bs_min_bytes[0], g[0].iodepth) for g in w.groups] == [
        ("SEQ1M-Q8T1", "read", 2 ** 20, 8), ("SEQ1M-Q1T1", "read", 2 ** 20, 1),
        ("RND4K-Q32T16", "randread", 4096, 32), ("RND4K-Q1T1", "randread", 4096, 1)]
    j = w.groups[2][5]
    assert (j.clone, j.numjobs, j.size_bytes, j.runtime_us, j.time_based, j.ramp_time_us, j.seed) == \
        (11, 16, 2 ** 30, 5_000_000, True, 1_000_000, None)
    assert [o.text() for o in j.host_options] == ["direct=1", "filename=/dev/nvme1n1", "group_reporting",
                                                  "ioengine=libaio"]
    assert w.not_applicable()[0][0] == "SEQ1M-Q8T1"
    assert w.jobs[0].where == F.Where("cdm.fio", where_of(CDM, "[SEQ1M-Q8T1]"))
    _same_structure_as_fio(CDM, tmp_path)


@pytest.mark.realtime
def test_jesd219_like(need_fio, tmp_path):
    w = parse_job_text(JESD219, environ={"TARGET": "/dev/sdb"})
    assert len(w.groups) == 1 and len(w.jobs) == 4
    j = w.jobs[0]
    assert (j.rw, j.rwmix_read_pct, j.iodepth, j.runtime_us, j.ramp_time_us) == ("randrw", 40, 32, 600e6, 30e6)
    shares = {s.bs_bytes: s.pct for s in j.bssplit[0]}
    assert shares[4096] == 67 and sum(shares.values()) == 100 and j.bssplit[0] == j.bssplit[1]
    assert j.bssplit[0][-1] == BlockSizeShare(4096, 67)
    assert (j.bs_min_bytes[0], j.bs_max_bytes[0], j.ba_bytes) == (512, 65536, (512, 512, 512))
    assert j.random_distribution.zones == (Zone(50, 5), Zone(30, 15), Zone(20, 80))
    assert (j.buffer_compress_pct, j.refill_buffers, j.zero_buffers) == (0, True, False)
    _same_structure_as_fio(JESD219, tmp_path)


@pytest.mark.realtime
def test_mixed_zipf_with_bursts(need_fio, tmp_path):
    w = parse_job_text(ZIPF_BURSTS, environ={"TARGET": "/dev/sdb"})
    j = w.jobs[0]
    assert (j.rwmix_read_pct, j.bs_min_bytes, j.random_distribution.zipf_theta) == (70, (4096, 16384, 16384), 1.2)
    assert (j.thinktime_us, j.thinktime_blocks, j.thinktime_iotime_us) == (30_000, 256, 20_000)
    assert (j.rate_iops, j.buffer_compress_pct, j.buffer_compress_chunk_bytes, j.refill_buffers) == \
        ((2000, 1000, 1000), 50, 4096, True)
    assert (j.size_pct, j.size_bytes, j.norandommap) == (80, None, True)
    _same_structure_as_fio(ZIPF_BURSTS, tmp_path)


# ============================================================================ errors
def _error(text: str, source: str = "job.fio", **kw) -> str:
    with pytest.raises(UserError) as e:
        parse_job_text(text, source=source, **kw)
    return str(e.value)


def test_unknown_option_names_file_line_and_the_closest(tmp_path):
    text = "[global]\nbs=4k\n[a]\nrw=randwrite\niodpeth=32\n"
    msg = _error(text)
    assert msg.startswith("job.fio:5: iodpeth=32: unknown fio option 'iodpeth'; did you mean iodepth?"), msg
    assert "did you mean rwmixread" in _error("[a]\nrwmixrd=70\n")
    msg = str(pytest.raises(WorkloadError, parse_command_line, ["--name=a", "--runtim=10"]).value)
    assert "command line argument 2" in msg and "runtime" in msg


@pytest.mark.parametrize("option, value", [
    ("verify_backlog", "16"), ("zonemode", "strided"), ("zoneskip", "256m"), ("rw_sequencer", "identical"),
    ("read_iolog", "trace.log"), ("dedupe_percentage", "30"), ("sync", "1"), ("write_barrier", "8"),
    ("latency_target", "10ms"), ("rate_min", "1m"), ("max_latency", "5ms"), ("nrfiles", "4"),
    ("filesize", "1g"), ("buffer_pattern", "0xdeadbeef"), ("steadystate_duration", "60"), ("profile", "tiobench"),
    ("ioengine", "cpuio"), ("ioengine", "net"), ("ioengine", "falloc"), ("filename", "/dev/sdb:/dev/sdc"),
    ("pre_read", "1"), ("verify_only", "1"), ("trim_percentage", "10"), ("percentage_sequential", "10"),
])
def test_options_not_modelled_are_refused_with_file_line_and_option(option, value):
    text = f"[global]\nsize=1g\n[job]\nrw=randwrite\n{option}={value}\n"
    msg = _error(text, source="/tmp/w.fio")
    assert msg.startswith(f"/tmp/w.fio:5: {option}={value}: "), msg
    assert "not" in msg and (option in msg.split(": ", 2)[2] or "engine" in msg or "files" in msg), msg


@pytest.mark.parametrize("option, version", [("num_range", "3.37"), ("priohint", "3.36"), ("verify_write_sequence", "3.38")])
def test_options_of_later_fio_releases_are_refused_naming_the_release(need_fio, option, version):
    msg = _error(f"[a]\nrw=randtrim\n{option}=1\n")
    assert msg.startswith(f"job.fio:3: {option}=1: {option} (") and f"fio {version} and later" in msg, msg
    assert "remove it" in msg
    rc, _ = fio_parse(["--name=x", f"--{option}=1"])
    assert rc != 0, f"fio 3.33 takes {option}"


def test_options_not_modelled_are_listed_at_their_default():
    j = parse_job_text("[a]\nverify=0\nzoneskip=0\nnrfiles=1\nsync=none\nfsync=0\nrw_sequencer=sequential\n").jobs[0]
    assert [(o.name, o.reason) for o in j.host_options] == [
        (n, "at fio's default value: no effect") for n in ("nrfiles", "rw_sequencer", "sync", "zoneskip")]
    j = parse_job_text("[a]\ntrim_verify_zero=1\nlatency_window=1s\nss=iops:5%\n").jobs[0]
    assert all("no effect unless" in o.reason for o in j.host_options)


def test_host_options_are_checked_and_listed():
    w = parse_job_text("[global]\nioengine=io_uring\nfixedbufs\nhipri=1\n[a]\ndirect=1\nthread\ncpus_allowed=0-3\n"
                       "write_iops_log\nlog_avg_msec=1000\nclocksource=clock_gettime\n")
    names = [o.name for _, o in w.not_applicable()]
    assert names == ["clocksource", "cpus_allowed", "direct", "fixedbufs", "hipri", "ioengine", "log_avg_msec",
                     "thread", "write_iops_log"]
    assert "direct=yes" in _error("[a]\ndirect=yes\n") and "write 1 (on) or 0 (off)" in _error("[a]\ndirect=yes\n")
    assert "did you mean io_uring" in _error("[a]\nioengine=io_uringg\n")
    msg = _error("[a]\nioengine=libaio\nhipri=1\n")
    assert msg.startswith("job.fio:3: hipri=1: hipri is an option of the io_uring, io_uring_cmd, pvsync2, sg") and \
        "not of ioengine=libaio" in msg
    assert "not supported" in _error("[a]\nioengine=sg\nwritefua=1\n")


@pytest.mark.parametrize("text, line, expected", [
    ("size=1g\n[a]\n", 1, "option outside of a section"),
    ("[a]\ninclude missing.fio\n", 2, "cannot open 'missing.fio'"),
    ("[a\nsize=1\n", 1, "a section header is [name]"),
    ("[a]\nsize=${NOPE}\n", 2, "${NOPE} is not set"),
    ("[a]\nsize=$pagesize\n", 2, "$pagesize is the host's value"),
    ("[a]\n[b]\nwait_for=c\n", 3, "no job of that name before it"),
    ("[a]\nwait_for=a\n", 2, "cannot wait for itself"),
    ("[a]\ntime_based\n", 2, "time_based needs a runtime"),
    ("[a]\nrate=1m\nrate_iops=100\n", 3, "mutually exclusive"),
    ("[a]\nsize=1k\nbs=4k\n", 2, "below the minimum block size"),
    ("[a]\nnumjobs=0\n", 2, "must be at least 1"),
    ("[a]\niodepth=0\n", 2, "must be at least 1"),
    ("[a]\nrwmixread=101\n", 2, "at most 100"),
    ("[a]\nbssplit=4k/70:8k/40\n", 2, "add up to 110%"),
    ("[a]\nrandom_distribution=zoned:60/10:30/20\n", 2, "add up to 90%"),
    ("[a]\nrw=randwritte\n", 2, "did you mean randwrite"),
    ("[a]\nsize=10z\n", 2, "zonemode=zbd"),
    ("[a]\nsize=(1+1)*4k\n", 2, "arithmetic expressions"),
    ("[a]\nkb_base=1023\n", 2, "not one of 1024, 1000"),
])
def test_every_error_names_file_and_line(text, line, expected):
    msg = _error(text, environ={})
    assert msg.startswith(f"job.fio:{line}: "), msg
    assert expected in msg, msg


def test_includes(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "common.fio").write_text("bs=64k\ninclude more.fio\n")
    (tmp_path / "sub" / "more.fio").write_text("iodepth=8\n")
    (tmp_path / "sub" / "bad.fio").write_text("[x]\n")
    (tmp_path / "sub" / "loop.fio").write_text("include loop.fio\n")
    main = tmp_path / "sub" / "main.fio"
    main.write_text("[a]\ninclude common.fio\nrw=write\n")
    j = parse_job_file(main).jobs[0]
    assert (j.bs_min_bytes[0], j.iodepth) == (65536, 8)
    main.write_text("[a]\ninclude bad.fio\n")
    assert "bad.fio:1" in str(pytest.raises(WorkloadError, parse_job_file, main).value)
    main.write_text("[a]\ninclude loop.fio\n")
    assert "includes itself" in str(pytest.raises(WorkloadError, parse_job_file, main).value)


def test_env_expansion_is_fios():
    j = parse_job_text("[a]\nsize=${SZ}\nname=${N}x\n", environ={"SZ": "8m", "N": "job-"}).jobs[0]
    assert (j.size_bytes, j.name) == (8 << 20, "job-x")
    # fio expands ${VAR} only; $VAR is left as written (and fails as a value)
    assert "is not a size" in _error("[a]\nsize=$SZ\n", environ={"SZ": "8m"})


@pytest.mark.realtime
def test_a_percentage_then_bytes_is_refused_because_fio_keeps_the_percentage(need_fio, tmp_path):
    (tmp_path / "target").write_bytes(b"\0" * (1 << 20))
    text = ("[global]\nfilename=target\nioengine=psync\nbs=64k\nrw=write\n"
            "[a]\nsize=50%\nsize=256k\nwrite_iolog=a.log\n[b]\noffset=50%\noffset=0\nsize=128k\nwrite_iolog=b.log\n")
    fio_run(text, tmp_path)
    logs = iologs(tmp_path)
    assert [int(r[3]) for r in logs["a.log"]] == [65536, 65536]           # 50% of 256k, not 256k
    assert [int(r[2]) for r in logs["b.log"]] == [524288, 589824]         # 50%, not offset 0
    assert "would take 50% of 256k" in _error(text)
    assert "would ignore 0 and use 50%" in _error(text.replace("size=50%\nsize=256k\n", ""))
    # 100% scales nothing: the bytes that follow count, in fio and here
    assert parse_job_text("[global]\nsize=100%\n[a]\nsize=256k\n").jobs[0].size_bytes == 256 << 10


def test_every_fio_option_is_classified(need_fio):
    """Each option fio 3.33 lists (fio --cmdhelp=all, and --enghelp=ENGINE for the engines)
    is modelled, listed as not applicable, or refused with a reason: none is unknown."""
    out = subprocess.run(["fio", "--cmdhelp=all"], capture_output=True, text=True, timeout=FIO_TIMEOUT_S).stdout
    names = {line.split(":")[0].strip() for line in out.splitlines() if ":" in line}
    assert len(names) > 200
    assert names <= set(F._OPTIONS), sorted(names - set(F._OPTIONS))
    for engine, options in F._BLOCK_ENGINES.items():
        p = subprocess.run(["fio", f"--enghelp={engine}"], capture_output=True, text=True, timeout=FIO_TIMEOUT_S)
        if "not found" in p.stdout + p.stderr or "not loadable" in p.stdout + p.stderr:
            continue                          # not built into this fio
        listed = {line.split(":")[0].strip() for line in p.stdout.splitlines()
                  if ":" in line and "has no options" not in line}
        assert listed <= set(options), (engine, sorted(listed - set(options)))
    for name in set(F._OPTIONS):
        opt = F._OPTIONS[name]
        assert opt.cls != "pattern" or opt.name in F._PATTERN, name
        assert opt.cls != "host" or opt.detail in F._REASONS, name
        assert opt.cls != "refuse" or opt.detail in F._REFUSALS, name


@pytest.mark.realtime
def test_exitall_is_global_and_exitall_0_is_refused(need_fio, tmp_path):
    # fio 3.33's exitall callback ignores its value: exitall=0 in job a still stops job b
    text = ("[a]\nioengine=null\nsize=64k\nexitall=0\n"
            "[b]\nioengine=null\nsize=1g\ntime_based\nruntime=3s\nthinktime=1ms\n")
    jobs = fio_json(fio_run(text, tmp_path, "--output-format=json").stdout)["jobs"]
    assert jobs[1]["jobname"] == "b" and jobs[1]["job_runtime"] < 1000     # ms: stopped long before 3 s
    assert "turns exitall on even with exitall=0" in _error(text)
    w = parse_job_text(text.replace("exitall=0", "exitall"))
    assert w.exitall and [j.exit_what for j in w.jobs] == ["group", "group"]
    assert parse_job_text(format_job_file(w)) == w
    assert parse_job_text("[a]\n[global]\nexitall\n").exitall       # set anywhere, as fio's global flag


def test_command_line_values_are_taken_as_given(need_fio):
    # fio expands ${VAR} in job files only; on its command line the shell does
    env = {**os.environ, "SZ": "4k"}
    p = subprocess.run(["fio", "--parse-only", "--name=x", "--size=${SZ}"], capture_output=True, text=True,
                       env=env, timeout=FIO_TIMEOUT_S)
    assert "failed parsing size=${SZ}" in p.stderr
    with pytest.raises(WorkloadError, match="is not a size"):
        parse_command_line(["--name=x", "--size=${SZ}"], environ={"SZ": "4k"})
    assert parse_job_text("[x]\nsize=${SZ}\n", environ={"SZ": "4k"}).jobs[0].size_bytes == 4096
    with pytest.raises(WorkloadError, match="abbreviated option 'runt': fio would take it for runtime"):
        parse_command_line(["--name=x", "--runt=10"])


@pytest.mark.parametrize("line", ["bs=512m", "bs=4k,1g", "ba=1t", "bsrange=4k-512m", "bssplit=4k/50:1g/50",
                                  "iodepth=65536", "iodepth=4294967295"])
def test_values_beyond_ssdlabs_limits_are_refused_at_their_line(line):
    """Block sizes above MAX_BS_BYTES and an iodepth above MAX_IODEPTH: fio would need that
    many buffers (or the simulator that many commands) in memory; refused when the job is
    parsed, so --print-job refuses them as a run does."""
    key = line.partition("=")[0]
    assert F.MAX_IODEPTH == 65535
    message = _error(f"[j]\nrw=randwrite\n{line}\n")
    assert message.startswith(f"job.fio:3: {line}: "), message
    assert ("at most 65535" if key == "iodepth" else "block sizes are at most 256m (268435456 bytes)") in message
    parse_job_text("[j]\nrw=randwrite\nbs=256m\niodepth=65535\n")  # the limits themselves are taken


def test_data_placement_options_as_fio_reads_them(tmp_path):
    """fio >= 3.34's fdp/fdp_pli and 3.38's names: ids as lists and ranges, the selection, a
    scheme file; the canonical text keeps the release's names and parses back the same."""
    j = parse_job_text("[a]\nrw=randwrite\nfdp=1\nfdp_pli=0,2-4,7\n").jobs[0]
    assert (j.dataplacement, j.plids, j.plid_select, j.dp_fio_version) == ("fdp", (0, 2, 3, 4, 7), "roundrobin", "3.34")
    j = parse_job_text("[a]\nrw=randwrite\nfdp=1\nfdp_pli_select=random\n").jobs[0]
    assert (j.plids, j.plid_select, j.dp_fio_version) == ((), "random", "3.36")
    scheme = tmp_path / "scheme"
    scheme.write_text("0, 1048576, 1\n1048576, 4194304, 3\n")
    w = parse_job_text(f"[a]\nrw=randwrite\ndataplacement=fdp\nplid_select=scheme\ndp_scheme={scheme}\n")
    j = w.jobs[0]
    assert j.dp_scheme == ((0, 1048576, 1), (1048576, 4194304, 3)) and j.dp_fio_version == "3.38"
    for text in ("[a]\nrw=randwrite\nfdp=1\nfdp_pli=0,2-4,7\nfdp_pli_select=random\n",
                 f"[a]\nrw=randwrite\ndataplacement=fdp\nplid_select=scheme\ndp_scheme={scheme}\n",
                 "[a]\nrw=randwrite\ndataplacement=fdp\nplids=5\n"):
        w = parse_job_text(text)
        assert parse_job_text(format_job_file(w)) == w, text
    assert "fdp_pli=0,2,3,4,7" in format_job_file(parse_job_text("[a]\nrw=write\nfdp=1\nfdp_pli=0,2-4,7\n"))


@pytest.mark.parametrize("text, needle", [
    ("[a]\nrw=randwrite\nfdp_pli=1\n", "apply only with fdp=1"),
    ("[a]\nrw=randwrite\ndataplacement=streams\nplids=1\n", "streams) is not modelled"),
    ("[a]\nrw=randwrite\nfdp=1\nplid_select=scheme\n", "needs a dp_scheme file"),
    ("[a]\nrw=randwrite\nfdp=1\ndp_scheme=/nonexistent\n", "applies only with plid_select=scheme"),
    ("[a]\nrw=randwrite\nfdp=1\nplid_select=scheme\ndp_scheme=/nonexistent/s\n", "no such file"),
    ("[a]\nrw=randwrite\nfdp=1\nfdp_pli=4-2\n", "from low to high"),
    ("[a]\nrw=randwrite\nfdp=1\nfdp_pli=0-200\n", "at most 128"),
])
def test_data_placement_refusals_name_the_option(text, needle):
    assert needle in _error(text)


def test_a_bad_scheme_line_is_named_by_file_and_line(tmp_path):
    scheme = tmp_path / "scheme"
    scheme.write_text("0, 4096, 1\n8192, 4096, 2\n")
    msg = _error(f"[a]\nrw=randwrite\nfdp=1\nplid_select=scheme\ndp_scheme={scheme}\n")
    assert f"{scheme}:2:" in msg and "start < end" in msg


def test_flow_control_is_read_as_fio_reads_it():
    w = parse_job_text("[a]\nrw=randwrite\nflow=128\nflow_id=3\nflow_sleep=100\n[b]\nrw=randtrim\nflow=1\n")
    assert [(j.flow_weight, j.flow_id, j.flow_sleep_us) for j in w.jobs] == [(128, 3, 100), (1, 0, 0)]
    assert "flow=128\nflow_id=3\nflow_sleep=100" in format_job_file(w)
    assert "flow=1001" in _error("[a]\nflow=1001\n") and "1000" in _error("[a]\nflow=1001\n")
