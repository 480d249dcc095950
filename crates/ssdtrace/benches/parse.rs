//! Reader speed: lines (binary formats: records) parsed per second, per format.
//!
//! For each format, writes a file of `LINES` lines (default 2,000,000) with
//! `ssdtrace::samples` into a temporary folder, then reads it `RUNS` times through the
//! public API (`open_path`: buffered file, format given, every record built) and prints the
//! median, min and max lines/s and the median MB/s. The file is in the page cache after
//! writing, so this measures parsing, not the disk. The target is >= 2 M lines/s per format.
//!
//! `cargo bench -p ssdtrace --bench parse [-- FORMAT...]`; `SSDTRACE_BENCH_LINES=N` changes
//! the file size.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use ssdtrace::samples::{header, representable, sample_records, write_sample};
use ssdtrace::{open_path, Format, ReadOptions, Record};

const RUNS: usize = 5;
const DEFAULT_LINES: u64 = 2_000_000;

fn write_file(path: &Path, format: Format, lines: u64) -> u64 {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).expect("create bench file"));
    w.write_all(&header(format)).unwrap();
    let mut n = 0u64;
    let mut seed = 1;
    let mut line = Vec::with_capacity(128);
    let mut first = true;
    while n < lines {
        for r in sample_records(100_000, seed) {
            let r = match format {
                Format::Jedec => Record { time_ns: 0, ..r },
                Format::Msr if first => Record { time_ns: 0, ..r },
                _ => r,
            };
            if !representable(format, &r) {
                continue;
            }
            first = false;
            line.clear();
            write_sample(format, &r, n, &mut line);
            w.write_all(&line).unwrap();
            n += 1;
            if n == lines {
                break;
            }
        }
        seed += 1;
    }
    w.flush().unwrap();
    std::fs::metadata(path).unwrap().len()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let formats: Vec<Format> = if args.is_empty() {
        Format::ALL.to_vec()
    } else {
        args.iter().map(|a| Format::from_name(a).unwrap_or_else(|| panic!("unknown format {a}"))).collect()
    };
    let lines: u64 = std::env::var("SSDTRACE_BENCH_LINES").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_LINES);
    let dir = std::env::temp_dir().join(format!("ssdtrace-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!("trace reader speed: {lines} lines per file, median of {RUNS} runs (binary formats: records)");
    println!("{:<9} {:>10} {:>14} {:>14} {:>14} {:>9}", "format", "file MB", "median lines/s", "min lines/s", "max lines/s", "MB/s");
    for format in formats {
        let path = dir.join(format!("bench.{}", format.name()));
        let bytes = write_file(&path, format, lines);
        let mut rates = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let t = Instant::now();
            let (_, mut r) = open_path(&path, Some(format), &ReadOptions::default()).unwrap();
            let mut checksum = 0u64;
            for rec in &mut *r {
                let rec = rec.unwrap_or_else(|e| panic!("{e}"));
                checksum = checksum.wrapping_add(rec.offset_bytes ^ rec.len_bytes);
            }
            let secs = t.elapsed().as_secs_f64();
            let stats = r.stats();
            assert_eq!(stats.lines, lines + if format == Format::Fio { 3 } else { 0 }, "{format:?}");
            std::hint::black_box(checksum);
            rates.push(stats.lines as f64 / secs);
        }
        rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let median = rates[RUNS / 2];
        let mbps = median * bytes as f64 / lines as f64 / 1e6;
        println!("{:<9} {:>10.1} {:>14.0} {:>14.0} {:>14.0} {:>9.0}", format.name(), bytes as f64 / 1e6, median, rates[0], rates[RUNS - 1], mbps);
        std::fs::remove_file(&path).ok();
    }
    std::fs::remove_dir_all(&dir).ok();
}
