"""Workloads for ``ssdlab run``: what the host does to the drive, written in fio's language.

:mod:`ssdlab.workload.fiojob` reads fio job files and fio's command-line options into a
:class:`Workload` of normalized :class:`Job` descriptions and prints them back as a
canonical job file.
"""
from .fiojob import (
    CMDLINE,
    DIRECTIONS,
    RW_VALUES,
    BlockSizeShare,
    HostOption,
    Job,
    RandomDistribution,
    Where,
    Workload,
    WorkloadError,
    Zone,
    format_job_file,
    parse_command_line,
    parse_job_file,
    parse_job_text,
)

__all__ = [
    "CMDLINE", "DIRECTIONS", "RW_VALUES", "BlockSizeShare", "HostOption", "Job", "RandomDistribution",
    "Where", "Workload", "WorkloadError", "Zone", "format_job_file", "parse_command_line", "parse_job_file",
    "parse_job_text",
]
