//! `ssdlab._native`: thin PyO3 bindings over the `ssdsim` crate. Only type conversion and
//! error mapping live here; behaviour lives in `ssdsim`.
//!
//! Python sees seconds and bytes (floats/ints); the simulator works in ns and 4 KiB units.
//!
//! The files follow the core's modules: `config.rs` (profiles), `workload.rs` (workload
//! dicts as plain values), `replay.rs` (trace records mapped for replay), `trace.rs` (`ssdtrace`),
//! `emulate.rs` (`ssdemu`), `errors.rs` (the exceptions); here the `Simulator` class and its
//! series as dicts.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

mod columns;
mod config;
mod emulate;
mod errors;
mod replay;
mod trace;
mod workload;
use config::{build_config, geometry_dict, profile_dict};
use errors::{profile_err, py_err};
use workload::workload_keys;
use ssdsim::stats::{IntervalLatency, LatencyHistogram};
use ssdsim::time::{checked_s_to_ns, NS_PER_S};
use ssdsim::workload::{jobs_from_keys, Direction};
use ssdsim::{CmdKind, Command, Config, Job, Pattern, SimError, Simulation, UNIT_BYTES};

const PHASE_QUANTILES: [(&str, f64); 7] = [("p1", 0.01), ("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999), ("max", 1.0)];

fn quantiles_dict<'py>(py: Python<'py>, h: &LatencyHistogram) -> PyResult<Bound<'py, PyDict>> {
    let lat = PyDict::new(py);
    for (label, q) in PHASE_QUANTILES {
        lat.set_item(label, h.quantile_ns(q))?;
    }
    Ok(lat)
}

/// A per-interval column as little-endian u64 bytes (`numpy.frombuffer(b, "<u8")` reads it):
/// 8 bytes an interval in Python, where a list costs an int object and a pointer each.
fn u64_column(py: Python<'_>, values: impl ExactSizeIterator<Item = u64>) -> Bound<'_, PyBytes> {
    let mut buf = Vec::with_capacity(values.len() * 8);
    for v in values {
        buf.extend_from_slice(&v.to_le_bytes());
    }
    PyBytes::new(py, &buf)
}

/// Marks an interval in which no IO completed in a latency column (`u64_column`).
const NO_LATENCY: u64 = u64::MAX;

fn interval_latency_dict<'py>(py: Python<'py>, per: &[Option<IntervalLatency>]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let stats: [(&str, fn(&IntervalLatency) -> u64); 4] = [("p50", |l| l.p50_ns), ("p99", |l| l.p99_ns), ("p99.9", |l| l.p999_ns), ("max", |l| l.max_ns)];
    for (label, f) in stats {
        d.set_item(label, u64_column(py, per.iter().map(|l| l.as_ref().map_or(NO_LATENCY, f))))?;
    }
    Ok(d)
}

/// The counters of one snapshot, by name (as the per-interval counter columns).
fn snapshot_dict<'py>(py: Python<'py>, s: &ssdsim::Snapshot) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, f) in ssdsim::columns::COUNTERS {
        d.set_item(name, f(s))?;
    }
    Ok(d)
}

/// One direction's IOs, bytes and latency per interval.
type DirectionColumns<'a> = (&'a [u64], &'a [u64], &'a [Option<IntervalLatency>]);

/// The per-interval columns of a phase's series (its report's, or a batch taken while it
/// runs) as `finish_phase` and `take_intervals` return them; `directions` holds each
/// direction's (`ios`, `bytes`, `latency_intervals_ns`).
#[allow(clippy::too_many_arguments)]
fn intervals_dict<'py>(
    py: Python<'py>, interval_ns: u64, first_interval: usize, ios: &[u64], bytes: &[u64], snapshots: &[ssdsim::Snapshot],
    latency: &[Option<IntervalLatency>], dirs: [DirectionColumns<'_>; 3],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("interval_s", interval_ns as f64 / NS_PER_S as f64)?;
    d.set_item("first_interval", first_interval)?;
    d.set_item("ios", u64_column(py, ios.iter().copied()))?;
    d.set_item("bytes", u64_column(py, bytes.iter().copied()))?;
    for (name, f) in ssdsim::columns::COUNTERS {
        d.set_item(name, u64_column(py, snapshots.iter().map(f)))?;
    }
    d.set_item("latency_intervals_ns", interval_latency_dict(py, latency)?)?;
    let out = PyDict::new(py);
    for dir in Direction::ALL {
        let (i, b, l) = dirs[dir.index()];
        let e = PyDict::new(py);
        e.set_item("ios", u64_column(py, i.iter().copied()))?;
        e.set_item("bytes", u64_column(py, b.iter().copied()))?;
        e.set_item("latency_intervals_ns", interval_latency_dict(py, l)?)?;
        out.set_item(dir.name(), e)?;
    }
    d.set_item("directions", out)?;
    Ok(d)
}

