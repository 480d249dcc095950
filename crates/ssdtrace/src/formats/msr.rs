//! MSR Cambridge block traces (SNIA IOTTA set 388), one CSV line per request:
//!
//! ```text
//! Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
//! 128166372003061629,hm,0,Read,3037175808,4096,35514
//! ```
//!
//! * Timestamp: Windows filetime, 100 ns ticks since 1601-01-01. Record times are **relative
//!   to the first record** ((ticks − first ticks) × 100 ns), since the absolute epoch is of
//!   no use for replay; a time before the first record's is clamped to 0.
//! * Hostname: ignored. DiskNumber: the volume; [`ReadOptions::device`] keeps one.
//! * Type: `Read` or `Write` (any case). Offset and Size: bytes (Size > 0).
//! * ResponseTime (ticks) and any later column: ignored; it may be missing.
//! * A header line starting with `Timestamp,` is ignored.

use std::io::BufRead;

use crate::error::Bad;
use crate::formats::ReadOptions;
use crate::lines::{csv_fields, parse_u64, LineParser, LineReader, Parsed};
use crate::record::{Op, Record};

/// Length of one filetime tick [ns].
pub const TICK_NS: u64 = 100;

pub(crate) fn reader<R: BufRead>(src: R, file: &str, opts: &ReadOptions) -> LineReader<R, Msr> {
    LineReader::new(src, Msr { first_ticks: None, device: opts.device }, file, opts.skip_bad)
}

pub(crate) struct Msr {
    first_ticks: Option<u64>,
    device: Option<u64>,
}

impl LineParser for Msr {
    #[inline]
    fn parse_line(&mut self, line: &[u8]) -> Result<Parsed, Bad> {
        let mut f = csv_fields(line);
        let (Some(ts), Some(_host), Some(disk), Some(kind), Some(off), Some(size)) = (f.next(), f.next(), f.next(), f.next(), f.next(), f.next()) else {
            if line.starts_with(b"Timestamp,") {
                return Ok(Parsed::Ignore);
            }
            return Err(Bad::new("6 or 7 comma-separated columns 'Timestamp,Hostname,DiskNumber,Type,Offset,Size[,ResponseTime]'", line));
        };
        if ts == b"Timestamp" {
            return Ok(Parsed::Ignore);
        }
        let ticks = parse_u64(ts).ok_or_else(|| Bad::new("a Windows filetime (100 ns ticks) in column 1", ts))?;
        let disk = parse_u64(disk).ok_or_else(|| Bad::new("a disk number in column 3", disk))?;
        let op = if kind.eq_ignore_ascii_case(b"write") {
            Op::Write
        } else if kind.eq_ignore_ascii_case(b"read") {
            Op::Read
        } else {
            return Err(Bad::new("Read or Write in column 4", kind));
        };
        let offset = parse_u64(off).ok_or_else(|| Bad::new("an offset in bytes in column 5", off))?;
        let len = parse_u64(size).ok_or_else(|| Bad::new("a size in bytes in column 6", size))?;
        if len == 0 {
            return Err(Bad::new("a size > 0 bytes in column 6", size));
        }
        if offset.checked_add(len).is_none() {
            return Err(Bad::new("offset + size below 2^64 bytes", line));
        }
        if self.device.is_some_and(|d| d != disk) {
            return Ok(Parsed::Ignore);
        }
        let base = *self.first_ticks.get_or_insert(ticks);
        let time_ns = ticks.saturating_sub(base).checked_mul(TICK_NS).ok_or_else(|| Bad::new("a time span below 2^64 ns", ts))?;
        Ok(Parsed::One(Record::new(time_ns, op, offset, len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_relative_times_and_bytes() {
        let text = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n128166372003061629,hm,0,Read,3037175808,4096,35514\n128166372013061630,hm,0,Write,0,512,1\n";
        let r: Vec<Record> = reader(text.as_bytes(), "hm_0.csv", &ReadOptions::default()).map(Result::unwrap).collect();
        assert_eq!(r, vec![Record::new(0, Op::Read, 3037175808, 4096), Record::new(1_000_000_100, Op::Write, 0, 512)]);
    }

    #[test]
    fn errors() {
        for (text, what) in [
            ("1,h,0,Erase,0,4096,1\n", "Read or Write in column 4"),
            ("1,h,0,Read,0\n", "comma-separated columns"),
            ("1,h,0,Read,x,4096,1\n", "offset in bytes in column 5, got \"x\""),
            ("1,h,0,Read,0,0,1\n", "size > 0"),
            ("-5,h,0,Read,0,512,1\n", "Windows filetime"),
        ] {
            let r: Vec<_> = reader(text.as_bytes(), "hm_0.csv", &ReadOptions::default()).collect();
            let e = r[0].as_ref().unwrap_err();
            assert!(e.to_string().starts_with("hm_0.csv:1: expected ") && e.to_string().contains(what), "{e}");
        }
    }
}
