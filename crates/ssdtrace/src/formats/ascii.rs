//! DiskSim and MQSim ASCII traces: one request per line, five blank-separated columns
//!
//! ```text
//! TIME DEVICE START_SECTOR SECTORS FLAGS
//! 13.191135   30  0       5   1          (DiskSim: time in ms)
//! 938513000 4 264719034 16 0             (MQSim: time in ns)
//! ```
//!
//! * TIME: arrival time, a decimal number in the trace's unit: DiskSim uses ms (its
//!   `%lf` field), MQSim ns (`Time_Unit` NANOSECOND, its default); [`ReadOptions::time_unit`]
//!   overrides (ns, us, ms, s). Converted to ns (digits below 1 ns are dropped).
//! * DEVICE: device number; [`ReadOptions::device`] keeps one device (others are ignored
//!   lines). Without it, all devices' requests share one address space.
//! * START_SECTOR, SECTORS: 512 B sectors (SECTORS > 0).
//! * FLAGS: DiskSim reads it as hex (`%x`) with bit 0 = read (`READ` = 0x1); MQSim writes
//!   `1` for read and `0` for write. Both: bit 0 set = read, clear = write; other bits are
//!   ignored. These formats have no trim or flush.
//! * Columns after the fifth are ignored (as DiskSim's `sscanf` does). `#` lines are
//!   comments.

use std::io::BufRead;

use crate::error::Bad;
use crate::formats::{Format, ReadOptions};
use crate::lines::{parse_hex, parse_scaled, parse_u64, sectors_to_bytes, ws_fields, LineParser, LineReader, Parsed};
use crate::record::{Op, Record};

pub(crate) fn reader<R: BufRead>(src: R, file: &str, format: Format, opts: &ReadOptions) -> LineReader<R, Ascii> {
    let unit = opts.time_unit.or(format.default_time_unit()).unwrap_or(crate::formats::TimeUnit::Ns);
    let what_time = match unit.name() {
        "ns" => "an arrival time in ns in field 1",
        "us" => "an arrival time in us in field 1",
        "ms" => "an arrival time in ms in field 1",
        _ => "an arrival time in s in field 1",
    };
    LineReader::new(src, Ascii { scale: unit.ns_scale(), device: opts.device, what_time }, file, opts.skip_bad)
}

pub(crate) struct Ascii {
    scale: u32,
    device: Option<u64>,
    what_time: &'static str,
}

impl LineParser for Ascii {
    #[inline]
    fn parse_line(&mut self, line: &[u8]) -> Result<Parsed, Bad> {
        if line.first() == Some(&b'#') {
            return Ok(Parsed::Ignore);
        }
        let mut f = ws_fields(line);
        let (Some(t), Some(dev), Some(blk), Some(cnt), Some(flags)) = (f.next(), f.next(), f.next(), f.next(), f.next()) else {
            return Err(Bad::new("5 columns 'TIME DEVICE START_SECTOR SECTORS FLAGS'", line));
        };
        let time_ns = parse_scaled(t, self.scale).ok_or_else(|| Bad::new(self.what_time, t))?;
        let dev = parse_u64(dev).ok_or_else(|| Bad::new("a device number in field 2", dev))?;
        let sector = parse_u64(blk).ok_or_else(|| Bad::new("a start sector (512 B) in field 3", blk))?;
        let count = parse_u64(cnt).ok_or_else(|| Bad::new("a request size in sectors in field 4", cnt))?;
        let flags = parse_hex(flags).ok_or_else(|| Bad::new("request flags (hex; 1 = read, 0 = write) in field 5", flags))?;
        if count == 0 {
            return Err(Bad::new("a request size > 0 sectors in field 4", cnt));
        }
        let off = sectors_to_bytes(sector).ok_or_else(|| Bad::new("a start sector below 2^55", blk))?;
        let len = sectors_to_bytes(count).ok_or_else(|| Bad::new("a request size below 2^55 sectors", cnt))?;
        if off.checked_add(len).is_none() {
            return Err(Bad::new("start + size below 2^64 bytes", line));
        }
        if self.device.is_some_and(|d| d != dev) {
            return Ok(Parsed::Ignore);
        }
        let op = if flags & 1 == 1 { Op::Read } else { Op::Write };
        Ok(Parsed::One(Record::new(time_ns, op, off, len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::TimeUnit;

    #[test]
    fn disksim_ms_and_mqsim_ns() {
        let d: Vec<Record> = reader("13.191135\t30\t0\t5\t1\n25.911729\t18\t28601\t12\t0\n".as_bytes(), "d", Format::Disksim, &ReadOptions::default())
            .map(Result::unwrap)
            .collect();
        assert_eq!(d, vec![Record::new(13_191_135, Op::Read, 0, 2560), Record::new(25_911_729, Op::Write, 28601 * 512, 12 * 512)]);
        let m: Vec<Record> = reader("938513000 4 264719034 16 0\n".as_bytes(), "m", Format::Mqsim, &ReadOptions::default()).map(Result::unwrap).collect();
        assert_eq!(m, vec![Record::new(938_513_000, Op::Write, 264719034 * 512, 8192)]);
        let opts = ReadOptions { time_unit: Some(TimeUnit::Ms), ..Default::default() };
        let m: Vec<Record> = reader("2 4 1 16 0x11\n".as_bytes(), "m", Format::Mqsim, &opts).map(Result::unwrap).collect();
        assert_eq!(m, vec![Record::new(2_000_000, Op::Read, 512, 8192)]);
    }

    #[test]
    fn device_filter() {
        let opts = ReadOptions { device: Some(4), ..Default::default() };
        let m: Vec<Record> = reader("1 4 0 8 0\n2 5 0 8 0\n3 4 8 8 1\n".as_bytes(), "m", Format::Mqsim, &opts).map(Result::unwrap).collect();
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn errors() {
        for (text, what) in [
            ("1 2 3 4\n", "expected 5 columns"),
            ("x 2 3 4 0\n", "expected an arrival time in ms in field 1, got \"x\""),
            ("1 -2 3 4 0\n", "device number"),
            ("1 2 3 0 0\n", "size > 0 sectors"),
            ("1 2 3 4 z\n", "request flags"),
            ("1 2 99999999999999999999 4 0\n", "start sector"),
        ] {
            let r: Vec<_> = reader(text.as_bytes(), "d.trace", Format::Disksim, &ReadOptions::default()).collect();
            let e = r[0].as_ref().unwrap_err();
            assert!(e.to_string().starts_with("d.trace:1: ") && e.to_string().contains(what), "{e}");
        }
    }
}
