"""Writing results files durably: :func:`atomic_write` (a file is whole or absent, never
half written), :func:`fsync_dir` (a rename made durable), the error for a write the
filesystem refused (:func:`write_failed`: disk full, read-only...), and the JSON form of a
summary's values (:func:`to_jsonable`). The results folder (:mod:`ssdlab.results`) and the
run's journal (:mod:`ssdlab.journal`) both write with them.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import errno
import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from .errors import UserError

#: Suffix of the temporary file an atomic write renames into place.
TMP_SUFFIX = ".tmp"


# --------------------------------------------------------------------------- write errors

#: errno values that mean the filesystem has no room left.
NO_ROOM_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


class ResultsWriteError(UserError, OSError):
    """A results file or folder could not be written (disk full, read-only, no permission...).
    The message names the path and, for a full disk, the free space and roughly what the
    write needed; ``errno`` and ``filename`` are the OS error's. Being an OSError too, it
    passes through the ``except OSError`` of best-effort writers unchanged."""

    def __str__(self) -> str:
        return str(self.args[0])


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / (1 << 20):,.1f} MiB"


def free_bytes(path: str | os.PathLike) -> int | None:
    """Bytes this process can still write on the filesystem of ``path`` (or of its nearest
    existing parent; root may use the reserved blocks too), None if unknown."""
    p = Path(os.path.abspath(path))
    try:
        st = os.statvfs(next(q for q in (p, *p.parents) if q.exists()))
    except OSError:
        return None
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize


def write_failed(path: str | os.PathLike, error: OSError, needed_bytes: int | None = None,
                 written_bytes: int = 0) -> ResultsWriteError:
    """The error for ``path`` that could not be written (``error``, the OS's). For a full disk
    the message says how much is free there and roughly what the write needed:
    ``needed_bytes`` when known, else more than the ``written_bytes`` it got through."""
    path = Path(path)
    why = error.strerror or str(error)
    msg = f"cannot write {path}: {why}"
    if error.errno in NO_ROOM_ERRNOS:
        free = free_bytes(path.parent)
        need = (f"; it needs about {_mib(needed_bytes)}" if needed_bytes
                else f"; it needs more than the {_mib(written_bytes)} written before the disk filled" if written_bytes
                else "")
        msg += (f" ({_mib(free) + ' free' if free is not None else 'free space unknown'} on the filesystem of "
                f"{path.parent}{need}). Free space there, or give --out on another filesystem")
    elif error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        msg += ". Give --out a folder you can write to"
    out = ResultsWriteError(msg)
    out.errno, out.filename = error.errno, str(path)
    return out


# --------------------------------------------------------------------------- atomic writes

def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], Any], needed_bytes: int | None = None) -> Path:
    """Call ``write(f)`` on a temporary binary file next to ``path``, then rename it to ``path``.

    The temporary file lives in the same folder (so the rename is atomic on POSIX and
    Windows) and is named ``.<name>.<random>.tmp``. On any exception -- including
    KeyboardInterrupt -- the temporary file is removed and ``path`` is left untouched. An
    OSError of the filesystem (disk full, read-only...) becomes :class:`ResultsWriteError`
    naming ``path`` (:func:`write_failed`; ``needed_bytes``: the file's size, if known).
    """
    path = Path(path)
    tmp: Path | None = None
    written = 0
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
        tmp = Path(tmp_name)
        with os.fdopen(fd, "wb") as f:
            try:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            finally:
                try:
                    written = f.tell()
                except (OSError, ValueError):
                    pass
        # mkstemp creates 0600; results are meant to be shared like any other file.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None:
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
        if isinstance(e, OSError) and not isinstance(e, ResultsWriteError):
            raise write_failed(path, e, needed_bytes, written) from e
        raise
    return path


def _umask() -> int:
    """The process umask (cached): from /proc on Linux, else by setting and restoring it."""
    global _UMASK
    if _UMASK is None:
        try:
            with open("/proc/self/status", encoding="ascii") as f:
                _UMASK = next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
        except (OSError, StopIteration, ValueError, IndexError):
            _UMASK = os.umask(0o022)
            os.umask(_UMASK)
    return _UMASK


_UMASK: int | None = None


def to_jsonable(obj: Any, _where: str = "summary") -> Any:
    """Convert ``obj`` into plain JSON types, recursively.

    numpy scalars/arrays -> Python numbers/lists; NaN and +/-inf -> None (strict JSON);
    Path -> str; dataclasses -> dicts; datetime/date -> ISO text; Enum -> its value;
    tuples/sets -> lists. Dict insertion order is kept; non-string keys become strings.
    Anything else raises TypeError naming where in the structure it was found.
    """
    import numpy as np

    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)  # also turns IntEnum/bool subclasses into plain ints
    if isinstance(obj, float):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.generic):
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, np.integer):
            return int(obj)
        if isinstance(obj, np.floating):
            return to_jsonable(float(obj), _where)
        if isinstance(obj, (np.str_, np.bytes_)):
            return to_jsonable(obj.item(), _where)
        if isinstance(obj, np.datetime64):
            return str(obj)
        return to_jsonable(obj.item(), _where)
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v, f"{_where}[{i}]") for i, v in enumerate(obj.tolist())]
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, enum.Enum):
        return to_jsonable(obj.value, _where)
    if isinstance(obj, (_dt.datetime, _dt.date, _dt.time)):
        return obj.isoformat()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}, _where)
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            key = _json_key(k, _where)
            out[key] = to_jsonable(v, f"{_where}[{key!r}]")
        return out
    if isinstance(obj, (set, frozenset)):
        items = list(obj)
        try:
            items.sort()
        except TypeError:
            pass
        return [to_jsonable(v, f"{_where}[{i}]") for i, v in enumerate(items)]
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, f"{_where}[{i}]") for i, v in enumerate(obj)]
    raise TypeError(f"{_where}: cannot store a {type(obj).__name__} in summary.json: {obj!r:.80}")


def _json_key(k: Any, where: str) -> str:
    if isinstance(k, str):
        return k
    v = to_jsonable(k, where)
    if isinstance(v, (dict, list)):
        raise TypeError(f"{where}: dict key {k!r} cannot be a JSON object key")
    return json.dumps(v) if not isinstance(v, str) else v



def fsync_dir(path: Path) -> None:
    """Makes a rename or a new file in ``path`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
