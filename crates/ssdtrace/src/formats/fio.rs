//! fio iolog, versions 2 and 3 (fio HOWTO, "Trace file format"), e.g.
//!
//! ```text
//! fio version 3 iolog
//! 30 /dev/sdb add
//! 10731 /dev/sdb open
//! 10736 /dev/sdb trim 0 2147483648
//! 10752 /dev/sdb write 0 4096
//! 10760 /dev/sdb sync 0 0
//! 10892 /dev/sdb close
//! ```
//!
//! * Line 1 is `fio version 2 iolog` or `fio version 3 iolog` (v1 logs, unsupported by fio
//!   since 2008, are rejected).
//! * File actions `[TIME] FILE add|open|close` are ignored lines.
//! * I/O actions `[TIME] FILE ACTION OFFSET LENGTH`, offset and length in bytes: `read`,
//!   `write`, `trim`; `sync` and `datasync` become flushes (offset and length ignored).
//! * Time: v3 lines start with a time stamp in **microseconds** since the start of the run
//!   (fio's `utime_since_now`), converted to ns. v2 has no time stamps; `FILE wait USEC 0`
//!   lines advance the clock by USEC microseconds (relative to the previous wait, as fio
//!   replays them) and the following requests carry that time. `wait` is not allowed in v3.
//! * The file name is not kept: a log of several files yields one stream of requests.
//! * Zero-length reads, writes and trims are errors.

use std::io::BufRead;

use crate::error::Bad;
use crate::formats::ReadOptions;
use crate::lines::{parse_u64, ws_fields, LineParser, LineReader, Parsed};
use crate::record::{Op, Record};

pub(crate) fn reader<R: BufRead>(src: R, file: &str, opts: &ReadOptions) -> LineReader<R, Fio> {
    LineReader::new(src, Fio { version: 0, time_ns: 0 }, file, opts.skip_bad)
}

pub(crate) struct Fio {
    /// 0 until the header has been read.
    version: u8,
    /// v2: time accumulated from `wait` lines [ns].
    time_ns: u64,
}

const HEADER: &str = "'fio version 2 iolog' or 'fio version 3 iolog' on the first line (iolog v1 is not supported)";

