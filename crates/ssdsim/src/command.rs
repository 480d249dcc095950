//! What the host asks of the drive: a [`Command`] (read, write, TRIM or flush of 4 KiB
//! units), and a fio-like [`Job`] of one [`Pattern`], the simplest phase. Workloads
//! ([`crate::workload`]) and trace replays ([`crate::replay`]) produce commands; the
//! simulation ([`crate::sim`]) runs them.

use crate::time::{Ns, NS_PER_S};

/// What a replayed command does (the first three in fio's direction order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmdKind {
    Read = 0,
    Write = 1,
    Trim = 2,
    Flush = 3,
}

impl CmdKind {
    /// The trace op code (0 read, 1 write, 2 trim, 3 flush; as `ssdtrace::Op::code`).
    pub fn from_code(code: u8) -> Option<CmdKind> {
        Some(match code {
            0 => CmdKind::Read,
            1 => CmdKind::Write,
            2 => CmdKind::Trim,
            3 => CmdKind::Flush,
            _ => return None,
        })
    }

    #[inline]
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// One host command in 4 KiB units (`units` = 0 for a flush).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    pub kind: CmdKind,
    pub unit: u64,
    pub units: u64,
}

/// Access pattern of a phase (fio `rw=` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Sequential writes from the start of the span (wrapping at its end).
    SeqWrite,
    /// Uniformly random, block-aligned writes over the span.
    RandWrite,
    SeqRead,
    RandRead,
    /// Sequential TRIM (deallocate) commands over the span.
    Trim,
}

impl Pattern {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "write" => Pattern::SeqWrite,
            "randwrite" => Pattern::RandWrite,
            "read" => Pattern::SeqRead,
            "randread" => Pattern::RandRead,
            "trim" => Pattern::Trim,
            _ => return None,
        })
    }

    /// The fio `rw=` name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::SeqWrite => "write",
            Pattern::RandWrite => "randwrite",
            Pattern::SeqRead => "read",
            Pattern::RandRead => "randread",
            Pattern::Trim => "trim",
        }
    }
}

/// One phase of host work. Addresses and sizes are in 4 KiB units.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub pattern: Pattern,
    /// Block size [4 KiB units].
    pub bs_units: u64,
    /// Commands kept outstanding.
    pub qd: u32,
    /// First logical unit of the span.
    pub start_unit: u64,
    /// Span length [4 KiB units].
    pub span_units: u64,
    /// Stop submitting after this much simulated time [ns]...
    pub duration_ns: Option<Ns>,
    /// ...or after this many units have been submitted (whichever comes first).
    pub io_units: Option<u64>,
    /// Series interval [ns].
    pub interval_ns: Ns,
}

impl Job {
    /// A job over the whole span: `duration_ns` or, if None, one pass over the span.
    pub fn new(pattern: Pattern, bs_units: u64, qd: u32, start_unit: u64, span_units: u64) -> Self {
        Job { pattern, bs_units, qd, start_unit, span_units, duration_ns: None, io_units: None, interval_ns: NS_PER_S }
    }
}
