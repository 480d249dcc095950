//! Trace formats: one file per format, all behind [`TraceReader`] (an iterator of
//! [`Record`]s that also reports line counts). Open one with [`open_reader`] (any `BufRead`)
//! or [`open_path`] (a file; the format may be detected from its content with [`detect`]).
//!
//! | name       | file                                   | time            | address / size           |
//! |------------|----------------------------------------|-----------------|--------------------------|
//! | `blkparse` | blkparse default text output           | s.ns            | 512 B sectors            |
//! | `fio`      | fio iolog v2 / v3                      | v3: µs; v2: waits | bytes                  |
//! | `disksim`  | DiskSim ASCII (`time dev blk cnt flags`) | ms (option)   | 512 B sectors            |
//! | `mqsim`    | MQSim ASCII (same columns)             | ns (option)     | 512 B sectors            |
//! | `msr`      | MSR Cambridge CSV                      | 100 ns ticks    | bytes                    |
//! | `spc`      | SPC / UMass CSV                        | s               | 512 B blocks / bytes     |
//! | `jedec`    | JEDEC master-trace text (`e/s/h LBA LEN`) | none         | 512 B sectors            |
//! | `vscsi`    | CloudPhysics VSCSI binary (v1, v2)     | µs              | 512 B sectors / bytes    |
//! | `bin`      | ssdlab binary ([`crate::convert`])     | ns              | bytes                    |
//!
//! Every reader streams: it holds one line (or one buffer of binary records), never the
//! trace. Malformed lines are errors naming the file and line; with
//! [`ReadOptions::skip_bad`] they are skipped and counted in [`ReadStats::skipped_bad`]
//! instead. Lines that are valid but are not requests (headers, comments, other blkparse
//! events, fio file actions) are counted in [`ReadStats::ignored_lines`].

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::TraceError;
use crate::record::Record;

pub mod ascii;
pub mod bin;
pub mod blkparse;
pub mod fio;
pub mod jedec;
pub mod msr;
pub mod spc;
pub mod vscsi;

/// Buffer size of file readers [bytes].
pub const READ_BUFFER_BYTES: usize = 1 << 16;

/// A streaming trace reader.
pub trait TraceReader: Iterator<Item = Result<Record, TraceError>> {
    /// Counters so far (lines read, ignored, skipped as malformed).
    fn stats(&self) -> ReadStats;
}

/// Line counters of a reader. For binary formats "lines" are records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines (records) read so far.
    pub lines: u64,
    /// Valid lines that are not requests: blank lines, headers, comments, file actions,
    /// blkparse events other than the chosen one, the blkparse summary, commands the
    /// format has but that are not read/write/trim/flush.
    pub ignored_lines: u64,
    /// Malformed lines skipped because of [`ReadOptions::skip_bad`].
    pub skipped_bad: u64,
    /// The first skipped line's error, to show what was wrong.
    pub first_bad: Option<TraceError>,
}

impl ReadStats {
    /// Counts a malformed line skipped under [`ReadOptions::skip_bad`], keeping the first error.
    pub(crate) fn skip_bad(&mut self, err: TraceError) {
        self.skipped_bad += 1;
        self.first_bad.get_or_insert(err);
    }
}

/// A trace file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Blkparse,
    Fio,
    Disksim,
    Mqsim,
    Msr,
    Spc,
    Jedec,
    Vscsi,
    Bin,
}

