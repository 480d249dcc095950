//! `ssdlab._native` trace functions: thin PyO3 wrappers over the `ssdtrace` crate (type
//! conversion and error mapping only). Units as in the crate: bytes and ns.
//!
//! * `trace_formats()`, `trace_detect(path)`: format names and descriptions, detection.
//! * `trace_open(path, ...) -> TraceFile`: `read_chunk(n)` returns up to n records as four
//!   `bytes` objects (little-endian u64 `time_ns`, u8 `op`, u64 `offset_bytes`, u64
//!   `len_bytes`) for `numpy.frombuffer`, never one Python object per record.
//! * `trace_info`, `trace_convert`, `trace_generate`: dicts of statistics.
//!
//! Malformed traces raise `TraceFormatError(message, file, line)` (a `ValueError`); bad
//! option values raise `ValueError` naming the option.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use ssdtrace::formats::ReadStats;
use ssdtrace::{convert, open_path, writer, BlkEvent, Format, GenParams, GenSummary, Generator, Info, Op, OutFormat, ReadOptions, RecordWriter, Skew, TimeUnit, TraceError, TraceReader};

create_exception!(_native, TraceFormatError, PyValueError, "A malformed or unreadable trace; args = (message, file, line).");

fn trace_err(e: TraceError) -> PyErr {
    TraceFormatError::new_err((e.to_string(), e.file, e.line))
}

fn parse_format(name: Option<&str>) -> PyResult<Option<Format>> {
    name.map(|n| {
        Format::from_name(n).ok_or_else(|| {
            let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
            PyValueError::new_err(format!("format {n:?}: unknown; use one of {}", names.join(", ")))
        })
    })
    .transpose()
}

fn read_options(events: Option<&str>, time_unit: Option<&str>, skip_bad: bool, device: Option<u64>) -> PyResult<ReadOptions> {
    let events = events
        .map(|e| BlkEvent::from_name(e).ok_or_else(|| PyValueError::new_err(format!("events {e:?}: use queue or dispatch"))))
        .transpose()?;
    let time_unit = time_unit
        .map(|u| TimeUnit::from_name(u).ok_or_else(|| PyValueError::new_err(format!("time unit {u:?}: use ns, us, ms or s"))))
        .transpose()?;
    Ok(ReadOptions { events, time_unit, skip_bad, device })
}

fn out_format(name: &str) -> PyResult<OutFormat> {
    OutFormat::from_name(name).ok_or_else(|| PyValueError::new_err(format!("output format {name:?}: use fio or bin")))
}

/// Every format: list of (name, description with units).
#[pyfunction]
fn trace_formats() -> Vec<(&'static str, &'static str)> {
    Format::ALL.iter().map(|f| (f.name(), f.description())).collect()
}

/// The format of the trace at `path`, detected from its content.
#[pyfunction]
fn trace_detect(path: &str) -> PyResult<&'static str> {
    ssdtrace::detect(Path::new(path)).map(|f| f.name()).map_err(trace_err)
}

fn stats_dict<'py>(py: Python<'py>, s: &ReadStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("lines", s.lines)?;
    d.set_item("ignored_lines", s.ignored_lines)?;
    d.set_item("skipped_bad", s.skipped_bad)?;
    d.set_item("first_bad", s.first_bad.as_ref().map(|e| e.to_string()))?;
    Ok(d)
}

