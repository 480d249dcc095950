"""Every number a user gives is range-checked before anything runs: the command line's
parsers are walked, and every numeric option of every command (and of the built-in workloads,
and every size a fio job takes, in a job file or as ``--bs=`` on the command line) gets -1, 0,
huge, non-finite and overflowing values, sizes also 1T and 16E. Each command ends with exit 0
(it ran, on a tiny simulated drive) or 2 (refused, the message naming the option, or the file,
line and key), never with a traceback, a hang or a crash of the process.

Each case runs in process (``cli.main``, output captured), first as ``--dry-run`` where the
command has one; a value the dry run accepts then runs for real, so a value that passes the
checks but breaks the run (a seed the simulator cannot take) is caught too. The real runs go
to two processes at a time, forked from this one: a crash or a hang in the simulator ends only
that process, and fails the test."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import io
import json
import os
import signal
import tempfile
import time
import traceback
from pathlib import Path

import pytest

from ssdlab import cli, profiles
from ssdlab.procedures import declare
from ssdlab.workload import fiojob, named

#: Values every numeric option gets.
VALUES = ("-1", "0", "1e30", "1e308", "nan", "inf", "99999999999999999999999")
#: Values an option that takes a size gets as well.
SIZES = ("1T", "16E")
#: A drive of 112 MiB (2 dies of 64 blocks of 1 MiB): a real run takes about a second.
TINY = ["--set", "channels=1", "--set", "dies_per_channel=2", "--set", "planes_per_die=1",
        "--set", "blocks_per_plane=64", "--set", "pages_per_block=64", "--set", "page_size_bytes=16384",
        "--set", "user_capacity_bytes=112MiB", "--set", "write_buffer_bytes=1MiB", "--set", "gc_idle_free_blocks=8"]
#: Options that keep a real run short, per command (the value under test comes after them).
SHORT = {"consistency": ["--duration", "1"], "used": ["--duration", "1"], "fill": ["--pause", "1"],
         "sweep": ["--zones", "2"], "recovery": ["--torture-min", "0.01", "--idle-min", "0.01", "--zones", "2"],
         "review": ["--only", "recovery,used", "--torture-min", "0.01", "--idle-min", "0.01", "--zones", "2",
                    "--used-duration", "1"],
         "pts": ["--test", "lat", "--round-s", "0.2", "--max-rounds", "5"],
         "trace run": ["--passes", "1", "--qd", "32", "--trim", "with"],
         "run cdm": ["--size=16MiB", "--runtime=1", "--ramp=0", "--interval-time=0"],
         "run jesd219": ["--runtime=1"], "run record": ["--records=16KiB,64KiB", "--time-steps=4", "--header=64KiB"]}
#: The longest a case may take [s]; longer is a hang (an option value that made the run unbounded).
CASE_TIMEOUT_S = 60
#: A fio job for ``ssdlab run``: short on the tiny drive.
JOB = "[j]\nrw=randwrite\nsize=4m\nruntime=1\n"


# --------------------------------------------------------------------------- what to try
def _subparsers(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,), sub
                yield from _subparsers(sub, prefix + (name,))


def _parser(words: tuple[str, ...]) -> argparse.ArgumentParser:
    """The parser of ``ssdlab WORDS`` (declared tests are built only when named)."""
    p = cli.build_parser(list(words))
    for w in words:
        p = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[w]
    return p


def _reads(parse, *texts: str) -> bool:
    """True when ``parse`` turns one of ``texts`` into a number (or numbers, or a dict of them)."""
    for text in texts:
        try:
            v = parse(text)
        except (ValueError, TypeError, argparse.ArgumentTypeError):
            continue
        values = v.values() if isinstance(v, dict) else v if isinstance(v, tuple) else (v,)
        if any(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
            return True
    return False


#: Texts that find an option taking numbers, whatever its range.
NUMBERS = ("1", "0", "0.5", "4096", "8,6,8")


def _numeric_options():
    """(command words, flag, parse, action) of every option that takes a number or a size."""
    out = []
    for words, _ in _subparsers(cli.build_parser([])):
        p = _parser(words)
        if any(isinstance(a, argparse._SubParsersAction) for a in p._actions):
            continue
        for a in p._actions:
            if a.option_strings and a.nargs != 0 and not a.choices and a.type is not None and _reads(a.type, *NUMBERS):
                out.append((words, max(a.option_strings, key=len), a.type, a))
    return out


OPTIONS = _numeric_options()


def _named_options():
    """(workload, flag) of every numeric parameter of the built-in workloads (``ssdlab run NAME
    --flag=V``)."""
    return [(w.name, p.flag) for w in named.NAMED.values() for f, p in declare.declared(w.params)
            if p.flag and not (p.switch or p.off_switch or p.choices) and _reads(p.parse or int, *NUMBERS)]


def _job_size_keys() -> list[str]:
    """Every fio option of the I/O pattern that sets a size in bytes: ``KEY=8k`` changes a
    ``*_bytes`` field (or the block size split) of the job."""
    base = _job("")
    keys = []
    for name, opt in sorted(fiojob._OPTIONS.items()):
        if opt.cls != "pattern" or name != opt.name:
            continue
        job = _job(f"{name}=8k")
        if job is not None and any(getattr(job, f.name) != getattr(base, f.name) for f in dataclasses.fields(job)
                                   if f.name.endswith("_bytes") or f.name == "bssplit"):
            keys.append(name)
    return keys


def _job(line: str) -> fiojob.Job | None:
    try:
        return fiojob.parse_job_text(f"[j]\nrw=randrw\n{line}\n").jobs[0]
    except fiojob.WorkloadError:
        return None


def _cases() -> list[tuple[str, list[str], str]]:
    """(what names the option in an error, argv without the value's fast/real-run parts, value)."""
    cases = []
    for words, flag, parse, _ in OPTIONS:
        if words[:1] == ("emulate",):  # serves until stopped: test_emulate checks its refusals
            continue
        values = VALUES + (SIZES if _reads(parse, "4KiB", "1MiB") else ())
        cases += [(flag, [*words, f"{flag}={v}"], v) for v in values]
    for workload, flag in _named_options():  # a refusal names the option, or the fio option it sets
        cases += [(flag.lstrip("-"), ["run", workload, f"{flag}={v}"], v) for v in VALUES + SIZES]
    for key in JOB_SIZE_KEYS:  # fio's size options on the command line (job files: their own test)
        cases += [(key, ["run", "--name=j", "--rw=randwrite", "--size=4m", "--runtime=1", f"--{key}={v}"], v)
                  for v in SIZES]
    return cases


JOB_SIZE_KEYS = _job_size_keys()


# --------------------------------------------------------------------------- running a case
def _run(argv: list[str]) -> tuple[object, str]:
    """``ssdlab ARGV`` in this process: (exit status, stderr); the status is a text starting
    with "traceback" or "timeout" when an exception escaped or the case did not end."""
    def hang(*_):
        raise TimeoutError

    err = io.StringIO()
    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(CASE_TIMEOUT_S)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            status = cli.main(argv)
    except SystemExit as e:
        status = e.code
    except TimeoutError:
        status = f"timeout: still running after {CASE_TIMEOUT_S} s"
    except BaseException:  # noqa: BLE001 - any exception that escapes is what this test is for
        status = "traceback:\n" + traceback.format_exc()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return status, err.getvalue()


def _problem(names: str | tuple[str, ...], argv: list[str], status, stderr: str) -> str | None:
    """What is wrong with how ``ssdlab ARGV`` ended, or None: it must exit 0, or 2 with an
    error line that names the option (``names``: each of them), and print no traceback."""
    if status not in (0, 2) or "Traceback" in stderr:
        return f"ssdlab {' '.join(argv)}: {status}\n{stderr[-2000:]}"
    if status == 2:
        lines = [x for x in stderr.strip().splitlines() if "error" in x]
        if not lines or not all(n in lines[-1] for n in ((names,) if isinstance(names, str) else names)):
            return f"ssdlab {' '.join(argv)}: the error does not name {names}: {stderr.strip()[-500:]}"
    return None



@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Files the commands read: a fio job, a trace, a fio log, a grid, a tiny profile and a
    consistency result on it (for fit), and where results go (on tmpfs when there is one:
    results are written with fsync, which costs seconds on a disk)."""
    d = tmp_path_factory.mktemp("inputs")
    (d / "job.fio").write_text(JOB)
    (d / "t.disksim").write_text("".join(f"{t}.0 0 {t * 8} 8 0\n" for t in range(50)))
    (d / "w_iops.1.log").write_text("".join(f"{t * 1000}, {500 + t}, 1, 4096, 0\n" for t in range(1, 30)))
    sets = TINY[1::2]
    (d / "grid.toml").write_text(f'[grid]\ntest = "consistency"\nset = {json.dumps(sets)}\nduration_s = 1\n'
                                 '[axes]\nspan_pct = [100]\n')
    (d / "tiny.toml").write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in
                                         profiles.load_profile("default", sets).values.items()))
    for argv in (["trace", "generate", "--capacity", "16MiB", "--write-bytes", "16MiB", "-o", str(d / "t.iolog")],
                 ["consistency", "--target", f"sim:{d / 'tiny.toml'}", "--duration", "12", "--out", str(d / "measured")]):
        status, err = _run(argv)
        assert status == 0, err
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else d) as out:
        yield {"dir": d, "out": Path(out)}


def _with_inputs(argv: list[str], inputs: dict) -> list[str]:
    """``argv`` with the arguments its command needs first (input files, a results folder
    for commands without --target)."""
    d, out = inputs["dir"], inputs["out"]
    first = {("analyze",): [str(d / "w_iops.1.log")], ("trace", "info"): [str(d / "t.disksim")],
             ("trace", "convert"): [str(d / "t.disksim"), "-o", str(out / "x.bin")],
             ("trace", "generate"): ["--capacity", "16MiB", "--write-bytes", "16MiB", "-o", str(out / "g.iolog")],
             ("trace", "run"): ["jedec-like"], ("grid",): [str(d / "grid.toml"), "--out", str(out / "grid")],
             ("fit",): [str(d / "measured"), "--base", str(d / "tiny.toml"), "--key", "t_prog_us=500:4000",
                        "--evals", "1", "--workers", "1", "--out", str(out / "fit")]}
    if argv[0] == "run" and not argv[1].startswith("--name="):
        first[("run",)] = [] if argv[1] in named.NAMED else [str(d / "job.fio")]
    for words, args in first.items():
        if tuple(argv[:len(words)]) == words:
            return [*words, *args, *argv[len(words):]]
    return argv


def _command(argv: list[str]) -> list[str]:
    return argv[:2] if argv[0] == "trace" else argv[:1]


def _known(argv: list[str]) -> set[str]:
    return _options_of(tuple(_command(argv)))


@functools.lru_cache(maxsize=None)
def _options_of(words: tuple[str, ...]) -> set[str]:
    return {o for a in _parser(words)._actions for o in a.option_strings}


def _real(argv: list[str], out: Path) -> list[str]:
    """``argv`` as a real run: short phases, the tiny drive, a results folder of its own."""
    command, known = _command(argv), _known(argv)
    extra = SHORT.get(" ".join(argv[:2]), SHORT.get(" ".join(command), []))
    target = TINY if "--target" in known else []
    folder = ["--out", str(out / f"r{abs(hash(tuple(argv)))}")] if "--target" in known else []
    return [*command, *extra, *argv[len(command):], *target, *folder]


def _real_case(args: tuple[str, list[str], Path]) -> str | None:
    names, argv, out = args
    full = _real(argv, out)
    return _problem(names, full, *_run(full))


def _run_all(cases: list[tuple[str, list[str], Path]], processes: int = 2) -> list[str]:
    """The problems of real runs, ``processes`` at a time, each in a process forked from this
    one (cheap: everything is imported). A run that crashes its process, or is still in the
    simulator after :data:`CASE_TIMEOUT_S` (no signal interrupts it there), is killed and is
    a problem."""
    import ssdlab.plots  # noqa: F401 - imported once here, not in every child
    import ssdlab.report  # noqa: F401

    problems: list[str] = []
    pending, running = list(cases), {}
    while pending or running:
        while pending and len(running) < processes:
            case = pending.pop()
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: run the case, report, exit without pytest's cleanup
                os.close(read)
                try:
                    os.write(write, (_real_case(case) or "").encode()[:60_000])
                finally:
                    os._exit(0)
            os.close(write)
            running[pid] = (case, time.monotonic(), read)
        time.sleep(0.02)
        for pid, (case, started, read) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            late = not done and time.monotonic() - started > CASE_TIMEOUT_S
            if not done and not late:
                continue
            if late:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            with os.fdopen(read, "rb") as f:
                message = f.read().decode()
            what = f"ssdlab {' '.join(_real(case[1], case[2]))}"
            if late:
                problems.append(f"{what}: still running after {CASE_TIMEOUT_S} s")
            elif status:
                problems.append(f"{what}: the process died ({status:#x}): {message}")
            elif message:
                problems.append(message)
            del running[pid]
    return problems


# --------------------------------------------------------------------------- the tests
def test_the_walk_finds_the_options():
    flags = {(" ".join(w), f) for w, f, _, _ in OPTIONS}
    for want in [("consistency", "--duration"), ("consistency", "--seed"), ("fill", "--bs"), ("run", "--interval"),
                 ("sweep", "--zones"), ("trace run", "--passes"), ("trace generate", "--capacity"),
                 ("analyze", "--bs"), ("fit", "--seed"), ("grid", "--workers")]:
        assert want in flags, sorted(flags)
    assert ("cdm", "--size") in _named_options()
    assert {"bs", "ba", "size", "offset", "io_size", "offset_increment", "bssplit"} <= set(JOB_SIZE_KEYS)


def test_a_double_dash_as_an_option_value_is_refused_naming_the_option():
    """``--bs=--``: Python 3.11's argparse drops the ``--`` and hands the option an empty list,
    which then broke the command with a traceback; every option of every command that takes
    a value refuses it instead (exit 2, naming the option)."""
    problems, tried = [], 0
    for words, _ in _subparsers(cli.build_parser([])):
        p = _parser(words)
        if any(isinstance(a, argparse._SubParsersAction) for a in p._actions):
            continue
        for a in p._actions:
            if not a.option_strings or a.nargs not in (None, argparse.OPTIONAL) or a.help == argparse.SUPPRESS:
                continue
            flag = max(a.option_strings, key=len)
            err = io.StringIO()
            tried += 1
            with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as e:
                p.parse_args([f"{flag}=--"])
            if e.value.code != 2 or f"argument {'/'.join(a.option_strings)}: expected a value, got '--'" not in \
                    err.getvalue():
                problems.append(f"ssdlab {' '.join(words)} {flag}=--: exit {e.value.code}: {err.getvalue()[-200:]}")
    assert tried > 100 and not problems, problems


def test_every_number_option_declares_a_finite_range():
    """An option that takes a whole number or a number carries its range (a declared
    parameter, or ``declare.number``): an integer option without one would pass a 10**30
    on to the simulator, which takes 64 bits."""
    missing = []
    for words, flag, parse, action in OPTIONS:
        rng = getattr(action, "param", None) or getattr(parse, "param", None)
        if getattr(parse, "__name__", "") in ("parse_zone_bytes", "parse_qds", "_hours"):
            continue  # a size or a word (full, sample), checked against the zones; lists checked item by item
        if rng is None or rng.low is None or rng.high is None:
            missing.append(f"{' '.join(words)} {flag}")
    assert not missing, f"numeric options without a finite range: {missing}"


def test_no_value_of_any_numeric_option_gives_a_traceback(inputs):
    """Every case: refused naming the option (exit 2), or run to the end (exit 0). Values the
    dry run accepts then run for real on the tiny drive."""
    problems, real, direct = [], [], []
    for names, argv, _ in _cases():
        argv = _with_inputs(argv, inputs)
        known = _known(argv)
        if "--dry-run" not in known:  # analyze, trace info/convert/generate, fit: they run at once
            direct.append((names, argv, inputs["out"]))
            continue
        short = SHORT.get(" ".join(argv[:2]), []) if argv[0] == "run" else []
        dry = [*argv[:2], *short, *argv[2:], "--dry-run", *(TINY if "--target" in known else []),
               *(["--out", str(inputs["out"] / "dry")] if "--target" in known else [])]
        status, err = _run(dry)
        problem = _problem(names, dry, status, err)
        if problem:
            problems.append(problem)
        elif status == 0:
            real.append((names, argv, inputs["out"]))
    problems += _run_all(direct)
    if len(real) < 60:
        problems += _run_all(real)
    else:  # each would run for real, some for as long as the value asks: say which instead
        problems.append(f"the dry runs accept {len(real)} values, too many to run: "
                        + ", ".join(" ".join(argv) for _, argv, _ in real[:40]))
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("key", ["bs", "size", "offset", "io_size"])
def test_a_job_file_size_too_large_names_file_line_and_key(tmp_path, key):
    """``KEY=1T`` in a job file: an error at FILE:LINE naming the key, as the job is run on the
    simulator and, for bs (beyond ssdlab's largest block), as ``--print-job`` prints it (size,
    offset and io_size are refused once the drive's size is known)."""
    job = tmp_path / "big.fio"
    job.write_text(f"[j]\nrw=randwrite\n{key}=1T\n")
    runs = [["run", str(job), *TINY, "--out", str(tmp_path / "o")]]
    if key == "bs":
        runs.append(["run", str(job), "--print-job"])
    for argv in runs:
        status, err = _run(argv)
        assert status == 2 and "Traceback" not in err, (argv, status, err)
        assert f"{job}:3: " in err and (f"{key}=1T" in err or f"option {key}:" in err), err


def test_every_size_a_job_file_takes_is_refused_at_its_line_or_runs(inputs, tmp_path):
    """Each size option of a fio job file, with each value: refused with FILE:LINE and the key
    (by the parser, or once the job meets the drive), or run on the tiny drive."""
    cases = []
    for key in JOB_SIZE_KEYS:
        for i, value in enumerate(SIZES + VALUES):
            job = tmp_path / f"{key}-{i}.fio"
            job.write_text(f"[j]\nrw=randwrite\nsize=4m\nruntime=1\n{key}={value}\n")
            cases.append(((f"{job}:5: ", key), ["run", str(job)], inputs["out"]))
    problems = _run_all(cases)
    assert not problems, "\n\n".join(problems)
