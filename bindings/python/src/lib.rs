//! `ssdlab._native`: thin PyO3 bindings over the `ssdsim` crate. Only type conversion and
//! error mapping live here; behaviour lives in `ssdsim`.
//!
//! Python sees seconds and bytes (floats/ints); the simulator works in ns and 4 KiB units.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

mod trace;
use ssdsim::stats::IntervalLatency;
use ssdsim::time::{s_to_ns, NS_PER_S};
use ssdsim::{CmdKind, Command, Config, ConfigError, Job, Mapper, Pattern, Remap, Simulation, Value, KEYS, UNIT_BYTES};

create_exception!(_native, ProfileError, PyValueError, "A bad profile key or value; args = (message, key).");

fn profile_err(e: ConfigError) -> PyErr {
    ProfileError::new_err((e.to_string(), e.key))
}

fn le_u64s(name: &str, b: &[u8]) -> PyResult<Vec<u64>> {
    if b.len() % 8 != 0 {
        return Err(PyValueError::new_err(format!("{name}: {} bytes is not a whole number of little-endian u64", b.len())));
    }
    Ok(b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect())
}

/// Decodes a command chunk (op u8, offset u64, len u64 as little-endian bytes).
fn chunk_arrays(op: &[u8], off: &[u8], len: &[u8]) -> PyResult<(Vec<u64>, Vec<u64>)> {
    let (off, len) = (le_u64s("offset_bytes", off)?, le_u64s("len_bytes", len)?);
    if off.len() != op.len() || len.len() != op.len() {
        return Err(PyValueError::new_err(format!("chunk arrays differ in length: {} ops, {} offsets, {} lengths", op.len(), off.len(), len.len())));
    }
    Ok((off, len))
}

/// Maps trace records onto a target span for replay (see `ssdsim::replay::Mapper`): 4 KiB
/// alignment, reads/TRIMs dropped unless kept, remap = error | wrap | scale. Takes and returns
/// (op u8, offset_bytes u64, len_bytes u64) little-endian byte buffers; also returns how many
/// records were dropped. A record that cannot be mapped raises ValueError("record N: ...")
/// with N counted from `first_record`.
#[pyfunction]
#[pyo3(signature = (op, offset, length, span_offset_bytes, span_bytes, remap="error", trace_span_bytes=0, keep_reads=false, keep_trims=true, first_record=0))]
#[allow(clippy::too_many_arguments)]
fn replay_prepare<'py>(
    py: Python<'py>,
    op: &[u8],
    offset: &[u8],
    length: &[u8],
    span_offset_bytes: u64,
    span_bytes: u64,
    remap: &str,
    trace_span_bytes: u64,
    keep_reads: bool,
    keep_trims: bool,
    first_record: u64,
) -> PyResult<(Bound<'py, pyo3::types::PyBytes>, Bound<'py, pyo3::types::PyBytes>, Bound<'py, pyo3::types::PyBytes>, u64)> {
    use pyo3::types::PyBytes;
    let remap = Remap::from_name(remap).ok_or_else(|| PyValueError::new_err(format!("remap {remap:?}: use error, wrap or scale")))?;
    if span_offset_bytes % UNIT_BYTES != 0 || span_bytes % UNIT_BYTES != 0 || span_bytes == 0 {
        return Err(PyValueError::new_err(format!("span offset {span_offset_bytes} and span {span_bytes} must be positive multiples of {UNIT_BYTES} bytes")));
    }
    let (off, len) = chunk_arrays(op, offset, length)?;
    let m = Mapper { span_start_unit: span_offset_bytes / UNIT_BYTES, span_units: span_bytes / UNIT_BYTES, remap, trace_span_bytes, keep_reads, keep_trims };
    let (mut o, mut f, mut l) = (Vec::with_capacity(op.len()), Vec::with_capacity(op.len() * 8), Vec::with_capacity(op.len() * 8));
    let mut dropped = 0u64;
    for i in 0..op.len() {
        match m.map(op[i], off[i], len[i]) {
            Ok(Some(c)) => {
                o.push(c.kind.code());
                f.extend_from_slice(&(c.unit * UNIT_BYTES).to_le_bytes());
                l.extend_from_slice(&(c.units * UNIT_BYTES).to_le_bytes());
            }
            Ok(None) => dropped += 1,
            Err(e) => return Err(PyValueError::new_err(format!("record {}: {}", first_record + i as u64, e.0))),
        }
    }
    Ok((PyBytes::new(py, &o), PyBytes::new(py, &f), PyBytes::new(py, &l), dropped))
}

