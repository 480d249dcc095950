"""Tests declared once (ssdlab.procedures.declare): the command line, --help, range checks and
summary fields come from the declaration, and adding a test is adding one file."""
import argparse
import dataclasses
import json
import re
import sys
import textwrap

import pytest

from ssdlab import cli
from ssdlab.errors import UserError
from ssdlab.procedures import declare


#: Every declared test: the commands of their own and the subcommands (``trace run``).
ALL_TESTS = declare.tests() + declare.tests(parent="trace")


def _words(test) -> list[str]:
    return [test.parent, test.name] if test.parent else [test.name]


def _defaults(test):
    """The test's parameters at their defaults (a required positional, e.g. FILE, as "x")."""
    return test.params(**{f.name: "x" for f in dataclasses.fields(test.params)
                          if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING})


def _numeric(test):
    for f, p in declare.declared(test.params):
        if p.flag and (p.low is not None or p.high is not None):
            yield f, p


@pytest.mark.parametrize("test", ALL_TESTS, ids=lambda t: " ".join(_words(t)))
def test_help_states_every_option_with_its_default_and_range(test, capsys):
    with pytest.raises(SystemExit):
        cli.main([*_words(test), "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for f, p in declare.declared(test.params):
        if p.flag is None:
            continue
        assert p.flag in text
        assert "default: " in text
        if p.range_text():
            assert f"must be {p.range_text()}" in text, (p.flag, text)


@pytest.mark.parametrize("test", ALL_TESTS, ids=lambda t: " ".join(_words(t)))
def test_every_bound_is_checked_and_the_error_names_the_option(test):
    defaults = _defaults(test)
    declare.check(defaults)  # the defaults are valid
    for f, p in _numeric(test):
        for bound, is_open, step in ((p.low, p.low_open, -1), (p.high, p.high_open, 1)):
            if bound is None:
                continue
            whole = f.type in (int, "int", "int | None")
            outside = bound if is_open else bound + step * (1 if whole else 1e-3)
            bad = dataclasses.replace(defaults, **{f.name: (int if whole else float)(outside)})
            with pytest.raises(UserError, match=rf"^{p.flag} .*: must be {re.escape(p.range_text())}"):
                declare.check(bad)
        if p.multiple_of:
            bad = dataclasses.replace(defaults, **{f.name: f.default + 1})
            with pytest.raises(UserError, match=rf"^{p.flag} .*whole multiple of {p.multiple_of}"):
                declare.check(bad)


def test_check_catches_nan_and_accepts_the_edges():
    @dataclasses.dataclass(frozen=True)
    class P:
        span_pct: float = declare.param(100.0, "--span", "span", unit="%", low=0, high=100, low_open=True)

    declare.check(P(100.0))
    declare.check(P(1e-9))
    for v in (0.0, 100.0001, float("nan"), float("inf")):
        with pytest.raises(UserError, match=r"--span .*must be in \(0, 100\] %"):
            declare.check(P(v))


NEW_TEST = '''
"""A test added as one file: sequential reads of the span."""
from dataclasses import dataclass

from ssdlab.procedures import common
from ssdlab.procedures.declare import Test, param, size
from ssdlab.targets.base import JobSpec


@dataclass(frozen=True)
class Params:
    span_pct: float = param(100.0, "--span", "percent of the capacity", unit="%", low=0, high=100, low_open=True)
    bs_bytes: int = param(131072, "--bs", "read size", unit="bytes", parse=size, low=4096, multiple_of=4096)
    seed: int = param(1, None, "random seed")


def plan(target, p):
    span = common.span_bytes(target.capacity_bytes, p.span_pct)
    return [JobSpec("read", "read", bs_bytes=p.bs_bytes, qd=4, span_bytes=span)]


def run(target, p, rd, *, argv=None, progress=None):
    summary = common.declared_summary("seqread", target, p, argv)
    summary["purge"] = target.purge()
    r = common.run_phase(target, plan(target, p)[0], "read", progress)
    rd.write_series("series", r.series)
    summary["mbps"] = r.totals["host_read_bytes"] / r.totals["duration_s"] / 1e6
    common.end_run(rd, summary, True)
    return summary


def show(s):
    print(f"read {s['mbps']:.1f} MB/s")


TEST = Test("seqread", "sequential read of the span", "Reads the span once.", Params, plan, run, show)
'''


def test_a_test_is_one_file(tmp_path, monkeypatch, capsys):
    from ssdlab import procedures

    pkg = tmp_path / "extra"
    pkg.mkdir()
    (pkg / "seqread.py").write_text(textwrap.dedent(NEW_TEST))
    monkeypatch.setattr(procedures, "__path__", [*procedures.__path__, str(pkg)])
    monkeypatch.syspath_prepend(str(tmp_path))
    # monkeypatch forgets the imported module after the test, so no other test sees it
    monkeypatch.setitem(sys.modules, "ssdlab.procedures.seqread", None)
    del sys.modules["ssdlab.procedures.seqread"]
    out = tmp_path / "r"
    code = cli.main(["seqread", "--set", "blocks_per_plane=64", "--set", "user_capacity_bytes=7GiB",
                     "--bs", "1MiB", "--out", str(out)])
    text = capsys.readouterr()
    assert code == 0, text.err
    assert "read " in text.out and " MB/s" in text.out
    assert (out / "report.html").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["bs_bytes"] == 1 << 20 and summary["span_pct"] == 100.0 and summary["complete"] is True
    with pytest.raises(SystemExit):
        cli.main(["seqread", "--help"])
    assert "--bs SIZE" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:  # a size is range-checked as it is parsed, as a number is
        cli.main(["seqread", "--bs", "1000", "--out", str(tmp_path / "bad")])
    assert refused.value.code == 2
    assert "--bs 1000: must be >= 4096 bytes" in capsys.readouterr().err


def test_an_optional_number_is_parsed_as_a_number_and_range_checked():
    @dataclasses.dataclass(frozen=True)
    class P:
        minutes: float | None = declare.param(None, "--minutes", "time", unit="min", low=0, low_open=True)
        count: int | None = declare.param(None, "--count", "how many", low=1)

    parser = argparse.ArgumentParser()
    declare.add_arguments(parser, P)
    p = declare.from_args(P, parser.parse_args(["--minutes", "0.5", "--count", "3"]))
    assert (p.minutes, p.count) == (0.5, 3)
    # out of range: the parser stops at the option (before anything reads a file), and
    # check() words the same error for parameters made in code
    with pytest.raises(SystemExit):
        parser.parse_args(["--minutes", "0"])
    with pytest.raises(UserError, match=r"^--minutes 0: must be > 0 min"):
        declare.check(P(minutes=0.0))


def test_overall_help_shows_each_tests_help_as_written(capsys):
    """A help holding '%' (review's "25% spare") is text, not an argparse format."""
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for test in declare.tests():
        assert " ".join(test.help.split()) in text, test.name
    assert "option_strings" not in text


def test_duration_options_take_fios_time_forms():
    """A time option takes a number in its own unit or one of fio's units, the same in every
    command: --duration (s) 10m = 600, --idle-min (min) 90s = 1.5, 500ms = 0.5 s."""
    from ssdlab import cli

    def parsed(*argv):
        args, _ = cli.build_parser(list(argv)).parse_known_args(list(argv))
        return args

    assert parsed("consistency", "--duration", "10m", "--out", "x").duration_s == 600.0
    assert parsed("consistency", "--duration", "500ms", "--out", "x").duration_s == 0.5
    assert parsed("consistency", "--duration", "75", "--out", "x").duration_s == 75.0
    assert parsed("recovery", "--idle-min", "90s", "--out", "x").idle_min == 1.5
    assert parsed("recovery", "--idle-min", "2h", "--out", "x").idle_min == 120.0
    for bad in ("10x", "m", "-5s"):
        with pytest.raises(SystemExit) as ei:
            parsed("consistency", "--duration", bad, "--out", "x")
        assert ei.value.code == 2
