"""Every numeric option of every command refuses values outside its range with a message that
names the option, before anything runs: the command line's parser is walked, and each option
that takes a number gets a negative, a non-finite and a non-numeric value."""
from __future__ import annotations

import argparse

import pytest

from conftest import run_cli
from ssdlab import cli

#: Options that take any integer (a seed is any 64-bit number).
ANY_INT = {"--seed"}
#: Positional arguments a command needs before its options are looked at.
#: (A file that does not exist: an option's range is checked before any file is read.)
POSITIONAL = {("trace", "run"): ("jedec-like",), ("trace", "info"): ("nosuchfile",),
              ("trace", "convert"): ("nosuchfile", "-o", "x.iolog"), ("analyze",): ("nosuchfile",),
              ("trace", "generate"): ("--capacity", "1G", "--write-bytes", "1G", "-o", "x.iolog")}


def _subparsers(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,), sub
                yield from _subparsers(sub, prefix + (name,))


def _numeric_options():
    parser = cli.build_parser([])
    out = []
    for words, sub in _subparsers(parser):
        if words[0] in ("profiles",):
            continue
        # a subcommand whose declared tests are built only when named on the command line
        sub = cli.build_parser(list(words))
        for w in words:
            sub = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction)).choices[w]
        for a in sub._actions:
            if not a.option_strings or a.nargs == 0 or a.choices:
                continue
            if a.type in (int, float) or getattr(a.type, "__name__", "") in ("int", "float", "size", "parse_size", "_size"):
                flag = max(a.option_strings, key=len)
                if flag not in ANY_INT:
                    known = {o for b in sub._actions for o in b.option_strings}
                    extra = [o for o in ("--dry-run",) if o in known]
                    out.append((words, flag, tuple(extra), "--out" in known))
    return out


OPTIONS = _numeric_options()


def test_the_walk_finds_the_options():
    flags = {(" ".join(w), f) for w, f, _, _ in OPTIONS}
    for want in [("consistency", "--duration"), ("fill", "--bs"), ("run", "--interval"), ("sweep", "--zones"),
                 ("trace run", "--passes")]:
        assert want in flags, sorted(flags)


@pytest.mark.parametrize("words,flag,extra,out", OPTIONS, ids=[f"{' '.join(o[0])} {o[1]}" for o in OPTIONS])
def test_out_of_range_values_are_refused_by_name(tmp_path, words, flag, extra, out):
    for value in ("-1", "nan", "1e999", "abc"):
        proc = run_cli(*words, *POSITIONAL.get(words, ()), flag, value, *extra,
                       *(["--out", str(tmp_path / "o")] if out else []), check=False, timeout=60)
        assert proc.returncode == 2, (value, proc.stdout[-500:], proc.stderr[-500:])
        assert "Traceback" not in proc.stderr
        error = proc.stderr.strip().splitlines()[-1]  # the message, not the usage lines
        assert flag in error, (value, proc.stderr)