fn info_dict<'py>(py: Python<'py>, format: Format, i: &Info) -> PyResult<Bound<'py, PyDict>> {
    let d = stats_dict(py, &i.read_stats)?;
    d.set_item("format", format.name())?;
    d.set_item("records", i.records)?;
    let ops = PyDict::new(py);
    for op in Op::ALL {
        let s = i.op(op);
        let o = PyDict::new(py);
        o.set_item("count", s.count)?;
        o.set_item("bytes", s.bytes)?;
        // (upper bound of the bucket in bytes, count) for non-empty buckets
        let hist: Vec<(u128, u64)> = s.size_hist.iter().enumerate().filter(|(_, &c)| c > 0).map(|(k, &c)| (1u128 << k, c)).collect();
        o.set_item("size_hist", hist)?;
        o.set_item("max_end_bytes", s.max_end_bytes)?;
        ops.set_item(op.name(), o)?;
    }
    d.set_item("ops", ops)?;
    d.set_item("min_offset_bytes", i.min_offset_bytes)?;
    d.set_item("max_end_bytes", i.max_end_bytes)?;
    d.set_item("span_bytes", i.span_bytes())?;
    d.set_item("first_time_ns", i.first_time_ns)?;
    d.set_item("last_time_ns", i.last_time_ns)?;
    d.set_item("min_time_ns", if i.records > 0 { Some(i.min_time_ns) } else { None })?;
    d.set_item("max_time_ns", i.max_time_ns)?;
    d.set_item("duration_ns", i.duration_ns())?;
    d.set_item("time_regressions", i.time_regressions)?;
    d.set_item("sequential_writes", i.sequential_writes)?;
    d.set_item("sequential_write_bytes", i.sequential_write_bytes)?;
    Ok(d)
}

/// An open trace; read it in chunks with `read_chunk`.
#[pyclass(module = "ssdlab._native")]
struct TraceFile {
    // A Mutex only to make the class Sync for PyO3; `&mut self` methods use `get_mut`.
    reader: std::sync::Mutex<Box<dyn TraceReader + Send>>,
    format: Format,
    done: bool,
}

#[pymethods]
impl TraceFile {
    /// The format name.
    #[getter]
    fn format(&self) -> &'static str {
        self.format.name()
    }

    /// Up to `max_records` next records as (time_ns, op, offset_bytes, len_bytes) bytes:
    /// little-endian u64, u8 (0 read, 1 write, 2 trim, 3 flush), u64, u64. None at the end.
    fn read_chunk<'py>(&mut self, py: Python<'py>, max_records: usize) -> PyResult<Option<Bound<'py, pyo3::types::PyTuple>>> {
        if self.done || max_records == 0 {
            return Ok(None);
        }
        let reader = self.reader.get_mut().unwrap_or_else(|p| p.into_inner());
        let res = py.allow_threads(|| {
            // Room for the records a chunk usually holds; a larger one grows as records come.
            let n = max_records.min(1 << 20);
            let mut t = Vec::with_capacity(n * 8);
            let mut o = Vec::with_capacity(n);
            let mut off = Vec::with_capacity(n * 8);
            let mut len = Vec::with_capacity(n * 8);
            for _ in 0..max_records {
                match reader.next() {
                    Some(Ok(r)) => {
                        t.extend_from_slice(&r.time_ns.to_le_bytes());
                        o.push(r.op.code());
                        off.extend_from_slice(&r.offset_bytes.to_le_bytes());
                        len.extend_from_slice(&r.len_bytes.to_le_bytes());
                    }
                    Some(Err(e)) => return Err(e),
                    None => break,
                }
            }
            Ok((t, o, off, len))
        });
        let (t, o, off, len) = res.map_err(trace_err)?;
        if o.is_empty() {
            self.done = true;
            return Ok(None);
        }
        let tup = pyo3::types::PyTuple::new(py, [PyBytes::new(py, &t), PyBytes::new(py, &o), PyBytes::new(py, &off), PyBytes::new(py, &len)])?;
        Ok(Some(tup))
    }

    /// Line counters so far: lines, ignored_lines, skipped_bad, first_bad (message or None).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.reader.lock().unwrap_or_else(|p| p.into_inner()).stats();
        stats_dict(py, &stats)
    }
}