/// A simulated drive with a closed-loop host. Run phases with start_phase / advance /
/// finish_phase (take_intervals between advances hands out the final intervals as the phase
/// goes); all times in seconds, sizes in bytes (multiples of 4096).
#[pyclass(module = "ssdlab._native")]
struct Simulator {
    sim: Simulation,
    cfg: Config,
}

impl Simulator {
    /// A replay's completed commands and simulated seconds since its start.
    fn replay_done(&self) -> (u64, f64) {
        let (done, elapsed) = self.sim.replay_progress();
        (done, elapsed as f64 / NS_PER_S as f64)
    }

    /// What a results dict needs to read the counter columns (`ssdlab.targets.sim`): the NAND
    /// bytes per 4 KiB unit and the features a column may need (`slc_cache`, `map_cache`, `fdp`,
    /// `zones`).
    fn drive_features(&self, d: &Bound<'_, PyDict>) -> PyResult<()> {
        d.set_item("nand_bytes_per_unit", self.sim.geometry().nand_bytes_per_unit)?;
        d.set_item("slc_cache", self.sim.device().slc().is_some())?;
        d.set_item("map_cache", self.sim.device().map_cache().is_some())?;
        d.set_item("fdp", self.sim.geometry().fdp_handles != 0)?;
        d.set_item("zones", self.sim.geometry().zones.is_some())
    }
}

#[pymethods]
impl Simulator {
    #[new]
    #[pyo3(signature = (pairs, seed))]
    fn new(pairs: Vec<(String, String)>, seed: u64) -> PyResult<Self> {
        let cfg = build_config(pairs)?.resolved().map_err(profile_err)?;
        let sim = Simulation::new(&cfg, seed).map_err(py_err)?;
        Ok(Simulator { sim, cfg })
    }

