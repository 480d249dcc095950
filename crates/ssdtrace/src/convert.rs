//! Writing traces: fio iolog v3 (to replay on a real drive with fio's `read_iolog`) and the
//! ssdlab binary format (fast repeated replay), and [`convert`] from any reader to either.
//!
//! # fio iolog v3 ([`FioWriter`])
//!
//! ```text
//! fio version 3 iolog
//! 0 /dev/null add
//! 0 /dev/null open
//! 10736 /dev/null trim 0 2147483648
//! 10752 /dev/null write 0 4096
//! 10760 /dev/null sync 0 0
//! 10892 /dev/null close
//! ```
//!
//! Time stamps are the records' times in µs (ns / 1000, truncated); fio replays the gaps
//! between them (`replay_no_stall=1` replays as fast as possible). Flushes are written as
//! `sync 0 0`. fio reads the length with `%u`, so a request longer than
//! [`MAX_FIO_LEN_BYTES`] (4 GiB − 4 KiB) is written as several consecutive requests. The
//! file name defaults to `/dev/null`, so a log replayed by mistake touches nothing; point it
//! at a device with fio's `replay_redirect=/dev/XXX`.
//!
//! # ssdlab binary format, version 1 ([`BinWriter`], read by [`crate::formats::bin`])
//!
//! All integers little-endian. A 16-byte header, then one 24-byte record per request until
//! the end of the file (record count = (file size − 16) / 24; no count in the header, so it
//! can be written in one streaming pass):
//!
//! | bytes | header field                         |
//! |-------|--------------------------------------|
//! | 0–7   | magic `SSDTRACE` (ASCII)             |
//! | 8–11  | format version, u32 = 1              |
//! | 12–15 | record size in bytes, u32 = 24       |
//!
//! | bytes | record field                                                                     |
//! |-------|----------------------------------------------------------------------------------|
//! | 0–7   | `time_ns`, u64                                                                   |
//! | 8–15  | `offset_bytes | op << 56`, u64: bits 0–55 the offset in bytes (< 64 PiB), bits 56–63 the op (0 read, 1 write, 2 trim, 3 flush) |
//! | 16–23 | `len_bytes`, u64                                                                 |
//!
//! A flush has offset 0 and length 0. With numpy:
//! `np.fromfile(path, dtype=[("time_ns","<u8"),("offset_op","<u8"),("len_bytes","<u8")], offset=16)`,
//! then `op = offset_op >> 56`, `offset_bytes = offset_op & (2**56 - 1)`.

use std::io::{self, Write};

use crate::error::TraceError;
use crate::formats::{bin, TraceReader};
use crate::info::Info;
use crate::record::{Op, Record};

/// Longest request written as one fio iolog line [bytes]: 4 GiB − 4 KiB (fio parses the
/// length as an unsigned 32-bit integer; this keeps the pieces 4 KiB-aligned).
pub const MAX_FIO_LEN_BYTES: u64 = (1 << 32) - 4096;

/// Default file name in written fio iologs.
pub const DEFAULT_FIO_FILENAME: &str = "/dev/null";

/// Output formats of [`convert`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutFormat {
    /// fio iolog v3.
    Fio,
    /// ssdlab binary.
    Bin,
}

impl OutFormat {
    pub fn from_name(name: &str) -> Option<OutFormat> {
        match name.to_ascii_lowercase().as_str() {
            "fio" | "iolog" => Some(OutFormat::Fio),
            "bin" | "binary" | "ssdlab" => Some(OutFormat::Bin),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OutFormat::Fio => "fio",
            OutFormat::Bin => "bin",
        }
    }
}

/// A sink of records.
pub trait RecordWriter {
    /// Writes one record.
    fn write(&mut self, r: &Record) -> io::Result<()>;
    /// Writes any trailer and flushes.
    fn finish(&mut self) -> io::Result<()>;
}

/// Writes fio iolog v3.
pub struct FioWriter<W: Write> {
    w: W,
    filename: String,
    last_us: u64,
}

impl<W: Write> FioWriter<W> {
    /// Writes the header and the `add`/`open` lines. `filename` must be non-empty, at most
    /// 255 bytes and without blanks (fio reads it with `%256s`).
    pub fn new(mut w: W, filename: &str) -> io::Result<Self> {
        if filename.is_empty() || filename.len() > 255 || filename.chars().any(char::is_whitespace) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("fio iolog file name {filename:?}: must be 1-255 characters without blanks")));
        }
        writeln!(w, "fio version 3 iolog")?;
        writeln!(w, "0 {filename} add")?;
        writeln!(w, "0 {filename} open")?;
        Ok(FioWriter { w, filename: filename.to_string(), last_us: 0 })
    }
}

