"""The ``ssdlab`` command's entry point (the console script, and ``python -m ssdlab``).

Importing and reading the command line (:mod:`ssdlab.cli` and the named command's modules;
numpy, pyarrow and the simulator once a command runs; matplotlib only when it draws) takes
a tenth of a second or more. This
module imports nothing heavy, so Ctrl-C, SIGTERM and SIGHUP are handled (:mod:`ssdlab.stop`)
from the first milliseconds: a stop request during the imports ends the command quietly with
exit status 130 once the command line is read, like one during a run.
"""
from __future__ import annotations

import os

from . import stop


def main(argv: list[str] | None = None) -> int:
    """Runs the command line (:func:`ssdlab.cli.main`) and returns its exit status: 130 when
    a stop request ends it."""
    stop.install(starting=True)
    # numpy's BLAS starts a thread per core when imported (~20 ms of wall time and ~70 ms of CPU
    # on 2 cores) for matrix work ssdlab does not do (its matrices are a few rows); a user's
    # setting is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        from . import cli

        return cli.main(argv)
    except KeyboardInterrupt:
        return 130
    finally:
        stop.finish()
        # A stop request that lands while exec() or eval() runs source text (dataclasses and
        # namedtuples are built so, many of them during the imports) sets CPython's flag of an
        # unhandled KeyboardInterrupt even when the exception is handled, and the interpreter
        # would then end itself by SIGINT rather than with the exit status returned here.
        # Every eval of source text clears the flag first.
        eval("None")