/// Opens a trace. format: a name from trace_formats() or None to detect it.
#[pyfunction]
#[pyo3(signature = (path, format=None, events=None, time_unit=None, skip_bad=false, device=None))]
fn trace_open(path: &str, format: Option<&str>, events: Option<&str>, time_unit: Option<&str>, skip_bad: bool, device: Option<u64>) -> PyResult<TraceFile> {
    let opts = read_options(events, time_unit, skip_bad, device)?;
    let (format, reader) = open_path(Path::new(path), parse_format(format)?, &opts).map_err(trace_err)?;
    Ok(TraceFile { reader: std::sync::Mutex::new(reader), format, done: false })
}

/// The generator as a reader: records straight from memory, never a file.
struct GenReader(Generator);

impl Iterator for GenReader {
    type Item = Result<ssdtrace::Record, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(Ok)
    }
}

impl TraceReader for GenReader {
    fn stats(&self) -> ReadStats {
        ReadStats { lines: self.0.summary().writes + self.0.summary().trims + self.0.summary().flushes, ..Default::default() }
    }
}

/// A JEDEC-client-like trace generated on the fly (parameters as `trace_generate`), read
/// with `read_chunk` like a file (format "generated").
#[pyfunction]
#[pyo3(signature = (capacity_bytes, write_bytes, seed=1, random_fraction=0.75, trim_fraction=0.13, flush_every_writes=32.0, align_bytes=4096, skew="uniform"))]
#[allow(clippy::too_many_arguments)]
fn trace_generate_open(capacity_bytes: u64, write_bytes: u64, seed: u64, random_fraction: f64, trim_fraction: f64, flush_every_writes: f64, align_bytes: u64, skew: &str) -> PyResult<TraceFile> {
    let skew = Skew::from_name(skew).ok_or_else(|| PyValueError::new_err(format!("skew {skew:?}: use uniform or jedec")))?;
    let p = GenParams { capacity_bytes, write_bytes, seed, random_fraction, trim_fraction, flush_every_writes, align_bytes, skew, interarrival_ns: 0 };
    let gen = Generator::new(p).map_err(PyValueError::new_err)?;
    Ok(TraceFile { reader: std::sync::Mutex::new(Box::new(GenReader(gen))), format: Format::Bin, done: false })
}

/// Statistics of a whole trace (one streaming pass) as a dict.
#[pyfunction]
#[pyo3(signature = (path, format=None, events=None, time_unit=None, skip_bad=false, device=None))]
fn trace_info<'py>(py: Python<'py>, path: &str, format: Option<&str>, events: Option<&str>, time_unit: Option<&str>, skip_bad: bool, device: Option<u64>) -> PyResult<Bound<'py, PyDict>> {
    let opts = read_options(events, time_unit, skip_bad, device)?;
    let format = parse_format(format)?;
    let (format, info) = py
        .allow_threads(|| {
            let (f, mut r) = open_path(Path::new(path), format, &opts)?;
            Ok::<_, TraceError>((f, Info::from_reader(&mut *r)?))
        })
        .map_err(trace_err)?;
    info_dict(py, format, &info)
}

fn create_out(out: &str) -> Result<BufWriter<File>, TraceError> {
    File::create(out).map(|f| BufWriter::with_capacity(1 << 20, f)).map_err(|e| TraceError::file(out, format!("cannot create: {e}")))
}

fn same_file(a: &str, b: &str) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Converts a trace to fio iolog v3 (`to="fio"`) or the ssdlab binary format (`to="bin"`);
/// returns the statistics of what was read. A failed conversion removes `out`.
#[pyfunction]
#[pyo3(signature = (path, out, to, format=None, events=None, time_unit=None, skip_bad=false, device=None, fio_filename="/dev/null"))]
#[allow(clippy::too_many_arguments)]
fn trace_convert<'py>(
    py: Python<'py>,
    path: &str,
    out: &str,
    to: &str,
    format: Option<&str>,
    events: Option<&str>,
    time_unit: Option<&str>,
    skip_bad: bool,
    device: Option<u64>,
    fio_filename: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = read_options(events, time_unit, skip_bad, device)?;
    let format = parse_format(format)?;
    let to = out_format(to)?;
    if same_file(path, out) {
        return Err(PyValueError::new_err(format!("output {out} is the input trace; choose another file")));
    }
    let res = py.allow_threads(|| {
        let (f, mut r) = open_path(Path::new(path), format, &opts)?;
        let w = create_out(out)?;
        let mut w = writer(w, to, fio_filename).map_err(|e| TraceError::file(out, e.to_string()))?;
        Ok::<_, TraceError>((f, convert(&mut *r, &mut *w, out)?))
    });
    match res {
        Ok((f, info)) => info_dict(py, f, &info),
        Err(e) => {
            let _ = std::fs::remove_file(out);
            Err(trace_err(e))
        }
    }
}

