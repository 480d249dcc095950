//! Several jobs sharing one drive (`Simulation::start_jobs`: fio's `numjobs`, or the jobs of
//! one stonewall group), against oracles:
//!
//! - bookkeeping: the jobs' totals add up to the phase's, each job does only its own mix;
//! - interference: a QD1 random reader waits longer per read while a QD32 writer shares the
//!   drive than alone (programs and GC take the dies it reads from);
//! - `numjobs`: n copies of a job at depth q/n move as many IOs as one job at depth q (the
//!   drive sees q commands outstanding either way), each copy about 1/n of them;
//! - `startdelay`: a job's first IO comes after its delay and its duration counts from there;
//! - compressibility per job: each job's data fills its own NAND slots per unit;
//! - one job without a delay runs exactly as the plain workload; same seed, same results.

use ssdsim::time::{NS_PER_MS, NS_PER_S};
use ssdsim::{BlockSize, Config, PhaseReport, Simulation, Workload, WorkloadJob, UNIT_BYTES};

mod common;
use common::filled;

/// A small drive with the built-in profiles' 7 % spare.
fn small() -> Config {
    common::small(&[], 1.07)
}

fn job(name: &str, workload: Workload) -> WorkloadJob {
    WorkloadJob { flow: None, exit_stops: Vec::new(), name: name.into(), startdelay_ns: 0, workload }
}

fn randread(qd: u32, duration_ns: u64) -> Workload {
    Workload { read_fraction: 1.0, qd, duration_ns: Some(duration_ns), ..Workload::default() }
}

fn randwrite(qd: u32, duration_ns: u64) -> Workload {
    Workload { qd, duration_ns: Some(duration_ns), ..Workload::default() }
}

fn run_jobs(sim: &mut Simulation, jobs: &[WorkloadJob], interval_ns: u64) -> PhaseReport {
    sim.start_jobs(jobs, interval_ns).unwrap();
    sim.run_to_end();
    sim.finish_phase()
}

/// The jobs' per-direction totals and latency counts add up to the phase's.
fn check_jobs_add_up(r: &PhaseReport) {
    for d in 0..3 {
        let dir = &r.directions[d];
        assert_eq!(dir.total_ios, r.jobs.iter().map(|j| j.directions[d].total_ios).sum::<u64>(), "direction {d}");
        assert_eq!(dir.total_bytes, r.jobs.iter().map(|j| j.directions[d].total_bytes).sum::<u64>(), "direction {d}");
        assert_eq!(dir.latency.count(), r.jobs.iter().map(|j| j.directions[d].latency.count()).sum::<u64>(), "direction {d}");
        // A timed phase's series leaves out the completions after its end.
        assert!(dir.ios.iter().sum::<u64>() <= dir.total_ios, "direction {d}");
    }
    assert_eq!(r.total_ios, r.directions.iter().map(|d| d.total_ios).sum::<u64>());
}

fn p50(h: &ssdsim::stats::LatencyHistogram) -> u64 {
    h.quantile_ns(0.5).unwrap()
}

#[test]
fn a_reader_waits_longer_while_a_writer_shares_the_drive_and_totals_add_up() {
    let cfg = small();
    let second = NS_PER_S / 2;
    let mut alone = filled(&cfg, 5);
    let a = run_jobs(&mut alone, &[job("reader", randread(1, second))], NS_PER_S / 10);
    let mut shared = filled(&cfg, 5);
    let s = run_jobs(&mut shared, &[job("reader", randread(1, second)), job("writer", randwrite(32, second))], NS_PER_S / 10);
    for r in [&a, &s] {
        check_jobs_add_up(r);
        assert_eq!(r.duration_ns, second);
        assert!(r.complete);
    }
    assert_eq!((s.jobs[0].name.as_str(), s.jobs[1].name.as_str()), ("reader", "writer"));
    let (reader, writer) = (&s.jobs[0].directions, &s.jobs[1].directions);
    assert!(reader[1].total_ios == 0 && writer[0].total_ios == 0 && writer[1].total_ios > 1000, "each job does its own mix");
    // QD1 for 0.5 s: one read at a time, back to back (~80 us each alone).
    assert!(reader[0].total_ios > 100);
    let (p_alone, p_shared) = (p50(&a.jobs[0].directions[0].latency), p50(&reader[0].latency));
    assert!(p_shared as f64 > 1.5 * p_alone as f64, "reader's median latency alone {p_alone} ns, beside a writer {p_shared} ns");
    assert!(reader[0].total_ios < a.jobs[0].directions[0].total_ios);
}

