//! CloudPhysics VSCSI binary traces (as read by libCacheSim's `vscsi` reader): fixed-size
//! little-endian records, no header.
//!
//! | version | size | layout (offset: field)                                                              |
//! |---------|------|-------------------------------------------------------------------------------------|
//! | 1       | 32 B | 0: sn u32, 4: len u32, 8: nSG u32, 12: cmd u16, 14: ver u16, 16: lbn u64, 24: ts u64 |
//! | 2       | 40 B | 0: cmd u16, 2: ver u16, 4: sn u32, 8: len u32, 12: nSG u32, 16: lbn u64, 24: ts u64, 32: rt u64 |
//!
//! The version is `ver >> 8` (1 or 2) and is detected from the first two records, as
//! libCacheSim does. `cmd` is the SCSI opcode: READ(6/10/12/16) 0x08/0x28/0xa8/0x88 → read,
//! WRITE(6/10/12/16) 0x0a/0x2a/0xaa/0x8a → write, UNMAP 0x42 → trim, SYNCHRONIZE CACHE
//! 0x35/0x91 → flush; other commands (and zero-length reads/writes) are ignored records.
//! `lbn` is the LBA in 512 B sectors, `len` the transfer length in bytes, `ts` the issue time
//! in µs (converted to ns). In errors, "line" is the 1-based record number.

use std::io::BufRead;

use crate::error::{Bad, TraceError};
use crate::formats::{ReadOptions, ReadStats, TraceReader};
use crate::record::{Op, Record, SECTOR_BYTES};

/// Record size of each version [bytes].
fn record_bytes(version: u8) -> usize {
    if version == 1 {
        32
    } else {
        40
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The VSCSI version (1 or 2) of a file starting with `head` (at least one record), as
/// libCacheSim tests it: the version byte of the first two records (one if the file is that
/// short).
pub fn detect_version(head: &[u8]) -> Option<u8> {
    let ok = |version: u8| {
        let size = record_bytes(version);
        let at = if version == 1 { 14 } else { 2 };
        let n = (head.len() / size).min(2);
        n > 0 && (0..n).all(|i| u16_at(head, i * size + at) >> 8 == version as u16)
    };
    if ok(2) {
        Some(2)
    } else if ok(1) {
        Some(1)
    } else {
        None
    }
}

/// Streaming VSCSI reader.
pub struct VscsiReader<R> {
    src: R,
    file: String,
    version: u8,
    /// Bytes read ahead for version detection, served before `src`.
    head: Vec<u8>,
    head_pos: usize,
    buf: [u8; 40],
    record_no: u64,
    skip_bad: bool,
    stats: ReadStats,
    done: bool,
}

/// Reads up to `buf.len()` bytes; returns how many (short only at end of input).
pub(crate) fn read_full<R: BufRead>(src: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let avail = match src.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            break;
        }
        let k = avail.len().min(buf.len() - n);
        buf[n..n + k].copy_from_slice(&avail[..k]);
        src.consume(k);
        n += k;
    }
    Ok(n)
}

impl<R: BufRead> VscsiReader<R> {
    pub fn new(mut src: R, file: &str, opts: &ReadOptions) -> Result<Self, TraceError> {
        let mut head = vec![0u8; 80];
        let n = read_full(&mut src, &mut head).map_err(|e| TraceError::file(file, format!("read error: {e}")))?;
        head.truncate(n);
        let version = if n == 0 {
            1 // empty file: no records
        } else {
            detect_version(&head).ok_or_else(|| {
                TraceError::file(file, "expected a VSCSI trace (version byte 1 at byte 15 or 2 at byte 3 of the first records), got neither; is this a VSCSI file?")
            })?
        };
        Ok(VscsiReader { src, file: file.to_string(), version, head, head_pos: 0, buf: [0; 40], record_no: 0, skip_bad: opts.skip_bad, stats: ReadStats::default(), done: false })
    }

    fn fill(&mut self) -> std::io::Result<usize> {
        let size = record_bytes(self.version);
        let from_head = (self.head.len() - self.head_pos).min(size);
        self.buf[..from_head].copy_from_slice(&self.head[self.head_pos..self.head_pos + from_head]);
        self.head_pos += from_head;
        if from_head == size {
            return Ok(size);
        }
        Ok(from_head + read_full(&mut self.src, &mut self.buf[from_head..size])?)
    }

