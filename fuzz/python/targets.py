"""What the Python fuzz targets check: one function per target, taking the fuzzer's bytes.

Each function returns normally when the reader behaved (it parsed the input, or refused it
with the project's user-facing error), and raises :class:`FuzzCrash` otherwise: atheris
then reports the input as a crash. An unexpected exception is wrapped in a FuzzCrash naming
it (its traceback is chained). What counts as a crash:

* ``fiojob`` (``ssdlab.workload.fiojob.parse_job_text``): any exception but
  :class:`~ssdlab.errors.UserError`; a UserError whose message does not start with the file
  and line (``FILE:LINE:``) or the file (``FILE:``) it is about; and, for an accepted job
  file, a round-trip mismatch: ``format_job_file(w)`` must parse without error to a workload
  equal to ``w``, and print to the same text again.
* ``fio_logs`` (``read_log`` + ``grid_from_log`` for iops, bw and clat, ``read_hist_log`` +
  ``grid_from_hist``, ``Grid.series``): any exception but ``ValueError`` (the module's
  documented error), a ValueError that does not name the file, and a series whose columns
  differ in length or hold negative or infinite IO counts. Inputs starting with gzip's magic
  bytes are read as ``.log.gz`` (fio logs may be gzipped).
* ``profiles`` (``ssdlab.profiles.load_profile`` of a ``.toml`` file): any exception but
  :class:`~ssdlab.errors.ProfileError` (including a Rust panic surfacing as pyo3's
  PanicException), a ProfileError that does not name the file, and a round-trip mismatch:
  the resolved values written back as TOML must load to the same values.

Hangs and memory blow-ups are crashes too: the runner gives libFuzzer ``-timeout`` and
``-rss_limit_mb``. The functions import nothing from atheris, so tests can call them.
"""
from __future__ import annotations

import math
import os
import re
import tempfile
from pathlib import Path

#: Scratch directory for the files the readers open (one per process).
SANDBOX = Path(tempfile.mkdtemp(prefix="ssdlab-fuzz-"))
#: An options-only file job files in the corpus may `include`.
(SANDBOX / "inc.fio").write_text("bs=8k\n; included options\niodepth=4\n")


class FuzzCrash(AssertionError):
    """The reader broke its contract on this input."""


def _unexpected(target: str, e: BaseException) -> FuzzCrash:
    crash = FuzzCrash(f"{target}: unexpected {type(e).__module__}.{type(e).__name__}: {e}")
    crash.__cause__ = e
    return crash


# ----------------------------------------------------------------------------- fiojob
_INCLUDE_OUTSIDE = re.compile(r"include\s*(\S*)")


def check_fiojob(data: bytes) -> None:
    from ssdlab.errors import UserError
    from ssdlab.workload import fiojob

    text = data.decode("utf-8", errors="replace")   # as parse_job_file reads files
    # `include` may only name files in the sandbox: no absolute paths, no '..', no '~'
    # (a fuzzer must not read /dev/zero or the machine's files).
    for m in _INCLUDE_OUTSIDE.finditer(text):
        if "/" in m.group(1) or ".." in m.group(1) or "$" in m.group(1):
            return
    source = str(SANDBOX / "job.fio")
    try:
        w = fiojob.parse_job_text(text, source=source, environ={"TARGET": "/dev/null", "BS": "4k"})
    except UserError as e:
        msg = str(e)
        if not (msg.startswith(str(SANDBOX)) and re.match(r"[^:]+(:\d+)?: ", msg)):
            raise FuzzCrash(f"fiojob: error without FILE:LINE: {msg!r}") from e
        return
    except Exception as e:   # noqa: BLE001 - that is the point
        raise _unexpected("fiojob", e) from e
    try:
        canon = fiojob.format_job_file(w)
    except Exception as e:   # noqa: BLE001
        raise _unexpected("fiojob format_job_file", e) from e
    try:
        w2 = fiojob.parse_job_text(canon, source=str(SANDBOX / "canon.fio"), environ={})
    except Exception as e:   # noqa: BLE001
        raise FuzzCrash(f"fiojob: the canonical text does not parse: {type(e).__name__}: {e}\n--- canonical:\n{canon}") from e
    if w2 != w:
        raise FuzzCrash(f"fiojob: round trip changed the workload\n--- input:\n{text}\n--- canonical:\n{canon}")
    try:
        canon2 = fiojob.format_job_file(w2)
    except Exception as e:   # noqa: BLE001
        raise _unexpected("fiojob format_job_file (2nd)", e) from e
    if canon2 != canon:
        raise FuzzCrash(f"fiojob: printing is not stable\n--- first:\n{canon}\n--- second:\n{canon2}")