#[test]
fn numjobs_copies_share_the_throughput_of_one_job_at_their_summed_depth() {
    let cfg = small();
    let duration = NS_PER_S / 2;
    for make in [randread as fn(u32, u64) -> Workload, randwrite] {
        let mut one = filled(&cfg, 7);
        let single = run_jobs(&mut one, &[job("one", make(32, duration))], NS_PER_S / 10);
        let mut four = filled(&cfg, 7);
        let copies: Vec<WorkloadJob> = (0..4).map(|i| job(&format!("copy{i}"), make(8, duration))).collect();
        let r = run_jobs(&mut four, &copies, NS_PER_S / 10);
        check_jobs_add_up(&r);
        let (n1, n4) = (single.total_ios as f64, r.total_ios as f64);
        assert!((n4 / n1 - 1.0).abs() < 0.05, "4 jobs at QD8: {n4} IOs, 1 job at QD32: {n1}");
        for j in &r.jobs {
            let share = j.directions.iter().map(|d| d.total_ios).sum::<u64>() as f64 / n4;
            assert!((share - 0.25).abs() < 0.02, "{}: {share:.3} of the IOs", j.name);
        }
    }
}

/// fio's `exitall`: when a job ends, those it stops submit nothing after its last
/// completion, and a delayed one that has not started never does; a job that stops none
/// leaves the others running.
#[test]
fn exitall_stops_the_named_jobs_when_a_job_ends() {
    let interval = NS_PER_S / 10;
    let short = Workload { number_ios: Some(500), ..randread(4, NS_PER_S) };
    // A light writer (GC on this full drive would otherwise hold reads back for long).
    let mut writer = randwrite(4, NS_PER_S);
    writer.write.rate_iops = 5000.0;
    let run = |stops: Vec<usize>| {
        let mut sim = filled(&small(), 3);
        let jobs = [
            WorkloadJob { flow: None, exit_stops: stops, ..job("short", short.clone()) },
            job("long", writer.clone()),
            WorkloadJob { startdelay_ns: 5 * interval, ..job("late", randread(1, NS_PER_S)) },
        ];
        run_jobs(&mut sim, &jobs, interval)
    };
    let r = run(vec![1, 2]);
    check_jobs_add_up(&r);
    assert_eq!(r.jobs[0].directions[0].total_ios, 500);
    assert_eq!(r.jobs[2].directions[0].total_ios, 0, "the late job never starts");
    assert!(r.duration_ns < interval, "the phase ends with the short job: {} ns", r.duration_ns);
    let writes = r.jobs[1].directions[1].total_ios;
    assert!(writes > 0);
    let free = run(vec![]);
    assert_eq!(free.duration_ns, 15 * interval, "without exitall the late job runs its second");
    assert!(free.jobs[1].directions[1].total_ios > 5 * writes);
    let mut sim = filled(&small(), 3);
    let bad = [WorkloadJob { flow: None, exit_stops: vec![3], ..job("a", short) }];
    assert_eq!(sim.start_jobs(&bad, interval).unwrap_err().workload().unwrap().field, "jobs[0].exit_stops");
}

