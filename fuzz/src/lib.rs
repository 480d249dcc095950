//! What each fuzz target checks, shared by the targets in `fuzz_targets/`.
//!
//! A *crash* is a panic (including an arithmetic overflow: cargo fuzz builds with debug
//! assertions), an abort, a timeout or running out of memory in the code under test, or a
//! broken contract checked here with `assert!`:
//!
//! * [`check_trace`] — any bytes through one trace reader (several reader options):
//!   - opening returns `Ok` or a `TraceError`, reading yields records or `TraceError`s,
//!     never more records than the input can hold (no endless loop);
//!   - every record keeps the `Record` contract: a flush has offset 0 and length 0; a read,
//!     write or trim has a length > 0 and `offset + length` below 2^64;
//!   - an error names the file, has a message, points at a line (record) that was read,
//!     and (without `skip_bad`) ends the stream;
//!   - the counters add up (ignored + skipped <= lines; lines <= newlines + 1 for text);
//!   - what was read round-trips: written with the binary writer and read back it is the
//!     same records; written as fio iolog v3 and read back it is the same records with
//!     times cut to µs and requests over 4 GiB split as the writer documents;
//!   - `detect_bytes` and `Info::from_reader` do not panic.
//! * [`check_profile`] — `key = value` lines through `Config::set`, then `validate`: each is
//!   `Ok` or a `ConfigError` naming a key, never a panic; a valid profile has every value in
//!   its key's declared range. One with a small geometry also runs a short simulation (fill,
//!   random writes, trim, reads), then a workload from the `workload.FIELD = value` lines
//!   (see [`fuzz_workload`]; by default 10 ms of 4 KiB random writes in 1 ms intervals) with
//!   its time series, for at most [`FUZZ_COMMANDS`] commands. The workload starts or is
//!   refused naming a field; its series never holds more intervals than the limit (a timed
//!   workload exactly its duration's), a workload a count ends stops at the limit with an
//!   error; and every command moves the clock by at least `controller_cmd_us`.

use ssdtrace::formats::ReadStats;
use ssdtrace::{open_reader, BlkEvent, Format, Info, Op, ReadOptions, Record, TimeUnit, TraceError};

/// The file name readers get; every error must name it.
pub const FILE: &str = "fuzz.trace";

/// The option sets each format is read with.
fn option_sets(format: Format) -> Vec<ReadOptions> {
    let mut v = vec![ReadOptions::default(), ReadOptions { skip_bad: true, ..Default::default() }];
    match format {
        Format::Blkparse => v.push(ReadOptions { events: Some(BlkEvent::Queue), skip_bad: true, ..Default::default() }),
        Format::Disksim | Format::Mqsim => {
            v.push(ReadOptions { time_unit: Some(TimeUnit::S), device: Some(0), ..Default::default() });
            v.push(ReadOptions { time_unit: Some(TimeUnit::Us), skip_bad: true, ..Default::default() });
        }
        Format::Msr | Format::Spc => v.push(ReadOptions { device: Some(0), skip_bad: true, ..Default::default() }),
        _ => {}
    }
    v
}

/// Reads everything; checks the stream contract. Returns the records, the error (if any) and
/// the counters.
fn read_checked(data: &[u8], format: Format, opts: &ReadOptions) -> (Vec<Record>, Option<TraceError>, ReadStats) {
    let mut reader = match open_reader(data, FILE, format, opts) {
        Ok(r) => r,
        Err(e) => {
            check_error(&e, None);
            return (Vec::new(), Some(e), ReadStats::default());
        }
    };
    // A text line gives at most 2 records; a binary record takes at least 24 bytes.
    let cap = 2 * data.len() + 16;
    let mut recs = Vec::new();
    let mut err = None;
    while let Some(item) = reader.next() {
        match item {
            Ok(r) => {
                check_record(&r);
                recs.push(r);
                assert!(recs.len() <= cap, "{format:?}: {} records from {} bytes: endless reader?", recs.len(), data.len());
            }
            Err(e) => {
                let stats = reader.stats();
                check_error(&e, Some(&stats));
                if !opts.skip_bad {
                    assert!(reader.next().is_none(), "{format:?}: the reader goes on after the error {e}");
                    err = Some(e);
                    break;
                }
                // With skip_bad only fatal errors come out; the stream ends after them.
                assert!(reader.next().is_none(), "{format:?} (skip_bad): the reader goes on after the error {e}");
                err = Some(e);
                break;
            }
        }
    }
    let stats = reader.stats();
    assert!(
        stats.ignored_lines + stats.skipped_bad <= stats.lines,
        "{format:?}: counters do not add up: {stats:?}"
    );
    if !format.is_binary() {
        let newlines = data.iter().filter(|&&c| c == b'\n').count() as u64;
        assert!(stats.lines <= newlines + 1, "{format:?}: {} lines counted in {} newlines", stats.lines, newlines);
    }
    assert_eq!(stats.skipped_bad > 0, stats.first_bad.is_some(), "{format:?}: skipped lines without the first error, or the reverse: {stats:?}");
    if !opts.skip_bad {
        assert_eq!(stats.skipped_bad, 0, "{format:?}: lines skipped without skip_bad");
    }
    (recs, err, stats)
}

