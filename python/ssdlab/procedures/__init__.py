"""Test procedures: each is a sequence of phases (JobSpecs) run on any target, plus the
analysis and results it writes. One module per test."""
