//! Round trips (records written in each format and read back unchanged) and a seeded fuzz
//! test: valid sample files with one line (or binary record) mutated must give either a
//! clear error at that line, or records plus counted ignored/skipped lines — never a panic
//! and never a line that silently disappears.

use ssdtrace::formats::ReadStats;
use ssdtrace::rng::Rng;
use ssdtrace::samples::{header, representable, sample_records, write_sample};
use ssdtrace::{open_reader, BlkEvent, Format, ReadOptions, Record, TraceError};

const TEXT_FORMATS: [Format; 7] = [Format::Blkparse, Format::Fio, Format::Disksim, Format::Mqsim, Format::Msr, Format::Spc, Format::Jedec];

fn sample(format: Format, n: usize, seed: u64) -> (Vec<u8>, Vec<Record>) {
    let mut recs: Vec<Record> = sample_records(n * 3, seed)
        .into_iter()
        .map(|r| if format == Format::Jedec { Record { time_ns: 0, ..r } } else { r })
        .filter(|r| representable(format, r))
        .take(n)
        .collect();
    if format == Format::Msr {
        recs[0].time_ns = 0; // MSR times are relative to the first record
    }
    let mut data = header(format);
    for (i, r) in recs.iter().enumerate() {
        write_sample(format, r, i as u64, &mut data);
    }
    (data, recs)
}

