//! SPC trace format (Storage Performance Council; the UMass Financial and WebSearch traces),
//! one CSV line per request:
//!
//! ```text
//! ASU,LBA,SIZE,OPCODE,TIMESTAMP[,OPTIONAL...]
//! 0,303567,3584,w,0.000000
//! ```
//!
//! * ASU: application specific unit (a separate address space); [`ReadOptions::device`] keeps
//!   one. Without it, all ASUs' requests share one address space.
//! * LBA: block offset in 512 B blocks. SIZE: bytes (> 0). OPCODE: `r`/`R` read, `w`/`W`
//!   write. TIMESTAMP: seconds since the start of the trace (decimal), converted to ns.
//! * Optional fields after the fifth are ignored.

use std::io::BufRead;

use crate::error::Bad;
use crate::formats::ReadOptions;
use crate::lines::{csv_fields, parse_scaled, parse_u64, sectors_to_bytes, LineParser, LineReader, Parsed};
use crate::record::{Op, Record};

pub(crate) fn reader<R: BufRead>(src: R, file: &str, opts: &ReadOptions) -> LineReader<R, Spc> {
    LineReader::new(src, Spc { device: opts.device }, file, opts.skip_bad)
}

pub(crate) struct Spc {
    device: Option<u64>,
}

impl LineParser for Spc {
    #[inline]
    fn parse_line(&mut self, line: &[u8]) -> Result<Parsed, Bad> {
        let mut f = csv_fields(line);
        let (Some(asu), Some(lba), Some(size), Some(opc), Some(ts)) = (f.next(), f.next(), f.next(), f.next(), f.next()) else {
            return Err(Bad::new("5 comma-separated fields 'ASU,LBA,SIZE,OPCODE,TIMESTAMP'", line));
        };
        let asu = parse_u64(asu).ok_or_else(|| Bad::new("an ASU number in field 1", asu))?;
        let block = parse_u64(lba).ok_or_else(|| Bad::new("an LBA (512 B blocks) in field 2", lba))?;
        let len = parse_u64(size).ok_or_else(|| Bad::new("a size in bytes in field 3", size))?;
        let op = match opc {
            b"w" | b"W" => Op::Write,
            b"r" | b"R" => Op::Read,
            _ => return Err(Bad::new("an opcode r or w in field 4", opc)),
        };
        let time_ns = parse_scaled(ts, 9).ok_or_else(|| Bad::new("a time stamp in seconds in field 5", ts))?;
        if len == 0 {
            return Err(Bad::new("a size > 0 bytes in field 3", size));
        }
        let offset = sectors_to_bytes(block).ok_or_else(|| Bad::new("an LBA below 2^55", lba))?;
        if offset.checked_add(len).is_none() {
            return Err(Bad::new("offset + size below 2^64 bytes", line));
        }
        if self.device.is_some_and(|d| d != asu) {
            return Ok(Parsed::Ignore);
        }
        Ok(Parsed::One(Record::new(time_ns, op, offset, len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_blocks_bytes_seconds() {
        let text = "0,303567,3584,w,0.000000\n1,55596,3072,r,0.078643,extra\n";
        let r: Vec<Record> = reader(text.as_bytes(), "Financial1.spc", &ReadOptions::default()).map(Result::unwrap).collect();
        assert_eq!(r, vec![Record::new(0, Op::Write, 303567 * 512, 3584), Record::new(78_643_000, Op::Read, 55596 * 512, 3072)]);
        let opts = ReadOptions { device: Some(1), ..Default::default() };
        let r: Vec<Record> = reader(text.as_bytes(), "f", &opts).map(Result::unwrap).collect();
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn errors() {
        for (text, what) in [("0,1,512,x,0.1\n", "opcode r or w"), ("0,1,512,w\n", "5 comma-separated"), ("0,1,512,w,abc\n", "seconds in field 5"), ("0,1,0,w,1\n", "size > 0")] {
            let r: Vec<_> = reader(text.as_bytes(), "f.spc", &ReadOptions::default()).collect();
            let e = r[0].as_ref().unwrap_err();
            assert!(e.to_string().starts_with("f.spc:1: expected ") && e.to_string().contains(what), "{e}");
        }
    }
}