#[test]
fn startdelay_shifts_a_jobs_first_io_and_its_duration_counts_from_there() {
    let mut sim = filled(&small(), 3);
    let interval = NS_PER_S / 10;
    let delayed = WorkloadJob { flow: None, exit_stops: Vec::new(), name: "late".into(), startdelay_ns: 5 * interval, workload: randread(4, 3 * interval) };
    // A light writer (GC on this full drive would otherwise hold reads back for long).
    let mut writer = randwrite(8, NS_PER_S);
    writer.write.rate_iops = 5000.0;
    let r = run_jobs(&mut sim, &[job("writer", writer), delayed], interval);
    check_jobs_add_up(&r);
    assert_eq!(r.duration_ns, NS_PER_S, "the phase lasts until the last job's end");
    let reads = &r.directions[0].ios;
    assert_eq!(reads.len(), 10);
    assert!(reads[..5].iter().all(|&n| n == 0), "no read before the delay: {reads:?}");
    assert!(reads[5..8].iter().all(|&n| n > 100), "reads while the job runs: {reads:?}");
    // Its last reads may complete just after its end, not an interval later.
    assert!(reads[9] == 0, "the job ends 0.3 s after it started: {reads:?}");
    assert!(r.directions[1].ios.iter().all(|&n| n > 0), "the writer runs throughout");

    // A delayed job alone: the drive idles until it starts.
    let mut sim = filled(&small(), 3);
    let start = sim.now_ns();
    let only = WorkloadJob { flow: None, exit_stops: Vec::new(), name: "late".into(), startdelay_ns: 2 * interval, workload: Workload { number_ios: Some(100), ..randread(1, NS_PER_S) } };
    let r = run_jobs(&mut sim, &[only], interval);
    assert_eq!(r.directions[0].total_ios, 100);
    assert!(r.ios[..2].iter().all(|&n| n == 0) && r.ios[2] > 0, "{:?}", r.ios);
    assert!(sim.now_ns() > start + 2 * interval);
}

#[test]
fn each_job_writes_data_of_its_own_compressibility() {
    // 2:1 compression (2 KiB slots): incompressible data fills 2 slots per unit.
    let mut cfg = Config::default();
    for (k, v) in [("blocks_per_plane", "128"), ("pages_per_block", "16"), ("compression_ratio", "2")] {
        cfg.set(k, v).unwrap();
    }
    cfg.set("user_capacity_bytes", &(32u64 * 128 * 16 * 8 / 2 / 2 * UNIT_BYTES).to_string()).unwrap();
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    let half = sim.geometry().user_units / 2 * UNIT_BYTES;
    let seq = |offset_bytes: u64, pct: u32| {
        let mut w = Workload { offset_bytes, span_bytes: Some(half), buffer_compress_pct: Some(pct), ..Workload::default() };
        w.write.random_fraction = 0.0;
        w.write.bssplit = vec![BlockSize { bs_bytes: 65536, weight: 1 }];
        w
    };
    let r = run_jobs(&mut sim, &[job("incompressible", seq(0, 0)), job("half", seq(half, 50))], NS_PER_S);
    check_jobs_add_up(&r);
    let (a, b) = (r.snapshots[0], *r.snapshots.last().unwrap());
    let units = half / UNIT_BYTES;
    assert_eq!(b.host_units - a.host_units, 2 * units);
    assert_eq!(b.nand_units - a.nand_units, 2 * units + units, "2 slots per unit for one job, 1 for the other");
    sim.device().ftl().check_invariants().unwrap();
}

#[test]
fn one_job_without_delay_runs_exactly_as_the_workload() {
    let cfg = small();
    let w = Workload { read_fraction: 0.6, qd: 16, number_ios: Some(200_000), ..Workload::default() };
    let mut a = filled(&cfg, 9);
    let ra = a.run_workload(&Workload { interval_ns: 20 * NS_PER_MS, ..w.clone() }).unwrap();
    let mut b = filled(&cfg, 9);
    let rb = run_jobs(&mut b, &[job("only", w)], 20 * NS_PER_MS);
    check_jobs_add_up(&rb);
    assert_eq!(rb.jobs.len(), 1);
    assert_eq!(rb.jobs[0].name, "only");
    assert_eq!((ra.ios, ra.bytes, ra.snapshots, ra.interval_latency), (rb.ios, rb.bytes, rb.snapshots, rb.interval_latency));
    assert_eq!((a.now_ns(), a.snapshot()), (b.now_ns(), b.snapshot()));
}

