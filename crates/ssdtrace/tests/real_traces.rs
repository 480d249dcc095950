//! Every reader on the real traces in `../shared/traces/` (next to the repository; never
//! copied into it). Expected numbers were derived independently of this crate with awk
//! (text formats) and Python's `struct` (VSCSI); the commands are next to each number.
//! When the folder is absent, each test prints why and passes without checking.

use std::path::PathBuf;

use ssdtrace::{open_path, BlkEvent, Format, Info, Op, ReadOptions};

fn shared(rel: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    if !dir.is_dir() {
        eprintln!("SKIPPED: shared traces folder {} is absent", dir.display());
        return None;
    }
    Some(dir.join(rel))
}

fn info(rel: &str, format: Option<Format>, opts: &ReadOptions) -> Option<(Format, Info)> {
    let path = shared(rel)?;
    let (f, mut r) = open_path(&path, format, opts).unwrap_or_else(|e| panic!("{e}"));
    Some((f, Info::from_reader(&mut *r).unwrap_or_else(|e| panic!("{e}"))))
}

/// (count, bytes) of an op.
fn cb(i: &Info, op: Op) -> (u64, u64) {
    (i.op(op).count, i.op(op).bytes)
}

#[test]
fn disksim_first5000() {
    // awk '{n++; if ($5%2==1){r++; rb+=$4*512} else {w++; wb+=$4*512}} ...'
    //   n=5000 reads=3966 rbytes=21169152 writes=1034 wbytes=5568000 min_off=0 max_end=1214719488
    //   time 13.191135 .. 76015.720900 ms, no regressions
    let Some((f, i)) = info("disksim/ascii-first5000.trace", None, &ReadOptions::default()) else { return };
    assert_eq!(f, Format::Disksim, "detected from the decimal time column");
    assert_eq!(i.records, 5000);
    assert_eq!(cb(&i, Op::Read), (3966, 21_169_152));
    assert_eq!(cb(&i, Op::Write), (1034, 5_568_000));
    assert_eq!((i.min_offset_bytes, i.max_end_bytes), (Some(0), 1_214_719_488));
    // awk '{e=($3+$4)*512; if ($5%2==1) {if (e>r) r=e} else {if (e>w) w=e}}': the highest end per op
    assert_eq!((i.op(Op::Read).max_end_bytes, i.op(Op::Write).max_end_bytes), (1_214_719_488, 1_195_686_912));
    assert_eq!((i.min_time_ns, i.max_time_ns), (13_191_135, 76_015_720_900));
    assert_eq!(i.time_regressions, 0);
    assert_eq!(i.read_stats.lines, 5000);
}

#[test]
fn mqsim_tpcc_and_wsrch() {
    // tpcc: n=6999 reads=4381 rbytes=36315136 writes=2618 wbytes=23403520
    //   min_off=361823744 max_end=232713410560 time 938513000..1075002000 ns
    let Some((f, i)) = info("mqsim/tpcc-small.trace", None, &ReadOptions::default()) else { return };
    assert_eq!(f, Format::Mqsim);
    assert_eq!(i.records, 6999);
    assert_eq!(cb(&i, Op::Read), (4381, 36_315_136));
    assert_eq!(cb(&i, Op::Write), (2618, 23_403_520));
    assert_eq!((i.min_offset_bytes, i.max_end_bytes), (Some(361_823_744), 232_713_410_560));
    assert_eq!((i.op(Op::Read).max_end_bytes, i.op(Op::Write).max_end_bytes), (232_712_545_280, 232_713_410_560));
    assert_eq!((i.min_time_ns, i.max_time_ns), (938_513_000, 1_075_002_000));
    // wsrch: n=24783 (the last line has no newline) reads=24779 rbytes=382085120 writes=4
    //   wbytes=32768 min_off=0 max_end=17902723072 time 11413000..60066625000 ns
    let Some((_, i)) = info("mqsim/wsrch-small.trace", Some(Format::Mqsim), &ReadOptions::default()) else { return };
    assert_eq!(i.records, 24783);
    assert_eq!(cb(&i, Op::Read), (24779, 382_085_120));
    assert_eq!(cb(&i, Op::Write), (4, 32_768));
    assert_eq!((i.min_offset_bytes, i.max_end_bytes), (Some(0), 17_902_723_072));
    assert_eq!((i.min_time_ns, i.max_time_ns), (11_413_000, 60_066_625_000));
    // device filter: awk '$2==4' tpcc-small.trace | wc -l
    let opts = ReadOptions { device: Some(4), ..Default::default() };
    let Some((_, i)) = info("mqsim/tpcc-small.trace", Some(Format::Mqsim), &opts) else { return };
    assert_eq!(i.records + i.read_stats.ignored_lines, 6999);
    assert!(i.records > 0 && i.records < 6999);
}

