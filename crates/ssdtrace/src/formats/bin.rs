//! Reader of the ssdlab binary trace format (specified in [`crate::convert`]): a 16-byte
//! header (`SSDTRACE`, version 1, record size 24) and 24-byte little-endian records
//! `time_ns u64 | offset_bytes | op << 56 u64 | len_bytes u64`.
//! In errors, "line" is the 1-based record number.

use std::io::BufRead;

use crate::error::TraceError;
use crate::formats::vscsi::read_full;
use crate::formats::{ReadOptions, ReadStats, TraceReader};
use crate::record::{Op, Record};

/// First 8 bytes of a binary trace.
pub const MAGIC: &[u8; 8] = b"SSDTRACE";
/// Format version written in the header.
pub const VERSION: u32 = 1;
/// Header size [bytes]: magic, version u32, record size u32.
pub const HEADER_BYTES: usize = 16;
/// Record size [bytes].
pub const RECORD_BYTES: usize = 24;
/// Bits of the second word that hold the offset; the op code is in the top 8 bits.
pub const OFFSET_BITS: u32 = 56;
/// Largest offset the format can hold [bytes] (64 PiB − 1).
pub const MAX_OFFSET_BYTES: u64 = (1 << OFFSET_BITS) - 1;

/// The header bytes.
pub fn header() -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(RECORD_BYTES as u32).to_le_bytes());
    h
}

/// One record's bytes; None if the offset needs more than 56 bits.
#[inline]
pub fn encode(r: &Record) -> Option<[u8; RECORD_BYTES]> {
    if r.offset_bytes > MAX_OFFSET_BYTES {
        return None;
    }
    let mut b = [0u8; RECORD_BYTES];
    b[..8].copy_from_slice(&r.time_ns.to_le_bytes());
    b[8..16].copy_from_slice(&(r.offset_bytes | (r.op.code() as u64) << OFFSET_BITS).to_le_bytes());
    b[16..].copy_from_slice(&r.len_bytes.to_le_bytes());
    Some(b)
}

/// Decodes a record; Err(message) if the op code is invalid, the range overflows, or the
/// record breaks [`Record`]'s contract (a flush of some bytes, a read, write or trim of none).
#[inline]
pub fn decode(b: &[u8]) -> Result<Record, String> {
    let time_ns = u64::from_le_bytes(b[..8].try_into().unwrap());
    let word = u64::from_le_bytes(b[8..16].try_into().unwrap());
    let len_bytes = u64::from_le_bytes(b[16..24].try_into().unwrap());
    let code = (word >> OFFSET_BITS) as u8;
    let op = Op::from_code(code).ok_or_else(|| format!("expected an op code 0-3 (read, write, trim, flush) in the top byte of bytes 8-15, got {code}"))?;
    let offset_bytes = word & MAX_OFFSET_BYTES;
    if offset_bytes.checked_add(len_bytes).is_none() {
        return Err(format!("expected offset + length below 2^64 bytes, got {offset_bytes} + {len_bytes}"));
    }
    match op {
        Op::Flush if offset_bytes != 0 || len_bytes != 0 => {
            return Err(format!("expected a flush with offset 0 and length 0, got {offset_bytes} and {len_bytes}"));
        }
        Op::Read | Op::Write | Op::Trim if len_bytes == 0 => {
            return Err(format!("expected a {} of at least one byte, got length 0", op.name()));
        }
        _ => {}
    }
    Ok(Record { time_ns, op, offset_bytes, len_bytes })
}

/// Streaming reader of the binary format.
pub struct BinReader<R> {
    src: R,
    file: String,
    record_no: u64,
    skip_bad: bool,
    stats: ReadStats,
    done: bool,
}