    fn decode(&self) -> Result<Option<Record>, Bad> {
        let b = &self.buf;
        let (cmd, ver, len, lbn, ts) = if self.version == 1 {
            (u16_at(b, 12), u16_at(b, 14), u32_at(b, 4), u64_at(b, 16), u64_at(b, 24))
        } else {
            (u16_at(b, 0), u16_at(b, 2), u32_at(b, 8), u64_at(b, 16), u64_at(b, 24))
        };
        if ver >> 8 != self.version as u16 {
            let at = if self.version == 1 { 15 } else { 3 };
            return Err(Bad::new(format!("version byte {} at byte {at} of the record", self.version), format!("{}", ver >> 8).as_bytes()));
        }
        let op = match cmd & 0xff {
            0x08 | 0x28 | 0xa8 | 0x88 => Op::Read,
            0x0a | 0x2a | 0xaa | 0x8a => Op::Write,
            0x42 => Op::Trim,
            0x35 | 0x91 => Op::Flush,
            _ => return Ok(None),
        };
        let time_ns = ts.checked_mul(1000).ok_or_else(|| Bad::new("a time stamp below 2^64 ns", format!("{ts} us").as_bytes()))?;
        if op == Op::Flush {
            return Ok(Some(Record::flush(time_ns)));
        }
        if len == 0 {
            return Ok(None);
        }
        let off = lbn.checked_mul(SECTOR_BYTES).filter(|o| o.checked_add(len as u64).is_some()).ok_or_else(|| Bad::new("an LBA below 2^55", format!("{lbn}").as_bytes()))?;
        Ok(Some(Record::new(time_ns, op, off, len as u64)))
    }
}

impl<R: BufRead> Iterator for VscsiReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let size = record_bytes(self.version);
            let n = match self.fill() {
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(TraceError::at(&self.file, self.record_no + 1, format!("read error: {e}"))));
                }
            };
            if n == 0 {
                self.done = true;
                return None;
            }
            self.record_no += 1;
            self.stats.lines = self.record_no;
            let at = (self.record_no - 1) * size as u64;
            if n < size {
                self.done = true;
                return Some(Err(TraceError::at(&self.file, self.record_no, format!("expected a whole {size}-byte VSCSI v{} record at byte offset {at}, got {n} bytes (truncated file)", self.version))));
            }
            match self.decode() {
                Ok(Some(r)) => return Some(Ok(r)),
                Ok(None) => self.stats.ignored_lines += 1,
                Err(bad) => {
                    let mut err = bad.into_error(&self.file, self.record_no);
                    err.message = format!("record at byte offset {at}: {}", err.message);
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

impl<R: BufRead> TraceReader for VscsiReader<R> {
    fn stats(&self) -> ReadStats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(cmd: u16, len: u32, lbn: u64, ts: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(7u32.to_le_bytes());
        b.extend(len.to_le_bytes());
        b.extend(1u32.to_le_bytes());
        b.extend(cmd.to_le_bytes());
        b.extend(0x100u16.to_le_bytes());
        b.extend(lbn.to_le_bytes());
        b.extend(ts.to_le_bytes());
        b
    }

    #[test]
    fn v1_records() {
        let mut data = v1(0x2a, 4096, 10, 5);
        data.extend(v1(0x28, 512, 0, 6));
        data.extend(v1(0x12, 36, 0, 7)); // INQUIRY: ignored
        data.extend(v1(0x35, 0, 0, 8));
        let mut r = VscsiReader::new(&data[..], "t.vscsi", &ReadOptions::default()).unwrap();
        let recs: Vec<Record> = r.by_ref().map(Result::unwrap).collect();
        assert_eq!(recs, vec![Record::new(5000, Op::Write, 5120, 4096), Record::new(6000, Op::Read, 0, 512), Record::flush(8000)]);
        assert_eq!(r.stats().ignored_lines, 1);
        assert_eq!(r.stats().lines, 4);
    }

    #[test]
    fn truncated_and_corrupt_records_are_errors() {
        let mut data = v1(0x2a, 4096, 10, 5);
        data.extend(v1(0x2a, 4096, 10, 5));
        data.extend(&[1, 2, 3]);
        let r: Vec<_> = VscsiReader::new(&data[..], "t.vscsi", &ReadOptions::default()).unwrap().collect();
        let e = r.last().unwrap().as_ref().unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.to_string().contains("truncated"), "{e}");

        let mut data = v1(0x2a, 4096, 10, 5);
        data.extend(v1(0x2a, 4096, 10, 5));
        let mut bad = v1(0x2a, 4096, 10, 5);
        bad[15] = 9;
        data.extend(bad);
        let r: Vec<_> = VscsiReader::new(&data[..], "t.vscsi", &ReadOptions::default()).unwrap().collect();
        let e = r[2].as_ref().unwrap_err();
        assert!(e.to_string().starts_with("t.vscsi:3: record at byte offset 64: expected version byte 1"), "{e}");
        assert!(VscsiReader::new(&b"hello world, this is text and not a vscsi trace at all!!!!"[..], "x", &ReadOptions::default()).is_err());
    }
}