fn check_record(r: &Record) {
    if r.op == Op::Flush {
        assert!(r.offset_bytes == 0 && r.len_bytes == 0, "a flush with a range: {r:?}");
    } else {
        assert!(r.len_bytes > 0, "a zero-length {}: {r:?}", r.op.name());
        assert!(r.offset_bytes.checked_add(r.len_bytes).is_some(), "offset + length overflows: {r:?}");
    }
}

fn check_error(e: &TraceError, stats: Option<&ReadStats>) {
    assert_eq!(e.file, FILE, "error does not name the file: {e}");
    assert!(!e.message.trim().is_empty(), "empty error message: {e:?}");
    if let Some(s) = stats {
        assert!(e.line <= s.lines, "error at line {} after only {} lines: {e}", e.line, s.lines);
    }
    let _ = e.to_string();
}

/// The most fio iolog lines [`check_round_trip`] writes.
const FIO_ROUND_TRIP_LINES: u64 = 1 << 16;

/// Round trip of what was read through the binary format and fio iolog v3.
fn check_round_trip(recs: &[Record]) {
    // binary
    let mut out = Vec::new();
    {
        let mut w = ssdtrace::BinWriter::new(&mut out).unwrap();
        let mut written = Vec::new();
        for r in recs {
            use ssdtrace::RecordWriter;
            if w.write(r).is_ok() {
                written.push(*r);
            } else {
                assert!(r.offset_bytes > ssdtrace::formats::bin::MAX_OFFSET_BYTES, "binary writer refused {r:?}");
            }
        }
        ssdtrace::RecordWriter::finish(&mut w).unwrap();
        drop(w);
        let (back, err, _) = read_checked(&out, Format::Bin, &ReadOptions::default());
        assert!(err.is_none(), "binary round trip: {err:?}");
        assert_eq!(back, written, "binary round trip changed the records");
    }
    // fio iolog v3: a request over 4 GiB is written as several lines; records whose lines
    // would exceed FIO_ROUND_TRIP_LINES (a petabyte request is millions of lines) are left
    // out of this check, which would otherwise measure the fuzzer's memory, not the reader.
    let lines: u64 = recs.iter().map(|r| r.len_bytes.div_ceil(ssdtrace::convert::MAX_FIO_LEN_BYTES).max(1)).fold(0, u64::saturating_add);
    if lines > FIO_ROUND_TRIP_LINES {
        return;
    }
    let mut out = Vec::new();
    let mut want = Vec::new();
    {
        use ssdtrace::RecordWriter;
        let mut w = ssdtrace::FioWriter::new(&mut out, "/dev/null").unwrap();
        for r in recs {
            w.write(r).unwrap();
            let t = r.time_ns / 1000 * 1000;
            if r.op == Op::Flush {
                want.push(Record::flush(t));
                continue;
            }
            let (mut off, mut left) = (r.offset_bytes, r.len_bytes);
            while left > 0 {
                let n = left.min(ssdtrace::convert::MAX_FIO_LEN_BYTES);
                want.push(Record::new(t, r.op, off, n));
                off += n;
                left -= n;
            }
        }
        w.finish().unwrap();
    }
    let (back, err, _) = read_checked(&out, Format::Fio, &ReadOptions::default());
    assert!(err.is_none(), "fio iolog round trip: {err:?}");
    assert_eq!(back, want, "fio iolog round trip changed the records");
}

