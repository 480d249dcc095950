"""Stop requests: Ctrl-C (SIGINT), SIGTERM and SIGHUP (the terminal closing) are handled
from the command's first milliseconds, before anything heavy is imported; and
:func:`ssdlab.stop.held`, the sections a stop request cannot cut short.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ssdlab import stop

from conftest import PYTHON_DIR, REPO

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def test_handlers_are_in_place_before_the_heavy_imports(tmp_path):
    """``python -m ssdlab.cli`` and the console script's entry point install the stop
    handlers before numpy (the first heavy import) is imported."""
    probe = tmp_path / "probe"
    probe.mkdir()
    # the interpreter runs sitecustomize before the command: it notes SIGHUP's handler when
    # numpy is first imported
    (probe / "sitecustomize.py").write_text(
        "import os, signal, sys\n"
        "class _Probe:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numpy' and not os.path.exists(os.environ['PROBE_OUT']):\n"
        "            h = signal.getsignal(signal.SIGHUP)\n"
        "            with open(os.environ['PROBE_OUT'], 'w') as f:\n"
        "                f.write(f\"{getattr(h, '__module__', '')}.{getattr(h, '__qualname__', h)}\")\n"
        "sys.meta_path.insert(0, _Probe())\n")
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["ssdlab"] == "ssdlab.entry:main"
    entry = "import sys; from ssdlab.entry import main; sys.exit(main())"  # what pip's script does
    for name, argv in (("python -m ssdlab.cli", ["-m", "ssdlab.cli"]), ("console script", ["-c", entry])):
        out = tmp_path / f"{name}.txt"
        env = {**os.environ, "PROBE_OUT": str(out),
               "PYTHONPATH": os.pathsep.join([str(probe), PYTHON_DIR, os.environ.get("PYTHONPATH", "")])}
        r = subprocess.run([sys.executable, *argv, "consistency", "--help"], capture_output=True, text=True, env=env,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        assert out.read_text() == "ssdlab.stop.handler", name


# ============================================================================ stop.held


@pytest.fixture
def handlers():
    """Restores the signal handlers, the unraisable-exception hook and stop's state after
    the test."""
    saved = {s: signal.getsignal(s) for s in SIGNALS}
    hook = sys.unraisablehook
    yield
    for s, h in saved.items():
        signal.signal(s, h)
    sys.unraisablehook = hook
    stop.clear()


def test_held_raises_a_ctrl_c_at_the_end_and_restores_python_s_handler(handlers):
    signal.signal(signal.SIGINT, signal.default_int_handler)
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with stop.held():
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):  # many chances for Python to run a handler
                reached.append(len(reached))
    assert len(reached) == 1000
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not stop.requested()  # the library's own caller was not told to stop later
    with pytest.raises(KeyboardInterrupt):  # and Ctrl-C acts at once again
        signal.raise_signal(signal.SIGINT)
        for _ in range(1000):
            pass


def test_held_sections_nest_and_the_outermost_raises(handlers):
    stop.install()
    done = []
    with pytest.raises(KeyboardInterrupt):
        with stop.held():
            with stop.held():
                signal.raise_signal(signal.SIGHUP)
            done.append("inner")  # the inner section's end did not raise
            signal.raise_signal(signal.SIGTERM)
            done.append("outer")
    assert done == ["inner", "outer"] and stop.requested()


def test_a_stop_request_while_starting_is_raised_when_the_run_begins(handlers):
    stop.install(starting=True)
    signal.raise_signal(signal.SIGTERM)
    for _ in range(1000):  # held, not raised
        pass
    with pytest.raises(KeyboardInterrupt):
        stop.install()
    stop.install()  # nothing pending any more


def test_a_stop_request_a_finalizer_swallows_is_quiet_and_raised_again(handlers):
    reported = []
    sys.unraisablehook = reported.append
    stop.install()

    class Finalized:
        def __init__(self, exc=None):
            self.exc = exc

        def __del__(self):
            if self.exc is not None:
                raise self.exc
            signal.raise_signal(signal.SIGTERM)
            for _ in range(1000):  # the KeyboardInterrupt is raised here, and cannot leave __del__
                pass

    Finalized()
    assert reported == []  # nothing printed
    with pytest.raises(KeyboardInterrupt):
        stop.check()
    Finalized(ValueError("a real error"))
    assert [type(u.exc_value) for u in reported] == [ValueError]  # still reported
