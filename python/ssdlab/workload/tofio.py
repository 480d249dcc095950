"""fio jobs as ssdlab hands them to fio: one group of a
:class:`~ssdlab.workload.fiojob.Workload` as a job file, every option as the user wrote it
(in fio's canonical form, :func:`~ssdlab.workload.fiojob.format_job_file`) except where the
job writes and what it logs: ``filename`` is the target ssdlab checked with its safety gate,
and each job writes the completion-latency histogram log ssdlab reads its series from.
"""
from __future__ import annotations

import dataclasses

from .fiojob import Job, Workload, WorkloadError, format_job_file

#: Host options ssdlab sets itself on a fio target: where the job writes, and what it logs.
_OWN_PREFIXES = ("write_", "log_")
_OWN = {"filename", "filename_format", "directory", "opendir", "nrfiles", "per_job_logs", "output",
        "output-format", "unlink", "unlink_each_loop"}


def _own(name: str) -> bool:
    return name in _OWN or (name.startswith(_OWN_PREFIXES) and (name.endswith("_log") or name.startswith("log_")))


def check_filename(workload: Workload, target_path: str, aliases: tuple[str, ...] = ()) -> None:
    """Refuses a job whose ``filename`` names another device or file than the target: the
    safety gate checked the target, not what a job file names."""
    ok = {target_path, *aliases}
    for job in workload.jobs:
        for o in job.host_options:
            if o.name == "filename" and o.value not in ok:
                where = f"{o.where}: " if o.where is not None else ""
                raise WorkloadError(
                    f"{where}job {job.name!r}: filename={o.value} is not the target ({target_path}); ssdlab writes "
                    f"only to the device --target names, which its safety gate checked. Remove filename= from the "
                    f"job or set --target {o.value}")


def _strip(job: Job) -> Job:
    return dataclasses.replace(job, host_options=tuple(o for o in job.host_options if not _own(o.name)))


def group_text(workload: Workload, index: int, filename: str, log_prefix: str, interval_ms: int,
               header: list[str] = ()) -> str:
    """The job file of group ``index``: its jobs as written, writing to ``filename``, each
    logging a histogram log ``{log_prefix}_clat_hist.N.log`` (N = the job's number in the
    file, copies included) every ``interval_ms``."""
    group = tuple(_strip(j) for j in workload.groups[index])
    body = format_job_file(Workload(groups=(group,), exitall=workload.exitall))
    body = "\n".join(line for line in body.splitlines() if not line.startswith("; not applicable"))
    own = ["[global]", f"filename={filename.replace(':', chr(92) + ':')}",
           "; per-interval IO counts and completion-latency histograms (log_hist_coarseness=1: 1/32 resolution)",
           f"write_hist_log={log_prefix}", f"log_hist_msec={interval_ms}", "log_hist_coarseness=1", "per_job_logs=1"]
    return "\n".join([*header, *own, "", body]) + "\n"