impl Format {
    pub const ALL: [Format; 9] = [
        Format::Blkparse,
        Format::Fio,
        Format::Disksim,
        Format::Mqsim,
        Format::Msr,
        Format::Spc,
        Format::Jedec,
        Format::Vscsi,
        Format::Bin,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Blkparse => "blkparse",
            Format::Fio => "fio",
            Format::Disksim => "disksim",
            Format::Mqsim => "mqsim",
            Format::Msr => "msr",
            Format::Spc => "spc",
            Format::Jedec => "jedec",
            Format::Vscsi => "vscsi",
            Format::Bin => "bin",
        }
    }

    /// The format with this name or alias (case-insensitive): blkparse|blktrace, fio|iolog,
    /// disksim|ascii, mqsim, msr|msr-cambridge, spc|umass, jedec, vscsi|cloudphysics,
    /// bin|ssdlab.
    pub fn from_name(name: &str) -> Option<Format> {
        Some(match name.to_ascii_lowercase().as_str() {
            "blkparse" | "blktrace" => Format::Blkparse,
            "fio" | "iolog" | "fio-iolog" => Format::Fio,
            "disksim" | "ascii" => Format::Disksim,
            "mqsim" => Format::Mqsim,
            "msr" | "msr-cambridge" => Format::Msr,
            "spc" | "umass" => Format::Spc,
            "jedec" => Format::Jedec,
            "vscsi" | "cloudphysics" => Format::Vscsi,
            "bin" | "ssdlab" | "binary" => Format::Bin,
            _ => return None,
        })
    }

    /// One line: what the file looks like and its units.
    pub fn description(self) -> &'static str {
        match self {
            Format::Blkparse => "blkparse text output: 'MAJ,MIN CPU SEQ SECONDS PID ACTION RWBS SECTOR + COUNT [PROC]'; time s, sectors of 512 B; RWBS D = discard (trim), leading F = flush",
            Format::Fio => "fio iolog v2/v3 ('fio version N iolog' header): '[TIME_US] FILE read|write|trim|sync|datasync OFFSET LENGTH', bytes; v3 time in µs, v2 time from 'wait' lines (µs)",
            Format::Disksim => "DiskSim ASCII: 'TIME DEVICE BLOCK COUNT FLAGS' (flags hex, bit 0 = read); time ms (change with time unit), block/count in 512 B sectors",
            Format::Mqsim => "MQSim ASCII: 'TIME DEVICE LBA SECTORS TYPE' (type 1 = read, 0 = write); time ns (change with time unit), 512 B sectors",
            Format::Msr => "MSR Cambridge CSV: 'Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime'; time in 100 ns Windows filetime ticks (made relative to the first record), offset/size bytes",
            Format::Spc => "SPC/UMass CSV: 'ASU,LBA,SIZE,OPCODE,TIMESTAMP'; LBA in 512 B blocks, size bytes, opcode r/w, time s",
            Format::Jedec => "JEDEC master-trace text: 'OP LBA LENGTH' with OP e = write, s = trim, h = flush; LBA/length in 512 B sectors; no times (all 0)",
            Format::Vscsi => "CloudPhysics VSCSI binary (v1 32-byte / v2 40-byte records): SCSI opcode, LBA in 512 B sectors, length bytes, time µs",
            Format::Bin => "ssdlab binary: 'SSDTRACE' header + 24-byte little-endian records (time ns, offset bytes + op, length bytes)",
        }
    }

    /// Binary formats count records, not lines.
    pub fn is_binary(self) -> bool {
        matches!(self, Format::Vscsi | Format::Bin)
    }

    /// The time unit of the numbers in the file when the user gives none (DiskSim: ms,
    /// MQSim: ns); None for formats whose unit is fixed.
    pub fn default_time_unit(self) -> Option<TimeUnit> {
        match self {
            Format::Disksim => Some(TimeUnit::Ms),
            Format::Mqsim => Some(TimeUnit::Ns),
            _ => None,
        }
    }

    /// Whether the format has a device / disk / ASU column that [`ReadOptions::device`]
    /// can select.
    pub fn has_device(self) -> bool {
        matches!(self, Format::Disksim | Format::Mqsim | Format::Msr | Format::Spc)
    }
}

/// Unit of the time column of DiskSim / MQSim traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Ns,
    Us,
    Ms,
    S,
}

impl TimeUnit {
    /// Decimal places from this unit to ns (ns 0, µs 3, ms 6, s 9).
    pub fn ns_scale(self) -> u32 {
        match self {
            TimeUnit::Ns => 0,
            TimeUnit::Us => 3,
            TimeUnit::Ms => 6,
            TimeUnit::S => 9,
        }
    }

    pub fn from_name(name: &str) -> Option<TimeUnit> {
        Some(match name.to_ascii_lowercase().as_str() {
            "ns" => TimeUnit::Ns,
            "us" | "µs" => TimeUnit::Us,
            "ms" => TimeUnit::Ms,
            "s" => TimeUnit::S,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "us",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
        }
    }
}

/// Which blkparse event is a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlkEvent {
    /// `Q`: the request as the file system / application queued it (before merging).
    Queue,
    /// `D`: the request as issued to the device driver (after merging and splitting).
    Dispatch,
}

