//! `ssdlab._native.series_columns()`: the drive's counters, series columns and charts as
//! `ssdsim::columns` declares them, for the Python side to iterate.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use ssdsim::columns::{Better, Needs, Reading, Scale, CHARTS, COLUMNS, COUNTERS};

/// The drive's series columns and their charts (`ssdsim::columns`), as `series_columns()`
/// returns them: {"counters": [snapshot counter name, ...], "columns": [{name, counter, reading, scale, unit, label, meaning, better,
/// chart, needs}, ...], "charts": [{id, title, ylabel, button, with}, ...]}; enum values as
/// lower-case words ("change", "unit_bytes", "higher", "slc_cache"; `needs` "" for none).
#[pyfunction]
fn series_columns(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let columns = PyList::empty(py);
    for c in COLUMNS {
        let d = PyDict::new(py);
        d.set_item("name", c.name)?;
        d.set_item("counter", c.counter)?;
        d.set_item("reading", match c.reading { Reading::Change => "change", Reading::Level => "level" })?;
        let scale = match c.scale { Scale::One => "one", Scale::UnitBytes => "unit_bytes", Scale::NandUnitBytes => "nand_unit_bytes", Scale::NsToS => "ns_to_s" };
        d.set_item("scale", scale)?;
        d.set_item("unit", c.unit)?;
        d.set_item("label", c.label)?;
        d.set_item("meaning", c.meaning)?;
        d.set_item("better", match c.better { Better::Higher => "higher", Better::Lower => "lower", Better::Neither => "n/a" })?;
        d.set_item("chart", c.chart)?;
        d.set_item("needs", match c.needs { Needs::Nothing => "", Needs::SlcCache => "slc_cache", Needs::MapCache => "map_cache", Needs::Fdp => "fdp", Needs::Zones => "zones" })?;
        columns.append(d)?;
    }
    let charts = PyList::empty(py);
    for k in CHARTS {
        let d = PyDict::new(py);
        d.set_item("id", k.id)?;
        d.set_item("title", k.title)?;
        d.set_item("ylabel", k.ylabel)?;
        d.set_item("button", k.button)?;
        d.set_item("with", PyList::new(py, k.with)?)?;
        charts.append(d)?;
    }
    let out = PyDict::new(py);
    out.set_item("counters", PyList::new(py, COUNTERS.iter().map(|(name, _)| *name))?)?;
    out.set_item("columns", columns)?;
    out.set_item("charts", charts)?;
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(series_columns, m)?)
}
