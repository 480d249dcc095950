//! JEDEC master-trace text (the JESD219A client workload trace, as replayed in the Tom's
//! Hardware JEDEC 218A TRIM test with reads removed):
//!
//! ```text
//! e 2048 8        write 8 sectors at sector 2048
//! s 40960 4096    trim 4096 sectors at sector 40960
//! h               flush
//! ```
//!
//! * Field 1: the op letter (either case) `e` = write, `s` = trim, `h` = flush.
//! * Fields 2 and 3: start LBA and length in 512 B sectors (length > 0); required for `e` and
//!   `s`, optional (and ignored) for `h`.
//! * Fields are separated by blanks or commas; `#` lines are comments.
//! * The trace has no time stamps: every record has time 0 (replay it closed-loop at a queue
//!   depth).
//!
//! The master trace itself is not public; this layout follows the description in the issue
//! (op letter, start LBA, length in sectors). If a real file differs (e.g. hex numbers or
//! extra columns), the first line that does not match is reported with what was expected.

use std::io::BufRead;

use crate::error::Bad;
use crate::formats::ReadOptions;
use crate::lines::{parse_u64, sectors_to_bytes, LineParser, LineReader, Parsed};
use crate::record::{Op, Record};

pub(crate) fn reader<R: BufRead>(src: R, file: &str, opts: &ReadOptions) -> LineReader<R, Jedec> {
    LineReader::new(src, Jedec, file, opts.skip_bad)
}

pub(crate) struct Jedec;

#[inline]
fn is_sep(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b','
}

/// Up to 4 fields split on blanks and commas; returns the count (4 = "more than 3").
#[inline]
fn split(line: &[u8]) -> ([&[u8]; 3], usize) {
    let mut out: [&[u8]; 3] = [b""; 3];
    let mut n = 0;
    let mut i = 0;
    while i < line.len() {
        while i < line.len() && is_sep(line[i]) {
            i += 1;
        }
        if i == line.len() {
            break;
        }
        let start = i;
        while i < line.len() && !is_sep(line[i]) {
            i += 1;
        }
        if n == 3 {
            return (out, 4);
        }
        out[n] = &line[start..i];
        n += 1;
    }
    (out, n)
}

impl LineParser for Jedec {
    #[inline]
    fn parse_line(&mut self, line: &[u8]) -> Result<Parsed, Bad> {
        if line.first() == Some(&b'#') {
            return Ok(Parsed::Ignore);
        }
        let (f, n) = split(line);
        let op = match f[0] {
            b"e" | b"E" => Op::Write,
            b"s" | b"S" => Op::Trim,
            b"h" | b"H" => Op::Flush,
            _ => return Err(Bad::new("an op letter e (write), s (trim) or h (flush) in field 1", f[0])),
        };
        if op == Op::Flush {
            if n == 1 || n == 3 {
                return Ok(Parsed::One(Record::flush(0)));
            }
            return Err(Bad::new("'h' alone or 'h LBA LENGTH'", line));
        }
        if n != 3 {
            return Err(Bad::new("3 fields 'OP LBA LENGTH' (LBA and length in 512 B sectors)", line));
        }
        let lba = parse_u64(f[1]).ok_or_else(|| Bad::new("a start LBA (512 B sectors, decimal) in field 2", f[1]))?;
        let count = parse_u64(f[2]).ok_or_else(|| Bad::new("a length in 512 B sectors (decimal) in field 3", f[2]))?;
        if count == 0 {
            return Err(Bad::new("a length > 0 sectors in field 3", f[2]));
        }
        let off = sectors_to_bytes(lba).ok_or_else(|| Bad::new("a start LBA below 2^55", f[1]))?;
        let len = sectors_to_bytes(count).ok_or_else(|| Bad::new("a length below 2^55 sectors", f[2]))?;
        if off.checked_add(len).is_none() {
            return Err(Bad::new("LBA + length below 2^64 bytes", line));
        }
        Ok(Parsed::One(Record::new(0, op, off, len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_and_sectors() {
        let r: Vec<Record> = reader("# c\ne 2048 8\nS,40960,4096\nh\nh 0 0\n".as_bytes(), "j", &ReadOptions::default()).map(Result::unwrap).collect();
        assert_eq!(r, vec![Record::new(0, Op::Write, 2048 * 512, 4096), Record::new(0, Op::Trim, 40960 * 512, 4096 * 512), Record::flush(0), Record::flush(0)]);
    }

    #[test]
    fn errors() {
        for (text, what) in [("r 1 8\n", "op letter e (write)"), ("e 1\n", "3 fields"), ("e 1 8 9\n", "3 fields"), ("e 0x10 8\n", "start LBA"), ("s 1 0\n", "length > 0"), ("h 1\n", "'h' alone")] {
            let r: Vec<_> = reader(text.as_bytes(), "j.txt", &ReadOptions::default()).collect();
            let e = r[0].as_ref().unwrap_err();
            assert!(e.to_string().starts_with("j.txt:1: expected ") && e.to_string().contains(what), "{e}");
        }
    }
}