fn value_to_py(py: Python<'_>, v: &Value) -> PyResult<PyObject> {
    Ok(match v {
        Value::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Value::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        Value::Str(s) => s.into_pyobject(py)?.into_any().unbind(),
    })
}

fn build_config(pairs: Vec<(String, String)>) -> PyResult<Config> {
    let mut cfg = Config::default();
    for (k, v) in pairs {
        cfg.set(&k, &v).map_err(profile_err)?;
    }
    Ok(cfg)
}

/// Every profile key: list of (name, kind, doc).
#[pyfunction]
fn profile_keys() -> Vec<(&'static str, &'static str, &'static str)> {
    KEYS.iter().map(|k| (k.name, k.kind, k.doc)).collect()
}

/// Checks that `key` exists and `text` parses as its value (no whole-profile validation).
#[pyfunction]
fn check_value(key: &str, text: &str) -> PyResult<()> {
    Config::default().set(key, text).map_err(profile_err)
}

/// Applies (key, text) pairs over the built-in defaults, validates, and returns
/// (resolved profile dict, derived geometry dict). Raises ProfileError naming the key.
#[pyfunction]
fn resolve_profile<'py>(py: Python<'py>, pairs: Vec<(String, String)>) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let cfg = build_config(pairs)?;
    cfg.validate().map_err(profile_err)?;
    Ok((profile_dict(py, &cfg)?, geometry_dict(py, &cfg)?))
}

fn profile_dict<'py>(py: Python<'py>, cfg: &Config) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in cfg.to_pairs() {
        d.set_item(k, value_to_py(py, &v)?)?;
    }
    Ok(d)
}

fn geometry_dict<'py>(py: Python<'py>, cfg: &Config) -> PyResult<Bound<'py, PyDict>> {
    let g = cfg.validate().map_err(profile_err)?;
    let d = PyDict::new(py);
    d.set_item("dies", g.dies)?;
    d.set_item("planes", g.pools)?;
    d.set_item("blocks", g.blocks)?;
    d.set_item("units_per_page", g.units_per_page)?;
    d.set_item("units_per_block", g.slots_per_block)?;
    d.set_item("physical_bytes", (g.physical_units as f64 * g.nand_bytes_per_unit) as u64)?;
    d.set_item("nand_bytes_per_unit", g.nand_bytes_per_unit)?;
    d.set_item("user_bytes", g.user_units * UNIT_BYTES)?;
    d.set_item("spare_fraction", 1.0 - g.user_units as f64 * UNIT_BYTES as f64 / (g.physical_units as f64 * g.nand_bytes_per_unit))?;
    d.set_item("alpha", g.alpha())?;
    d.set_item("write_buffer_units", g.buffer_units)?;
    Ok(d)
}

/// A simulated drive with a closed-loop host. Run phases with start_phase / advance /
/// finish_phase; all times in seconds, sizes in bytes (multiples of 4096).
#[pyclass(module = "ssdlab._native")]
struct Simulator {
    sim: Simulation,
    cfg: Config,
}

