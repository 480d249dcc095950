//! `ssdlab._native.Emulator`: a simulated drive served as a FUSE file (`ssdemu`), for
//! `ssdlab emulate`. Its threads never take the GIL; the calls that wait (mount, unmount)
//! release it.

use std::path::PathBuf;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use ssdemu::{DataMode, Emulator as Server};
use ssdsim::Simulation;

use crate::build_config;
use crate::errors::py_err;

/// A simulated drive (profile `pairs`, `seed`) as the file `image_path` of a FUSE filesystem
/// mounted at `mountpoint` (an empty directory), served on `threads` threads until `stop()`.
/// `data`: "none" (reads return zeros), "memory", or "file" with `data_path` (created; it must
/// not exist; removed by `stop()`). Raises ProfileError for a bad profile, OSError when the
/// mount fails.
#[pyclass(module = "ssdlab._native")]
struct Emulator {
    server: Server,
}

#[pymethods]
impl Emulator {
    #[new]
    #[pyo3(signature = (pairs, seed, mountpoint, data, data_path=None, threads=2))]
    fn new(py: Python<'_>, pairs: Vec<(String, String)>, seed: u64, mountpoint: PathBuf, data: &str, data_path: Option<PathBuf>, threads: usize) -> PyResult<Self> {
        let mode = match (data, data_path) {
            ("none", None) => DataMode::None,
            ("memory", None) => DataMode::Memory,
            ("file", Some(p)) => DataMode::File(p),
            (other, path) => return Err(PyValueError::new_err(format!("data mode {other:?} with path {path:?}: expected none, memory, or file with a path"))),
        };
        let cfg = build_config(pairs)?;
        let sim = Simulation::new(&cfg, seed).map_err(py_err)?;
        let server = py.allow_threads(|| Server::start(sim, &mountpoint, &mode, threads)).map_err(|e| PyOSError::new_err(format!("mounting the drive's filesystem at {}: {e}", mountpoint.display())))?;
        Ok(Emulator { server })
    }

    /// The drive's file inside the mount.
    #[getter]
    fn image_path(&self) -> PathBuf {
        self.server.image_path()
    }

    /// The drive's capacity [bytes].
    #[getter]
    fn capacity_bytes(&self) -> u64 {
        self.server.capacity_bytes()
    }

    /// What it has served: reads, writes, trims, flushes (commands), read_bytes, write_bytes,
    /// trim_bytes, errors (requests failed), replies (sent), mean_late_s and max_late_s (how
    /// long after its completion time a reply was sent: on average and at most [s]), error (the
    /// simulator's first refusal, or None).
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (c, error) = self.server.counts();
        let sent = self.server.sent();
        let d = PyDict::new(py);
        let k = c.commands;
        for (name, v) in [("reads", k.reads), ("writes", k.writes), ("trims", k.trims), ("flushes", k.flushes), ("read_bytes", k.read_bytes), ("write_bytes", k.write_bytes), ("trim_bytes", k.trim_bytes), ("errors", c.errors), ("replies", sent.replies)] {
            d.set_item(name, v)?;
        }
        d.set_item("mean_late_s", sent.late_ns as f64 / 1e9 / sent.replies.max(1) as f64)?;
        d.set_item("max_late_s", sent.max_late_ns as f64 / 1e9)?;
        d.set_item("error", error)?;
        Ok(d)
    }

    /// Unmounts (detach the loop device first: nothing may hold the file open), ends the
    /// threads and removes a data file. OSError if the unmount fails (the file is in use).
    fn stop(&mut self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| self.server.stop()).map_err(|e| PyOSError::new_err(format!("stopping the emulated drive: {e}")))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Emulator>()?;
    Ok(())
}