fn read_all(data: &[u8], format: Format, opts: &ReadOptions) -> (Vec<Record>, Option<TraceError>, ReadStats) {
    let mut r = match open_reader(data, "fuzz.trace", format, opts) {
        Ok(r) => r,
        Err(e) => return (vec![], Some(e), ReadStats::default()),
    };
    let mut recs = Vec::new();
    let mut err = None;
    for x in &mut *r {
        match x {
            Ok(rec) => recs.push(rec),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    let stats = r.stats();
    (recs, err, stats)
}

#[test]
fn every_format_round_trips_its_representable_records() {
    for format in ssdtrace::Format::ALL {
        let (data, recs) = sample(format, 300, 7);
        assert!(recs.len() >= 100, "{format:?}: only {} representable records", recs.len());
        let opts = ReadOptions { events: (format == Format::Blkparse).then_some(BlkEvent::Dispatch), ..Default::default() };
        let (back, err, _) = read_all(&data, format, &opts);
        assert!(err.is_none(), "{format:?}: {err:?}");
        assert_eq!(back, recs, "{format:?}");
        assert_eq!(ssdtrace::detect_bytes(&data), Some(format), "detection of {format:?}");
    }
}

/// One mutation of a line: the kinds of damage real files get.
fn mutate(line: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut l = line.to_vec();
    if l.is_empty() {
        return b"x".to_vec();
    }
    let at = rng.below(l.len() as u64) as usize;
    match rng.below(9) {
        0 => l[at] = b"x-.,+ 9\t#e"[rng.below(10) as usize],
        1 => l[at] = rng.below(256) as u8,
        2 => l.truncate(at),
        3 => {
            let end = (at + 1 + rng.below(8) as usize).min(l.len());
            l.drain(at..end);
        }
        4 => {
            for (i, c) in b"99999999999999999999999".iter().enumerate() {
                l.insert(at + i, *c);
            }
        }
        5 => l.insert(at, b'-'),
        6 => {
            let tok = l[..at].to_vec();
            l.extend_from_slice(b" ");
            l.extend_from_slice(&tok);
        }
        7 => l.retain(|c| *c != b' ' && *c != b','),
        _ => l = b"\xff\xfe garbage \x00 line".to_vec(),
    }
    // keep it one line (a new line would be two mutations)
    l.iter().map(|&c| if c == b'\n' { b'?' } else { c }).collect()
}

#[test]
fn fuzzed_text_lines_give_clear_errors_or_counted_skips() {
    let mut rng = Rng::new(2024);
    for format in TEXT_FORMATS {
        let (data, _) = sample(format, 40, 11);
        let lines: Vec<&[u8]> = data.split_inclusive(|&c| c == b'\n').collect();
        let (_, _, base) = read_all(&data, format, &ReadOptions::default());
        assert_eq!(base.lines, lines.len() as u64);
        let mut errors = 0;
        for _ in 0..1500 {
            let victim = rng.below(lines.len() as u64) as usize;
            let body = lines[victim].strip_suffix(b"\n").unwrap_or(lines[victim]);
            let bad = mutate(body, &mut rng);
            let mut file = Vec::new();
            for (i, l) in lines.iter().enumerate() {
                if i == victim {
                    file.extend_from_slice(&bad);
                    file.push(b'\n');
                } else {
                    file.extend_from_slice(l);
                }
            }
            let what = format!("{format:?} line {} mutated to {:?}", victim + 1, String::from_utf8_lossy(&bad));
            let (recs, err, stats) = read_all(&file, format, &ReadOptions::default());
            let n_lines = lines.len() as u64;
            match err {
                Some(e) => {
                    errors += 1;
                    assert_eq!(e.line, victim as u64 + 1, "{what}: error at the wrong line: {e}");
                    let msg = e.to_string();
                    assert!(msg.starts_with(&format!("fuzz.trace:{}: expected ", victim + 1)), "{what}: unclear error {msg}");
                    // the same file with --skip-bad: the bad line is counted, the others read
                    let opts = ReadOptions { skip_bad: true, ..Default::default() };
                    let (recs2, err2, stats2) = read_all(&file, format, &opts);
                    if format == Format::Fio && victim == 0 {
                        assert!(err2.is_some(), "{what}: a bad fio header must stay fatal");
                        continue;
                    }
                    assert!(err2.is_none(), "{what}: {err2:?}");
                    assert_eq!(stats2.skipped_bad, 1, "{what}");
                    assert_eq!(stats2.first_bad.as_ref().map(|e| e.line), Some(victim as u64 + 1));
                    assert_eq!(stats2.lines, n_lines);
                    assert_eq!(recs2.len() as u64 + stats2.ignored_lines + 1, n_lines, "{what}: a line went missing");
                }
                None => {
                    // Every line is accounted for: a record (blkparse: up to 2), or an
                    // ignored line (counted), nothing dropped.
                    assert_eq!(stats.lines, n_lines, "{what}");
                    let data_lines = n_lines - stats.ignored_lines;
                    if format == Format::Blkparse {
                        assert!((data_lines..=data_lines + 1).contains(&(recs.len() as u64)), "{what}: {} records for {data_lines} data lines", recs.len());
                    } else {
                        assert_eq!(recs.len() as u64, data_lines, "{what}: a line went missing");
                    }
                    assert!(stats.ignored_lines <= base.ignored_lines + 1, "{what}");
                }
            }
        }
        assert!(errors > 300, "{format:?}: only {errors} of 1500 mutations were errors; the fuzzer is too gentle");
    }
}

#[test]
fn fuzzed_binary_records_give_clear_errors() {
    let mut rng = Rng::new(99);
    for format in [Format::Vscsi, Format::Bin] {
        let (data, recs) = sample(format, 50, 3);
        let (hdr, size) = if format == Format::Bin { (16, 24) } else { (0, 32) };
        for _ in 0..2000 {
            let mut file = data.clone();
            match rng.below(3) {
                0 => {
                    let at = rng.below(file.len() as u64) as usize;
                    file[at] = rng.below(256) as u8;
                }
                1 => file.truncate(rng.below(file.len() as u64) as usize),
                _ => {
                    let at = rng.below(file.len() as u64) as usize;
                    file.insert(at, rng.below(256) as u8);
                }
            }
            let (back, err, stats) = read_all(&file, format, &ReadOptions::default());
            match err {
                Some(e) => {
                    let msg = e.to_string();
                    assert!(msg.starts_with("fuzz.trace:") && (msg.contains("expected") || msg.contains("read error")), "{format:?}: {msg}");
                    if e.line > 0 {
                        assert!(e.line as usize <= (file.len().saturating_sub(hdr)).div_ceil(size), "{format:?}: record {} beyond the file", e.line);
                    }
                }
                None => {
                    assert_eq!(back.len() as u64 + stats.ignored_lines, stats.lines, "{format:?}: a record went missing");
                    assert!(back.len() <= recs.len() + 1);
                }
            }
        }
    }
}

#[test]
fn binary_truncation_is_reported_at_the_partial_record() {
    let (data, _) = sample(Format::Bin, 10, 3);
    let (_, err, _) = read_all(&data[..data.len() - 5], Format::Bin, &ReadOptions::default());
    let e = err.unwrap();
    assert_eq!(e.line, 10);
    assert!(e.to_string().contains("truncated"), "{e}");
}
