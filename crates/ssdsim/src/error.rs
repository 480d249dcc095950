//! [`SimError`]: what a [`crate::Simulation`] call refuses, or what stops a run. Each kind
//! is one a caller treats its own way (a profile to fix, a drive too small for the workload,
//! a workload dict's key, a workload field, the series interval, a call out of order); `Display` gives the message
//! for the user, naming the key, field or argument and saying what to do.

use std::fmt;

use crate::config::ConfigError;
use crate::workload::{KeyError, WorkloadError};

#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// A profile the drive cannot be built from (names the key).
    Profile(ConfigError),
    /// The drive ran out of room: a plane filled with valid data, so garbage collection
    /// frees nothing (names the profile key to change). See [`crate::Simulation::check_space`].
    DriveFull(ConfigError),
    /// A workload dict's key that cannot be read (names the key; see
    /// [`crate::workload::from_keys`]).
    Key(KeyError),
    /// A workload field the simulator cannot run (names the field).
    Workload(WorkloadError),
    /// A workload's series interval (`interval_ns`, `jobs[i].interval_ns`): below 1 µs, or
    /// too short for the phase's duration (a series holds at most
    /// [`crate::MAX_SERIES_INTERVALS`]); the interval is the user's to change.
    Interval(WorkloadError),
    /// A phase's series would hold, or went past, more intervals than a series may hold;
    /// the message says what interval would do.
    Series(String),
    /// A call the simulator's state does not take now (a phase already running), or an
    /// argument outside its range (a queue depth, a command outside the drive).
    Invalid(String),
}

impl From<KeyError> for SimError {
    fn from(e: KeyError) -> Self {
        SimError::Key(e)
    }
}

impl From<WorkloadError> for SimError {
    /// A refused series interval is [`SimError::Interval`], any other field [`SimError::Workload`].
    fn from(e: WorkloadError) -> Self {
        if e.field.ends_with("interval_ns") {
            SimError::Interval(e)
        } else {
            SimError::Workload(e)
        }
    }
}

impl SimError {
    /// The workload field refused (`Workload` and `Interval`), else None.
    pub fn workload(&self) -> Option<&WorkloadError> {
        match self {
            SimError::Workload(e) | SimError::Interval(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Profile(e) | SimError::DriveFull(e) => e.fmt(f),
            SimError::Key(e) => e.fmt(f),
            SimError::Workload(e) | SimError::Interval(e) => e.fmt(f),
            SimError::Series(m) | SimError::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SimError {}