impl BlkEvent {
    pub fn from_name(name: &str) -> Option<BlkEvent> {
        Some(match name.to_ascii_lowercase().as_str() {
            "queue" | "q" => BlkEvent::Queue,
            "dispatch" | "issue" | "d" => BlkEvent::Dispatch,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            BlkEvent::Queue => "queue",
            BlkEvent::Dispatch => "dispatch",
        }
    }

    /// The blkparse action letter.
    pub fn action(self) -> u8 {
        match self {
            BlkEvent::Queue => b'Q',
            BlkEvent::Dispatch => b'D',
        }
    }
}

/// Reader options. `None` means the format's default; giving an option a format does not
/// have is an error (so a mistyped command line is not silently ignored).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// blkparse: which event is a request (default: dispatch, what the drive received).
    pub events: Option<BlkEvent>,
    /// disksim / mqsim: unit of the time column (default ms / ns).
    pub time_unit: Option<TimeUnit>,
    /// Skip malformed lines (counted in [`ReadStats::skipped_bad`]) instead of failing.
    pub skip_bad: bool,
    /// disksim / mqsim / msr / spc: keep only requests of this device / disk / ASU number.
    pub device: Option<u64>,
}

impl ReadOptions {
    /// Checks the options against the format.
    pub fn check(&self, format: Format, file: &str) -> Result<(), TraceError> {
        if self.events.is_some() && format != Format::Blkparse {
            return Err(TraceError::file(file, format!("the events option (queue|dispatch) applies to blkparse traces only, not {}", format.name())));
        }
        if self.time_unit.is_some() && format.default_time_unit().is_none() {
            return Err(TraceError::file(file, format!("the time-unit option applies to disksim and mqsim traces only; {} has a fixed time unit", format.name())));
        }
        if self.device.is_some() && !format.has_device() {
            return Err(TraceError::file(file, format!("the device option applies to disksim, mqsim, msr and spc traces only, not {}", format.name())));
        }
        Ok(())
    }
}

/// A reader of `format` over `src`; `file` names the trace in errors.
/// The reader is `Send` (it can be moved to another thread) when `src` is.
pub fn open_reader<'a, R: BufRead + Send + 'a>(src: R, file: &str, format: Format, opts: &ReadOptions) -> Result<Box<dyn TraceReader + Send + 'a>, TraceError> {
    opts.check(format, file)?;
    Ok(match format {
        Format::Blkparse => Box::new(blkparse::reader(src, file, opts)),
        Format::Fio => Box::new(fio::reader(src, file, opts)),
        Format::Disksim | Format::Mqsim => Box::new(ascii::reader(src, file, format, opts)),
        Format::Msr => Box::new(msr::reader(src, file, opts)),
        Format::Spc => Box::new(spc::reader(src, file, opts)),
        Format::Jedec => Box::new(jedec::reader(src, file, opts)),
        Format::Vscsi => Box::new(vscsi::VscsiReader::new(src, file, opts)?),
        Format::Bin => Box::new(bin::BinReader::new(src, file, opts)?),
    })
}

/// Opens the trace at `path` (format detected when `format` is None) and returns the format
/// used and the reader.
pub fn open_path(path: &Path, format: Option<Format>, opts: &ReadOptions) -> Result<(Format, Box<dyn TraceReader + Send>), TraceError> {
    let name = path.display().to_string();
    let format = match format {
        Some(f) => f,
        None => detect(path)?,
    };
    let file = File::open(path).map_err(|e| TraceError::file(&name, format!("cannot open: {e}")))?;
    let reader = open_reader(BufReader::with_capacity(READ_BUFFER_BYTES, file), &name, format, opts)?;
    Ok((format, reader))
}

/// Bytes read from the start of a file to detect its format.
const DETECT_BYTES: usize = 8192;

/// The format of the trace at `path`, from its first bytes; an error naming the file says
/// to pass the format explicitly when the content is not recognised.
pub fn detect(path: &Path) -> Result<Format, TraceError> {
    let name = path.display().to_string();
    let mut file = File::open(path).map_err(|e| TraceError::file(&name, format!("cannot open: {e}")))?;
    let mut head = Vec::with_capacity(DETECT_BYTES);
    file.by_ref()
        .take(DETECT_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| TraceError::file(&name, format!("read error: {e}")))?;
    detect_bytes(&head).ok_or_else(|| {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        TraceError::file(&name, format!("cannot tell the trace format from the content; give it explicitly (one of {})", names.join(", ")))
    })
}

