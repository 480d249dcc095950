//! Writers of sample traces in every reader format, for tests, fuzzing and the parse
//! benchmark (real traces come from elsewhere; ssdlab itself converts only to fio iolog v3
//! and its binary format, see [`crate::convert`]).
//!
//! [`write_sample`] writes one record the way the format's own tool would. A record must be
//! representable: sector formats need 512 B multiples; DiskSim/MQSim/MSR/SPC have only reads
//! and writes; JEDEC has no reads and no time; fio v3 keeps µs; MSR keeps 100 ns ticks and
//! its times are relative to the first record (give the first record time 0 for an exact
//! round trip). [`representable`] says whether a record survives a round trip.

use std::io::Write;

use crate::formats::{bin, Format};
use crate::record::{Op, Record, SECTOR_BYTES};

/// An MSR filetime used as the time origin of written samples (2007-02-22).
pub const MSR_BASE_TICKS: u64 = 128_166_372_003_061_629;

/// Whether `r` is read back unchanged after [`write_sample`] in `format`.
pub fn representable(format: Format, r: &Record) -> bool {
    let sectors = r.offset_bytes.is_multiple_of(SECTOR_BYTES) && r.len_bytes.is_multiple_of(SECTOR_BYTES);
    let rw = matches!(r.op, Op::Read | Op::Write);
    let data = r.op == Op::Flush || r.len_bytes > 0;
    data && match format {
        Format::Blkparse => sectors,
        Format::Fio => r.time_ns.is_multiple_of(1000) && (r.op != Op::Flush || r.offset_bytes == 0),
        Format::Disksim | Format::Mqsim => sectors && rw,
        Format::Msr => rw && r.time_ns.is_multiple_of(100),
        Format::Spc => rw && r.offset_bytes.is_multiple_of(SECTOR_BYTES),
        Format::Jedec => sectors && r.op != Op::Read && r.time_ns == 0,
        Format::Vscsi => sectors && r.time_ns.is_multiple_of(1000) && r.len_bytes <= u32::MAX as u64,
        Format::Bin => r.offset_bytes <= bin::MAX_OFFSET_BYTES,
    }
}

/// The bytes a file of `format` starts with (fio header, binary header; empty otherwise).
pub fn header(format: Format) -> Vec<u8> {
    match format {
        Format::Fio => b"fio version 3 iolog\n0 /dev/sdb add\n0 /dev/sdb open\n".to_vec(),
        Format::Bin => bin::header().to_vec(),
        _ => Vec::new(),
    }
}

/// Appends record `r` (the `seq`-th of the file, from 0) to `out` in `format`.
pub fn write_sample(format: Format, r: &Record, seq: u64, out: &mut Vec<u8>) {
    let sec = r.offset_bytes / SECTOR_BYTES;
    let cnt = r.len_bytes / SECTOR_BYTES;
    let (s, ns) = (r.time_ns / 1_000_000_000, r.time_ns % 1_000_000_000);
    let w = out;
    match format {
        Format::Blkparse => {
            let cpu = seq % 8;
            let head = format!("  8,16  {cpu:2} {:8} {s:5}.{ns:09} {:5}  D ", seq + 1, 1000 + cpu);
            let _ = match r.op {
                Op::Flush => writeln!(w, "{head} FN [kworker/{cpu}:1H]"),
                Op::Read => writeln!(w, "{head}  RA {sec} + {cnt} [fio]"),
                Op::Write => writeln!(w, "{head} WS {sec} + {cnt} [fio]"),
                Op::Trim => writeln!(w, "{head}  D {sec} + {cnt} [fstrim]"),
            };
        }
        Format::Fio => {
            let act = match r.op {
                Op::Read => "read",
                Op::Write => "write",
                Op::Trim => "trim",
                Op::Flush => "sync",
            };
            let _ = writeln!(w, "{} /dev/sdb {act} {} {}", r.time_ns / 1000, r.offset_bytes, r.len_bytes);
        }
        Format::Disksim => {
            let _ = writeln!(w, "{}.{:06}\t{}\t{sec}\t{cnt}\t{}", r.time_ns / 1_000_000, r.time_ns % 1_000_000, seq % 4, u8::from(r.op == Op::Read));
        }
        Format::Mqsim => {
            let _ = writeln!(w, "{} {} {sec} {cnt} {}", r.time_ns, seq % 4, u8::from(r.op == Op::Read));
        }
        Format::Msr => {
            let kind = if r.op == Op::Read { "Read" } else { "Write" };
            let _ = writeln!(w, "{},hm,0,{kind},{},{},{}", MSR_BASE_TICKS + r.time_ns / 100, r.offset_bytes, r.len_bytes, 1000 + seq % 5000);
        }
        Format::Spc => {
            let _ = writeln!(w, "{},{sec},{},{},{s}.{ns:09}", seq % 2, r.len_bytes, if r.op == Op::Read { 'r' } else { 'w' });
        }
        Format::Jedec => {
            let _ = match r.op {
                Op::Write => writeln!(w, "e {sec} {cnt}"),
                Op::Trim => writeln!(w, "s {sec} {cnt}"),
                _ => writeln!(w, "h"),
            };
        }
        Format::Vscsi => {
            let cmd: u16 = match r.op {
                Op::Read => 0x28,
                Op::Write => 0x2a,
                Op::Trim => 0x42,
                Op::Flush => 0x35,
            };
            w.extend((seq as u32).to_le_bytes());
            w.extend((r.len_bytes as u32).to_le_bytes());
            w.extend(1u32.to_le_bytes());
            w.extend(cmd.to_le_bytes());
            w.extend(0x100u16.to_le_bytes());
            w.extend(sec.to_le_bytes());
            w.extend((r.time_ns / 1000).to_le_bytes());
        }
        Format::Bin => w.extend(bin::encode(r).expect("offset below 2^56")),
    }
}

/// Records of every op with sector-aligned ranges, times in whole µs starting at 0: a mix
/// every format can represent part of (filter with [`representable`]).
pub fn sample_records(n: usize, seed: u64) -> Vec<Record> {
    let mut rng = crate::rng::Rng::new(seed);
    let mut t = 0u64;
    (0..n)
        .map(|i| {
            if i > 0 {
                t += rng.below(2000) * 1000;
            }
            let op = Op::ALL[rng.weighted(&[3.0, 5.0, 1.0, 1.0])];
            if op == Op::Flush {
                return Record::flush(t);
            }
            let off = rng.below(1 << 30) * SECTOR_BYTES;
            let len = (1 + rng.below(256)) * SECTOR_BYTES;
            Record::new(t, op, off, len)
        })
        .collect()
}
