"""``ssdlab fit``: a fitted simulated twin of a measured drive.

Given measured results (a real or simulated drive's ``consistency``, ``fill`` or ``run``
results folders, or fill and consistency curves from elsewhere as CSV files; one or several
of the same drive), search declared simulator profile keys
for the drive whose simulated series best match the measured ones in shape
(:mod:`.distance`), with a seeded, budgeted optimizer (:mod:`.search`) whose simulations run
on every core or on a dask cluster; write the fitted profile, the comparison, the search
history and how well the data pins down each key (:mod:`.output`).

Layers: this package imports the procedures, targets, profiles, results and analysis below
it, never the command line (:mod:`ssdlab.commands.fit` calls :func:`run_fit`).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import results
from ..errors import UserError

__all__ = ["run_fit"]


def run_fit(folders: list[str], out: str | os.PathLike, *, keys: list[str] = (), base: str = "default",
            evals: int = 100, seed: int = 1, scale: float = 1.0, workers: int | None = None,
            scheduler: str | None = None, connect_timeout: float = 10.0, progress: bool | None = None,
            argv: list[str] | None = None, force: bool = False, csv=None) -> dict:
    """Fits and writes ``out``; returns the summary (see :mod:`.output`). Everything the
    user can get wrong is checked before the first simulation (UserError). Ctrl-C writes what
    was found so far (history, best profile, plot), marks the folder incomplete and re-raises
    KeyboardInterrupt. ``csv``: the :class:`~ssdlab.fit.measured.CsvOptions` of CSV curves
    among ``folders``."""
    from ..progress import phase_bar
    from . import core, output, search

    if evals < 1:
        raise UserError(f"--evals {evals}: must be >= 1")
    run = core.prepare(list(folders), list(keys), base=base, seed=seed, scale=scale, evals=evals, csv=csv)
    out_path = Path(out)
    for m in run.measured:
        if out_path.resolve() == m.folder.resolve():
            raise UserError(f"--out {out}: is the measured folder {m.folder}; choose another folder")
    evaluator = search.Evaluator(workers=workers, scheduler=scheduler, connect_timeout=connect_timeout)
    rd = None
    try:
        rd = results.ResultsDir(out_path, overwrite=force)
        backend = evaluator.describe()
        with phase_bar(f"fit ({evals} simulations)", enabled=progress) as bar:
            def on_result(r) -> None:
                best = "n/a" if r.best is None else f"{r.best['distance']:.4f}"
                bar(r.used / r.evals, f"{r.used}/{r.evals} simulated, best distance {best}")

            def on_batch(r) -> None:
                core.write_history(r, rd.path)

            try:
                core.search_fit(run, evaluator, on_batch=on_batch, on_result=on_result)
            except KeyboardInterrupt:
                evaluator.close(abandon=True)
                rd.mark_incomplete(results.INTERRUPTED_REASON)
                output.finish(run, rd, argv=argv if argv is not None else sys.argv, backend=backend,
                              complete=False, reason=results.INTERRUPTED_REASON)
                raise
        evaluator.close()
        summary = output.finish(run, rd, argv=argv if argv is not None else sys.argv, backend=backend,
                                complete=run.best is not None, reason=None)
        if run.best is None:
            rd.mark_incomplete("no candidate could be simulated")
            failures = [r["error"] for r in run.rows if r["error"]]
            raise UserError("fit: no candidate could be simulated"
                            + (f"; the first failure: {failures[0]}" if failures else "")
                            + f" (history in {out_path}/history.csv)")
        rd.finish()
        return summary
    finally:
        evaluator.close(abandon=True)