#[pymethods]
impl Simulator {
    #[new]
    #[pyo3(signature = (pairs, seed))]
    fn new(pairs: Vec<(String, String)>, seed: u64) -> PyResult<Self> {
        let cfg = build_config(pairs)?;
        let sim = Simulation::new(&cfg, seed).map_err(profile_err)?;
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

    /// Simulated time now [s].
    #[getter]
    fn now_s(&self) -> f64 {
        self.sim.now_ns() as f64 / NS_PER_S as f64
    }

    /// Lets `seconds` pass with no host I/O; idle-time GC may run. Returns the number of
    /// blocks idle GC collected.
    fn idle(&mut self, seconds: f64) -> PyResult<u64> {
        if !(seconds >= 0.0) {
            return Err(PyValueError::new_err(format!("idle time must be >= 0 s, got {seconds}")));
        }
        Ok(self.sim.idle(s_to_ns(seconds)))
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
        let pat = Pattern::parse(pattern)
            .ok_or_else(|| PyValueError::new_err(format!("unknown pattern {pattern:?}: expected write, randwrite, read, randread or trim")))?;
        for (name, v) in [("bs_bytes", bs_bytes), ("offset_bytes", offset_bytes), ("span_bytes", span_bytes), ("io_bytes", io_bytes.unwrap_or(0))] {
            if v % UNIT_BYTES != 0 {
                return Err(PyValueError::new_err(format!("{name}={v} is not a multiple of {UNIT_BYTES} bytes")));
            }
        }
        if !(interval_s > 0.0) {
            return Err(PyValueError::new_err(format!("interval_s must be > 0, got {interval_s}")));
        }
        let mut job = Job::new(pat, bs_bytes / UNIT_BYTES, qd, offset_bytes / UNIT_BYTES, span_bytes / UNIT_BYTES);
        job.duration_ns = duration_s.map(s_to_ns);
        job.io_units = io_bytes.map(|b| b / UNIT_BYTES);
        job.interval_ns = s_to_ns(interval_s);
        self.sim.start_phase(job).map_err(PyValueError::new_err)
    }

    /// Runs at most `max_ios` more commands (without holding the GIL).
    /// Returns (done, elapsed_s, fraction 0..1).
    fn advance(&mut self, py: Python<'_>, max_ios: u64) -> (bool, f64, f64) {
        let sim = &mut self.sim;
        let p = py.allow_threads(|| sim.advance(max_ios));
        (p.done, p.elapsed_ns as f64 / NS_PER_S as f64, p.fraction)
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

    /// Ends the phase (complete or interrupted) and returns its results as a dict:
    /// per-interval lists (`ios`, `bytes`, and counters at interval boundaries: `host_units`,
    /// `nand_units`, `gc_units`, `erases`, `free_blocks`, `gc_die_ns`, each of length
    /// intervals + 1), `latency_ns` quantiles of the whole phase, `latency_intervals_ns`
    /// ({"p50", "p99", "p99.9", "max"}: a list per statistic, one value per interval of the
    /// IOs that completed in it, None where none did), and totals.
    fn finish_phase<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.sim.finish_phase();
        let d = PyDict::new(py);
        d.set_item("start_s", r.start_ns as f64 / NS_PER_S as f64)?;
        d.set_item("duration_s", r.duration_ns as f64 / NS_PER_S as f64)?;
        d.set_item("interval_s", r.interval_ns as f64 / NS_PER_S as f64)?;
        d.set_item("ios", r.ios.clone())?;
        d.set_item("bytes", r.bytes.clone())?;
        let col = |f: fn(&ssdsim::Snapshot) -> u64| r.snapshots.iter().map(f).collect::<Vec<u64>>();
        d.set_item("host_units", col(|s| s.host_units))?;
        d.set_item("nand_units", col(|s| s.nand_units))?;
        d.set_item("gc_units", col(|s| s.gc_units))?;
        d.set_item("erases", col(|s| s.erases))?;
        d.set_item("free_blocks", col(|s| s.free_blocks))?;
        d.set_item("gc_die_ns", col(|s| s.gc_die_ns))?;
        let lat = PyDict::new(py);
        for (label, q) in [("p1", 0.01), ("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999), ("max", 1.0)] {
            lat.set_item(label, r.latency.quantile_ns(q))?;
        }
        d.set_item("latency_ns", lat)?;
        let per = PyDict::new(py);
        let stats: [(&str, fn(&IntervalLatency) -> u64); 4] =
            [("p50", |l| l.p50_ns), ("p99", |l| l.p99_ns), ("p99.9", |l| l.p999_ns), ("max", |l| l.max_ns)];
        for (label, f) in stats {
            per.set_item(label, r.interval_latency.iter().map(|l| l.as_ref().map(f)).collect::<Vec<Option<u64>>>())?;
        }
        d.set_item("latency_intervals_ns", per)?;
        d.set_item("total_ios", r.total_ios)?;
        d.set_item("host_write_bytes", r.host_write_bytes)?;
        d.set_item("host_read_bytes", r.host_read_bytes)?;
        d.set_item("complete", r.complete)?;
        d.set_item("nand_bytes_per_unit", self.sim.geometry().nand_bytes_per_unit)?;
        Ok(d)
    }

    /// Starts a trace replay: `qd` commands outstanding, IOPS averaged over every
    /// `window_commands` completions.
    fn start_replay(&mut self, qd: u32, window_commands: u64) -> PyResult<()> {
        self.sim.start_replay(qd, window_commands).map_err(PyValueError::new_err)
    }

    /// Issues prepared commands (see `replay_prepare`; little-endian byte buffers) without
    /// holding the GIL. Returns (completed commands, simulated seconds since replay start).
    fn replay_chunk(&mut self, py: Python<'_>, op: &[u8], offset: &[u8], length: &[u8]) -> PyResult<(u64, f64)> {
        let (off, len) = chunk_arrays(op, offset, length)?;
        let mut cmds = Vec::with_capacity(op.len());
        for i in 0..op.len() {
            let kind = CmdKind::from_code(op[i]).ok_or_else(|| PyValueError::new_err(format!("command {i}: unknown op code {}", op[i])))?;
            if off[i] % UNIT_BYTES != 0 || len[i] % UNIT_BYTES != 0 {
                return Err(PyValueError::new_err(format!("command {i}: offset {} / length {} not 4 KiB aligned; prepare the chunk with replay_prepare", off[i], len[i])));
            }
            cmds.push(Command { kind, unit: off[i] / UNIT_BYTES, units: len[i] / UNIT_BYTES });
        }
        let sim = &mut self.sim;
        py.allow_threads(|| sim.replay(&cmds)).map_err(PyValueError::new_err)?;
        let (done, elapsed) = self.sim.replay_progress();
        Ok((done, elapsed as f64 / NS_PER_S as f64))
    }

    /// Ends the replay (after the last completion) and returns a dict: per-window lists
    /// `commands` (cumulative), `end_s` (s from replay start), `data_bytes`, and drive
    /// counters at each window's end `host_units`, `nand_units`, `gc_units`, `erases`,
    /// `free_blocks` (each preceded by the value at replay start); totals (counts and bytes
    /// per kind), `duration_s`, `latency_ns` quantiles.
    fn finish_replay<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
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
        d.set_item("nand_bytes_per_unit", self.sim.geometry().nand_bytes_per_unit)?;
        Ok(d)
    }

    /// Cumulative counters now: host/nand/gc units, erases, free blocks, erase-count spread.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.sim.snapshot();
        let d = PyDict::new(py);
        d.set_item("host_write_bytes", s.host_units * UNIT_BYTES)?;
        d.set_item("nand_write_bytes", (s.nand_units as f64 * self.sim.geometry().nand_bytes_per_unit) as u64)?;
        d.set_item("gc_copied_bytes", s.gc_units * UNIT_BYTES)?;
        d.set_item("erases", s.erases)?;
        d.set_item("free_blocks", s.free_blocks)?;
        d.set_item("gc_die_s", s.gc_die_ns as f64 / NS_PER_S as f64)?;
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
    m.add_function(wrap_pyfunction!(profile_keys, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_profile, m)?)?;
    m.add_function(wrap_pyfunction!(check_value, m)?)?;
    m.add_function(wrap_pyfunction!(replay_prepare, m)?)?;
    m.add_class::<Simulator>()?;
    m.add("ProfileError", m.py().get_type::<ProfileError>())?;
    m.add("UNIT_BYTES", UNIT_BYTES)?;
    trace::register(m)?;
    Ok(())
}
