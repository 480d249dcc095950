//! The one internal record every reader produces and every writer consumes.
//!
//! Units: time in nanoseconds ([`Record::time_ns`]), addresses and sizes in bytes
//! ([`Record::offset_bytes`], [`Record::len_bytes`]). Formats that count in 512-byte sectors
//! (blkparse, DiskSim/MQSim, SPC, JEDEC, VSCSI) are multiplied by [`SECTOR_BYTES`] on reading.

/// Bytes in one sector of the sector-addressed trace formats.
pub const SECTOR_BYTES: u64 = 512;

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Op {
    Read = 0,
    Write = 1,
    /// Discard / TRIM / UNMAP of the range.
    Trim = 2,
    /// Cache flush (fsync, FLUSH CACHE, SYNCHRONIZE CACHE). Carries no range: offset and
    /// length are 0.
    Flush = 3,
}

impl Op {
    /// Every op, in code order (the index is [`Op::code`]).
    pub const ALL: [Op; 4] = [Op::Read, Op::Write, Op::Trim, Op::Flush];

    /// The op's number in the binary format and in chunked arrays (0 read, 1 write, 2 trim,
    /// 3 flush).
    #[inline]
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The op with this code, if valid.
    #[inline]
    pub fn from_code(code: u8) -> Option<Op> {
        match code {
            0 => Some(Op::Read),
            1 => Some(Op::Write),
            2 => Some(Op::Trim),
            3 => Some(Op::Flush),
            _ => None,
        }
    }

    /// Lower-case name: read, write, trim, flush.
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Trim => "trim",
            Op::Flush => "flush",
        }
    }

    /// True for ops that address a byte range (read, write, trim).
    #[inline]
    pub fn has_range(self) -> bool {
        !matches!(self, Op::Flush)
    }
}

/// One block-level request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    /// Issue time [ns], on the trace's own clock (see each format for its origin).
    pub time_ns: u64,
    pub op: Op,
    /// First byte addressed [bytes]; 0 for a flush.
    pub offset_bytes: u64,
    /// Bytes addressed [bytes]; 0 for a flush.
    pub len_bytes: u64,
}

impl Record {
    pub fn new(time_ns: u64, op: Op, offset_bytes: u64, len_bytes: u64) -> Record {
        Record { time_ns, op, offset_bytes, len_bytes }
    }

    /// A flush at `time_ns`.
    pub fn flush(time_ns: u64) -> Record {
        Record { time_ns, op: Op::Flush, offset_bytes: 0, len_bytes: 0 }
    }

    /// One past the last byte addressed [bytes] (saturating).
    #[inline]
    pub fn end_bytes(&self) -> u64 {
        self.offset_bytes.saturating_add(self.len_bytes)
    }
}
