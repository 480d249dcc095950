"""The SNIA Solid State Storage Performance Test Specification (PTS 2.0.2) as ssdlab runs it.

:mod:`.steady` is the spec's steady-state rule, :mod:`.spec` the tests' parameters (with the
public source each follows), :mod:`.journal` the rounds journal that makes a run resumable,
:mod:`.suite` the tests themselves (built on :mod:`ssdlab.workload.engine`). The declared
test, the command line and the summary live in :mod:`ssdlab.procedures.pts`.
"""