# ----------------------------------------------------------------------------- fio logs
def _log_path(data: bytes, kind: str) -> Path:
    gz = data[:2] == b"\x1f\x8b"
    p = SANDBOX / (f"job_{kind}.1.log" + (".gz" if gz else ""))
    p.write_bytes(data)
    return p


def _check_series(what: str, s: dict) -> None:
    n = len(s["t_s"])
    for k, v in s.items():
        if len(v) != n:
            raise FuzzCrash(f"fio_logs {what}: column {k} has {len(v)} rows, t_s {n}")
    iops = s["iops"]
    if any(math.isinf(x) or x < 0 for x in iops if not math.isnan(x)):
        raise FuzzCrash(f"fio_logs {what}: negative or infinite IOPS in the series")


def check_fio_logs(data: bytes) -> None:
    import warnings

    import numpy as np

    from ssdlab import fio_logs

    def call(what: str, path: Path, fn):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                return fn()
        except ValueError as e:
            if path.name not in str(e):
                raise FuzzCrash(f"fio_logs {what}: ValueError without the file name: {e}") from e
            return None
        except FuzzCrash:
            raise
        except Exception as e:   # noqa: BLE001
            raise _unexpected(f"fio_logs {what}", e) from e

    p = _log_path(data, "iops")
    raw = call("read_log", p, lambda: fio_logs.read_log(p, []))
    if raw is not None:
        for kind in ("iops", "bw", "clat"):
            g = call(f"grid_from_log({kind})", p, lambda: fio_logs.grid_from_log(raw, p, kind))
            if g is not None:
                s = call(f"series({kind})", p, lambda: g.series(4096))
                if s is not None and kind != "bw":
                    _check_series(kind, s)
    h = _log_path(data, "clat_hist")
    hist = call("read_hist_log", h, lambda: fio_logs.read_hist_log(h, []))
    if hist is not None:
        g = call("grid_from_hist", h, lambda: fio_logs.grid_from_hist(hist, h))
        if g is not None:
            s = call("series(hist)", h, lambda: g.series(4096))
            if s is not None:
                _check_series("hist", s)


# ----------------------------------------------------------------------------- profiles
def _toml_str(s: str) -> str:
    out = ['"']
    for c in s:
        o = ord(c)
        if c in '"\\':
            out.append("\\" + c)
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf") if not math.isnan(v) else "nan"
    return _toml_str(str(v))


def check_profiles(data: bytes) -> None:
    from ssdlab import profiles
    from ssdlab.errors import ProfileError

    p = SANDBOX / "fuzz-profile.toml"
    p.write_bytes(data)
    try:
        prof = profiles.load_profile(str(p))
    except ProfileError as e:
        if str(p) not in str(e):
            raise FuzzCrash(f"profiles: ProfileError without the file name: {e}") from e
        return
    except BaseException as e:   # noqa: BLE001 - pyo3's PanicException is a BaseException
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        raise _unexpected("profiles", e) from e
    # round trip: the resolved values as TOML load to the same values
    text = "".join(f"{k} = {_toml_value(v)}\n" for k, v in prof.values.items())
    q = SANDBOX / "fuzz-profile-back.toml"
    q.write_text(text, encoding="utf-8")
    try:
        back = profiles.load_profile(str(q))
    except BaseException as e:   # noqa: BLE001
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        raise FuzzCrash(f"profiles: the resolved profile does not load back: {type(e).__name__}: {e}\n{text}") from e
    if back.values != prof.values or back.geometry != prof.geometry:
        diff = {k: (v, back.values.get(k)) for k, v in prof.values.items() if back.values.get(k) != v}
        raise FuzzCrash(f"profiles: round trip changed the profile: {diff}")


TARGETS = {"fiojob": check_fiojob, "fio_logs": check_fio_logs, "profiles": check_profiles}


def cleanup() -> None:
    import shutil
    shutil.rmtree(SANDBOX, ignore_errors=True)


if os.environ.get("SSDLAB_FUZZ_KEEP_SANDBOX") != "1":
    import atexit
    atexit.register(cleanup)