fn summary_dict<'py>(py: Python<'py>, s: &GenSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("span_bytes", s.span_bytes)?;
    d.set_item("writes", s.writes)?;
    d.set_item("write_bytes", s.write_bytes)?;
    d.set_item("random_writes", s.random_writes)?;
    d.set_item("random_write_bytes", s.random_write_bytes)?;
    d.set_item("sequential_writes", s.sequential_writes)?;
    d.set_item("sequential_write_bytes", s.sequential_write_bytes)?;
    d.set_item("sequential_runs", s.sequential_runs)?;
    d.set_item("trims", s.trims)?;
    d.set_item("trim_bytes", s.trim_bytes)?;
    d.set_item("flushes", s.flushes)?;
    Ok(d)
}

/// Writes a JEDEC-client-like trace (see ssdtrace::generate) to `out` as fio iolog v3 or
/// binary; returns what was generated.
#[pyfunction]
#[pyo3(signature = (out, to, capacity_bytes, write_bytes, seed=1, random_fraction=0.75, trim_fraction=0.13, flush_every_writes=32.0, align_bytes=4096, skew="uniform", interarrival_ns=0, fio_filename="/dev/null"))]
#[allow(clippy::too_many_arguments)]
fn trace_generate<'py>(
    py: Python<'py>,
    out: &str,
    to: &str,
    capacity_bytes: u64,
    write_bytes: u64,
    seed: u64,
    random_fraction: f64,
    trim_fraction: f64,
    flush_every_writes: f64,
    align_bytes: u64,
    skew: &str,
    interarrival_ns: u64,
    fio_filename: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let to = out_format(to)?;
    let skew = Skew::from_name(skew).ok_or_else(|| PyValueError::new_err(format!("skew {skew:?}: use uniform or jedec")))?;
    let p = GenParams { capacity_bytes, write_bytes, seed, random_fraction, trim_fraction, flush_every_writes, align_bytes, skew, interarrival_ns };
    let mut gen = Generator::new(p).map_err(PyValueError::new_err)?;
    let res = py.allow_threads(|| {
        let w = create_out(out)?;
        let werr = |e: std::io::Error| TraceError::file(out, format!("cannot write: {e}"));
        let mut w: Box<dyn RecordWriter> = writer(w, to, fio_filename).map_err(werr)?;
        for r in gen.by_ref() {
            w.write(&r).map_err(werr)?;
        }
        w.finish().map_err(werr)
    });
    if let Err(e) = res {
        let _ = std::fs::remove_file(out);
        return Err(trace_err(e));
    }
    summary_dict(py, gen.summary())
}

/// Adds the trace functions, `TraceFile` and `TraceFormatError` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trace_formats, m)?)?;
    m.add_function(wrap_pyfunction!(trace_detect, m)?)?;
    m.add_function(wrap_pyfunction!(trace_open, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(trace_convert, m)?)?;
    m.add_function(wrap_pyfunction!(trace_generate, m)?)?;
    m.add_function(wrap_pyfunction!(trace_generate_open, m)?)?;
    m.add_class::<TraceFile>()?;
    m.add("TraceFormatError", m.py().get_type::<TraceFormatError>())?;
    Ok(())
}
