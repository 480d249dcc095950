"""The optimizer of a fit and where its simulations run.

Optimizer (seeded; the same seed and measurements give the same fit, whatever runs the
simulations: each step waits for its whole batch, and ties break by evaluation number):

1. **sample**: the base profile's own values, then a Latin hypercube over the unit cube of the
   searched keys (40 % of the budget, at least 2 x keys + 2): each key's range is cut into as
   many strata as there are samples, one sample per stratum, so every key's whole range is
   seen.
2. **refine**: a cross-entropy search. Each round fits a Gaussian (mean and full covariance,
   rank-weighted) to the best :data:`ELITE` candidates simulated so far and simulates a batch
   drawn from it (widened by :data:`WIDEN`, each key's spread kept above
   :data:`MIN_SIGMA` of its range, clipped to the ranges). The full covariance follows the
   diagonal valleys where keys trade off against each other (less spare area and faster
   programs give the same steady state), which a search along one key at a time crawls
   through; keeping the elite over all rounds makes it robust to the plateaus of integer
   keys and block-granular spare area, and to a noisy distance.
3. **probe**: the best point moved by +/-10 % of each key's range (2 x keys simulations,
   reserved from the budget when it holds at least 6 x keys): the distance's local rise per
   key, reported with the identifiability figures.

numpy only: scipy is not a dependency of ssdlab, and these steps are ~60 lines here, with
every batch mapped onto the process pool or the dask cluster.

Backends (:class:`Evaluator`): in this process (``workers=1``), a local process pool (spawn,
one process per core by default) or a dask.distributed cluster (``scheduler``, connected as
``ssdlab grid`` does: :func:`ssdlab.grid.connect`).
"""
from __future__ import annotations

import os
import signal
from typing import Callable

import numpy as np

#: Share of the budget (after the probe) spent on the space-filling sample.
SAMPLE_SHARE = 0.40
#: Candidates the refine step's Gaussian is fitted to: max(this, keys + 1).
ELITE = 6
#: Factor on the fitted spread (keeps the search from collapsing onto a plateau).
WIDEN = 1.3
#: Smallest spread per key during refine [share of its range].
MIN_SIGMA = 1 / 40
#: The probe's displacement [share of each key's range].
PROBE_STEP = 0.10


