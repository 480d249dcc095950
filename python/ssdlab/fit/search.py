"""The optimizer of a fit and where its simulations run.

Optimizer (seeded; the same seed and measurements give the same fit, whatever runs the
simulations: each step waits for its whole batch, and ties break by evaluation number):

1. **sample**: a Latin hypercube over the unit cube of the searched keys (40 % of the
   budget after the probe, at least 2 x keys + 2): each key's range is cut into as many
   strata as there are samples, one sample per stratum, so every key's whole range is seen.
   A fit starts here, not from the base profile's values: those may be the measured drive's
   own, and a search started on the answer says nothing about finding it.
2. **refine**: :data:`RUNS` cross-entropy searches (one when the budget is small,
   :func:`run_count`), taking rounds in turn with equal shares of the budget. The first
   starts from the best sampled candidate, the second from the best one at least
   :data:`SEPARATION` of a key's range away from it, each with the sampled candidates
   nearer its start than the other's: a valley both end in is one the data singles out;
   where they end apart, another fits too (the identifiability checks compare their ends).
   Each round fits a Gaussian (mean and full covariance, rank-weighted) to the search's best
   :data:`ELITE` candidates so far and simulates a batch drawn from it (widened by
   :data:`WIDEN`, each key's spread kept above :data:`MIN_SIGMA` of its range and above
   :data:`MIN_STEPS` of its steps where it moves in steps (whole numbers, the spare area's
   whole blocks), clipped to the ranges). The full covariance follows the diagonal valleys
   where keys trade off against each other (less spare area and faster programs give the
   same steady state), which a search along one key at a time crawls through; keeping the
   elite over all rounds makes it robust to the plateaus of integer keys and block-granular
   spare area, and to a noisy distance.
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
#: Smallest spread during refine of a key that moves in steps [its steps]: the search keeps
#: trying the neighbouring steps, where a valley of equally good fits along a stepped key and
#: another shows (the GC watermark in blocks against the spare area in blocks).
MIN_STEPS = 1.5
#: The probe's displacement [share of each key's range].
PROBE_STEP = 0.10
#: Refine searches when the budget affords them (:func:`run_count`), and how far apart (in
#: some key, share of its range) the second starts from the first.
RUNS = 2
SEPARATION = 0.25
#: Refine rounds each search gets at least, or there is one search.
MIN_ROUNDS = 3


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


def optimize(d: int, ask: Callable[[list[np.ndarray], str, int | None], list[float]], remaining: Callable[[], int],
             seed: int, start: np.ndarray | None = None, probe: bool = True, runs: int | None = None,
             steps: list[float] | None = None) -> None:
    """Runs the steps above. ``ask(points, step, search)`` simulates the points (a list of
    arrays in [0, 1]^d) of ``step`` for refine search ``search`` (None: the sample and the
    probe) and returns their distances (points it has seen cost nothing, refused ones are
    inf); ``remaining()`` is the budget left; ``start``, if given, is simulated first;
    ``runs``: refine searches (default :func:`run_count`); ``steps``: per key, its step in
    the unit cube (0: continuous). Returns when the budget is spent (or the refine steps keep
    proposing candidates already simulated)."""
    rng = np.random.default_rng(seed)
    sigma = np.maximum(MIN_SIGMA, MIN_STEPS * np.asarray(steps if steps is not None else [0.0] * d, float))
    total = remaining()
    n_probe = 2 * d if probe and total >= 6 * d else 0
    runs = run_count(d, total - n_probe) if runs is None else runs
    n_sample = max(1, min(total - n_probe, max(2 * d + 2, int(round(SAMPLE_SHARE * (total - n_probe))))))
    points = [] if start is None else [np.clip(np.asarray(start, float), 0, 1)]
    points += list(latin_hypercube(rng, n_sample - len(points), d))
    sampled = [(float(x), k, p) for k, (x, p) in enumerate(zip(ask(points, "sample", None), points))]
    every = list(sampled)
    seeds = _starts([r for r in sampled if np.isfinite(r[0])], runs)
    searches = [[r for r in sampled if _nearest(r[2], seeds) == i] for i in range(len(seeds))]
    stale = [0] * len(searches)
    n_elite = max(ELITE, d + 1)
    w = np.log(n_elite + 0.5) - np.log(np.arange(1, n_elite + 1))  # rank weights, as CMA-ES's
    turn = 0
    while remaining() > n_probe and searches and min(stale) < 3:
        i = turn % len(searches)
        turn += 1
        if stale[i] >= 3:
            continue
        elite = [p for x, _, p in sorted(searches[i], key=lambda r: (r[0], r[1])) if np.isfinite(x)][:n_elite]
        if not elite:
            stale[i] = 3
            continue
        e = np.array(elite)
        ww = w[: len(e)] / w[: len(e)].sum()
        mean = ww @ e
        cov = (e - mean).T @ ((e - mean) * ww[:, None]) if len(e) > 1 else np.zeros((d, d))
        cov = cov * WIDEN ** 2 + np.diag(sigma ** 2)
        n = min(batch_size(d), remaining() - n_probe)
        batch = list(np.clip(rng.multivariate_normal(mean, cov, size=n, method="cholesky"), 0.0, 1.0))
        before = remaining()
        new = [(float(x), len(every) + k, p) for k, (x, p) in enumerate(zip(ask(batch, "refine", i), batch))]
        searches[i] += new
        every += new
        stale[i] = stale[i] + 1 if remaining() == before else 0
    if n_probe and remaining() > 0:
        finite = [r for r in every if np.isfinite(r[0])]
        if finite:
            best = min(finite, key=lambda r: (r[0], r[1]))[2]
            ask(probe_points(best), "probe", None)


def run_count(d: int, budget: int) -> int:
    """Refine searches a budget affords: RUNS when the refine step gets at least
    :data:`MIN_ROUNDS` rounds of :func:`batch_size` per search, else one."""
    return RUNS if (1 - SAMPLE_SHARE) * budget >= RUNS * MIN_ROUNDS * batch_size(d) else 1


def _starts(sampled: list[tuple[float, int, np.ndarray]], runs: int) -> list[np.ndarray]:
    """Where the refine searches start: the best sampled point, then each next the best one
    at least SEPARATION away (in some key) from every start so far, else the best not yet a
    start."""
    ranked = sorted(sampled, key=lambda r: (r[0], r[1]))
    starts: list[np.ndarray] = []
    for _ in range(min(runs, len(ranked))):
        far = [p for _, _, p in ranked if all(np.max(np.abs(p - q)) >= SEPARATION for q in starts)]
        rest = [p for _, _, p in ranked if not any(p is q for q in starts)]
        starts.append((far or rest)[0])
    return starts


def _nearest(p: np.ndarray, starts: list[np.ndarray]) -> int:
    return int(np.argmin([np.sum((p - q) ** 2) for q in starts])) if starts else 0


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
