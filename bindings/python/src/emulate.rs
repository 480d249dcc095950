//! `ssdlab._native.Emulator`: a simulated drive served as a FUSE file (`ssdemu`), for
//! `ssdlab emulate`. Its threads never take the GIL; the calls that wait (mount, unmount)
//! release it.

use std::path::PathBuf;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use ssdemu::{DataMode, Emulator as Server, Serving};
use ssdsim::Simulation;

use crate::build_config;
use crate::errors::py_err;

/// A simulated drive (profile `pairs`, `seed`) as the file `image_path` of a FUSE filesystem
/// mounted at `mountpoint` (an empty directory), served on `threads` threads until `stop()`.
/// `data`: "none" (reads return zeros), "memory", or "file" with `data_path` (created; it must
/// not exist; removed by `stop()`). `slowdown`: wall seconds per simulated second, in [1, 1000].
/// Raises ProfileError for a bad profile, ValueError for a slowdown out of range, OSError when
/// the mount fails.
#[pyclass(module = "ssdlab._native")]
struct Emulator {
    server: Server,
}

#[pymethods]
impl Emulator {
    #[new]
    #[pyo3(signature = (pairs, seed, mountpoint, data, data_path=None, threads=2, slowdown=1.0))]
    #[allow(clippy::too_many_arguments)]
    fn new(py: Python<'_>, pairs: Vec<(String, String)>, seed: u64, mountpoint: PathBuf, data: &str, data_path: Option<PathBuf>, threads: usize, slowdown: f64) -> PyResult<Self> {
        if !(1.0..=ssdemu::MAX_SLOWDOWN).contains(&slowdown) {
            return Err(PyValueError::new_err(format!("slowdown {slowdown} is outside [1, {}]", ssdemu::MAX_SLOWDOWN)));
        }
        let mode = match (data, data_path) {
            ("none", None) => DataMode::None,
            ("memory", None) => DataMode::Memory,
            ("file", Some(p)) => DataMode::File(p),
            (other, path) => return Err(PyValueError::new_err(format!("data mode {other:?} with path {path:?}: expected none, memory, or file with a path"))),
        };
        let cfg = build_config(pairs)?;
        let sim = Simulation::new(&cfg, seed).map_err(py_err)?;
        let server = py.allow_threads(|| Server::start(sim, &mountpoint, &mode, Serving { threads, slowdown })).map_err(|e| PyOSError::new_err(format!("mounting the drive's filesystem at {}: {e}", mountpoint.display())))?;
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

    /// How long the host must leave the drive idle before the idle time changes it (idle GC,
    /// an SLC cache folded or taken back in use: `gc_idle_delay_ms`) [ns, drive time]; None
    /// when it never does.
    #[getter]
    fn idle_work_delay_ns(&self) -> Option<u64> {
        self.server.idle_work_delay_ns()
    }

    /// The drive's counters now: the JSON text its counters file holds (see
    /// `ssdemu::Emulator::counters_json` for the keys and units).
    fn counters_json(&self) -> String {
        self.server.counters_json()
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
