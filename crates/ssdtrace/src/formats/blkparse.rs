//! blkparse text output (blktrace's default format), e.g.
//!
//! ```text
//!   8,0    3        1     0.000000000   697  Q  WS 3414144 + 8 [kworker/3:1H]
//!   8,0    3        2     0.000002125   697  D  FWS 3414152 + 16 [kworker/3:1H]
//!   8,0    1        7     0.000410333     0  D   D 1048576 + 2048 [swapper/1]
//!   8,0    1        8     0.000420000     0  D  FN [kworker/1:1]
//! ```
//!
//! Fields (blkparse's header `%D %2c %8s %5T.%9t %5p %2a %3d`): device `MAJ,MIN`, CPU,
//! sequence number, time [s, 9 decimals], process id, action, RWBS; then for block requests
//! `SECTOR + COUNT [PROCESS]` (512 B sectors) or just `[PROCESS]` when no data is moved.
//!
//! * One action is read as requests: `D` (dispatch/issue to the driver, the default: what
//!   the drive received) or `Q` (queue: what the upper layers asked for, before merging).
//!   Other actions (C, M, G, I, P, U, A, X, m ...) are ignored lines.
//! * RWBS: an optional leading `F` is a preflush; then `D` discard (→ trim), `W` write,
//!   `R` read, `N` no data, or `F` (flush request); then flags (`F` FUA, `A`, `S`, `M`,
//!   `E` ...), which are ignored. A request with a preflush (`FWS 100 + 8`) becomes a flush
//!   followed by the write, at the same time; a flush without data (`FN`, `F`, `FS`)
//!   becomes one flush record.
//! * SCSI pass-through events (`D N 0 (00 ..) [proc]`: a byte count, no `+`) and no-data
//!   events without a flush are ignored lines.
//! * The summary blkparse prints at the end (`CPU0 (8,0):`, `Total (8,0):` and the lines
//!   under them) and `Input file ... added` lines are ignored.
//! * Time is blkparse's, seconds since the start of tracing, converted to ns. Requests of
//!   all devices in the file are read (run blkparse with `-d`/filters to select one).

use std::io::BufRead;

use crate::error::Bad;
use crate::formats::ReadOptions;
use crate::lines::{parse_scaled, parse_u64, sectors_to_bytes, ws_fields, LineParser, LineReader, Parsed};
use crate::record::{Op, Record};

pub(crate) fn reader<R: BufRead>(src: R, file: &str, opts: &ReadOptions) -> LineReader<R, Blkparse> {
    let action = opts.events.unwrap_or(crate::formats::BlkEvent::Dispatch).action();
    LineReader::new(src, Blkparse { action, in_summary: false }, file, opts.skip_bad)
}

pub(crate) struct Blkparse {
    action: u8,
    in_summary: bool,
}

fn is_device(t: &[u8]) -> bool {
    match t.iter().position(|&c| c == b',') {
        Some(i) => parse_u64(&t[..i]).is_some() && parse_u64(&t[i + 1..]).is_some(),
        None => false,
    }
}

/// Decodes RWBS into (flush, data op). None if it is not RWBS.
fn decode_rwbs(s: &[u8]) -> Option<(bool, Option<Op>)> {
    if s.is_empty() || s.len() > 8 || !s.iter().all(|c| c.is_ascii_uppercase()) {
        return None;
    }
    let mut flush = false;
    let mut i = 0;
    if s[0] == b'F' {
        flush = true;
        i = 1;
    }
    let op = match s.get(i) {
        Some(b'D') => {
            i += 1;
            Some(Op::Trim)
        }
        Some(b'W') => {
            i += 1;
            Some(Op::Write)
        }
        Some(b'R') => {
            i += 1;
            Some(Op::Read)
        }
        Some(b'N') => {
            i += 1;
            None
        }
        Some(b'F') => {
            i += 1;
            flush = true;
            None
        }
        // "F" alone or "F" then flags: the F was the flush request itself.
        _ if flush => None,
        _ => return None,
    };
    let _flags = &s[i..]; // FUA, readahead, sync, meta, secure erase...: no effect on the record
    Some((flush, op))
}

