//! Streaming statistics of a trace (what `ssdlab trace info` prints): request counts and
//! bytes per op, a request-size histogram, the address span, the time span, sequentiality of
//! writes. Constant memory: one pass, no per-record storage.
//!
//! Units: bytes and ns throughout. Size histogram bucket `k` counts requests with
//! `2^(k-1) < len_bytes <= 2^k` (bucket 0: `len_bytes <= 1`); e.g. bucket 12 is
//! (2 KiB, 4 KiB], bucket 13 is (4 KiB, 8 KiB].

use crate::error::TraceError;
use crate::formats::{ReadStats, TraceReader};
use crate::record::{Op, Record};

/// Number of size-histogram buckets (sizes up to 2^64 bytes).
pub const SIZE_BUCKETS: usize = 65;

/// The histogram bucket of a request of `len_bytes` (ceil(log2(len)), 0 for 0 and 1).
#[inline]
pub fn size_bucket(len_bytes: u64) -> usize {
    if len_bytes <= 1 {
        0
    } else {
        (64 - (len_bytes - 1).leading_zeros()) as usize
    }
}

/// Counts of one op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpStats {
    pub count: u64,
    /// Sum of lengths [bytes].
    pub bytes: u64,
    /// Requests per size bucket (see [`size_bucket`]).
    pub size_hist: [u64; SIZE_BUCKETS],
    /// Highest end (offset + length) of a request with a length [bytes]; 0 for flushes or
    /// none (a replay drops requests of no length, wherever they point).
    pub max_end_bytes: u64,
}

impl Default for OpStats {
    fn default() -> Self {
        OpStats { count: 0, bytes: 0, size_hist: [0; SIZE_BUCKETS], max_end_bytes: 0 }
    }
}

/// Statistics of a stream of records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    /// Records seen.
    pub records: u64,
    /// Per op, indexed by [`Op::code`] (read, write, trim, flush).
    pub ops: [OpStats; 4],
    /// Lowest offset of a read/write/trim [bytes]; None if there was none.
    pub min_offset_bytes: Option<u64>,
    /// Highest end (offset + length) of a read/write/trim [bytes].
    pub max_end_bytes: u64,
    /// Time of the first and last record [ns].
    pub first_time_ns: Option<u64>,
    pub last_time_ns: u64,
    /// Earliest and latest time [ns] (differ from first/last when times go backwards).
    pub min_time_ns: u64,
    pub max_time_ns: u64,
    /// Records whose time is earlier than the previous record's.
    pub time_regressions: u64,
    /// Writes that start where the previous write ended (other ops in between do not
    /// matter), and their bytes.
    pub sequential_writes: u64,
    pub sequential_write_bytes: u64,
    prev_write_end: Option<u64>,
    /// The reader's line counters at the end (lines, ignored, skipped as malformed).
    pub read_stats: ReadStats,
}

impl Default for Info {
    fn default() -> Self {
        Info::new()
    }
}

impl Info {
    pub fn new() -> Info {
        Info {
            records: 0,
            ops: Default::default(),
            min_offset_bytes: None,
            max_end_bytes: 0,
            first_time_ns: None,
            last_time_ns: 0,
            min_time_ns: u64::MAX,
            max_time_ns: 0,
            time_regressions: 0,
            sequential_writes: 0,
            sequential_write_bytes: 0,
            prev_write_end: None,
            read_stats: ReadStats::default(),
        }
    }

    /// Adds one record.
    #[inline]
    pub fn add(&mut self, r: &Record) {
        self.records += 1;
        let s = &mut self.ops[r.op.code() as usize];
        s.count += 1;
        s.bytes = s.bytes.saturating_add(r.len_bytes);
        if r.op.has_range() {
            s.size_hist[size_bucket(r.len_bytes)] += 1;
            if r.len_bytes > 0 {
                s.max_end_bytes = s.max_end_bytes.max(r.end_bytes());
            }
            self.min_offset_bytes = Some(self.min_offset_bytes.map_or(r.offset_bytes, |m| m.min(r.offset_bytes)));
            self.max_end_bytes = self.max_end_bytes.max(r.end_bytes());
        }
        if r.op == Op::Write {
            if self.prev_write_end == Some(r.offset_bytes) {
                self.sequential_writes += 1;
                self.sequential_write_bytes += r.len_bytes;
            }
            self.prev_write_end = Some(r.end_bytes());
        }
        if self.first_time_ns.is_none() {
            self.first_time_ns = Some(r.time_ns);
        } else if r.time_ns < self.last_time_ns {
            self.time_regressions += 1;
        }
        self.last_time_ns = r.time_ns;
        self.min_time_ns = self.min_time_ns.min(r.time_ns);
        self.max_time_ns = self.max_time_ns.max(r.time_ns);
    }

    /// Reads the whole trace; stops at the first error.
    pub fn from_reader(reader: &mut dyn TraceReader) -> Result<Info, TraceError> {
        let mut info = Info::new();
        for r in &mut *reader {
            info.add(&r?);
        }
        info.read_stats = reader.stats();
        Ok(info)
    }

    /// Stats of one op.
    pub fn op(&self, op: Op) -> &OpStats {
        &self.ops[op.code() as usize]
    }

    /// Highest end − lowest offset over reads, writes and trims [bytes]; 0 if none.
    pub fn span_bytes(&self) -> u64 {
        self.min_offset_bytes.map_or(0, |m| self.max_end_bytes - m)
    }

    /// Latest − earliest time [ns]; 0 if fewer than two records.
    pub fn duration_ns(&self) -> u64 {
        if self.records == 0 {
            0
        } else {
            self.max_time_ns - self.min_time_ns
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets() {
        assert_eq!(size_bucket(0), 0);
        assert_eq!(size_bucket(1), 0);
        assert_eq!(size_bucket(2), 1);
        assert_eq!(size_bucket(4096), 12);
        assert_eq!(size_bucket(4097), 13);
        assert_eq!(size_bucket(u64::MAX), 64);
    }

    #[test]
    fn counts_span_duration_sequential() {
        let mut i = Info::new();
        for r in [
            Record::new(10, Op::Write, 4096, 4096),
            Record::new(20, Op::Write, 8192, 8192),
            Record::flush(30),
            Record::new(25, Op::Write, 16384, 4096),
            Record::new(40, Op::Trim, 1 << 20, 1 << 20),
            Record::new(50, Op::Read, 0, 512),
        ] {
            i.add(&r);
        }
        assert_eq!(i.records, 6);
        assert_eq!(i.op(Op::Write).count, 3);
        assert_eq!(i.op(Op::Write).bytes, 16384);
        assert_eq!(i.op(Op::Write).size_hist[12], 2);
        assert_eq!(i.op(Op::Write).size_hist[13], 1);
        assert_eq!(i.op(Op::Flush).count, 1);
        assert_eq!(i.span_bytes(), 2 << 20);
        assert_eq!(i.duration_ns(), 40);
        assert_eq!(i.time_regressions, 1);
        assert_eq!((i.sequential_writes, i.sequential_write_bytes), (2, 12288));
        let ends = [Op::Read, Op::Write, Op::Trim, Op::Flush].map(|op| i.op(op).max_end_bytes);
        assert_eq!(ends, [512, 20480, 2 << 20, 0]);
        // A request of no length (which a replay drops) moves no op's highest end.
        i.add(&Record::new(60, Op::Read, 1 << 40, 0));
        assert_eq!(i.op(Op::Read).max_end_bytes, 512);
    }
}