def latin_hypercube(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """``n`` points in [0, 1]^d, one in each of the ``n`` strata of every coordinate."""
    if n <= 0:
        return np.zeros((0, d))
    u = np.empty((n, d))
    for j in range(d):
        u[:, j] = (rng.permutation(n) + rng.random(n)) / n
    return u


def batch_size(d: int) -> int:
    """Candidates per refine round."""
    return max(6, 2 * d + 2)


def optimize(d: int, ask: Callable[[list[np.ndarray], str], list[float]], remaining: Callable[[], int],
             seed: int, start: np.ndarray | None = None, probe: bool = True) -> None:
    """Runs the three steps above. ``ask(points, step)`` simulates the points (a list of
    arrays in [0, 1]^d) and returns their distances (points it has seen cost nothing, refused
    ones are inf); ``remaining()`` is the budget left. Returns when the budget is spent (or
    the refine step keeps proposing candidates already simulated)."""
    rng = np.random.default_rng(seed)
    total = remaining()
    n_probe = 2 * d if probe and total >= 6 * d else 0
    n_sample = max(1, min(total - n_probe, max(2 * d + 2, int(round(SAMPLE_SHARE * (total - n_probe))))))
    points = [] if start is None else [np.clip(np.asarray(start, float), 0, 1)]
    points += list(latin_hypercube(rng, n_sample - len(points), d))
    seen: list[tuple[float, int, np.ndarray]] = []

    def record(pts, dist) -> None:
        seen.extend((float(x), len(seen) + k, p) for k, (x, p) in enumerate(zip(dist, pts)))

    record(points, ask(points, "sample"))
    stale = 0
    n_elite = max(ELITE, d + 1)
    w = np.log(n_elite + 0.5) - np.log(np.arange(1, n_elite + 1))  # rank weights, as CMA-ES's
    while remaining() > n_probe and stale < 3:
        elite = [p for x, _, p in sorted(seen, key=lambda r: (r[0], r[1])) if np.isfinite(x)][:n_elite]
        if not elite:
            break
        e = np.array(elite)
        ww = w[: len(e)] / w[: len(e)].sum()
        mean = ww @ e
        cov = (e - mean).T @ ((e - mean) * ww[:, None]) if len(e) > 1 else np.zeros((d, d))
        cov = cov * WIDEN ** 2 + np.eye(d) * MIN_SIGMA ** 2
        n = min(batch_size(d), remaining() - n_probe)
        batch = list(np.clip(rng.multivariate_normal(mean, cov, size=n, method="cholesky"), 0.0, 1.0))
        before = remaining()
        record(batch, ask(batch, "refine"))
        stale = stale + 1 if remaining() == before else 0
    if n_probe and remaining() > 0:
        finite = [r for r in seen if np.isfinite(r[0])]
        if finite:
            best = min(finite, key=lambda r: (r[0], r[1]))[2]
            ask(probe_points(best), "probe")


def probe_points(center: np.ndarray) -> list[np.ndarray]:
    """``center`` moved by +/- :data:`PROBE_STEP` along each key (clipped to [0, 1])."""
    out = []
    for j in range(len(center)):
        for sign in (1.0, -1.0):
            p = center.copy()
            p[j] = min(1.0, max(0.0, p[j] + sign * PROBE_STEP))
            out.append(p)
    return out


# --------------------------------------------------------------------------- backends

def _worker_init() -> None:
    """Pool workers ignore Ctrl-C: the parent stops the search and ends them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Evaluator:
    """Runs :func:`ssdlab.fit.simulate.evaluate` on batches of tasks: here, on a local
    process pool, or on a dask cluster. ``describe()`` says which, for the summary."""

    def __init__(self, workers: int | None = None, scheduler: str | None = None, connect_timeout: float = 10.0):
        self.scheduler = scheduler
        self.client = None
        self.pool = None
        if scheduler:
            from ..grid import connect

            self.client = connect(scheduler, connect_timeout)
            self.workers = len(self.client.scheduler_info().get("workers", {}))
        else:
            self.workers = max(1, workers or os.cpu_count() or 1)

    def describe(self) -> dict:
        if self.client is not None:
            return {"kind": "dask", "scheduler": self.scheduler, "workers": self.workers}
        return {"kind": "local", "workers": self.workers, "in_process": self.workers == 1}

    def _pool(self):
        if self.pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_worker_init)
        return self.pool

    def map(self, tasks: list[dict], on_result: Callable[[dict], None]) -> None:
        """Evaluates ``tasks``, calling ``on_result`` with each result as it arrives (any
        order). KeyboardInterrupt stops it; running simulations are abandoned."""
        from .simulate import evaluate

        if not tasks:
            return
        if self.client is not None:
            import distributed

            futures = self.client.map(evaluate, tasks, pure=False)
            by_key = {f.key: t for f, t in zip(futures, tasks)}
            try:
                for f in distributed.as_completed(futures):
                    if f.status == "error":
                        e = f.exception()
                        on_result({"index": by_key[f.key]["index"], "ok": False, "outputs": None,
                                   "error": f"{type(e).__name__}: {e}", "wall_s": None})
                    else:
                        on_result(f.result())
            except KeyboardInterrupt:
                self.client.cancel(futures)
                raise
            return
        if self.workers == 1:
            for t in tasks:
                on_result(evaluate(t))
            return
        from concurrent.futures import as_completed

        pool = self._pool()
        futures = {pool.submit(evaluate, t): t for t in tasks}
        for f in as_completed(futures):
            e = f.exception()
            if e is not None:  # the worker process died (memory...): the candidate failed
                on_result({"index": futures[f]["index"], "ok": False, "outputs": None,
                           "error": f"{type(e).__name__}: {e}", "wall_s": None})
            else:
                on_result(f.result())

    def close(self, abandon: bool = False) -> None:
        """Ends the pool (``abandon``: without waiting for running simulations: Ctrl-C) or the
        dask client."""
        if self.pool is not None:
            if abandon:
                procs = list((getattr(self.pool, "_processes", None) or {}).values())
                self.pool.shutdown(wait=False, cancel_futures=True)
                for p in procs:  # our own workers, by their process handles
                    try:
                        p.terminate()
                    except (OSError, AttributeError):
                        pass
                for p in procs:
                    try:
                        p.join(timeout=5)
                    except (OSError, AttributeError, AssertionError):
                        pass
            else:
                self.pool.shutdown(wait=True)
            self.pool = None
        if self.client is not None:
            self.client.close()
            self.client = None