#[test]
fn fio_t0038() {
    // awk 'NR>1 && NF==5 {c[$3]++; b[$3]+=$5}': trim 10 21474836480, write 10 40960;
    // first I/O at 10736 us, last at 10809 us; 3 file actions + header ignored.
    let Some((f, i)) = info("fio_iolog/t0038.iolog", None, &ReadOptions::default()) else { return };
    assert_eq!(f, Format::Fio);
    assert_eq!(i.records, 20);
    assert_eq!(cb(&i, Op::Write), (10, 40_960));
    assert_eq!(cb(&i, Op::Trim), (10, 21_474_836_480));
    assert_eq!((i.min_time_ns, i.max_time_ns), (10_736_000, 10_809_000));
    assert_eq!(i.read_stats.lines, 24);
    assert_eq!(i.read_stats.ignored_lines, 4);
}

#[test]
fn wiscsee_blkparse() {
    // awk '$6=="D" && $9=="+" {...}': reads 161 (659456 B), writes 512 (134217728 B),
    // 4 'D N 0 (00 ..)' pass-through events; sectors 0 .. 276824064 B; D times
    // 0.001368096 .. 0.451332585 s; blkparse's own summary: Read Dispatches 161 644KiB,
    // Write Dispatches 512 131072KiB. No Q events in this file.
    let Some((f, i)) = info("wiscsee/fio-blkparse-output.txt", None, &ReadOptions::default()) else { return };
    assert_eq!(f, Format::Blkparse);
    assert_eq!(cb(&i, Op::Read), (161, 659_456));
    assert_eq!(cb(&i, Op::Write), (512, 134_217_728));
    assert_eq!(cb(&i, Op::Read).1, 644 * 1024);
    assert_eq!(cb(&i, Op::Write).1, 131_072 * 1024);
    assert_eq!((i.op(Op::Trim).count, i.op(Op::Flush).count), (0, 0));
    assert_eq!((i.min_offset_bytes, i.max_end_bytes), (Some(0), 276_824_064));
    assert_eq!((i.min_time_ns, i.max_time_ns), (1_368_096, 451_332_585));
    assert_eq!(i.read_stats.lines, 757);
    let opts = ReadOptions { events: Some(BlkEvent::Queue), ..Default::default() };
    let Some((_, i)) = info("wiscsee/fio-blkparse-output.txt", Some(Format::Blkparse), &opts) else { return };
    assert_eq!(i.records, 0);
}

#[test]
fn cloudphysics_vscsi() {
    // python3 struct '<IIIHHQQ' over 32-byte records: 113872 records, all version 1;
    // cmd 0x28 (READ(10)) 46974 records 1797412352 B, cmd 0x2a (WRITE(10)) 66898 records
    // 2408565760 B; lbn*512 from 8162816 to end 33584938496; ts 5633898368802 ..
    // 5641098458687 us.
    let Some((f, i)) = info("cloudphysics/cloudPhysicsIO.vscsi", None, &ReadOptions::default()) else { return };
    assert_eq!(f, Format::Vscsi);
    assert_eq!(i.records, 113_872);
    assert_eq!(cb(&i, Op::Read), (46_974, 1_797_412_352));
    assert_eq!(cb(&i, Op::Write), (66_898, 2_408_565_760));
    assert_eq!((i.min_offset_bytes, i.max_end_bytes), (Some(8_162_816), 33_584_938_496));
    assert_eq!((i.min_time_ns, i.max_time_ns), (5_633_898_368_802_000, 5_641_098_458_687_000));
}

#[test]
fn every_shared_trace_converts_to_bin_and_fio_and_back() {
    use ssdtrace::{convert, open_reader, writer, OutFormat, Record};
    for rel in ["disksim/ascii-first5000.trace", "mqsim/tpcc-small.trace", "fio_iolog/t0038.iolog", "wiscsee/fio-blkparse-output.txt", "cloudphysics/cloudPhysicsIO.vscsi"] {
        let Some(path) = shared(rel) else { return };
        let (_, mut r) = open_path(&path, None, &ReadOptions::default()).unwrap();
        let original: Vec<Record> = (&mut *r).map(Result::unwrap).collect();
        for out in [OutFormat::Bin, OutFormat::Fio] {
            let (_, mut r) = open_path(&path, None, &ReadOptions::default()).unwrap();
            let mut buf = Vec::new();
            {
                let mut w = writer(&mut buf, out, "/dev/null").unwrap();
                convert(&mut *r, &mut *w, "out").unwrap();
            }
            let back_format = if out == OutFormat::Bin { Format::Bin } else { Format::Fio };
            let back: Vec<Record> = open_reader(&buf[..], "out", back_format, &ReadOptions::default()).unwrap().map(Result::unwrap).collect();
            if out == OutFormat::Bin {
                assert_eq!(back, original, "{rel} via bin");
            } else {
                // fio keeps µs: compare with times truncated to µs
                let want: Vec<Record> = original.iter().map(|r| Record { time_ns: r.time_ns / 1000 * 1000, ..*r }).collect();
                assert_eq!(back, want, "{rel} via fio");
            }
        }
    }
}