/// The format of a trace starting with `head`, if recognisable. DiskSim and MQSim share a
/// layout: a time with a decimal point is taken as DiskSim (ms), an integer time as MQSim (ns).
pub fn detect_bytes(head: &[u8]) -> Option<Format> {
    use crate::lines::{csv_fields, parse_scaled, parse_u64, ws_fields};
    if head.starts_with(bin::MAGIC) {
        return Some(Format::Bin);
    }
    let is_text = head.iter().all(|&c| c >= 0x20 || c == b'\n' || c == b'\r' || c == b'\t');
    if !is_text {
        return vscsi::detect_version(head).map(|_| Format::Vscsi);
    }
    let text = if head.len() == DETECT_BYTES {
        // drop the possibly cut last line
        let end = head.iter().rposition(|&c| c == b'\n').unwrap_or(head.len());
        &head[..end]
    } else {
        head
    };
    let mut lines = text.split(|&c| c == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l)).filter(|l| !l.iter().all(|c| c.is_ascii_whitespace()));
    let first = lines.next()?;
    let first = first.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(first);
    if first.starts_with(b"fio version") {
        return Some(Format::Fio);
    }
    let data_line = if first.starts_with(b"Timestamp,") { lines.next()? } else { first };
    let tokens: Vec<&[u8]> = ws_fields(data_line).collect();
    let is_dev = |t: &[u8]| {
        let mut parts = t.split(|&c| c == b',');
        matches!((parts.next(), parts.next(), parts.next()), (Some(a), Some(b), None) if parse_u64(a).is_some() && parse_u64(b).is_some())
    };
    if tokens.len() >= 7 && is_dev(tokens[0]) && tokens[3].contains(&b'.') && parse_scaled(tokens[3], 9).is_some() {
        return Some(Format::Blkparse);
    }
    if data_line.contains(&b',') {
        let f: Vec<&[u8]> = csv_fields(data_line).collect();
        if f.len() >= 7 && (f[3].eq_ignore_ascii_case(b"read") || f[3].eq_ignore_ascii_case(b"write")) {
            return Some(Format::Msr);
        }
        if f.len() >= 5 && matches!(f[3], b"r" | b"R" | b"w" | b"W") {
            return Some(Format::Spc);
        }
        return None;
    }
    if let Some(op) = tokens.first() {
        if op.len() == 1 && matches!(op[0].to_ascii_lowercase(), b'e' | b's' | b'h') {
            return Some(Format::Jedec);
        }
    }
    if tokens.len() >= 5 && tokens[..5].iter().all(|t| parse_scaled(t, 0).is_some() || crate::lines::parse_hex(t).is_some()) {
        return Some(if tokens[0].contains(&b'.') { Format::Disksim } else { Format::Mqsim });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases() {
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
        assert_eq!(Format::from_name("UMass"), Some(Format::Spc));
        assert_eq!(Format::from_name("nope"), None);
    }

    #[test]
    fn detects_each_text_format() {
        let cases: [(&[u8], Format); 8] = [
            (b"fio version 3 iolog\n1 /dev/x add\n", Format::Fio),
            (b"  8,0    3        1     0.000000000  697  Q  WS 3414144 + 8 [kworker]\n", Format::Blkparse),
            (b"13.191135\t30\t0\t5\t1\n", Format::Disksim),
            (b"938513000 4 264719034 16 0\n", Format::Mqsim),
            (b"128166372003061629,hm,0,Read,3037175808,4096,35514\n", Format::Msr),
            (b"0,303567,3584,w,0.000000\n", Format::Spc),
            (b"e 2048 8\nh\n", Format::Jedec),
            (b"SSDTRACE\x01\x00\x00\x00\x18\x00\x00\x00", Format::Bin),
        ];
        for (head, want) in cases {
            assert_eq!(detect_bytes(head), Some(want), "{}", String::from_utf8_lossy(head));
        }
        assert_eq!(detect_bytes(b"hello world\n"), None);
    }

    #[test]
    fn options_a_format_lacks_are_errors() {
        let opts = ReadOptions { time_unit: Some(TimeUnit::Ms), ..Default::default() };
        let e = opts.check(Format::Fio, "x.iolog").unwrap_err();
        assert!(e.to_string().contains("time-unit"), "{e}");
        let opts = ReadOptions { events: Some(BlkEvent::Queue), ..Default::default() };
        assert!(opts.check(Format::Msr, "x").is_err());
        assert!(opts.check(Format::Blkparse, "x").is_ok());
        let opts = ReadOptions { device: Some(1), ..Default::default() };
        assert!(opts.check(Format::Jedec, "x").is_err());
        assert!(opts.check(Format::Spc, "x").is_ok());
    }
}
