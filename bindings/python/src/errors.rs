//! The simulator's errors as Python exceptions, in one place: each [`SimError`] kind has its
//! exception class here. The module imports nothing from the `ssdlab` package; the package
//! raises these as its own errors (`ssdlab.targets.sim`).

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use ssdsim::{ConfigError, SimError};

create_exception!(_native, ProfileError, PyValueError, "A bad profile key or value; args = (message, key).");
create_exception!(
    _native,
    DriveFullError,
    ProfileError,
    "The drive ran out of room during a run: a plane filled with valid data, so garbage collection frees nothing; args = (message, key), key the profile key to change."
);
create_exception!(
    _native,
    SeriesError,
    PyValueError,
    "A series interval too short for the phase (a series holds at most MAX_SERIES_INTERVALS intervals) or below 1 µs; args = (message,), which says what interval to use."
);

create_exception!(
    _native,
    WorkloadKeyError,
    PyValueError,
    "A workload key the simulator refuses (a wrong type, a value out of range, keys that do not go together, a workload the drive cannot run); args = (message,), which names the key."
);

/// `e` as its Python exception: `ProfileError(message, key)`, `DriveFullError(message, key)`,
/// `SeriesError(message)`, `WorkloadKeyError(message)`, else `ValueError(message)` (a call
/// the simulator's state does not take); a workload field is named by its dict key
/// (`WorkloadError::key_message`), as a key the dict gives wrongly is (`KeyError`).
pub(crate) fn py_err(e: SimError) -> PyErr {
    match e {
        SimError::Profile(e) => profile_err(e),
        SimError::DriveFull(e) => DriveFullError::new_err((e.to_string(), e.key)),
        SimError::Key(e) => WorkloadKeyError::new_err(e.to_string()),
        SimError::Workload(e) => WorkloadKeyError::new_err(e.key_message()),
        SimError::Interval(e) => SeriesError::new_err(e.key_message()),
        SimError::Series(m) => SeriesError::new_err(m),
        SimError::Invalid(m) => PyValueError::new_err(m),
    }
}

/// A bad profile key or value: `ProfileError(message, key)`.
pub(crate) fn profile_err(e: ConfigError) -> PyErr {
    ProfileError::new_err((e.to_string(), e.key))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ProfileError", py.get_type::<ProfileError>())?;
    m.add("DriveFullError", py.get_type::<DriveFullError>())?;
    m.add("SeriesError", py.get_type::<SeriesError>())?;
    m.add("WorkloadKeyError", py.get_type::<WorkloadKeyError>())?;
    Ok(())
}
