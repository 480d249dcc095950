"""Targets: what ssdlab tests. ``sim:PROFILE`` (the simulator), ``/dev/NAME`` (a block device,
through fio), ``file:PATH`` (a regular file, through fio), ``loop:SIZE`` (a throwaway loop
device), ``emu:PROFILE`` (the simulator served as a block device, through fio). :func:`open_target` turns the user's ``--target`` text into one."""
from __future__ import annotations

import functools

from ..errors import UserError

DEFAULT_TARGET = "sim:default"


def open_target(spec: str | None, *, sets: list[str] | tuple[str, ...] = (), seed: int = 1, **kw):
    """Opens the target named by ``spec`` (default ``sim:default``). ``sets`` are
    ``KEY=VALUE`` profile overrides (simulator only). Other keywords go to the fio targets
    (``workdir``, ``destroy``, ``dry_run``, ``purge_method``...; see ``ssdlab.targets.fio``)
    and are ignored by the simulator. Problems the user can fix raise :class:`UserError`.

    The target gets ``reopen(workdir=None)``: the same target opened anew with the same
    options (a fresh simulator, a new loop device, the device or file through the safety gate
    again), fio's job files and logs in ``workdir``. A procedure that runs several tests one
    after another (``review``) opens one target per test with it."""
    target = _open(spec, tuple(sets), seed, kw)
    target.reopen = functools.partial(_reopen, spec, tuple(sets), seed, kw)
    return target


def _reopen(spec: str | None, sets: tuple[str, ...], seed: int, kw: dict, workdir=None):
    return open_target(spec, sets=sets, seed=seed, **{**kw, "workdir": workdir})


def _open(spec: str | None, sets: tuple[str, ...], seed: int, kw: dict):
    spec = spec or DEFAULT_TARGET
    if spec.startswith("sim:") or spec == "sim":
        from ..profiles import load_profile
        from .sim import SimTarget

        return SimTarget(load_profile(spec[4:] or "default", sets), seed=seed)
    if spec.startswith("emu:"):
        from ..profiles import load_profile
        from . import fio, loop, safety
        from .emulated import EmuTarget

        kw = {k: v for k, v in kw.items() if k in ("workdir", "dry_run", "purge_method", "fio")}
        try:
            return EmuTarget(load_profile(spec[4:] or "default", sets), seed=seed, **kw)
        except (ValueError, safety.UnsafeTargetError, fio.FioError, loop.LoopError) as e:
            raise UserError(str(e)) from None
    if sets:
        raise UserError(f"--set applies to simulated and emulated targets only; {spec} is a real target")
    if spec.startswith(("/dev/", "file:", "loop:")):
        from . import fio, loop, safety

        try:
            return fio.open_target(spec, **kw)
        except (ValueError, safety.UnsafeTargetError, fio.FioError, loop.LoopError) as e:
            raise UserError(str(e)) from None
    raise UserError(
        f"--target {spec!r}: expected sim:PROFILE, /dev/NAME, file:PATH, loop:SIZE or emu:PROFILE "
        "(e.g. sim:default, /dev/nvme1n1, file:/mnt/scratch/test.bin, loop:8G, emu:default)"
    )