impl<R: BufRead> BinReader<R> {
    pub fn new(mut src: R, file: &str, opts: &ReadOptions) -> Result<Self, TraceError> {
        let mut h = [0u8; HEADER_BYTES];
        let n = read_full(&mut src, &mut h).map_err(|e| TraceError::file(file, format!("read error: {e}")))?;
        if n < HEADER_BYTES || &h[..8] != MAGIC {
            return Err(TraceError::file(file, format!("expected an ssdlab binary trace starting with \"SSDTRACE\", got {}", crate::error::quote(&h[..n.min(8)]))));
        }
        let version = u32::from_le_bytes(h[8..12].try_into().unwrap());
        let size = u32::from_le_bytes(h[12..16].try_into().unwrap());
        if version != VERSION || size as usize != RECORD_BYTES {
            return Err(TraceError::file(file, format!("expected binary format version {VERSION} with {RECORD_BYTES}-byte records, got version {version} with {size}-byte records (written by a newer ssdlab?)")));
        }
        Ok(BinReader { src, file: file.to_string(), record_no: 0, skip_bad: opts.skip_bad, stats: ReadStats::default(), done: false })
    }
}

impl<R: BufRead> Iterator for BinReader<R> {
    type Item = Result<Record, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let mut tmp = [0u8; RECORD_BYTES];
            let decoded = match self.src.fill_buf() {
                Ok(avail) if avail.len() >= RECORD_BYTES => {
                    let d = decode(&avail[..RECORD_BYTES]);
                    self.src.consume(RECORD_BYTES);
                    d
                }
                Ok(_) => match read_full(&mut self.src, &mut tmp) {
                    Ok(0) => {
                        self.done = true;
                        return None;
                    }
                    Ok(n) if n < RECORD_BYTES => {
                        // The cut record counts as read (`stats().lines`), like a bad text line.
                        self.done = true;
                        let at = HEADER_BYTES as u64 + self.record_no * RECORD_BYTES as u64;
                        self.record_no += 1;
                        self.stats.lines = self.record_no;
                        return Some(Err(TraceError::at(&self.file, self.record_no, format!("expected a whole {RECORD_BYTES}-byte record at byte offset {at}, got {n} bytes (truncated file)"))));
                    }
                    Ok(_) => decode(&tmp),
                    Err(e) => {
                        self.done = true;
                        return Some(Err(TraceError::at(&self.file, self.record_no + 1, format!("read error: {e}"))));
                    }
                },
                Err(e) => {
                    self.done = true;
                    return Some(Err(TraceError::at(&self.file, self.record_no + 1, format!("read error: {e}"))));
                }
            };
            self.record_no += 1;
            self.stats.lines = self.record_no;
            match decoded {
                Ok(r) => return Some(Ok(r)),
                Err(msg) => {
                    let at = HEADER_BYTES as u64 + (self.record_no - 1) * RECORD_BYTES as u64;
                    let err = TraceError::at(&self.file, self.record_no, format!("record at byte offset {at}: {msg}"));
                    if self.skip_bad {
                        self.stats.skip_bad(err);
                        continue;
                    }
                    self.done = true;
                    return Some(Err(err));
                }
            }
        }
    }
}

impl<R: BufRead> TraceReader for BinReader<R> {
    fn stats(&self) -> ReadStats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip_and_limits() {
        let r = Record::new(123, Op::Trim, MAX_OFFSET_BYTES - 10, 10);
        assert_eq!(decode(&encode(&r).unwrap()).unwrap(), r);
        assert!(encode(&Record::new(0, Op::Write, 1 << 56, 1)).is_none());
        let mut b = encode(&r).unwrap();
        b[15] = 7;
        assert!(decode(&b).unwrap_err().contains("op code"));
    }

    #[test]
    fn header_checked() {
        assert!(BinReader::new(&b"NOTATRACE......."[..], "x.bin", &ReadOptions::default()).is_err());
        let mut h = header().to_vec();
        h[8] = 2;
        let e = BinReader::new(&h[..], "x.bin", &ReadOptions::default()).err().unwrap();
        assert!(e.to_string().contains("version 1"), "{e}");
    }
}
