//! Trace records mapped onto a target span for replay (`ssdsim::replay`): `replay_prepare`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use ssdsim::{Mapper, Remap, UNIT_BYTES};

pub(crate) fn le_u64s(name: &str, b: &[u8]) -> PyResult<Vec<u64>> {
    if b.len() % 8 != 0 {
        return Err(PyValueError::new_err(format!("{name}: {} bytes is not a whole number of little-endian u64", b.len())));
    }
    Ok(b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect())
}

/// Decodes a command chunk (op u8, offset u64, len u64 as little-endian bytes).
pub(crate) fn chunk_arrays(op: &[u8], off: &[u8], len: &[u8]) -> PyResult<(Vec<u64>, Vec<u64>)> {
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
pub(crate) fn replay_prepare<'py>(
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
