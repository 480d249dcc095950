//! Workload dicts (`Simulator.start_workload`'s keys) as `ssdsim`'s plain [`KeyValue`]s;
//! `ssdsim::workload::from_keys` reads and checks them.

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PySequence, PyString, PyTuple};
use ssdsim::KeyValue;

use crate::errors::WorkloadKeyError;

/// The keys of a workload dict, in its order; WorkloadKeyError when a key is not a string.
pub(crate) fn workload_keys(d: &Bound<'_, PyDict>) -> PyResult<Vec<(String, KeyValue)>> {
    dict_entries(d).ok_or_else(|| WorkloadKeyError::new_err("workload keys must be strings"))
}

/// The entries of `d`; None when a key is not a string.
fn dict_entries(d: &Bound<'_, PyDict>) -> Option<Vec<(String, KeyValue)>> {
    d.iter().map(|(k, v)| Some((k.downcast::<PyString>().ok()?.to_string(), key_value(&v)))).collect()
}

/// `v` as a plain value: None, a bool, str, dict of string keys, list or tuple; another
/// object as the bool (numpy's), whole number (`__index__`), number (`__float__`) or
/// sequence it converts to, as Python's conversions take it; else as its `repr`.
fn key_value(v: &Bound<'_, PyAny>) -> KeyValue {
    if v.is_none() {
        return KeyValue::Null;
    }
    if let Ok(s) = v.downcast::<PyString>() {
        return KeyValue::Str(s.to_string());
    }
    if let Some(entries) = v.downcast::<PyDict>().ok().and_then(dict_entries) {
        return KeyValue::Map(entries);
    }
    if let Ok(t) = v.downcast::<PyTuple>() {
        return KeyValue::Tuple(t.iter().map(|i| key_value(&i)).collect());
    }
    if let Ok(b) = v.extract::<bool>() {
        return KeyValue::Bool(b);
    }
    if let Ok(i) = v.extract::<i128>() {
        return KeyValue::Int(i);
    }
    // A float, or an int beyond i128.
    if let Ok(f) = v.extract::<f64>() {
        return KeyValue::Float(f);
    }
    let seq = v.downcast::<PySequence>().ok().filter(|_| !v.is_instance_of::<PyBytes>() && !v.is_instance_of::<PyByteArray>());
    if let Some(items) = seq.and_then(|s| s.try_iter().ok()?.map(|i| Some(key_value(&i.ok()?))).collect()) {
        return KeyValue::List(items);
    }
    KeyValue::Other(v.repr().map(|r| r.to_string()).unwrap_or_default())
}
