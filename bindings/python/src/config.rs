//! Profiles (`ssdsim::config`): keys, their ranges, values checked and resolved, and the
//! resolved profile and its geometry as dicts.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use ssdsim::{Config, Value, KEYS, UNIT_BYTES};

use crate::errors::profile_err;

pub(crate) fn value_to_py(py: Python<'_>, v: &Value) -> PyResult<PyObject> {
    Ok(match v {
        Value::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Value::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        Value::Str(s) => s.into_pyobject(py)?.into_any().unbind(),
    })
}

/// The profile the (key, text) pairs give over the built-in defaults (`capacity` not yet
/// applied: `Config::resolved` makes the drive).
pub(crate) fn build_config(pairs: Vec<(String, String)>) -> PyResult<Config> {
    let mut cfg = Config::default();
    for (k, v) in pairs {
        cfg.set(&k, &v).map_err(profile_err)?;
    }
    Ok(cfg)
}

/// Every profile key: list of (name, kind, doc).
#[pyfunction]
pub(crate) fn profile_keys() -> Vec<(&'static str, &'static str, &'static str)> {
    KEYS.iter().map(|k| (k.name, k.kind, k.doc)).collect()
}

/// Every profile key's valid values, in words with their unit: list of (name, range), e.g.
/// ("t_prog_us", "0.01 to 1000000 µs"). Resolving a profile refuses a value outside them.
#[pyfunction]
pub(crate) fn profile_key_ranges() -> Vec<(&'static str, String)> {
    KEYS.iter().map(|k| (k.name, k.range.to_string())).collect()
}

/// Checks that `key` exists and `text` parses as its value (no whole-profile validation).
/// Returns the note on a size rounded to its key's step (naming the key, the text and the
/// value used), or None.
#[pyfunction]
pub(crate) fn check_value(key: &str, text: &str) -> PyResult<Option<String>> {
    Config::default().set(key, text).map_err(profile_err)
}

/// Bytes of a size as ssdlab reads every size (`ssdsim::config::parse_size`), or None when
/// `text` is not one.
#[pyfunction]
pub(crate) fn parse_size(text: &str) -> Option<u64> {
    ssdsim::config::parse_size(text)
}

/// Applies (key, text) pairs over the built-in defaults, validates, and returns
/// (resolved profile dict, derived geometry dict). Raises ProfileError naming the key.
#[pyfunction]
pub(crate) fn resolve_profile<'py>(py: Python<'py>, pairs: Vec<(String, String)>) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let profile = build_config(pairs)?;
    let warning = profile.spare_warning().map_err(profile_err)?;
    let cfg = profile.resolved().map_err(profile_err)?;
    let geometry = geometry_dict(py, &cfg)?;
    if let Some(warning) = warning {
        geometry.set_item("spare_warning", warning)?;
    }
    Ok((profile_dict(py, &cfg)?, geometry))
}

pub(crate) fn profile_dict<'py>(py: Python<'py>, cfg: &Config) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in cfg.to_pairs() {
        d.set_item(k, value_to_py(py, &v)?)?;
    }
    Ok(d)
}

pub(crate) fn geometry_dict<'py>(py: Python<'py>, cfg: &Config) -> PyResult<Bound<'py, PyDict>> {
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
    d.set_item("spare_fraction", g.spare_fraction())?;
    d.set_item("alpha", g.alpha())?;
    d.set_item("write_buffer_units", g.buffer_units)?;
    // The static pseudo-SLC blocks are outside physical_bytes (the FTL's native blocks).
    d.set_item("slc_static_nand_bytes", ((g.slc_static_blocks_per_pool * g.pools * g.slots_per_block) as f64 * g.nand_bytes_per_unit) as u64)?;
    d.set_item("slc_static_max_bytes", g.slc_static_max_units * UNIT_BYTES)?;
    Ok(d)
}
