"""One simulation on two threads (``--sim-threads 2``: the FTL's work on a second core, ahead of
the timing model) gives exactly the figures it gives on one: every built-in profile at small
size through :class:`SimTarget` (a fill, a mixed phase ended by its IO count, a timed phase),
the trace test's replays, and the command line (the whole summary and series of a test). Drives whose
FTL follows the die times, a cache or the clock run on one thread, with the same figures."""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import run_cli, set_args
from ssdlab import profiles
from ssdlab.procedures import trace_replay
from ssdlab.targets.base import JobSpec
from ssdlab.targets.sim import SimTarget

#: The built-in profiles whose FTL decides by command order alone (striped die allocation, no
#: SLC or map cache, zones or drive-wide GC stalls): their phases run on two threads.
SPLIT = {"default", "recovery", "stalling"}


def _small(name: str) -> profiles.Profile:
    return profiles.load_profile(name, ["capacity=2GiB"])


def _run(name: str, threads: int) -> tuple[list, int]:
    """A fill, a 70/30 mix of 60,000 IOs and 3 s of random writes on a 2 GiB `name`."""
    t = SimTarget(_small(name), seed=5, threads=threads)
    t.purge()
    cap = t.capacity_bytes // 131072 * 131072
    results = [t.run_phase(JobSpec("fill", "write", bs_bytes=131072, qd=32, span_bytes=cap)),
               t.run_workload({"name": "mix", "read_fraction": 0.7, "number_ios": 60_000, "qd": 32}),
               t.run_phase(JobSpec("rw", "randwrite", bs_bytes=4096, qd=32, duration_s=3.0))]
    return results, t._sim.piped_commands()


def _same(a, b) -> None:
    assert a.totals == b.totals
    assert a.latency_us == b.latency_us
    assert sorted(a.series) == sorted(b.series)
    for col in a.series:
        np.testing.assert_array_equal(a.series[col], b.series[col], err_msg=col)


@pytest.mark.parametrize("name", profiles.builtin_names())
def test_every_profile_gives_the_same_figures_on_two_threads(name):
    one, none = _run(name, 1)
    two, piped = _run(name, 2)
    assert none == 0
    if name in SPLIT:
        assert piped >= 20_000, f"{name}: its phases ran on two threads"
    else:
        assert piped == 0, f"{name}: its FTL follows the clock or the dies' times; one thread"
    for a, b in zip(one, two):
        _same(a, b)


def test_a_changed_figure_would_be_seen():
    """The comparison above fails when two runs differ (another seed)."""
    one, _ = _run("default", 1)
    t = SimTarget(_small("default"), seed=6, threads=2)
    t.purge()
    other = t.run_workload({"name": "mix", "read_fraction": 0.7, "number_ios": 60_000, "qd": 32})
    with pytest.raises(AssertionError):
        _same(one[1], other)


def test_the_command_line_writes_the_same_results_on_two_threads(tmp_path):
    outs = {}
    for threads in (1, 2):
        out = tmp_path / f"t{threads}"
        run_cli("consistency", *set_args(), "--duration", "60", "--sim-threads", str(threads), "--out", str(out),
                "--no-progress")
        outs[threads] = out
    s1, s2 = (json.loads((outs[k] / "summary.json").read_text()) for k in (1, 2))
    # What differs: when each started, and its command line.
    s1.pop("started_utc"), s2.pop("started_utc")
    assert s1.pop("command_line") != s2.pop("command_line")
    assert s1 == s2
    series = sorted(p.relative_to(outs[1]) for p in outs[1].rglob("*.parquet"))
    assert series
    for rel in series:
        a, b = pq.read_table(outs[1] / rel), pq.read_table(outs[2] / rel)
        assert a.equals(b), rel


def test_the_trace_test_writes_the_same_results_on_two_threads(tmp_path):
    """Every pass's row, windows and series of a trace test of one variant (which may use
    both cores) and two passes."""
    outs = {}
    for threads in (1, 2):
        out = tmp_path / f"t{threads}"
        run_cli("trace", "run", "jedec-like", *set_args(), "--qd", "8", "--trim", "with", "--passes", "2",
                "--write-bytes", "2GiB", "--window", "5000", "--sim-threads", str(threads), "--out", str(out),
                "--no-progress")
        outs[threads] = out
    s1, s2 = (json.loads((outs[k] / "summary.json").read_text()) for k in (1, 2))
    for s in (s1, s2):
        s.pop("started_utc"), s.pop("command_line")
    assert s1 == s2
    assert len(s1["variants"]) == 2
    series = sorted(p.relative_to(outs[1]) for p in outs[1].rglob("*.parquet"))
    assert len(series) >= 2
    for rel in series:
        assert pq.read_table(outs[1] / rel).equals(pq.read_table(outs[2] / rel)), rel


def test_a_trace_replay_runs_on_two_threads(tmp_path):
    """The replay's chunks, not only the fill before it, run on two threads."""
    t = SimTarget(_small("default"), seed=5, threads=2)
    params = trace_replay.TraceRunParams(file="jedec-like", qds=(8,), trim="with", write_bytes=2 << 30,
                                         window_commands=5000, chunk_records=50_000)
    summary = trace_replay.run(t, params, tmp_path / "out", progress=False)
    fill_commands = summary["span_bytes"] // 131072
    replayed = summary["variants"][0]["commands"]
    assert replayed > 100_000
    # The fill runs at most its commands on two threads; the replay's first chunk of 50,000
    # records runs there too.
    assert t._sim.piped_commands() > fill_commands + 20_000


def test_variants_side_by_side_run_on_one_thread_each(tmp_path):
    """Variants side by side fill the cores better than one on two threads: with more
    variants than cores for two threads each, each runs on one; the target keeps its own."""
    assert trace_replay.threads_per_variant(2, workers=2, cores=2) == 1
    assert trace_replay.threads_per_variant(2, workers=1, cores=2) == 2
    assert trace_replay.threads_per_variant(2, workers=2, cores=4) == 2
    t = SimTarget(_small("default"), seed=5, threads=2)
    params = trace_replay.TraceRunParams(file="jedec-like", qds=(8,), trim="both", write_bytes=1 << 30,
                                         window_commands=5000, chunk_records=50_000)
    trace_replay.run(t, params, tmp_path / "out", progress=False)
    if (os.cpu_count() or 1) < 4:
        # The variant run last ran on the target itself, on one thread.
        assert t._sim.piped_commands() == 0
    assert t.threads == 2 and t.fork().threads == 2