/// Everything observable of a phase of several jobs, folded.
fn fingerprint(seed: u64) -> Vec<u64> {
    let mut sim = filled(&small(), seed);
    let mix = Workload { read_fraction: 0.5, qd: 4, duration_ns: Some(NS_PER_S / 4), ..Workload::default() };
    let jobs = [job("a", mix.clone()), job("b", mix), WorkloadJob { flow: None, exit_stops: Vec::new(), name: "c".into(), startdelay_ns: NS_PER_S / 10, workload: randwrite(2, NS_PER_S / 10) }];
    let r = run_jobs(&mut sim, &jobs, NS_PER_S / 20);
    let mut out = r.ios.clone();
    out.extend(r.snapshots.iter().flat_map(|s| [s.host_units, s.nand_units, s.gc_units]));
    for j in &r.jobs {
        for d in &j.directions {
            out.extend([d.total_ios, d.total_bytes, d.latency.quantile_ns(0.5).unwrap_or(0), d.latency.max_ns()]);
        }
    }
    out.push(sim.now_ns());
    out
}

#[test]
fn same_seed_same_jobs_same_results() {
    assert_eq!(fingerprint(11), fingerprint(11));
    assert_ne!(fingerprint(11), fingerprint(12));
}

#[test]
fn bad_jobs_are_refused_by_index_and_field() {
    let mut sim = Simulation::new(&small(), 1).unwrap();
    assert_eq!(sim.start_jobs(&[], NS_PER_S).unwrap_err().workload().unwrap().field, "jobs");
    let mut bad = Workload::default();
    bad.write.bssplit = vec![BlockSize { bs_bytes: 4097, weight: 1 }];
    let e = sim.start_jobs(&[job("ok", Workload::default()), job("bad", bad)], NS_PER_S).unwrap_err().workload().cloned().unwrap();
    assert_eq!(e.field, "jobs[1].write.bssplit[0].bs_bytes");
    let late = WorkloadJob { flow: None, exit_stops: Vec::new(), name: "late".into(), startdelay_ns: u64::MAX / 2, workload: Workload::default() };
    assert_eq!(sim.start_jobs(&[late], NS_PER_S).unwrap_err().workload().unwrap().field, "jobs[0].startdelay_ns");
    assert!(!sim.phase_running());
    let r = run_jobs(&mut sim, &vec![job("x", Workload { number_ios: Some(10), ..Workload::default() }); 2], NS_PER_S);
    assert_eq!(r.total_ios, 20);
}