/// One trace reader on any bytes (see the crate docs for what counts as a crash).
pub fn check_trace(format: Format, data: &[u8]) {
    let _ = ssdtrace::detect_bytes(data);
    for (i, opts) in option_sets(format).iter().enumerate() {
        let (recs, _err, _stats) = read_checked(data, format, opts);
        if i == 0 {
            // Records before an error were read as such: they must survive a round trip.
            check_round_trip(&recs);
            if let Ok(mut r) = open_reader(data, FILE, format, opts) {
                let _ = Info::from_reader(&mut *r);
            }
        }
    }
}

/// Largest geometry (physical 4 KiB units) simulated after a successful validation.
const MAX_SIM_UNITS: u64 = 1 << 16;

/// Intervals a simulated series may hold in [`check_profile`] (a slow drive's long run stops
/// there rather than filling the fuzzer's memory).
const FUZZ_SERIES_LIMIT: u64 = 1 << 12;
/// Commands the workload of [`check_profile`] runs at most (then it is interrupted).
pub const FUZZ_COMMANDS: u64 = 50_000;

/// The workload of `workload.FIELD = value` lines (unparsable values are left at their
/// default): `duration_us` (0: none, then `number_ios` or `io_bytes` end it), `interval_us`,
/// `qd`, `read_fraction`, `trim_fraction`, `bs_bytes` (every direction), `random_fraction`,
/// `thinktime_us`, `thinktime_blocks`, `rate_iops` (all IOs), `number_ios`, `io_bytes`.
pub fn fuzz_workload(lines: &[(String, String)]) -> ssdsim::Workload {
    use ssdsim::time::NS_PER_MS;
    let mut w = ssdsim::Workload { duration_ns: Some(10 * NS_PER_MS), interval_ns: NS_PER_MS, qd: 8, ..Default::default() };
    let ns = |v: &str| v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0 && *x < 1.8e16).map(|us| (us * 1e3) as u64);
    for (field, v) in lines {
        let (int, float) = (v.parse::<u64>().ok(), v.parse::<f64>().ok());
        match field.as_str() {
            "duration_us" => {
                if let Some(d) = ns(v) {
                    w.duration_ns = (d > 0).then_some(d);
                }
            }
            "interval_us" => w.interval_ns = ns(v).unwrap_or(w.interval_ns),
            "qd" => w.qd = v.parse().unwrap_or(w.qd),
            "read_fraction" => w.read_fraction = float.unwrap_or(w.read_fraction),
            "trim_fraction" => w.trim_fraction = float.unwrap_or(w.trim_fraction),
            "bs_bytes" => {
                for m in [&mut w.read, &mut w.write, &mut w.trim] {
                    m.bssplit[0].bs_bytes = int.unwrap_or(m.bssplit[0].bs_bytes);
                }
            }
            "random_fraction" => {
                for m in [&mut w.read, &mut w.write, &mut w.trim] {
                    m.random_fraction = float.unwrap_or(m.random_fraction);
                }
            }
            "thinktime_us" => w.thinktime_ns = ns(v).unwrap_or(w.thinktime_ns),
            "thinktime_blocks" => w.thinktime_blocks = int.unwrap_or(w.thinktime_blocks),
            "rate_iops" => w.rate_iops_total = float.unwrap_or(w.rate_iops_total),
            "number_ios" => w.number_ios = int.or(w.number_ios),
            "io_bytes" => w.io_bytes = int.or(w.io_bytes),
            _ => {}
        }
    }
    w
}