impl<W: Write> RecordWriter for FioWriter<W> {
    fn write(&mut self, r: &Record) -> io::Result<()> {
        let us = r.time_ns / 1000;
        self.last_us = self.last_us.max(us);
        let action = match r.op {
            Op::Read => "read",
            Op::Write => "write",
            Op::Trim => "trim",
            Op::Flush => return writeln!(self.w, "{us} {} sync 0 0", self.filename),
        };
        let mut off = r.offset_bytes;
        let mut left = r.len_bytes;
        loop {
            let n = left.min(MAX_FIO_LEN_BYTES);
            writeln!(self.w, "{us} {} {action} {off} {n}", self.filename)?;
            off += n;
            left -= n;
            if left == 0 {
                return Ok(());
            }
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        writeln!(self.w, "{} {} close", self.last_us, self.filename)?;
        self.w.flush()
    }
}

/// Writes the ssdlab binary format.
pub struct BinWriter<W: Write> {
    w: W,
    records: u64,
}

impl<W: Write> BinWriter<W> {
    /// Writes the header.
    pub fn new(mut w: W) -> io::Result<Self> {
        w.write_all(&bin::header())?;
        Ok(BinWriter { w, records: 0 })
    }
}

impl<W: Write> RecordWriter for BinWriter<W> {
    #[inline]
    fn write(&mut self, r: &Record) -> io::Result<()> {
        let b = bin::encode(r).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("record {}: offset {} bytes is beyond the binary format's limit of 2^56 - 1 bytes", self.records + 1, r.offset_bytes))
        })?;
        self.records += 1;
        self.w.write_all(&b)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// Opens a writer of `format` over `w`; `fio_filename` is the file name in fio iologs.
pub fn writer<'a, W: Write + 'a>(w: W, format: OutFormat, fio_filename: &str) -> io::Result<Box<dyn RecordWriter + 'a>> {
    Ok(match format {
        OutFormat::Fio => Box::new(FioWriter::new(w, fio_filename)?),
        OutFormat::Bin => Box::new(BinWriter::new(w)?),
    })
}

/// Copies every record of `reader` to `out` and returns the statistics of what was read.
/// Read errors name the input; write errors name `out_name`.
pub fn convert(reader: &mut dyn TraceReader, out: &mut dyn RecordWriter, out_name: &str) -> Result<Info, TraceError> {
    let werr = |e: io::Error| TraceError::file(out_name, format!("cannot write: {e}"));
    let mut info = Info::new();
    for r in &mut *reader {
        let r = r?;
        info.add(&r);
        out.write(&r).map_err(werr)?;
    }
    out.finish().map_err(werr)?;
    info.read_stats = reader.stats();
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::{open_reader, Format, ReadOptions};

    fn records() -> Vec<Record> {
        vec![
            Record::new(1_000, Op::Write, 0, 4096),
            Record::new(2_000, Op::Trim, 1 << 20, 1 << 20),
            Record::flush(3_000),
            Record::new(4_000, Op::Read, 512, 512),
        ]
    }

    #[test]
    fn fio_round_trip() {
        let mut out = Vec::new();
        let mut w = FioWriter::new(&mut out, "/dev/null").unwrap();
        for r in records() {
            w.write(&r).unwrap();
        }
        w.finish().unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("fio version 3 iolog\n0 /dev/null add\n0 /dev/null open\n1 /dev/null write 0 4096\n"), "{text}");
        assert!(text.ends_with("4 /dev/null close\n"), "{text}");
        let back: Vec<Record> = open_reader(&out[..], "x", Format::Fio, &ReadOptions::default()).unwrap().map(Result::unwrap).collect();
        assert_eq!(back, records());
    }

    #[test]
    fn fio_splits_requests_over_4_gib() {
        let mut out = Vec::new();
        let mut w = FioWriter::new(&mut out, "f").unwrap();
        w.write(&Record::new(0, Op::Trim, 0, 10 << 30)).unwrap();
        w.finish().unwrap();
        let back: Vec<Record> = open_reader(&out[..], "x", Format::Fio, &ReadOptions::default()).unwrap().map(Result::unwrap).collect();
        assert_eq!(back.len(), 3);
        assert_eq!(back.iter().map(|r| r.len_bytes).sum::<u64>(), 10 << 30);
        assert!(back.iter().all(|r| r.len_bytes <= u32::MAX as u64 && r.len_bytes % 4096 == 0));
        assert!(FioWriter::new(Vec::new(), "has space").is_err());
    }

    #[test]
    fn bin_round_trip() {
        let mut out = Vec::new();
        let mut w = BinWriter::new(&mut out).unwrap();
        for r in records() {
            w.write(&r).unwrap();
        }
        w.finish().unwrap();
        assert_eq!(out.len(), 16 + 24 * 4);
        let back: Vec<Record> = open_reader(&out[..], "x", Format::Bin, &ReadOptions::default()).unwrap().map(Result::unwrap).collect();
        assert_eq!(back, records());
        let mut w = BinWriter::new(Vec::new()).unwrap();
        assert!(w.write(&Record::new(0, Op::Write, 1 << 60, 1)).is_err());
    }
}
