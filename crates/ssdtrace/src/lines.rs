//! Shared machinery of the text readers: a streaming line loop ([`LineReader`]) that keeps
//! one reusable line buffer (no per-line allocation), counts lines, attaches the file name and
//! line number to errors and implements `--skip-bad`; and allocation-free field splitting and
//! number parsing on bytes.
//!
//! A format only implements [`LineParser::parse_line`]: one line in (without its line
//! terminator), zero, one or two records out, or a [`Bad`] saying what was expected.

use std::io::BufRead;

use crate::error::{Bad, TraceError};
use crate::formats::{ReadStats, TraceReader};
use crate::record::Record;

/// What one line holds.
pub(crate) enum Parsed {
    One(Record),
    /// Two records from one line (blkparse: a write with a preflush is a flush, then the write).
    Two(Record, Record),
    /// A valid line that is not a request (header, comment, file action, other event).
    Ignore,
}

/// One text format: turns a line into records.
pub(crate) trait LineParser {
    /// `line` has no terminator (`\n`, `\r\n`) and is not blank.
    fn parse_line(&mut self, line: &[u8]) -> Result<Parsed, Bad>;
}

/// A streaming reader over lines of a `BufRead`, parsed by `P`.
pub(crate) struct LineReader<R, P> {
    src: R,
    parser: P,
    file: String,
    buf: Vec<u8>,
    line_no: u64,
    skip_bad: bool,
    stats: ReadStats,
    pending: Option<Record>,
    done: bool,
}

impl<R: BufRead, P: LineParser> LineReader<R, P> {
    pub fn new(src: R, parser: P, file: &str, skip_bad: bool) -> Self {
        LineReader {
            src,
            parser,
            file: file.to_string(),
            buf: Vec::with_capacity(256),
            line_no: 0,
            skip_bad,
            stats: ReadStats::default(),
            pending: None,
            done: false,
        }
    }
}

impl<R: BufRead, P: LineParser> Iterator for LineReader<R, P> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(r) = self.pending.take() {
            return Some(Ok(r));
        }
        loop {
            if self.done {
                return None;
            }
            self.buf.clear();
            match self.src.read_until(b'\n', &mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(TraceError::at(&self.file, self.line_no + 1, format!("read error: {e}"))));
                }
            }
            self.line_no += 1;
            self.stats.lines = self.line_no;
            let mut line: &[u8] = &self.buf;
            if let [rest @ .., b'\n'] = line {
                line = rest;
            }
            if let [rest @ .., b'\r'] = line {
                line = rest;
            }
            if self.line_no == 1 {
                if let Some(rest) = line.strip_prefix(b"\xEF\xBB\xBF") {
                    line = rest; // UTF-8 byte-order mark
                }
            }
            if line.iter().all(|c| c.is_ascii_whitespace()) {
                self.stats.ignored_lines += 1;
                continue;
            }
            match self.parser.parse_line(line) {
                Ok(Parsed::One(r)) => return Some(Ok(r)),
                Ok(Parsed::Two(a, b)) => {
                    self.pending = Some(b);
                    return Some(Ok(a));
                }
                Ok(Parsed::Ignore) => self.stats.ignored_lines += 1,
                Err(bad) => {
                    let fatal = bad.fatal;
                    let err = bad.into_error(&self.file, self.line_no);
                    if self.skip_bad && !fatal {
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

impl<R: BufRead, P: LineParser> TraceReader for LineReader<R, P> {
    fn stats(&self) -> ReadStats {
        self.stats.clone()
    }
}

/// Fields separated by runs of spaces and tabs.
#[inline]
pub(crate) fn ws_fields(line: &[u8]) -> WsFields<'_> {
    WsFields { rest: line }
}

pub(crate) struct WsFields<'a> {
    rest: &'a [u8],
}

impl<'a> WsFields<'a> {
    /// What is left after the fields taken so far, leading blanks removed.
    pub fn remainder(&self) -> &'a [u8] {
        let start = self.rest.iter().position(|&c| c != b' ' && c != b'\t').unwrap_or(self.rest.len());
        &self.rest[start..]
    }
}

impl<'a> Iterator for WsFields<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let s = self.rest;
        let start = s.iter().position(|&c| c != b' ' && c != b'\t')?;
        let len = s[start..].iter().position(|&c| c == b' ' || c == b'\t').unwrap_or(s.len() - start);
        self.rest = &s[start + len..];
        Some(&s[start..start + len])
    }
}

/// Comma-separated fields, each with surrounding blanks removed.
#[inline]
pub(crate) fn csv_fields(line: &[u8]) -> CsvFields<'_> {
    CsvFields { rest: Some(line) }
}