/// Runs `w` on `sim` (at most FUZZ_COMMANDS commands) and checks its series and clock.
fn check_workload(sim: &mut ssdsim::Simulation, w: &ssdsim::Workload, ctrl_ns: u64) {
    if let Err(err) = sim.start_workload(w) {
        let e = err.workload().unwrap_or_else(|| panic!("a workload refused without naming a field: {err:?}"));
        assert!(!e.field.is_empty() && !e.message.is_empty(), "a workload refused without naming a field: {e:?}");
        if e.field == "interval_ns" && e.message.contains("a series may hold") {
            let d = w.duration_ns.expect("only a timed workload is refused for its series' length");
            assert!(d.div_ceil(w.interval_ns) > FUZZ_SERIES_LIMIT, "refused {d} ns in intervals of {} ns: {e}", w.interval_ns);
        }
        return;
    }
    let timed_only = w.duration_ns.is_some() && w.number_ios.is_none() && w.io_bytes.is_none();
    let mut series_error = None;
    let mut left = FUZZ_COMMANDS;
    while left > 0 {
        let p = sim.advance(left.min(4096));
        left = left.saturating_sub(4096);
        if let Err(e) = sim.check_series() {
            assert!(!timed_only && p.done, "a timed workload, or one that goes on, past its series limit: {e}");
            series_error = Some(e);
            break;
        }
        if p.done || sim.check_space().is_err() {
            break;
        }
    }
    let r = sim.finish_phase();
    let intervals = (r.first_interval + r.ios.len()) as u64;
    assert!(intervals <= FUZZ_SERIES_LIMIT, "{intervals} intervals, more than the limit");
    assert_eq!(r.snapshots.len(), r.ios.len() + 1);
    if let (Some(d), true, true) = (w.duration_ns, r.complete, timed_only) {
        assert_eq!(intervals, d.div_ceil(w.interval_ns), "a timed workload that ran to its end");
    }
    if series_error.is_some() {
        assert_eq!(intervals, FUZZ_SERIES_LIMIT, "stopped before its series limit");
    }
    // Every command takes the controller at least ctrl_ns; all but qd of those before a
    // command have completed when it is submitted.
    assert!(r.total_ios <= r.duration_ns / ctrl_ns + w.qd as u64, "{} commands in {} ns at {ctrl_ns} ns each: the clock stood still", r.total_ios, r.duration_ns);
}

/// Profile text -> Config -> validate (-> a short simulation); see the crate docs.
pub fn check_profile(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut cfg = ssdsim::Config::default();
    // Start from a tiny drive so that valid inputs can be simulated quickly; fuzzed lines
    // override it.
    for (k, v) in [("blocks_per_plane", "16"), ("pages_per_block", "8"), ("channels", "1"), ("dies_per_channel", "2"), ("user_capacity_bytes", "4MiB"), ("write_buffer_bytes", "1MiB")] {
        cfg.set(k, v).unwrap();
    }
    let mut workload = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let Some((k, v)) = line.split_once('=') else { continue };
        let (k, v) = (k.trim(), v.trim().trim_matches('"'));
        if let Some(field) = k.strip_prefix("workload.") {
            workload.push((field.to_string(), v.to_string()));
            continue;
        }
        if let Err(e) = cfg.set(k, v) {
            assert_eq!(e.key, k, "set({k:?}) error names another key: {e}");
            assert!(!e.message.is_empty());
        }
    }
    let _ = cfg.to_pairs();
    let geo = match cfg.validate() {
        Ok(g) => g,
        Err(e) => {
            assert!(e.key.is_empty() || ssdsim::KEYS.iter().any(|k| k.name == e.key), "validate names an unknown key: {e}");
            assert!(!e.message.is_empty());
            let _ = e.to_string();
            return;
        }
    };
    assert!(geo.user_units > 0 && geo.user_units < geo.physical_units, "validated geometry makes no sense: {geo:?}");
    for (info, (_, value)) in ssdsim::KEYS.iter().zip(cfg.to_pairs()) {
        assert!(info.range.check(info.name, &value).is_ok(), "validate accepted {} = {value}, outside {}", info.name, info.range);
    }
    if geo.physical_units > MAX_SIM_UNITS {
        return;
    }
    // A short simulation: one fill, random writes past the spare area, a trim.
    let Ok(mut sim) = ssdsim::Simulation::new(&cfg, 1) else {
        panic!("validate accepted a profile Simulation::new refuses")
    };
    sim.set_series_limit(FUZZ_SERIES_LIMIT);
    let user = sim.geometry().user_units;
    let mut job = |p: ssdsim::Pattern, n: u64| {
        let mut j = ssdsim::Job::new(p, 1, 4, 0, user);
        j.io_units = Some(n);
        let _ = sim.run(j);
    };
    job(ssdsim::Pattern::SeqWrite, user);
    job(ssdsim::Pattern::RandWrite, user * 2);
    job(ssdsim::Pattern::Trim, user / 2);
    job(ssdsim::Pattern::RandRead, 64);
    if sim.check_space().is_ok() {
        check_workload(&mut sim, &fuzz_workload(&workload), ssdsim::time::us_to_ns(cfg.controller_cmd_us));
    }
}