impl LineParser for Fio {
    #[inline]
    fn parse_line(&mut self, line: &[u8]) -> Result<Parsed, Bad> {
        if self.version == 0 {
            let t = crate::lines::trim(line);
            self.version = match t {
                b"fio version 2 iolog" => 2,
                b"fio version 3 iolog" => 3,
                _ => return Err(Bad::fatal(HEADER, line)),
            };
            return Ok(Parsed::Ignore);
        }
        let mut t: [&[u8]; 5] = [b""; 5];
        let mut n = 0;
        for tok in ws_fields(line) {
            if n == 5 {
                n += 1;
                break;
            }
            t[n] = tok;
            n += 1;
        }
        let v3 = self.version == 3;
        let (time_ns, rest) = if v3 {
            let us = parse_u64(t[0]).ok_or_else(|| Bad::new("a time stamp in microseconds in field 1", t[0]))?;
            let ns = us.checked_mul(1000).ok_or_else(|| Bad::new("a time stamp below 2^64 ns", t[0]))?;
            (ns, &t[1..n.min(5)])
        } else {
            (self.time_ns, &t[..n.min(5)])
        };
        let fields = if v3 { n.saturating_sub(1) } else { n };
        match fields {
            2 => {
                let act = rest[1];
                return match act {
                    b"add" | b"open" | b"close" => Ok(Parsed::Ignore),
                    _ => Err(Bad::new("a file action add, open or close", act)),
                };
            }
            4 => {}
            _ => {
                let layout = if v3 { "'TIME FILE ACTION OFFSET LENGTH' or 'TIME FILE add|open|close'" } else { "'FILE ACTION OFFSET LENGTH' or 'FILE add|open|close'" };
                return Err(Bad::new(layout, line));
            }
        }
        let act = rest[1];
        let off_tok = rest[2];
        let len_tok = rest[3];
        let offset = parse_u64(off_tok).ok_or_else(|| Bad::new("an offset in bytes", off_tok))?;
        let len = parse_u64(len_tok).ok_or_else(|| Bad::new("a length in bytes", len_tok))?;
        let op = match act {
            b"write" => Op::Write,
            b"read" => Op::Read,
            b"trim" => Op::Trim,
            b"sync" | b"datasync" => return Ok(Parsed::One(Record::flush(time_ns))),
            b"wait" if !v3 => {
                let ns = offset.checked_mul(1000).ok_or_else(|| Bad::new("a wait below 2^64 ns", off_tok))?;
                self.time_ns = self.time_ns.checked_add(ns).ok_or_else(|| Bad::new("waits adding up to less than 2^64 ns", off_tok))?;
                return Ok(Parsed::Ignore);
            }
            b"wait" => return Err(Bad::new("an action read, write, trim, sync or datasync ('wait' is not allowed in iolog v3)", act)),
            _ => return Err(Bad::new("an action read, write, trim, sync, datasync or wait", act)),
        };
        if len == 0 {
            return Err(Bad::new("a length > 0 bytes", len_tok));
        }
        if offset.checked_add(len).is_none() {
            return Err(Bad::new("offset + length below 2^64 bytes", line));
        }
        Ok(Parsed::One(Record::new(time_ns, op, offset, len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<Result<Record, crate::error::TraceError>> {
        reader(text.as_bytes(), "x.iolog", &ReadOptions::default()).collect()
    }

    #[test]
    fn v3_times_are_microseconds() {
        let r = read("fio version 3 iolog\n30 /dev/null add\n31 /dev/null open\n10736 /dev/null trim 0 2147483648\n10752 /dev/null write 4096 8192\n10760 /dev/null sync 0 0\n10761 /dev/null read 0 512\n10892 /dev/null close\n");
        let r: Vec<Record> = r.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            r,
            vec![
                Record::new(10_736_000, Op::Trim, 0, 2147483648),
                Record::new(10_752_000, Op::Write, 4096, 8192),
                Record::flush(10_760_000),
                Record::new(10_761_000, Op::Read, 0, 512),
            ]
        );
    }

    #[test]
    fn v2_waits_advance_the_clock() {
        let r = read("fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write 0 4096\n/dev/sdb wait 250 0\n/dev/sdb write 4096 4096\n/dev/sdb datasync 0 0\n/dev/sdb close\n");
        let r: Vec<Record> = r.into_iter().map(Result::unwrap).collect();
        assert_eq!(r, vec![Record::new(0, Op::Write, 0, 4096), Record::new(250_000, Op::Write, 4096, 4096), Record::flush(250_000)]);
    }

    #[test]
    fn errors() {
        for (text, line, what) in [
            ("fio version 1 iolog\n", 1, "expected 'fio version 2 iolog'"),
            ("fio version 3 iolog\n1 f write x 4096\n", 2, "expected an offset in bytes, got \"x\""),
            ("fio version 3 iolog\n1 f write 0\n", 2, "expected 'TIME FILE ACTION OFFSET LENGTH'"),
            ("fio version 3 iolog\n1 f erase 0 4096\n", 2, "expected an action read"),
            ("fio version 3 iolog\n1 f wait 100 0\n", 2, "not allowed in iolog v3"),
            ("fio version 3 iolog\n1 f write 0 0\n", 2, "expected a length > 0 bytes"),
            ("fio version 3 iolog\nx f write 0 4096\n", 2, "expected a time stamp in microseconds"),
            ("fio version 2 iolog\n1 f write 0 4096\n", 2, "expected 'FILE ACTION OFFSET LENGTH'"),
            ("fio version 3 iolog\n1 f frob\n", 2, "expected a file action"),
        ] {
            let r = read(text);
            let e = r.iter().find_map(|x| x.as_ref().err()).unwrap_or_else(|| panic!("no error for {text:?}"));
            assert_eq!(e.line, line, "{e}");
            assert!(e.to_string().contains(what), "{e}");
        }
    }

    #[test]
    fn bad_header_is_fatal_even_with_skip_bad() {
        let opts = ReadOptions { skip_bad: true, ..Default::default() };
        let r: Vec<_> = reader("not an iolog\n1 f write 0 1\n".as_bytes(), "x", &opts).collect();
        assert_eq!(r.len(), 1);
        assert!(r[0].is_err());
    }
}
