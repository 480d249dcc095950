//! Errors that name the file and line (or binary record) and say what was expected.
//!
//! Display: `FILE:LINE: expected WHAT, got "TEXT"` for a malformed line, `FILE: MESSAGE`
//! for errors that concern the whole file (cannot open, unknown format). For the binary
//! formats (VSCSI, ssdlab binary) `LINE` is the 1-based record number and the message says
//! so.

use std::fmt;

/// Longest excerpt of the offending text quoted in a message [characters].
const MAX_GOT_CHARS: usize = 60;

/// A malformed or unreadable trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// The trace's file name as given by the caller.
    pub file: String,
    /// 1-based line (text formats) or record (binary formats); 0 when the error concerns the
    /// whole file.
    pub line: u64,
    /// What went wrong, usually `expected ..., got ...`.
    pub message: String,
}

impl TraceError {
    /// An error about the whole file (line 0).
    pub fn file(file: &str, message: impl Into<String>) -> TraceError {
        TraceError { file: file.to_string(), line: 0, message: message.into() }
    }

    /// An error at a line with a ready message.
    pub fn at(file: &str, line: u64, message: impl Into<String>) -> TraceError {
        TraceError { file: file.to_string(), line, message: message.into() }
    }

    /// `expected WHAT, got "GOT"` at a line; `got` is quoted and shortened.
    pub fn expected(file: &str, line: u64, what: &str, got: &[u8]) -> TraceError {
        TraceError::at(file, line, format!("expected {what}, got {}", quote(got)))
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for TraceError {}

/// `text` as a quoted, printable, shortened string for an error message (`"..."`, or
/// `end of line` when empty).
pub fn quote(text: &[u8]) -> String {
    if text.is_empty() {
        return "end of line".to_string();
    }
    let s = String::from_utf8_lossy(text);
    let mut out = String::with_capacity(s.len().min(MAX_GOT_CHARS) + 5);
    out.push('"');
    for (i, c) in s.chars().enumerate() {
        if i == MAX_GOT_CHARS {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// A line-level problem before the file name and line number are attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Bad {
    pub what: String,
    pub got: Vec<u8>,
    /// The file cannot be read further (e.g. a wrong header): not skipped by `--skip-bad`.
    pub fatal: bool,
}

impl Bad {
    pub fn new(what: impl Into<String>, got: &[u8]) -> Bad {
        Bad { what: what.into(), got: got.to_vec(), fatal: false }
    }

    /// A problem that makes the rest of the file unreadable.
    pub fn fatal(what: impl Into<String>, got: &[u8]) -> Bad {
        Bad { what: what.into(), got: got.to_vec(), fatal: true }
    }

    pub fn into_error(self, file: &str, line: u64) -> TraceError {
        TraceError::expected(file, line, &self.what, &self.got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_expected_and_got() {
        let e = TraceError::expected("a.trace", 7, "a sector count", b"x1");
        assert_eq!(e.to_string(), "a.trace:7: expected a sector count, got \"x1\"");
        assert_eq!(TraceError::file("b", "cannot open").to_string(), "b: cannot open");
    }

    #[test]
    fn quote_shortens_and_escapes() {
        let long = vec![b'a'; 200];
        let q = quote(&long);
        assert!(q.ends_with("...\"") && q.len() < 80, "{q}");
        assert_eq!(quote(b"a\tb"), "\"a\\tb\"");
        assert_eq!(quote(b""), "end of line");
    }
}
