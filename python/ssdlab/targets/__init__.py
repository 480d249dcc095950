"""Targets: what ssdlab tests. Each kind of target is one module under ``ssdlab.targets`` with
an ``open_spec(spec, *, sets, seed, **kw)`` function, registered here by the prefix the user
writes in ``--target`` (:data:`KINDS`); :func:`open_target` turns that text into a target and
:func:`usage` lists the kinds for the command line's help."""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass

from ..errors import UserError

DEFAULT_TARGET = "sim:default"


@dataclass(frozen=True)
class Kind:
    """One kind of target: the ``--target`` prefix that names it, how the help shows it
    (``usage``, ``about``: a few words, or "" for none), an example, and the module under
    ``ssdlab.targets`` whose ``open_spec`` opens it (imported when a target of the kind is
    opened). ``bare``: the prefix without its colon names the kind too (``sim``).
    ``profile``: the text after the prefix names a drive profile (a built-in name or .toml
    path, ``default`` when empty) and ``--set`` takes its keys. ``device``: the kind tests a
    block device or file of this machine through fio (the safety gate, fio's work folder and
    the purge method apply; one test at a time)."""

    prefix: str
    usage: str
    about: str
    example: str
    module: str
    bare: bool = False
    profile: bool = False
    device: bool = False

    def names(self, spec: str) -> bool:
        return spec.startswith(self.prefix) or (self.bare and spec == self.prefix.rstrip(":"))

    def rest(self, spec: str) -> str:
        """What ``spec`` (a target this kind names) says after the prefix: ``sim:x.toml`` -> ``x.toml``."""
        return spec[len(self.prefix):] if spec.startswith(self.prefix) else ""


#: The kinds of target, in the order the help lists them.
KINDS: list[Kind] = []


def register(kind: Kind) -> None:
    KINDS.append(kind)


register(Kind("sim:", "sim:PROFILE", "built-in name or .toml path", "sim:default", "sim", bare=True, profile=True))
register(Kind("/dev/", "/dev/NAME", "", "/dev/nvme1n1", "fio", device=True))
register(Kind("file:", "file:PATH", "", "file:/mnt/scratch/test.bin", "fio", device=True))
register(Kind("loop:", "loop:SIZE", "a throwaway loop device; SIZE rounded down to a multiple of 4096 bytes: "
              "loop:1GB = 999997440 bytes, loop:1G exact", "loop:8G", "fio", device=True))
register(Kind("emu:", "emu:PROFILE", "the simulated drive served as a block device, tested through fio; "
              "--set slowdown=K runs it K times slower", "emu:default", "emulated", profile=True, device=True))
register(Kind("null:", "null:SIZE", "scripted figures, nothing runs; --set iops=, latency_us=, "
              "write_amplification=, capabilities=", "null:1G", "null"))


def usage(about: bool = True) -> str:
    """The kinds as the help names them: ``sim:PROFILE (built-in name or .toml path), /dev/NAME, ...``
    (without the words in parentheses when ``about`` is False)."""
    return ", ".join(k.usage + (f" ({k.about})" if about and k.about else "") for k in KINDS)


def open_target(spec: str | None, *, sets: list[str] | tuple[str, ...] = (), seed: int = 1, threads: int = 1, **kw):
    """Opens the target named by ``spec`` (default ``sim:default``). ``sets`` are
    ``KEY=VALUE`` overrides of the kind's settings (a simulated drive's profile keys; a real
    target refuses them); ``seed`` and ``threads`` (1 or 2) are a simulated drive's. Other
    keywords go to the fio targets (``workdir``, ``destroy``, ``dry_run``, ``purge_method``...;
    see ``ssdlab.targets.fio``) and are ignored by the simulator. Problems the user can fix
    raise :class:`UserError`.

    The target gets ``reopen(workdir=None)`` (capability ``reopen``): the same target opened
    anew with the same options (a fresh simulator, a new loop device, the device or file
    through the safety gate again), fio's job files and logs in ``workdir``. A procedure that
    runs several tests one after another (``review``) opens one target per test with it."""
    from .base import REOPEN

    target = _open(spec or DEFAULT_TARGET, tuple(sets), seed, {**kw, "threads": threads})
    target.reopen = functools.partial(_reopen, spec, tuple(sets), seed, {**kw, "threads": threads})
    target.capabilities = target.capabilities | {REOPEN}
    return target


def _reopen(spec: str | None, sets: tuple[str, ...], seed: int, kw: dict, workdir=None):
    return open_target(spec, sets=sets, seed=seed, **{**kw, "workdir": workdir})


def kind_of(spec: str, where: str = "--target") -> Kind:
    """The kind that ``spec`` names; :class:`UserError` naming ``where`` and the kinds if none."""
    for kind in KINDS:
        if kind.names(spec):
            return kind
    names = [k.usage for k in KINDS]
    raise UserError(f"{where} {spec!r}: expected {', '.join(names[:-1])} or {names[-1]} "
                    f"(e.g. {', '.join(k.example for k in KINDS)})")


def _open(spec: str, sets: tuple[str, ...], seed: int, kw: dict):
    module = importlib.import_module(f"{__name__}.{kind_of(spec).module}")
    return module.open_spec(spec, sets=sets, seed=seed, **kw)