    /// The resolved profile (every key).
    fn profile<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        profile_dict(py, &self.cfg)
    }

    /// Derived geometry: dies, planes, blocks, physical/user bytes, spare fraction...
    fn geometry<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        geometry_dict(py, &self.cfg)
    }

    /// Threads a phase or replay may use, 1 or 2 (`Simulation::set_threads`): with 2, a phase on a
    /// drive whose FTL decides by command order alone runs its FTL on a second thread; the
    /// same results.
    fn set_threads(&mut self, threads: usize) {
        self.sim.set_threads(threads);
    }

    /// Commands run on two threads so far.
    fn piped_commands(&self) -> u64 {
        self.sim.piped_commands()
    }

    /// Raises `DriveFullError` (message, key) once the drive has run out of room (a plane
    /// full of valid data: the profile's spare area is too small for the workload).
    /// `advance`, `replay_chunk`, `idle` and the `start_*` methods check it themselves.
    fn check_space(&self) -> PyResult<()> {
        self.sim.check_space().map_err(py_err)
    }

    /// Simulated time now [s].
    #[getter]
    fn now_s(&self) -> f64 {
        self.sim.now_ns() as f64 / NS_PER_S as f64
    }

    /// Lets `seconds` pass with no host I/O; idle-time GC may run. Returns the number of
    /// blocks idle GC collected.
    fn idle(&mut self, seconds: f64) -> PyResult<u64> {
        self.check_space()?;
        let ns = checked_s_to_ns(seconds).ok_or_else(|| PyValueError::new_err(format!("idle time must be a time in seconds >= 0 and below 1.8e10 (584 years), got {seconds}")))?;
        let collected = self.sim.idle(ns).map_err(py_err)?;
        self.check_space()?;
        Ok(collected)
    }

    /// How mixed the stored data is by LBA: the span cut into `regions` equal regions,
    /// returns (blocks holding valid data, of which those holding more than one region's).
    /// O(drive size): about 0.15 s for 256 GB.
    fn region_mixing(&self, py: Python<'_>, regions: u64) -> PyResult<(u64, u64)> {
        if regions == 0 {
            return Err(PyValueError::new_err("regions must be >= 1"));
        }
        Ok(py.allow_threads(|| self.sim.device().ftl().region_mixing(regions)))
    }

    /// Starts a phase. pattern: write | randwrite | read | randread | trim.
    #[pyo3(signature = (pattern, bs_bytes, qd, offset_bytes, span_bytes, duration_s=None, io_bytes=None, interval_s=1.0))]
    #[allow(clippy::too_many_arguments)]
    fn start_phase(
        &mut self,
        pattern: &str,
        bs_bytes: u64,
        qd: u32,
        offset_bytes: u64,
        span_bytes: u64,
        duration_s: Option<f64>,
        io_bytes: Option<u64>,
        interval_s: f64,
    ) -> PyResult<()> {
        self.check_space()?;
        let pat = Pattern::parse(pattern)
            .ok_or_else(|| PyValueError::new_err(format!("unknown pattern {pattern:?}: expected write, randwrite, read, randread or trim")))?;
        for (name, v) in [("bs_bytes", bs_bytes), ("offset_bytes", offset_bytes), ("span_bytes", span_bytes), ("io_bytes", io_bytes.unwrap_or(0))] {
            if v % UNIT_BYTES != 0 {
                return Err(PyValueError::new_err(format!("{name}={v} is not a multiple of {UNIT_BYTES} bytes")));
            }
        }
        // Times in seconds: finite, positive, within the clock's range.
        let seconds = |name: &str, s: f64| match checked_s_to_ns(s) {
            Some(ns) if s > 0.0 => Ok(ns),
            _ => Err(PyValueError::new_err(format!("{name} must be a time in seconds > 0 and below 1.8e10 (584 years), got {s}"))),
        };
        let interval_ns = seconds("interval_s", interval_s)?;
        let mut job = Job::new(pat, bs_bytes / UNIT_BYTES, qd, offset_bytes / UNIT_BYTES, span_bytes / UNIT_BYTES);
        job.duration_ns = duration_s.map(|s| seconds("duration_s", s)).transpose()?;
        job.io_units = io_bytes.map(|b| b / UNIT_BYTES);
        job.interval_ns = interval_ns;
        self.sim.check_series_length(job.duration_ns, job.interval_ns).map_err(|e| py_err(SimError::Series(format!("interval_s: {e}"))))?;
        self.sim.start_phase(job).map_err(py_err)
    }

    /// Starts a synthetic workload (fio-like: mixes, size splits, distributions, idle gaps,
    /// rate caps), run like a phase with `advance` / `phase_live` / `finish_phase`. `params`
    /// is a dict of plain values; every key is optional (defaults: fio's randwrite, bs=4k,
    /// iodepth=32 over the whole drive, one pass). Sizes in bytes (multiples of 512), times
    /// in seconds, rates per second of simulated time. Sizes or offsets that are not
    /// multiples of 4096 cost the drive a read-modify-write of each 4 KiB unit a write
    /// covers partly (a unit holding data is read first, then programmed whole; host bytes
    /// count what was asked, NAND bytes whole units); a read of part of a unit reads the
    /// unit; a TRIM deallocates only the units it covers whole.
    ///
    /// - `read_fraction`, `trim_fraction`: shares of IOs that read / TRIM (0..1; fio's
    ///   rwmixread / 100); writes are the rest.
    /// - per direction `{dir}` in read, write, trim: `{dir}_bs_bytes` (one size) or
    ///   `{dir}_bssplit` (list of (bs_bytes, weight), fio's bssplit); `{dir}_ba_bytes`
    ///   (alignment of random offsets, fio's blockalign; default the smallest size);
    ///   `{dir}_random_fraction` (0..1, fio's
    ///   percentage_random / 100; sequential IOs continue where the direction's last IO
    ///   ended); `{dir}_rate_iops` (cap, 0 = none).
    /// - `distribution`: uniform | zipf (`zipf_theta`) | pareto (`pareto_h`) | normal
    ///   (`normal_dev_pct`, % of the span) | zoned (`zones`: list of (access_pct, span_pct));
    ///   `center_fraction` (0..1) for zipf, pareto, normal, as fio's `:center`.
    /// - `random_map` (default False, fio's norandommap): True = fio's random map: the
    ///   random offsets of each direction visit every block of the span once per pass, in a
    ///   new seeded order each pass (uniform distribution only).
    /// - `random_every_ios` (fio's `rw=randread:N`): only IOs 1, N + 1, 2N + 1... may be
    ///   random, the others continue sequentially (default 0 = every IO may be).
    /// - `seq_stride_bytes` (fio's `rw=write:N`, negative backwards): a sequential IO starts
    ///   this far after the end of its direction's last IO (fio's wrap-arounds); a backward
    ///   stride steps back more than the largest block size.
    /// - `qd` (1 to 65,536); `offset_bytes`, `span_bytes` (None: to the drive's end).
    /// - ends: `duration_s`, `io_bytes`, `number_ios` (the first reached; none: one span).
    /// - `interval_s` (series interval, default 1; at least 1 µs, and at least
    ///   `duration_s` / `MAX_SERIES_INTERVALS`: a series holds at most that many intervals).
    /// - idle gaps (fio's thinktime): `thinktime_s`, after `thinktime_blocks` IOs (completed,
    ///   or issued with `thinktime_blocks_issued=True`) and/or every `thinktime_iotime_s`.
    /// - `rate_iops_total`: cap on all IOs (0 = none). `rate_poisson=True` (fio's
    ///   `rate_process=poisson`): the direction caps' IOs come with exponential gaps of mean
    ///   1 / rate, seeded like the offsets.
    /// - `buffer_compress_pct`: written data is this compressible (0..100, fio's
    ///   buffer_compress_percentage); on a profile with compression_ratio r > 1 a unit then
    ///   fills (100 − pct) % × r NAND slots (at least one); absent: the profile's ratio holds.
    /// - `name`: the job's label in `finish_phase`'s `jobs` (default "workload").
    ///
    /// Several jobs at once (fio's numjobs, or the jobs of one stonewall group):
    /// `{"jobs": [job, ...], "interval_s": S}` where each job is a dict of the keys above
    /// except `interval_s`, plus `startdelay_s` (the job starts this long after the phase;
    /// its duration, rate schedule and thinktime count from there) and `name` (default
    /// "job{i}"), and `exit_stops` (fio's exitall: the indices of the jobs that stop when
    /// this one ends; they submit nothing after its last completion). Each job keeps its own `qd` commands outstanding, with its own offsets,
    /// mix, pacing, end and random numbers; they share the drive; the phase ends when every
    /// job has ended. A thinktime gap of one job leaves the drive to the others (it idles
    /// only when no job has work). One job without a start delay runs exactly as its dict
    /// alone would.
    ///
    /// Raises ValueError naming the key at fault (`jobs[i].key` within a job);
    /// `SeriesError` for an `interval_s` too short for the duration (a series holds at most
    /// `MAX_SERIES_INTERVALS` intervals) or below 1 µs.
    fn start_workload(&mut self, params: &Bound<'_, PyDict>) -> PyResult<()> {
        self.check_space()?;
        let (jobs, interval_ns) = jobs_from_keys(&workload_keys(params)?).map_err(|e| py_err(e.into()))?;
        self.sim.start_jobs(&jobs, interval_ns).map_err(py_err)
    }

    /// Runs at most `max_ios` more commands (without holding the GIL).
    /// Returns (done, elapsed_s, fraction 0..1). Raises `DriveFullError` once the drive has
    /// run out of room, `SeriesError` once a phase that a byte or
    /// IO count ends has gone past the intervals its series may hold (it has then stopped;
    /// the message says to use a longer interval).
    fn advance(&mut self, py: Python<'_>, max_ios: u64) -> PyResult<(bool, f64, f64)> {
        if !self.sim.phase_running() || self.sim.replay_running() {
            return Err(PyValueError::new_err("advance() without a running phase (start_phase or start_workload first)"));
        }
        let sim = &mut self.sim;
        let p = py.allow_threads(|| sim.advance(max_ios));
        self.check_space()?;
        self.sim.check_series().map_err(py_err)?;
        Ok((p.done, p.elapsed_ns as f64 / NS_PER_S as f64, p.fraction))
    }

    /// Figures of the running phase over its final intervals (those no completion can land
    /// in any more), as a dict: `interval_s`, `intervals_done`, `last_iops` and `last_mbps`
    /// (of the last final interval), `min_iops` (fewest over the final intervals; these three
    /// None before the first), `zero_intervals` (final intervals with no completion),
    /// `elapsed_s` (simulated time since the phase started), `remaining_s` (simulated time
    /// to a timed phase's end; None for a phase limited by bytes). O(1).
    fn phase_live<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let l = self.sim.phase_live().ok_or_else(|| PyValueError::new_err("phase_live() without a running phase"))?;
        let s = |ns: u64| ns as f64 / NS_PER_S as f64;
        let interval_s = s(l.interval_ns);
        let d = PyDict::new(py);
        d.set_item("interval_s", interval_s)?;
        d.set_item("intervals_done", l.intervals_done)?;
        d.set_item("last_iops", l.last_ios.map(|n| n as f64 / interval_s))?;
        d.set_item("last_mbps", l.last_bytes.map(|b| b as f64 / interval_s / 1e6))?;
        d.set_item("min_iops", l.min_ios.map(|n| n as f64 / interval_s))?;
        d.set_item("zero_intervals", l.zero_intervals)?;
        d.set_item("elapsed_s", s(l.elapsed_ns))?;
        d.set_item("remaining_s", l.remaining_ns.map(s))?;
        Ok(d)
    }

    /// Takes the running phase's final intervals (those no completion can land in any more)
    /// not taken before, as a dict of the per-interval columns `finish_phase` returns
    /// (`interval_s`, `first_interval`: the index of the first, `ios`, `bytes`, the counter
    /// columns with one entry more than intervals, `latency_intervals_ns`, `directions`' `ios`,
    /// `bytes`, `latency_intervals_ns`, and `nand_bytes_per_unit`); `finish_phase` then returns only the later intervals.
    /// Taking them as the phase runs keeps the simulator's memory flat however long it runs.
    fn take_intervals<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let interval_ns = self.sim.phase_live().map(|l| l.interval_ns);
        let (Some(b), Some(interval_ns)) = (self.sim.take_final_intervals(), interval_ns) else {
            return Err(PyValueError::new_err("take_intervals() without a running phase"));
        };
        let dirs = std::array::from_fn(|i| (&b.directions[i].0[..], &b.directions[i].1[..], &b.directions[i].2[..]));
        let d = intervals_dict(py, interval_ns, b.first_interval, &b.ios, &b.bytes, &b.snapshots, &b.interval_latency, dirs)?;
        self.drive_features(&d)?;
        Ok(d)
    }

    /// Ends the phase (complete or interrupted) and returns its results as a dict:
    /// per-interval columns from interval `first_interval` on (the earlier ones were taken by
    /// `take_intervals`), each as little-endian u64 bytes (`numpy.frombuffer(b, "<u8")`;
    /// `ssdlab.targets.sim` decodes them) (`ios`, `bytes`, and counters at interval boundaries: `host_units`,
    /// `host_bytes` (host data written: less than host_units × 4096 after partial-unit
    /// writes; by the writes' completion), `nand_units`, `gc_units`, `erases` (as the dies
    /// carry them out; the last boundary, the phase's end, counts all the phase decided),
    /// `free_blocks`, `gc_die_ns` (GC die time decided), `gc_die_done_ns` (carried out by the
    /// boundary), each of length
    /// intervals + 1), `latency_ns` quantiles of the whole phase, `latency_intervals_ns`
    /// ({"p50", "p99", "p99.9", "max"}: a column per statistic [ns], one value per interval of
    /// the IOs that completed in it, 2^64 - 1 where none did), and totals (`start_counters`: the
    /// counters when the phase started, by the counter columns' names). `directions` holds the
    /// same per direction ({"read", "write", "trim"}: `ios`, `bytes` per interval (TRIM: bytes
    /// deallocated), `latency_ns`, `latency_intervals_ns`, `total_ios`, `total_bytes`);
    /// `idle_gaps` and `idle_s` the thinktime gaps and the time the host left the drive idle
    /// (summed over jobs). `jobs` lists, per job in the order given (one for a phase of one
    /// job), `name`, `directions` ({"read", "write", "trim"}: `total_ios`, `total_bytes`,
    /// `latency_ns` quantiles), `idle_gaps`, `idle_s`; their totals add up to `directions`'.
    fn finish_phase<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if !self.sim.phase_running() || self.sim.replay_running() {
            return Err(PyValueError::new_err("finish_phase() without a running phase"));
        }
        let r = self.sim.finish_phase();
        let dirs = std::array::from_fn(|i| (&r.directions[i].ios[..], &r.directions[i].bytes[..], &r.directions[i].interval_latency[..]));
        let d = intervals_dict(py, r.interval_ns, r.first_interval, &r.ios, &r.bytes, &r.snapshots, &r.interval_latency, dirs)?;
        d.set_item("start_s", r.start_ns as f64 / NS_PER_S as f64)?;
        d.set_item("duration_s", r.duration_ns as f64 / NS_PER_S as f64)?;
        d.set_item("start_counters", snapshot_dict(py, &r.start)?)?;
        self.drive_features(&d)?;
        d.set_item("latency_ns", quantiles_dict(py, &r.latency)?)?;
        let dirs = d.get_item("directions")?.expect("set by intervals_dict");
        for dir in Direction::ALL {
            let x = &r.directions[dir.index()];
            let e = dirs.get_item(dir.name())?;
            e.set_item("latency_ns", quantiles_dict(py, &x.latency)?)?;
            e.set_item("total_ios", x.total_ios)?;
            e.set_item("total_bytes", x.total_bytes)?;
        }
        let jobs = pyo3::types::PyList::empty(py);
        for j in &r.jobs {
            let e = PyDict::new(py);
            e.set_item("name", &j.name)?;
            let dirs = PyDict::new(py);
            for dir in Direction::ALL {
                let x = &j.directions[dir.index()];
                let jd = PyDict::new(py);
                jd.set_item("total_ios", x.total_ios)?;
                jd.set_item("total_bytes", x.total_bytes)?;
                jd.set_item("latency_ns", quantiles_dict(py, &x.latency)?)?;
                dirs.set_item(dir.name(), jd)?;
            }
            e.set_item("directions", dirs)?;
            e.set_item("idle_gaps", j.idle_gaps)?;
            e.set_item("idle_s", j.idle_ns as f64 / NS_PER_S as f64)?;
            jobs.append(e)?;
        }
        d.set_item("jobs", jobs)?;
        d.set_item("idle_gaps", r.idle_gaps)?;
        d.set_item("idle_s", r.idle_ns as f64 / NS_PER_S as f64)?;
        d.set_item("total_ios", r.total_ios)?;
        d.set_item("host_write_bytes", r.host_write_bytes)?;
        d.set_item("host_read_bytes", r.host_read_bytes)?;
        d.set_item("complete", r.complete)?;
        self.drive_features(&d)?;
        Ok(d)
    }

    /// Starts a trace replay: `qd` commands outstanding, IOPS averaged over every
    /// `window_commands` completions. `buffer_compress_pct`: the written data is this
    /// compressible (0..100, as start_workload's key); None: the profile's ratio holds.
    #[pyo3(signature = (qd, window_commands, buffer_compress_pct=None))]
    fn start_replay(&mut self, qd: u32, window_commands: u64, buffer_compress_pct: Option<u32>) -> PyResult<()> {
        self.check_space()?;
        self.sim.start_replay_compressed(qd, window_commands, NS_PER_S, buffer_compress_pct).map_err(py_err)
    }

    /// Issues prepared commands (see `replay_prepare`; little-endian byte buffers) without
    /// holding the GIL. Returns (completed commands, simulated seconds since replay start).
    fn replay_chunk(&mut self, py: Python<'_>, op: &[u8], offset: &[u8], length: &[u8]) -> PyResult<(u64, f64)> {
        if !self.sim.replay_running() {
            return Err(PyValueError::new_err("replay_chunk() without start_replay()"));
        }
        let cmds = chunk_commands(op, offset, length)?;
        let sim = &mut self.sim;
        let replayed = py.allow_threads(|| sim.replay(&cmds));
        self.check_space()?;
        self.sim.check_series().map_err(py_err)?;
        replayed.map_err(py_err)?;
        Ok(self.replay_done())
    }

    /// Whether this drive's replays can share their FTL work with drives of the same profile
    /// in the same state (`replay_chunk_shared`): its FTL decides by command order alone.
    #[getter]
    fn shares_replays(&self) -> bool {
        self.sim.shares_replays()
    }

    /// `replay_chunk` on this drive and on each of `followers` at once (drives of this
    /// profile in this drive's state, each replaying at its own queue depth), one FTL's work
    /// for all on a thread of its own, the drives' timing in turn on another: the figures of
    /// each drive's own replay. A follower's FTL is behind until its `catch_up(self)`, which
    /// must come before anything but further shared chunks and its `finish_replay`. Returns
    /// (completed commands, simulated seconds since replay start) per drive, this one first.
    fn replay_chunk_shared(&mut self, py: Python<'_>, mut followers: Vec<PyRefMut<'_, Simulator>>, op: &[u8], offset: &[u8], length: &[u8]) -> PyResult<Vec<(u64, f64)>> {
        let cmds = chunk_commands(op, offset, length)?;
        let sim = &mut self.sim;
        let mut sims: Vec<&mut Simulation> = followers.iter_mut().map(|f| &mut f.sim).collect();
        let replayed = py.allow_threads(|| sim.replay_shared(&mut sims, &cmds));
        // The errors in replay_chunk's order.
        self.check_space()?;
        self.sim.check_series().map_err(py_err)?;
        for f in &followers {
            f.sim.check_series().map_err(py_err)?;
        }
        replayed.map_err(py_err)?;
        Ok(std::iter::once(self.replay_done()).chain(followers.iter().map(|f| f.replay_done())).collect())
    }

    /// Ends following `leader` after shared chunks (`replay_chunk_shared`): this drive's FTL
    /// takes the leader's state (a copy of its tables: 0.05 s at 256 GB).
    fn catch_up(&mut self, py: Python<'_>, leader: PyRef<'_, Simulator>) -> PyResult<()> {
        let (sim, lead) = (&mut self.sim, &leader.sim);
        py.allow_threads(|| sim.catch_up(lead)).map_err(py_err)
    }

    /// Ends the replay (after the last completion) and returns a dict: per-window lists
    /// `commands` (cumulative), `end_s` (s from replay start), `data_bytes`, and drive
    /// counters at each window's end `host_units`, `nand_units`, `gc_units`, `erases`,
    /// `free_blocks` (each preceded by the value at replay start); totals (counts and bytes
    /// per kind), `duration_s`, `latency_ns` quantiles.
    fn finish_replay<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if !self.sim.replay_running() {
            return Err(PyValueError::new_err("finish_replay() without start_replay()"));
        }
        if self.sim.following() {
            return Err(PyValueError::new_err("finish_replay(): this drive followed another's FTL in a shared replay; catch_up(leader) first"));
        }
        let r = self.sim.finish_replay();
        let d = PyDict::new(py);
        d.set_item("start_s", r.start_ns as f64 / NS_PER_S as f64)?;
        d.set_item("duration_s", r.duration_ns as f64 / NS_PER_S as f64)?;
        d.set_item("window_commands", r.window_commands)?;
        d.set_item("commands", r.windows.iter().map(|w| w.commands).collect::<Vec<_>>())?;
        d.set_item("end_s", r.windows.iter().map(|w| w.end_ns as f64 / NS_PER_S as f64).collect::<Vec<_>>())?;
        d.set_item("data_bytes", r.windows.iter().map(|w| w.data_bytes).collect::<Vec<_>>())?;
        let snaps: Vec<ssdsim::Snapshot> = std::iter::once(r.start_snapshot).chain(r.windows.iter().map(|w| w.snapshot)).collect();
        let col = |f: fn(&ssdsim::Snapshot) -> u64| snaps.iter().map(f).collect::<Vec<u64>>();
        d.set_item("host_units", col(|s| s.host_units))?;
        d.set_item("nand_units", col(|s| s.nand_units))?;
        d.set_item("gc_units", col(|s| s.gc_units))?;
        d.set_item("erases", col(|s| s.erases))?;
        d.set_item("free_blocks", col(|s| s.free_blocks))?;
        let c = r.counts;
        for (k, v) in [("reads", c.reads), ("writes", c.writes), ("trims", c.trims), ("flushes", c.flushes), ("host_read_bytes", c.read_bytes), ("host_write_bytes", c.write_bytes), ("trim_bytes", c.trim_bytes)] {
            d.set_item(k, v)?;
        }
        let lat = PyDict::new(py);
        for (label, q) in [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0)] {
            lat.set_item(label, r.latency.quantile_ns(q))?;
        }
        d.set_item("latency_ns", lat)?;
        self.drive_features(&d)?;
        Ok(d)
    }

    /// Flexible Data Placement: per reclaim unit handle, in handle order, its cumulative
    /// counters: `host_write_bytes` (written through it), `gc_copied_bytes` (its data
    /// relocated by GC), `nand_write_bytes` (the two together), `ru_filled` (reclaim units
    /// its host writes filled), `ru_reclaimed` (reclaim units of its data only that were
    /// erased). Empty without FDP.
    fn fdp_handles<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        let out = pyo3::types::PyList::empty(py);
        for h in self.sim.handle_counters() {
            let d = PyDict::new(py);
            d.set_item("host_write_bytes", h.host_units * UNIT_BYTES)?;
            d.set_item("gc_copied_bytes", h.gc_units * UNIT_BYTES)?;
            d.set_item("nand_write_bytes", h.nand_units() * UNIT_BYTES)?;
            d.set_item("ru_filled", h.ru_filled)?;
            d.set_item("ru_reclaimed", h.ru_reclaimed)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Cumulative counters now: host/nand/gc units (host writes completed, NAND work the dies
    /// have carried out by now; all that was decided, right after a phase), bytes unmapped by TRIM (`trimmed_bytes`:
    /// only units that were mapped), erases, `spilled_blocks` (blocks GC moved to another
    /// plane: theirs held more than its share of data and could free nothing), free blocks, `gc_die_s` (die time of GC the dies
    /// have carried out by now, summed over dies), erase-count spread; with a
    /// pseudo-SLC cache `slc_cache_bytes` (held now), `slc_capacity_bytes` (its size now),
    /// `slc_written_bytes` (host data written into it), `fold_bytes` (folded into the native
    /// mode, part of nand_write_bytes) and `fold_die_s` (die time spent folding); with a
    /// map cache (DRAM-less) `map_cache_hits`, `map_cache_misses` and `map_write_bytes` (map
    /// pages written back, part of nand_write_bytes).
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.sim.snapshot();
        let d = PyDict::new(py);
        d.set_item("host_write_bytes", s.host_bytes)?;
        d.set_item("rmw_reads", self.sim.timing_counters().rmw_reads)?;
        d.set_item("nand_write_bytes", (s.nand_units as f64 * self.sim.geometry().nand_bytes_per_unit) as u64)?;
        d.set_item("gc_copied_bytes", s.gc_units * UNIT_BYTES)?;
    // Only units that were mapped count: a TRIM of the whole span measures what is mapped.
    d.set_item("trimmed_bytes", self.sim.ftl_counters().trimmed_units * UNIT_BYTES)?;
        d.set_item("erases", s.erases)?;
        d.set_item("spilled_blocks", self.sim.ftl_counters().spilled_blocks)?;
        d.set_item("free_blocks", s.free_blocks)?;
        d.set_item("gc_die_s", s.gc_die_done_ns as f64 / NS_PER_S as f64)?;
        if let Some(c) = self.sim.device().slc() {
            let free = self.sim.geometry().user_units.saturating_sub(self.sim.device().ftl().mapped_units());
            d.set_item("slc_cache_bytes", c.used_units() * UNIT_BYTES)?;
            d.set_item("slc_capacity_bytes", c.capacity_units(free) * UNIT_BYTES)?;
            d.set_item("slc_written_bytes", c.slc_written_units() * UNIT_BYTES)?;
            d.set_item("fold_bytes", s.fold_units * UNIT_BYTES)?;
            d.set_item("fold_die_s", self.sim.timing_counters().fold_die_ns as f64 / NS_PER_S as f64)?;
        }
        if let Some(m) = self.sim.device().map_cache() {
            d.set_item("map_cache_hits", m.hits)?;
            d.set_item("map_cache_misses", m.misses)?;
            d.set_item("map_write_bytes", m.writeback_units * UNIT_BYTES)?;
        }
        let (mut lo, mut hi, mut sum, mut n) = (u32::MAX, 0u32, 0u64, 0u64);
        for e in self.sim.device().ftl().erase_counts() {
            lo = lo.min(e);
            hi = hi.max(e);
            sum += e as u64;
            n += 1;
        }
        d.set_item("erase_count_min", lo)?;
        d.set_item("erase_count_max", hi)?;
        d.set_item("erase_count_mean", sum as f64 / n.max(1) as f64)?;
        d.set_item("state_bytes", self.sim.device().state_bytes())?;
        Ok(d)
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(config::profile_keys, m)?)?;
    m.add_function(wrap_pyfunction!(config::profile_key_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(config::resolve_profile, m)?)?;
    m.add_function(wrap_pyfunction!(config::check_value, m)?)?;
    m.add_function(wrap_pyfunction!(config::parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(replay::replay_prepare, m)?)?;
    m.add_class::<Simulator>()?;
    errors::register(m)?;
    m.add("UNIT_BYTES", UNIT_BYTES)?;
    // Most intervals a phase's series may hold: a timed phase of more is refused.
    m.add("MAX_SERIES_INTERVALS", ssdsim::MAX_SERIES_INTERVALS)?;
    trace::register(m)?;
    columns::register(m)?;
    emulate::register(m)?;
    Ok(())
}

/// A prepared chunk's commands (`replay_prepare`'s little-endian buffers: op codes, byte
/// offsets and lengths, 8 bytes each), decoded in one pass.
fn chunk_commands(op: &[u8], offset: &[u8], length: &[u8]) -> PyResult<Vec<Command>> {
    if offset.len() != op.len() * 8 || length.len() != op.len() * 8 {
        return Err(PyValueError::new_err(format!(
            "chunk arrays differ in length: {} ops, {} offset bytes, {} length bytes (8 per command)",
            op.len(),
            offset.len(),
            length.len()
        )));
    }
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8-byte chunks"));
    let mut cmds = Vec::with_capacity(op.len());
    for (i, ((&code, o), l)) in op.iter().zip(offset.chunks_exact(8)).zip(length.chunks_exact(8)).enumerate() {
        let (off, len) = (word(o), word(l));
        let kind = CmdKind::from_code(code).ok_or_else(|| PyValueError::new_err(format!("command {i}: unknown op code {code}")))?;
        if (off | len) % UNIT_BYTES != 0 {
            return Err(PyValueError::new_err(format!("command {i}: offset {off} / length {len} not 4 KiB aligned; prepare the chunk with replay_prepare")));
        }
        cmds.push(Command { kind, unit: off / UNIT_BYTES, units: len / UNIT_BYTES });
    }
    Ok(cmds)
}
