"""ssdlab: how does an SSD behave once it is full, dirty and busy?

Review-grade SSD torture tests (performance consistency, LBA sweeps, TRIM and idle recovery,
used-vs-new, trace replay) on real drives through fio and on a simulated drive from the
built-in NAND/FTL simulator (``ssdlab._native``, written in Rust), with the same results.
"""
__version__ = "0.1.0"