/// Every feature of a phase of several jobs at once, folded into one number: rate caps,
/// thinktime, 512-byte sectors, per-job compressibility, a start delay, an IO-count end,
/// a skewed distribution; its hash was recorded before the jobs' loop became the phase
/// loop's several-jobs case, and pins it (`GOLDEN_PRINT=1 ... -- --nocapture` prints it).
/// Re-recorded when reads stopped waiting behind writes (device.rs: read-first dies, link
/// and channel transfers in the other direction's idle stretches): its jobs mix reads and
/// writes on one drive; and again when programs began to cross their channel once their die
/// is free, in the earliest idle stretch, not after every transfer booked before them, and
/// host data began to go to the dies in turn; and when the snapshots' host, NAND, GC-copy
/// and erase counts began to count work when it is carried out (the hash without them was
/// unchanged).
#[test]
fn jobs_golden() {
    let mut cfg = small();
    cfg.set("compression_ratio", "2").unwrap();
    cfg.set("gc_idle_delay_ms", "1").unwrap();
    let mut sim = filled(&cfg, 21);
    let d = NS_PER_S / 5;
    let mut paced = Workload { read_fraction: 0.3, qd: 8, duration_ns: Some(d), buffer_compress_pct: Some(30), ..Workload::default() };
    paced.write.rate_iops = 20_000.0;
    paced.read.rate_iops = 10_000.0;
    let thinker = Workload { qd: 4, duration_ns: Some(d), thinktime_ns: NS_PER_MS, thinktime_blocks: 200, buffer_compress_pct: Some(0), ..Workload::default() };
    let mut small_io = Workload { qd: 2, number_ios: Some(3000), ..Workload::default() };
    small_io.write.bssplit = vec![BlockSize { bs_bytes: 512, weight: 1 }, BlockSize { bs_bytes: 8192, weight: 1 }];
    let skewed = Workload { qd: 16, read_fraction: 0.5, duration_ns: Some(d / 2), distribution: ssdsim::Distribution::Zipf { theta: 1.2, center_fraction: None }, ..Workload::default() };
    let jobs = [
        job("paced", paced),
        job("thinker", thinker),
        WorkloadJob { flow: None, exit_stops: Vec::new(), name: "small".into(), startdelay_ns: d / 4, workload: small_io },
        WorkloadJob { flow: None, exit_stops: Vec::new(), name: "skewed".into(), startdelay_ns: d / 8, workload: skewed },
    ];
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut u = |v: u64| {
        for b in v.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    sim.start_jobs(&jobs, NS_PER_S / 50).unwrap();
    loop {
        let p = sim.advance(777);
        for v in [p.done as u64, p.elapsed_ns, p.units, p.fraction.to_bits()] {
            u(v);
        }
        if p.done {
            break;
        }
    }
    let r = sim.finish_phase();
    check_jobs_add_up(&r);
    for v in [r.start_ns, r.duration_ns, r.total_ios, r.host_write_bytes, r.host_read_bytes, r.complete as u64, r.idle_gaps, r.idle_ns] {
        u(v);
    }
    r.ios.iter().chain(&r.bytes).for_each(|&v| u(v));
    for s in &r.snapshots {
        for v in [s.host_units, s.host_bytes, s.nand_units, s.gc_units, s.erases, s.free_blocks, s.gc_die_ns] {
            u(v);
        }
    }
    for j in &r.jobs {
        u(j.idle_gaps);
        u(j.idle_ns);
        for d in &j.directions {
            u(d.total_ios);
            u(d.total_bytes);
            for q in 0..=100 {
                u(d.latency.quantile_ns(q as f64 / 100.0).unwrap_or(u64::MAX));
            }
        }
    }
    u(sim.now_ns());
    if std::env::var_os("GOLDEN_PRINT").is_some() {
        println!("jobs_golden {h:016x}");
    }
    assert!(r.jobs[1].idle_gaps > 0 && r.jobs[2].directions[1].total_ios == 3000 && r.jobs[3].directions[0].total_ios > 0);
    assert_eq!(h, 0x34f345be5a19345d, "{h:016x}");
}

/// A QD1 random reader beside a QD8 64 KiB writer on a full drive (the default profile's
/// timing and GC, 64 blocks per plane). Each command's data crosses the host link when it is
/// ready, and a read waits for the program in progress on its die, not for those booked
/// behind it: the reader's latency is its die's queue plus the sense, channel and link, below
/// the writer's, and the writer is not held to the reader's pace. (Both had the same latency
/// before, ~1.9 ms, in lock step: each write's transfers were booked after the read's, which
/// waited for its sense behind every program booked on its die; the writer did two thirds of
/// the IOs it does alone.)
#[test]
fn a_reader_beside_a_writer_waits_for_its_die_not_for_the_writes() {
    let mut cfg = Config::default();
    common::set(&mut cfg, common::DEFAULT_PROFILE_GC);
    common::set(&mut cfg, &[("blocks_per_plane", "64"), ("user_capacity_bytes", "7GiB")]);
    let second = NS_PER_S;
    let mut writer = randwrite(8, second);
    writer.write.bssplit = vec![BlockSize { bs_bytes: 65536, weight: 1 }];
    let alone = run_jobs(&mut filled(&cfg, 31), &[job("writer", writer.clone())], NS_PER_S / 10);
    let s = run_jobs(&mut filled(&cfg, 31), &[job("reader", randread(1, second)), job("writer", writer)], NS_PER_S / 10);
    let (reader, writer) = (&s.jobs[0].directions[0], &s.jobs[1].directions[1]);
    let writes_alone = alone.jobs[0].directions[1].total_ios;
    assert!(writer.total_ios as f64 > 0.8 * writes_alone as f64, "writes beside the reader {}, alone {writes_alone}", writer.total_ios);
    assert!(reader.total_ios > 500, "reads {}", reader.total_ios);
    let q = |h: &ssdsim::stats::LatencyHistogram, p: f64| h.quantile_ns(p).unwrap();
    let (r50, w50) = (q(&reader.latency, 0.5), q(&writer.latency, 0.5));
    assert!(r50 < w50, "reader's median {r50} ns, writer's {w50} ns");
    // The program in progress on the die (1.3 ms at most), the sense (50 us), and the link
    // behind the writer's queued transfers (8 x 64 KiB at 550 MB/s, 0.95 ms at most).
    assert!(r50 < 1_300_000, "reader's median {r50} ns");
    assert!(q(&reader.latency, 0.99) < 2_300_000, "reader's p99 {} ns", q(&reader.latency, 0.99));
}

/// fio's flow control: jobs of one flow group submit in proportion to their weights, whatever
/// their own pace; a job of another group is not held; once the other jobs of its group have
/// ended a job runs free.
#[test]
fn flow_groups_submit_in_proportion_to_their_weights() {
    use ssdsim::workload::Flow;
    let d = NS_PER_S / 5;
    let flow = |id, weight| Some(Flow { id, weight, sleep_ns: 0, quiesce: false });
    let trims = Workload { trim_fraction: 1.0, qd: 4, duration_ns: Some(d), ..Workload::default() };
    // A QD32 writer of weight 1 against a QD1 reader of weight 4: the writer would submit far
    // more, but waits for the reader; a trimmer (group 1, alone) runs free.
    let jobs = [
        WorkloadJob { flow: flow(0, 1), ..job("w", randwrite(32, d)) },
        WorkloadJob { flow: flow(0, 4), ..job("r", randread(1, d)) },
        WorkloadJob { flow: flow(1, 1), ..job("free", trims.clone()) },
    ];
    let run = |jobs: &[WorkloadJob]| run_jobs(&mut filled(&small(), 3), jobs, d / 10);
    let r = run(&jobs);
    check_jobs_add_up(&r);
    // Before the last interval (where one job may outlive the other): one write per 4 reads.
    let [reads, writes, trimmed] = [0, 1, 2].map(|k| r.directions[k].ios[..9].iter().sum::<u64>());
    assert!(reads > 500 && (writes as f64 / reads as f64 - 0.25).abs() < 0.01, "{reads} reads, {writes} writes");
    // The trimmer, in a group of its own, is not held to a sixth of all submissions.
    assert!(trimmed > 2 * (reads + writes), "{trimmed} trims");
    // Without flow the writer submits many times more.
    let free = run(&[job("w", randwrite(32, d)), job("r", randread(1, d))]);
    assert!(free.directions[1].total_ios > 5 * r.directions[1].total_ios);
    let again = run(&jobs);
    assert_eq!(r.directions.map(|x| x.total_ios), again.directions.map(|x| x.total_ios), "same seed, same run");
    // A job stays in its group until its last command completes: a slow writer's last write
    // still holds the fast trimmer back at the end (no burst of trims once it stops submitting).
    let big = |bs_bytes| vec![BlockSize { bs_bytes, weight: 1 }];
    let mut slow = randwrite(1, d);
    slow.write.bssplit = big(2 << 20);
    let mut trimmer = Workload { trim_fraction: 1.0, qd: 1, duration_ns: Some(d), ..Workload::default() };
    trimmer.trim.bssplit = big(256 << 20);
    let r = run(&[WorkloadJob { flow: flow(0, 128), ..job("w", slow) }, WorkloadJob { flow: flow(0, 1), ..job("t", trimmer) }]);
    let (writes, trims) = (r.directions[1].total_ios, r.directions[2].total_ios);
    assert!(writes > 20 && trims <= writes / 128 + 1, "{writes} writes, {trims} trims");
}