pub(crate) struct CsvFields<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> Iterator for CsvFields<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let s = self.rest?;
        let (field, rest) = match s.iter().position(|&c| c == b',') {
            Some(i) => (&s[..i], Some(&s[i + 1..])),
            None => (s, None),
        };
        self.rest = rest;
        Some(trim(field))
    }
}

/// `s` without leading and trailing blanks.
#[inline]
pub(crate) fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&c| c != b' ' && c != b'\t').unwrap_or(s.len());
    let end = s.iter().rposition(|&c| c != b' ' && c != b'\t').map_or(start, |i| i + 1);
    &s[start..end.max(start)]
}

/// A decimal unsigned integer (digits only), or None (empty, other characters, overflow).
#[inline]
pub(crate) fn parse_u64(t: &[u8]) -> Option<u64> {
    if t.is_empty() || t.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in t {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// A hexadecimal unsigned integer with an optional `0x` prefix.
pub(crate) fn parse_hex(t: &[u8]) -> Option<u64> {
    let t = t.strip_prefix(b"0x").or_else(|| t.strip_prefix(b"0X")).unwrap_or(t);
    if t.is_empty() || t.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in t {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        v = (v << 4) | d as u64;
    }
    Some(v)
}

const POW10: [u64; 10] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000];

/// A non-negative decimal number (`12`, `12.5`, `.5`, or with an exponent `1.2e3`) times
/// `10^scale`, as an integer: `parse_scaled(b"1.5", 6) == Some(1_500_000)`. Digits beyond
/// the scale are truncated (plain form) or rounded (exponent form). `scale` is at most 9.
#[inline]
pub(crate) fn parse_scaled(t: &[u8], scale: u32) -> Option<u64> {
    let mult = POW10[scale as usize];
    let (int, frac) = match t.iter().position(|&c| c == b'.') {
        Some(i) => (&t[..i], &t[i + 1..]),
        None => (t, &t[t.len()..]),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let iv = if int.is_empty() {
        0
    } else {
        match parse_u64(int) {
            Some(v) => v,
            None => return parse_float_scaled(t, mult),
        }
    };
    let mut v = iv.checked_mul(mult)?;
    let mut place = mult;
    for &c in frac {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return parse_float_scaled(t, mult);
        }
        place /= 10;
        v = v.checked_add(d as u64 * place)?;
    }
    Some(v)
}

#[cold]
fn parse_float_scaled(t: &[u8], mult: u64) -> Option<u64> {
    if !t.iter().any(|&c| c == b'e' || c == b'E') {
        return None;
    }
    let f: f64 = std::str::from_utf8(t).ok()?.parse().ok()?;
    let v = f * mult as f64;
    if !(v.is_finite() && (0.0..1.8e19).contains(&v)) {
        return None;
    }
    Some(v.round() as u64)
}

/// `sectors * 512` bytes, or None on overflow.
#[inline]
pub(crate) fn sectors_to_bytes(sectors: u64) -> Option<u64> {
    sectors.checked_mul(crate::record::SECTOR_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_split_on_blanks_and_commas() {
        let v: Vec<&[u8]> = ws_fields(b"  a \tbb  c ").collect();
        assert_eq!(v, vec![&b"a"[..], b"bb", b"c"]);
        let v: Vec<&[u8]> = csv_fields(b"1, x ,,3").collect();
        assert_eq!(v, vec![&b"1"[..], b"x", b"", b"3"]);
        let mut f = ws_fields(b"8,0 1 2 [kworker/0:1] x");
        f.next();
        f.next();
        f.next();
        assert_eq!(f.remainder(), b"[kworker/0:1] x");
    }

    #[test]
    fn integers() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"1a"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_hex(b"0x1F"), Some(31));
        assert_eq!(parse_hex(b"a"), Some(10));
        assert_eq!(parse_hex(b"g"), None);
    }

    #[test]
    fn scaled_decimals() {
        assert_eq!(parse_scaled(b"1.5", 6), Some(1_500_000));
        assert_eq!(parse_scaled(b"0.000000001", 9), Some(1));
        assert_eq!(parse_scaled(b"0.0000000019", 9), Some(1));
        assert_eq!(parse_scaled(b"12", 3), Some(12_000));
        assert_eq!(parse_scaled(b".25", 2), Some(25));
        assert_eq!(parse_scaled(b"7.", 0), Some(7));
        assert_eq!(parse_scaled(b"1e3", 0), Some(1000));
        assert_eq!(parse_scaled(b"2.5E-3", 6), Some(2500));
        assert_eq!(parse_scaled(b".", 0), None);
        assert_eq!(parse_scaled(b"-1", 0), None);
        assert_eq!(parse_scaled(b"1.2.3", 0), None);
        assert_eq!(parse_scaled(b"abc", 0), None);
        assert_eq!(parse_scaled(b"-1e3", 0), None);
        assert_eq!(parse_scaled(b"99999999999999999999", 0), None);
    }
}
