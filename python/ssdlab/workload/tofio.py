"""fio jobs as ssdlab hands them to fio: one group of a
:class:`~ssdlab.workload.fiojob.Workload` as a job file, every option as the user wrote it
(in fio's canonical form, :func:`~ssdlab.workload.fiojob.format_job_file`) except where the
job writes and what it logs: ``filename`` is the target ssdlab checked with its safety gate,
and each job writes the completion-latency histogram log ssdlab reads its series from.
"""
from __future__ import annotations

import dataclasses
import re

from .fiojob import Job, Workload, WorkloadError, format_job_file, where_prefix

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
                raise WorkloadError(
                    f"{where_prefix(o.where)}job {job.name!r}: filename={o.value} is not the target ({target_path}); ssdlab writes "
                    f"only to the device --target names, which its safety gate checked. Remove filename= from the "
                    f"job or set --target {o.value}")


#: fio engines that send NVMe data placement directives with their writes.
FDP_ENGINES = ("io_uring_cmd", "xnvme")
#: An NVMe namespace's generic character device, the device io_uring_cmd passes NVMe
#: commands to: /dev/ngXnY.
_NVME_GENERIC = re.compile(r"/dev/ng\d+n\d+")


def fio_release(text: str) -> tuple[int, ...]:
    """fio's version as numbers: "fio-3.33" -> (3, 33); () if unreadable."""
    m = re.search(r"(\d+)\.(\d+)", text)
    return (int(m[1]), int(m[2])) if m else ()


def check_placement(workload: Workload, fio_version: str, target_path: str) -> None:
    """Refuses a job with NVMe flexible data placement (``fdp=1``, ``dataplacement=fdp``,
    ``plids``...) that the installed fio or the target cannot run: fio older than the release
    that brought the options as written (3.34 for ``fdp``/``fdp_pli``, 3.36 for
    ``fdp_pli_select``, 3.38 for the others), an engine other than ``io_uring_cmd`` or
    ``xnvme``, or a target other than a namespace's generic character device ``/dev/ngXnY``."""
    for job in workload.jobs:
        if job.dataplacement == "none":
            continue
        where = where_prefix(job.where)
        need = job.dp_fio_version
        have = fio_release(fio_version)
        if have and have < fio_release(need):
            raise WorkloadError(
                f"{where}job {job.name!r}: NVMe flexible data placement as written needs fio {need} or later; the "
                f"installed fio is {fio_version.strip()} (Debian 12 ships 3.33): install fio {need} or later "
                "(e.g. built from github.com/axboe/fio), or run the job on the simulator (--target sim)")
        if job.ioengine not in FDP_ENGINES:
            raise WorkloadError(
                f"{where}job {job.name!r}: fdp=1 needs ioengine=io_uring_cmd (with cmd_type=nvme) or xnvme, which "
                f"send NVMe placement directives; the job has ioengine={job.ioengine}")
        if not _NVME_GENERIC.fullmatch(target_path):
            raise WorkloadError(
                f"{where}job {job.name!r}: fdp=1 writes through an NVMe namespace's generic character device "
                f"(/dev/ngXnY, e.g. /dev/ng0n1, of a drive with FDP enabled); the target is {target_path}")


def zoned_model(device_path: str) -> str:
    """The kernel's zoned model of a block device ("none", "host-aware", "host-managed"),
    from /sys/block/NAME/queue/zoned; "none" for a file or a device without the entry."""
    from pathlib import Path

    name = Path(device_path).resolve().name
    try:
        return Path(f"/sys/block/{name}/queue/zoned").read_text().strip() or "none"
    except OSError:
        return "none"


def zone_bytes(device_path: str) -> int:
    """Zone size of a zoned block device [bytes] (/sys/block/NAME/queue/chunk_sectors), 0 for
    a device without zones or a file."""
    from pathlib import Path

    if zoned_model(device_path) == "none":
        return 0
    try:
        return int(Path(f"/sys/block/{Path(device_path).resolve().name}/queue/chunk_sectors").read_text()) * 512
    except (OSError, ValueError):
        return 0


#: The last fio release without zone appends (io_uring_cmd's write_mode=zone_append).
ZONE_APPEND_AFTER = (3, 42)


def check_write_mode(workload: Workload, fio_version: str, target_path: str) -> None:
    """Refuses ``write_mode=zone_append`` that the installed fio (zone appends came after
    3.42) or the target (an NVMe namespace's generic character device) cannot run."""
    for job in workload.jobs:
        if job.write_mode == "write":
            continue
        where = where_prefix(job.option_where.get("write_mode", job.where))
        have = fio_release(fio_version)
        if have and have <= ZONE_APPEND_AFTER:
            raise WorkloadError(
                f"{where}job {job.name!r}: write_mode=zone_append needs a fio release after "
                f"{'.'.join(map(str, ZONE_APPEND_AFTER))}; the installed fio is {fio_version.strip()} (Debian 12 "
                "ships 3.33): install a newer fio (e.g. built from github.com/axboe/fio), or run the job on the "
                "simulator (--target sim:zns)")
        if not _NVME_GENERIC.fullmatch(target_path):
            raise WorkloadError(
                f"{where}job {job.name!r}: write_mode=zone_append sends NVMe zone appends through a zoned "
                f"namespace's generic character device (/dev/ngXnY); the target is {target_path}")


def check_zones(workload: Workload, target_path: str) -> None:
    """zonemode=zbd on a fio target: fio runs it on a zoned block device (zone size and
    limits from the device) and emulates zones of ``zonesize`` on a regular file or
    non-zoned device (its write pointers kept by fio; a reset only rewinds them). Refuses,
    as fio would, a job without ``zonesize`` on a target that has no zones."""
    model = None
    for job in workload.jobs:
        if job.zonemode != "zbd" or job.zonesize:
            continue
        model = model or zoned_model(target_path)
        if model == "none":
            raise WorkloadError(
                f"{where_prefix(job.where)}job {job.name!r}: zonemode=zbd on {target_path}, which has no zones: fio emulates zones on "
                "a regular device or file only with zonesize= (it refuses the job otherwise); add zonesize=, e.g. "
                "zonesize=256m")


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