const EVENT_LINE: &str = "a blkparse event line 'MAJ,MIN CPU SEQ SECONDS PID ACTION RWBS ...' (default blkparse output format)";

impl LineParser for Blkparse {
    #[inline]
    fn parse_line(&mut self, line: &[u8]) -> Result<Parsed, Bad> {
        let mut f = ws_fields(line);
        let dev = f.next().unwrap_or(b"");
        if !is_device(dev) {
            let t = crate::lines::trim(line);
            if (t.starts_with(b"CPU") && t.get(3).is_some_and(|c| c.is_ascii_digit())) || t.starts_with(b"Total (") {
                self.in_summary = true;
                return Ok(Parsed::Ignore);
            }
            if self.in_summary || t.starts_with(b"Input file ") {
                return Ok(Parsed::Ignore);
            }
            return Err(Bad::new(EVENT_LINE, line));
        }
        let cpu = f.next().unwrap_or(b"");
        parse_u64(cpu).ok_or_else(|| Bad::new("a CPU number in field 2", cpu))?;
        let seq = f.next().unwrap_or(b"");
        parse_u64(seq).ok_or_else(|| Bad::new("a sequence number in field 3", seq))?;
        let t = f.next().unwrap_or(b"");
        let time_ns = parse_scaled(t, 9).ok_or_else(|| Bad::new("a time in seconds (like 0.001368096) in field 4", t))?;
        let pid = f.next().unwrap_or(b"");
        parse_u64(pid).ok_or_else(|| Bad::new("a process id in field 5", pid))?;
        let act = f.next().unwrap_or(b"");
        if act.is_empty() || act.len() > 2 || !act.iter().all(|c| c.is_ascii_alphabetic()) {
            return Err(Bad::new("an action (Q, D, C, M, ...) in field 6", act));
        }
        if act != [self.action] {
            return Ok(Parsed::Ignore);
        }
        let rwbs = f.next().unwrap_or(b"");
        let (flush, op) = decode_rwbs(rwbs).ok_or_else(|| Bad::new("RWBS flags (like R, WS, D, FWS, FN) in field 7", rwbs))?;
        let rest = f.remainder();
        let mut r = ws_fields(rest);
        let first = r.next().unwrap_or(b"");
        let range = if first.first().is_some_and(|c| c.is_ascii_digit()) {
            let sector = parse_u64(first).ok_or_else(|| Bad::new("a start sector in field 8", first))?;
            match r.next() {
                Some(b"+") => {
                    let n = r.next().unwrap_or(b"");
                    let count = parse_u64(n).ok_or_else(|| Bad::new("a sector count after '+'", n))?;
                    let off = sectors_to_bytes(sector).ok_or_else(|| Bad::new("a start sector below 2^55", first))?;
                    let len = sectors_to_bytes(count).ok_or_else(|| Bad::new("a sector count below 2^55", n))?;
                    Some((off, len))
                }
                // "BYTES (cdb) [proc]" or "BYTES [proc]": SCSI pass-through, not a block request
                Some(t) if t.starts_with(b"(") || t.starts_with(b"[") => return Ok(Parsed::Ignore),
                None => return Ok(Parsed::Ignore),
                Some(t) => return Err(Bad::new("'+ COUNT' after the start sector", t)),
            }
        } else if first.starts_with(b"[") || first.starts_with(b"(") || first.is_empty() {
            None
        } else {
            return Err(Bad::new("'SECTOR + COUNT [PROCESS]' or '[PROCESS]' after the RWBS field", rest));
        };
        Ok(match (op, range) {
            (Some(op), Some((off, len))) if len > 0 => {
                let rec = Record::new(time_ns, op, off, len);
                if flush {
                    Parsed::Two(Record::flush(time_ns), rec)
                } else {
                    Parsed::One(rec)
                }
            }
            _ if flush => Parsed::One(Record::flush(time_ns)),
            _ => Parsed::Ignore,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::{BlkEvent, TraceReader};

    fn read(text: &str, events: Option<BlkEvent>) -> (Vec<Record>, crate::formats::ReadStats) {
        let opts = ReadOptions { events, ..Default::default() };
        let mut r = reader(text.as_bytes(), "t.blk", &opts);
        let recs = r.by_ref().collect::<Result<Vec<_>, _>>().unwrap();
        (recs, r.stats())
    }

    const SAMPLE: &str = "  8,0    3        1     0.000000000   697  Q  WS 3414144 + 8 [kworker/3:1H]
  8,0    3        2     0.000002125   697  D  FWS 3414152 + 16 [kworker/3:1H]
  8,0    1        7     0.000410333     0  D   D 1048576 + 2048 [swapper/1]
  8,0    1        8     1.5     0  D  FN [kworker/1:1]
  8,0    1        9     2.000000001     0  D  R 8 + 1 (     12) [fio]
  8,33  15        3     0.451546700  3177  D   N 0 (00 ..) [kworker/u66:0]
  8,0    1       10     2.1     0  C  R 8 + 1 [0]
  8,0    1       11     2.2     0  m   N cfq123 some message
CPU1 (8,0):
 Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB
Total (8,0):
Throughput (R/W): 0KiB/s / 0KiB/s
Events (8,0): 10 entries
";

    #[test]
    fn dispatch_events_with_flush_discard_and_read() {
        let (recs, stats) = read(SAMPLE, None);
        assert_eq!(
            recs,
            vec![
                Record::flush(2125),
                Record::new(2125, Op::Write, 3414152 * 512, 16 * 512),
                Record::new(410_333, Op::Trim, 1048576 * 512, 2048 * 512),
                Record::flush(1_500_000_000),
                Record::new(2_000_000_001, Op::Read, 8 * 512, 512),
            ]
        );
        assert_eq!(stats.lines, 13);
        assert_eq!(stats.ignored_lines, 13 - 4); // 4 lines gave 5 records (a write with a preflush)
    }

    #[test]
    fn queue_events() {
        let (recs, _) = read(SAMPLE, Some(BlkEvent::Queue));
        assert_eq!(recs, vec![Record::new(0, Op::Write, 3414144 * 512, 8 * 512)]);
    }

    #[test]
    fn rwbs_decoding() {
        assert_eq!(decode_rwbs(b"WS"), Some((false, Some(Op::Write))));
        assert_eq!(decode_rwbs(b"FWFS"), Some((true, Some(Op::Write))));
        assert_eq!(decode_rwbs(b"DE"), Some((false, Some(Op::Trim))));
        assert_eq!(decode_rwbs(b"F"), Some((true, None)));
        assert_eq!(decode_rwbs(b"FS"), Some((true, None)));
        assert_eq!(decode_rwbs(b"FF"), Some((true, None)));
        assert_eq!(decode_rwbs(b"N"), Some((false, None)));
        assert_eq!(decode_rwbs(b"RA"), Some((false, Some(Op::Read))));
        assert_eq!(decode_rwbs(b"S"), None);
        assert_eq!(decode_rwbs(b"w"), None);
        assert_eq!(decode_rwbs(b"12"), None);
    }

    #[test]
    fn malformed_lines_name_the_line_and_field() {
        let opts = ReadOptions::default();
        let text = "  8,0 1 1 0.1 5 D W 100 + 8 [a]\n  8,0 1 2 0.x 5 D W 100 + 8 [a]\n";
        let r: Vec<_> = reader(text.as_bytes(), "t.blk", &opts).collect();
        let e = r[1].as_ref().unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("t.blk:2: expected a time in seconds"), "{e}");
        for bad in ["8,0 1 2 0.1 5 D W 100 + x [a]", "8,0 1 2 0.1 5 D W 100 - 8 [a]", "8,0 1 2 0.1 5 D w 1 + 8", "garbage", "8,0 x"] {
            let r: Vec<_> = reader(bad.as_bytes(), "t.blk", &opts).collect();
            assert!(matches!(r.as_slice(), [Err(e)] if e.line == 1), "{bad}: {r:?}");
        }
    }
}
