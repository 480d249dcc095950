//! Synthetic workloads (`ssdsim::workload`) against oracles, one feature at a time:
//!
//! - a workload that is a job runs exactly as the job (same numbers, same drive);
//! - mixes: the read share and the block-size split come out as asked (binomial bounds),
//!   and the per-direction series add up to the phase's;
//! - random vs sequential share: one span's worth of 4 KiB writes maps the whole span when
//!   sequential, 1 − 1/e of it when random (coupon collector), in between when mixed;
//! - fio's random map: with `random_map` one pass of random writes maps every block of the
//!   span exactly once (half a pass: exactly half the span), in each job of a phase of
//!   several too; only with a uniform distribution;
//! - address distributions: uniform random writes match Desnoyers' greedy model (as
//!   `analytic_wa.rs`), zipf 1.2 and zoned 80/20 write less NAND per host write;
//! - thinktime: gaps long enough for idle GC make the bursts faster than the same writes
//!   without gaps; gap counts follow `thinktime_blocks` / `thinktime_iotime_ns`;
//! - rate caps: achieved IOPS equal the cap (total and per direction) on a faster drive;
//! - compressible data: on a compressing profile a sequential pass writes exactly
//!   (100 − pct) % × ratio NAND slots per unit; in steady state the NAND writes fall at
//!   least in proportion (less space taken: more effective spare); companions never leak;
//! - ends: duration, bytes, number of IOs, one span by default.

use ssdsim::rng::Rng;
use ssdsim::time::{NS_PER_MS, NS_PER_S};
use ssdsim::{BlockSize, CmdKind, Command, Config, Distribution, Job, Pattern, PhaseReport, Simulation, Workload, Zone, UNIT_BYTES};

mod common;
use common::{filled, set, small};

fn randwrite() -> Workload {
    Workload::default()
}

fn bs(sizes: &[(u64, u32)]) -> Vec<BlockSize> {
    sizes.iter().map(|&(bs_bytes, weight)| BlockSize { bs_bytes, weight }).collect()
}

/// |x − n·p| within 5 standard deviations of a binomial(n, p).
fn assert_binomial(what: &str, x: u64, n: u64, p: f64) {
    let mean = n as f64 * p;
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    assert!((x as f64 - mean).abs() <= 5.0 * sd + 1.0, "{what}: {x} of {n}, expected {mean:.0} ± {:.0}", 5.0 * sd);
}

/// Write amplification between two snapshots.
fn wa(r: &PhaseReport) -> f64 {
    let (a, b) = (r.snapshots[0], *r.snapshots.last().unwrap());
    (b.nand_units - a.nand_units) as f64 / (b.host_units - a.host_units) as f64
}

/// Checks that the per-direction series add up to the phase's.
fn check_directions(r: &PhaseReport) {
    let n = r.ios.len();
    for d in &r.directions {
        assert_eq!(d.ios.len(), n);
        assert_eq!(d.bytes.len(), n);
        assert_eq!(d.interval_latency.len(), n);
        assert_eq!(d.latency.count(), d.total_ios);
        for (k, l) in d.interval_latency.iter().enumerate() {
            assert_eq!(l.map_or(0, |l| l.ios), d.ios[k], "interval {k}");
        }
    }
    for k in 0..n {
        assert_eq!(r.ios[k], r.directions.iter().map(|d| d.ios[k]).sum::<u64>(), "interval {k}");
        assert_eq!(r.bytes[k], r.directions[0].bytes[k] + r.directions[1].bytes[k], "interval {k}");
    }
    assert_eq!(r.total_ios, r.directions.iter().map(|d| d.total_ios).sum::<u64>());
    assert_eq!(r.host_read_bytes, r.directions[0].total_bytes);
    assert_eq!(r.host_write_bytes, r.directions[1].total_bytes);
    assert_eq!(r.latency.count(), r.total_ios);
}

#[test]
fn a_workload_that_is_a_job_runs_exactly_as_the_job() {
    let cfg = small(&[], 1.07);
    for (pattern, random, bs_units) in [(Pattern::RandWrite, 1.0, 1u64), (Pattern::SeqWrite, 0.0, 8), (Pattern::RandRead, 1.0, 2)] {
        let mut a = filled(&cfg, 3);
        let user = a.geometry().user_units;
        let mut job = Job::new(pattern, bs_units, 16, user / 8, user / 2);
        job.io_units = Some(user);
        job.interval_ns = 50 * NS_PER_MS;
        let ra = a.run(job).unwrap();

        let mut b = filled(&cfg, 3);
        let mut w = Workload { qd: 16, offset_bytes: user / 8 * UNIT_BYTES, span_bytes: Some(user / 2 * UNIT_BYTES), io_bytes: Some(user * UNIT_BYTES), interval_ns: 50 * NS_PER_MS, ..Workload::default() };
        if pattern == Pattern::RandRead {
            w.read_fraction = 1.0;
        }
        let dir = if pattern == Pattern::RandRead { &mut w.read } else { &mut w.write };
        dir.bssplit = bs(&[(bs_units * UNIT_BYTES, 1)]);
        dir.random_fraction = random;
        let rb = b.run_workload(&w).unwrap();
        check_directions(&rb);
        assert_eq!((ra.ios, ra.bytes, ra.snapshots, ra.total_ios), (rb.ios, rb.bytes, rb.snapshots, rb.total_ios), "{pattern:?}");
        assert_eq!(ra.interval_latency, rb.interval_latency, "{pattern:?}");
        assert_eq!((a.now_ns(), a.snapshot()), (b.now_ns(), b.snapshot()), "{pattern:?}");
    }
}

#[test]
fn mixed_reads_and_writes_come_in_the_asked_shares_at_one_queue_depth() {
    let cfg = small(&[], 1.15);
    let mut sim = filled(&cfg, 5);
    let w = Workload { read_fraction: 0.7, number_ios: Some(200_000), interval_ns: 20 * NS_PER_MS, ..randwrite() };
    let r = sim.run_workload(&w).unwrap();
    check_directions(&r);
    assert_eq!(r.total_ios, 200_000);
    let [rd, wr, tr] = &r.directions;
    assert_binomial("reads", rd.total_ios, r.total_ios, 0.7);
    assert_eq!(rd.total_ios + wr.total_ios, r.total_ios);
    assert_eq!(tr.total_ios, 0);
    assert_eq!(rd.total_bytes, rd.total_ios * UNIT_BYTES);
    // Only writes reach the FTL.
    let (a, b) = (r.snapshots[0], *r.snapshots.last().unwrap());
    assert_eq!(b.host_units - a.host_units, wr.total_ios);

    // TRIMs mixed in: their bytes are the TRIM direction's, not the phase's data bytes.
    let w = Workload { read_fraction: 0.2, trim_fraction: 0.3, number_ios: Some(50_000), ..randwrite() };
    let r = sim.run_workload(&w).unwrap();
    check_directions(&r);
    assert_binomial("trims", r.directions[2].total_ios, 50_000, 0.3);
    assert_eq!(r.directions[2].total_bytes, r.directions[2].total_ios * UNIT_BYTES);
}

#[test]
fn block_size_splits_come_in_their_weights_and_sizes_off_the_sector_grid_are_refused() {
    let cfg = small(&[], 1.15);
    let mut sim = filled(&cfg, 6);
    let mut w = Workload { read_fraction: 0.5, number_ios: Some(100_000), ..randwrite() };
    w.write.bssplit = bs(&[(4096, 70), (65536, 30)]);
    w.read.bssplit = bs(&[(8192, 1), (16384, 1), (131072, 2)]);
    let r = sim.run_workload(&w).unwrap();
    check_directions(&r);
    let [rd, wr, _] = &r.directions;
    // bytes = 4 KiB·n4 + 64 KiB·n64 with n4 + n64 = IOs: the 64 KiB count follows.
    let n64 = (wr.total_bytes - 4096 * wr.total_ios) / (65536 - 4096);
    assert_eq!(wr.total_bytes, 4096 * (wr.total_ios - n64) + 65536 * n64);
    assert_binomial("64 KiB writes", n64, wr.total_ios, 0.3);
    let mean = rd.total_bytes as f64 / rd.total_ios as f64;
    let expected = (8192.0 + 16384.0 + 2.0 * 131072.0) / 4.0;
    assert!((mean / expected - 1.0).abs() < 0.02, "mean read size {mean:.0} vs {expected:.0}");

    let mut w = randwrite();
    w.write.bssplit = bs(&[(4096, 50), (1000, 50)]);
    let e = sim.start_workload(&w).unwrap_err().workload().cloned().unwrap();
    assert_eq!(e.field, "write.bssplit[1].bs_bytes");
    assert!(e.to_string().contains("multiple of 512"), "{e}");
    w.write.bssplit = bs(&[(0, 1)]);
    assert_eq!(sim.start_workload(&w).unwrap_err().workload().unwrap().field, "write.bssplit[0].bs_bytes");
    w.write.bssplit = bs(&[(4096, 1)]);
    w.write.ba_bytes = Some(100);
    assert_eq!(sim.start_workload(&w).unwrap_err().workload().unwrap().field, "write.ba_bytes");
    assert!(!sim.phase_running());
}

/// An offset alignment (`ba`) larger than the block size aligns the offsets and keeps the
/// IOs' size: a plain random pattern's lean source must not take `ba` for the size.
#[test]
fn a_larger_alignment_keeps_the_block_size() {
    let mut sim = Simulation::new(&small(&[], 1.5), 1).unwrap();
    let mut w = Workload { io_bytes: Some(8 << 20), ..randwrite() };
    w.write.ba_bytes = Some(8192);
    let r = sim.run_workload(&w).unwrap();
    assert_eq!((r.total_ios, r.host_write_bytes), (2048, 8 << 20), "4 KiB IOs, 8 MiB");
}

/// Mapped units of the span after one span's worth of 4 KiB writes on a fresh drive.
fn coverage(random_fraction: f64) -> f64 {
    let cfg = small(&[], 1.5);
    let mut sim = Simulation::new(&cfg, 9).unwrap();
    let user = sim.geometry().user_units;
    let mut w = Workload { span_bytes: Some(user / 2 * UNIT_BYTES), offset_bytes: user / 4 * UNIT_BYTES, ..randwrite() };
    w.write.random_fraction = random_fraction;
    let r = sim.run_workload(&w).unwrap();
    assert_eq!(r.host_write_bytes, user / 2 * UNIT_BYTES, "one span's worth by default");
    let ftl = sim.device().ftl();
    let span = user / 4..user / 4 + user / 2;
    assert!((0..user).filter(|u| !span.contains(u)).all(|u| ftl.lookup(u).is_none()), "a write outside the span");
    span.filter(|&u| ftl.lookup(u).is_some()).count() as f64 / (user / 2) as f64
}

/// Mapped units of a span of half the drive after `ios` random writes of `bs_bytes` with
/// fio's random map (or without: `map` false) on a fresh drive, and the span's units.
fn random_map_coverage(bs_bytes: u64, ios: u64, map: bool) -> (u64, u64) {
    let cfg = small(&[], 1.5);
    let mut sim = Simulation::new(&cfg, 9).unwrap();
    let user = sim.geometry().user_units;
    let mut w = Workload { span_bytes: Some(user / 2 * UNIT_BYTES), offset_bytes: user / 4 * UNIT_BYTES, random_map: map, number_ios: Some(ios), ..randwrite() };
    w.write.bssplit = bs(&[(bs_bytes, 1)]);
    sim.run_workload(&w).unwrap();
    let ftl = sim.device().ftl();
    let span = user / 4..user / 4 + user / 2;
    assert!((0..user).filter(|u| !span.contains(u)).all(|u| ftl.lookup(u).is_none()), "a write outside the span");
    (span.filter(|&u| ftl.lookup(u).is_some()).count() as u64, user / 2)
}

#[test]
fn with_the_random_map_one_pass_of_random_writes_maps_every_unit_of_the_span() {
    let n = random_map_coverage(4096, 1, true).1;
    // One pass: every unit once; without the map about 1/e of them stay unmapped.
    assert_eq!(random_map_coverage(4096, n, true), (n, n));
    let unmapped = 1.0 - random_map_coverage(4096, n, false).0 as f64 / n as f64;
    assert!((unmapped - (-1.0f64).exp()).abs() < 0.01, "without the map {unmapped} of the span unmapped");
    // Half a pass: no unit twice, so exactly half the span.
    assert_eq!(random_map_coverage(4096, n / 2, true).0, n / 2);
    // 16 KiB blocks: a pass is span / 4 IOs.
    assert_eq!(random_map_coverage(16384, n / 4, true).0, n / 4 * 4);
    // A second pass visits the blocks again (a new order): still all mapped, none beyond.
    assert_eq!(random_map_coverage(4096, n + n / 3, true).0, n);
}

#[test]
fn the_random_map_is_seeded_and_per_job() {
    let cfg = small(&[], 1.5);
    let run = |seed: u64| {
        let mut sim = Simulation::new(&cfg, seed).unwrap();
        let user = sim.geometry().user_units;
        let w = Workload { random_map: true, number_ios: Some(user / 3), ..randwrite() };
        sim.run_workload(&w).unwrap();
        (0..user).map(|u| sim.device().ftl().lookup(u)).collect::<Vec<_>>()
    };
    assert_eq!(run(4), run(4));
    assert_ne!(run(4), run(5));
    // Two jobs, each over its own half with its own map: one pass each maps everything.
    let mut sim = Simulation::new(&cfg, 3).unwrap();
    let user = sim.geometry().user_units;
    let half = user / 2;
    let job = |i: u64| ssdsim::WorkloadJob {
        flow: None,
        exit_stops: Vec::new(),
        name: format!("half{i}"),
        startdelay_ns: 0,
        workload: Workload { random_map: true, qd: 4, offset_bytes: i * half * UNIT_BYTES, span_bytes: Some(half * UNIT_BYTES), ..randwrite() },
    };
    sim.start_jobs(&[job(0), job(1)], NS_PER_S).unwrap();
    sim.run_to_end();
    let r = sim.finish_phase();
    assert_eq!(r.total_ios, 2 * half);
    assert_eq!((0..2 * half).filter(|&u| sim.device().ftl().lookup(u).is_some()).count() as u64, 2 * half);
}

#[test]
fn the_random_map_needs_a_uniform_distribution() {
    let mut sim = Simulation::new(&small(&[], 1.5), 1).unwrap();
    let w = Workload { random_map: true, distribution: Distribution::Zipf { theta: 1.2, center_fraction: None }, ..randwrite() };
    let e = sim.start_workload(&w).unwrap_err().workload().cloned().unwrap();
    assert_eq!(e.field, "random_map");
    assert!(e.message.contains("uniform"), "{e}");
}

#[test]
fn sequential_writes_cover_the_span_and_random_ones_scatter() {
    // How sequential and random IOs interleave (fio's `last_pos`) is checked on the
    // generator itself (`workload::tests`); here, what the drive sees.
    assert_eq!(coverage(0.0), 1.0);
    // Coupon collector: after n draws of n units, 1 − (1 − 1/n)^n ≈ 1 − 1/e are hit.
    let rnd = coverage(1.0);
    assert!((rnd - (1.0 - (-1.0f64).exp())).abs() < 0.01, "random coverage {rnd}");
}

/// Desnoyers' greedy model (see `analytic_wa.rs`).
fn a_greedy(alpha: f64, units_per_block: f64) -> f64 {
    let lambert_w0 = |x: f64| {
        let mut w = if x < -0.3 { -1.0 + (2.0 * (1.0 + std::f64::consts::E * x)).sqrt() } else { x };
        for _ in 0..100 {
            let ew = w.exp();
            let f = w * ew - x;
            w -= f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
        }
        w
    };
    let a_lrw = |a: f64| a / (a + lambert_w0(-a * (-a).exp()));
    let k = 1.0 + 1.0 / (2.0 * units_per_block);
    a_lrw(k * alpha) / k
}

/// Steady-state WA of 4 KiB random writes with `dist` under the GC `policy`, on the timed
/// drive of `analytic_wa.rs`'s oracle (8 planes, 64-unit blocks, α = 1.25): sequential fill,
/// 6 × the user capacity to reach steady state, then 6 × measured. Returns the WA, α and the
/// units per block.
fn steady_wa(policy: &str, dist: Distribution) -> (f64, f64, f64) {
    let mut cfg = Config::default();
    set(&mut cfg, &[("channels", "2"), ("dies_per_channel", "2"), ("planes_per_die", "2"), ("blocks_per_plane", "512"), ("pages_per_block", "16")]);
    cfg.set("gc_policy", policy).unwrap();
    let user = (8.0 * 512.0 * 64.0 / 1.25) as u64;
    cfg.set("user_capacity_bytes", &(user * UNIT_BYTES).to_string()).unwrap();
    let mut sim = filled(&cfg, 5);
    let w = Workload { distribution: dist, io_bytes: Some(6 * user * UNIT_BYTES), ..randwrite() };
    sim.run_workload(&w).unwrap();
    let r = sim.run_workload(&w).unwrap();
    (wa(&r), sim.geometry().alpha(), sim.geometry().slots_per_block as f64)
}

/// Desnoyers' LRW model with zones of uniform traffic, (LBA fraction, write fraction) each
/// (TOS 2014; see `analytic_wa.rs`).
fn a_lrw_zones(alpha: f64, zones: &[(f64, f64)]) -> f64 {
    let g = |h: f64| h * zones.iter().map(|&(f, r)| r / (1.0 - (-h * r / f).exp())).sum::<f64>() - alpha;
    let (mut lo, mut hi) = (1e-12, alpha);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if g(mid) > 0.0 {
            hi = mid
        } else {
            lo = mid
        }
    }
    let h = 0.5 * (lo + hi);
    zones.iter().map(|&(f, r)| r / (1.0 - (-h * r / f).exp())).sum()
}

fn zoned_80_20() -> Distribution {
    Distribution::Zoned { zones: vec![Zone { access_pct: 80, span_pct: 20.0 }, Zone { access_pct: 20, span_pct: 80.0 }] }
}

/// Uniform random writes still match the analytic models; zoned 80/20 matches the
/// multi-zone model under FIFO. Whether skew lowers WA depends on the GC policy: cost-benefit
/// (which tells hot from cold data by age) writes less NAND under zipf 1.2 and zoned 80/20
/// than under uniform traffic; greedy, which mixes hot and cold data in its blocks, writes
/// *more* under zoned 80/20 (Desnoyers' hot/cold result), about the same under zipf 1.2.
#[test]
fn skewed_distributions_follow_the_hot_cold_models() {
    let (greedy, alpha, upb) = steady_wa("greedy", Distribution::Uniform);
    let model = a_greedy(alpha, upb);
    assert!((greedy / model - 1.0).abs() < 0.03, "greedy uniform WA {greedy:.3} vs model {model:.3}");
    let (fifo, _, _) = steady_wa("fifo", Distribution::Uniform);
    let lrw = a_lrw_zones(alpha, &[(1.0, 1.0)]);
    assert!((fifo / lrw - 1.0).abs() < 0.03, "fifo uniform WA {fifo:.3} vs LRW model {lrw:.3}");
    let (fifo_zoned, _, _) = steady_wa("fifo", zoned_80_20());
    let zones_model = a_lrw_zones(alpha, &[(0.2, 0.8), (0.8, 0.2)]);
    assert!((fifo_zoned / zones_model - 1.0).abs() < 0.04, "fifo zoned 80/20 WA {fifo_zoned:.3} vs multi-zone model {zones_model:.3}");

    let (cb, _, _) = steady_wa("cost-benefit", Distribution::Uniform);
    let (cb_zipf, _, _) = steady_wa("cost-benefit", Distribution::Zipf { theta: 1.2, center_fraction: None });
    let (cb_zoned, _, _) = steady_wa("cost-benefit", zoned_80_20());
    assert!(cb_zipf < 0.7 * cb, "cost-benefit: zipf 1.2 WA {cb_zipf:.3} vs uniform {cb:.3}");
    assert!(cb_zoned < 0.95 * cb, "cost-benefit: zoned 80/20 WA {cb_zoned:.3} vs uniform {cb:.3}");
    let (greedy_zoned, _, _) = steady_wa("greedy", zoned_80_20());
    assert!(greedy_zoned > 1.05 * greedy, "greedy: zoned 80/20 WA {greedy_zoned:.3} vs uniform {greedy:.3}");
}

/// On a drive whose LBAs were never all written, a skewed workload leaves the cold ones
/// unwritten: they act as spare area and WA drops well below the uniform figure.
#[test]
fn skewed_writes_on_a_fresh_drive_write_less_nand_than_uniform_ones() {
    let mut cfg = Config::default();
    set(&mut cfg, &[("channels", "2"), ("dies_per_channel", "2"), ("planes_per_die", "2"), ("blocks_per_plane", "512"), ("pages_per_block", "16")]);
    let user = (8.0 * 512.0 * 64.0 / 1.25) as u64;
    cfg.set("user_capacity_bytes", &(user * UNIT_BYTES).to_string()).unwrap();
    let run = |dist: Distribution| {
        let mut sim = Simulation::new(&cfg, 5).unwrap();
        let w = Workload { distribution: dist, io_bytes: Some(6 * user * UNIT_BYTES), ..randwrite() };
        sim.run_workload(&w).unwrap();
        wa(&sim.run_workload(&w).unwrap())
    };
    let uniform = run(Distribution::Uniform);
    let zipf = run(Distribution::Zipf { theta: 1.2, center_fraction: None });
    let zoned = run(zoned_80_20());
    assert!(zipf < 0.6 * uniform && zoned < 0.9 * uniform, "WA: zipf 1.2 {zipf:.3}, zoned 80/20 {zoned:.3}, uniform {uniform:.3}");
}

#[test]
fn zoned_and_skewed_offsets_land_where_the_distribution_puts_them() {
    // 80 % of the writes to the first 20 % of the span: count where the first 100k land.
    let cfg = small(&[], 1.5);
    let mut sim = Simulation::new(&cfg, 2).unwrap();
    let user = sim.geometry().user_units;
    let zones = vec![Zone { access_pct: 80, span_pct: 20.0 }, Zone { access_pct: 20, span_pct: 80.0 }];
    let w = Workload { distribution: Distribution::Zoned { zones }, number_ios: Some(20_000), ..randwrite() };
    sim.run_workload(&w).unwrap();
    let hot = (0..user / 5).filter(|&u| sim.device().ftl().lookup(u).is_some()).count() as f64;
    let cold = (user / 5..user).filter(|&u| sim.device().ftl().lookup(u).is_some()).count() as f64;
    // Distinct units written: ~16k draws into the hot fifth, ~4k into the rest.
    let expect = |draws: f64, units: f64| units * (1.0 - (-draws / units).exp());
    let (eh, ec) = (expect(16_000.0, (user / 5) as f64), expect(4_000.0, (user - user / 5) as f64));
    assert!((hot / eh - 1.0).abs() < 0.05 && (cold / ec - 1.0).abs() < 0.06, "hot {hot} (~{eh:.0}), cold {cold} (~{ec:.0})");
    // Every skewed distribution runs and a normal one with a centre stays in the span.
    for dist in [Distribution::Pareto { h: 0.3, center_fraction: None }, Distribution::Normal { dev_pct: 5.0, center_fraction: Some(0.2) }] {
        let w = Workload { distribution: dist, span_bytes: Some(user / 2 * UNIT_BYTES), number_ios: Some(10_000), ..randwrite() };
        let r = sim.run_workload(&w).unwrap();
        assert_eq!(r.total_ios, 10_000);
    }
}

/// A drive whose idle GC (after 50 ms idle) frees up to 24 blocks per plane.
fn idle_gc_drive() -> Config {
    small(&[("gc_idle_delay_ms", "50"), ("gc_idle_free_blocks", "24")], 1.07)
}

#[test]
fn bursts_after_idle_gaps_are_faster_than_the_same_writes_without_gaps() {
    let cfg = idle_gc_drive();
    let burst_ios = 4096;
    let run = |thinktime_ns| {
        let mut sim = filled(&cfg, 7);
        let user = sim.geometry().user_units;
        // Steady state first.
        sim.run_workload(&Workload { io_bytes: Some(3 * user * UNIT_BYTES), ..randwrite() }).unwrap();
        let w = Workload { number_ios: Some(40 * burst_ios), thinktime_ns, thinktime_blocks: burst_ios, interval_ns: 10 * NS_PER_MS, ..randwrite() };
        let r = sim.run_workload(&w).unwrap();
        check_directions(&r);
        r
    };
    let plain = run(0);
    let gaps = run(2 * NS_PER_S);
    assert_eq!((plain.idle_gaps, plain.idle_ns), (0, 0));
    // A gap after every `burst_ios` completed IOs (the last one before the phase ended).
    assert!((38..=40).contains(&gaps.idle_gaps), "{} gaps", gaps.idle_gaps);
    assert_eq!(gaps.idle_ns, gaps.idle_gaps * 2 * NS_PER_S);
    let iops = |r: &PhaseReport| r.total_ios as f64 / ((r.duration_ns - r.idle_ns) as f64 / NS_PER_S as f64);
    let (a, b) = (iops(&plain), iops(&gaps));
    assert!(b > 1.5 * a, "IOPS inside bursts {b:.0} vs without gaps {a:.0}");
    // Idle GC ran in the gaps (its copies count in the phase's NAND writes).
    assert!(gaps.snapshots.last().unwrap().gc_units - gaps.snapshots[0].gc_units > 0);
    // Intervals inside gaps are at 0 IOPS.
    assert!(gaps.ios.iter().filter(|&&n| n == 0).count() > 30 * 190);
}

#[test]
fn thinktime_by_time_and_by_issued_ios() {
    let cfg = small(&[], 1.07);
    let mut sim = filled(&cfg, 8);
    // Reads (no GC: each waits ~0.1 ms at most): a 100 ms gap once 300 ms have passed since
    // the start, then once 400 ms have passed since the last gap started (300 ms of IO and
    // the gap).
    let w = Workload { read_fraction: 1.0, duration_ns: Some(9800 * NS_PER_MS), thinktime_ns: 100 * NS_PER_MS, thinktime_iotime_ns: 300 * NS_PER_MS, ..randwrite() };
    let r = sim.run_workload(&w).unwrap();
    // At 300, 700, ..., 9500 ms; the phase ends at 9.8 s, before the next.
    assert_eq!(r.idle_gaps, 24, "gaps in 9.8 s");
    assert_eq!(r.idle_ns, 24 * 100 * NS_PER_MS);
    assert_eq!(r.duration_ns, 9800 * NS_PER_MS);
    // Issued: exactly every 1000 IOs.
    let w = Workload { number_ios: Some(10_500), thinktime_ns: NS_PER_MS, thinktime_blocks: 1000, thinktime_blocks_issued: true, ..randwrite() };
    let r = sim.run_workload(&w).unwrap();
    assert_eq!(r.idle_gaps, 10);
}

/// fio's `thinktime_iotime`: the first period of IO, which no gap precedes, lasts
/// `thinktime_iotime` from the job's start, not `thinktime_iotime + thinktime` (it lasted
/// 10 s instead of 5 s here).
#[test]
fn the_first_thinktime_iotime_period_runs_from_the_job_start() {
    let cfg = small(&[], 1.07);
    let mut sim = filled(&cfg, 8);
    let w = Workload {
        read_fraction: 1.0,
        duration_ns: Some(12 * NS_PER_S),
        interval_ns: 100 * NS_PER_MS,
        thinktime_ns: 5 * NS_PER_S,
        thinktime_iotime_ns: 5 * NS_PER_S,
        ..randwrite()
    };
    let r = sim.run_workload(&w).unwrap();
    // 5 s of reads, the gap from 5.0 s (after the outstanding reads), reads again from
    // ~10.0 s; the next gap would be due at ~15 s.
    let busy: Vec<bool> = r.ios.iter().map(|&n| n > 0).collect();
    assert_eq!(busy.len(), 120);
    assert!(busy[..51].iter().all(|&b| b), "IO in every interval of the first 5.1 s: {busy:?}");
    assert!(busy[51..100].iter().all(|&b| !b), "idle from 5.1 s to 10.0 s: {busy:?}");
    assert!(busy[101..].iter().all(|&b| b), "IO again after 10.1 s: {busy:?}");
    assert_eq!(r.idle_gaps, 1);
    assert_eq!(r.idle_ns, 5 * NS_PER_S);
}

#[test]
fn rate_caps_hold_the_asked_iops_on_a_faster_drive() {
    // A fresh drive with spare to spare: no GC, every IO far below a millisecond.
    let cfg = small(&[], 1.5);
    let mut sim = Simulation::new(&cfg, 9).unwrap();
    let w = Workload { duration_ns: Some(20 * NS_PER_S), rate_iops_total: 2000.0, ..randwrite() };
    let r = sim.run_workload(&w).unwrap();
    check_directions(&r);
    let iops = r.total_ios as f64 / 20.0;
    assert!((iops / 2000.0 - 1.0).abs() < 0.001, "{iops} IOPS at a 2000 IOPS cap");
    // Every interval at the cap.
    assert!(r.ios.iter().all(|&n| n.abs_diff(2000) <= 1), "{:?}", r.ios);
    assert_eq!(r.idle_gaps, 0);
    assert!(r.idle_ns > 19 * NS_PER_S, "the drive is idle most of the time: {} ns", r.idle_ns);
    // Per direction: reads at 700/s and writes at 300/s in a 70/30 mix. The direction that
    // is ahead holds the host, so the counts are the mix's (writes before the 14,000th read:
    // negative binomial, 6000 ± 93) and neither exceeds its cap.
    let mut w = Workload { read_fraction: 0.7, duration_ns: Some(20 * NS_PER_S), ..randwrite() };
    w.read.rate_iops = 700.0;
    w.write.rate_iops = 300.0;
    let r = sim.run_workload(&w).unwrap();
    let (rd, wr) = (r.directions[0].total_ios as f64 / 20.0, r.directions[1].total_ios as f64 / 20.0);
    assert!(rd <= 700.05 && wr <= 300.05, "read {rd}/s, write {wr}/s");
    assert!(rd >= 700.0 * 0.97 && wr >= 300.0 * 0.92 && rd + wr >= 1000.0 * 0.97, "read {rd}/s, write {wr}/s");
    // A capped direction holds the host (the mix is drawn first, as fio does without its
    // switch to the other direction): in a 50/50 mix with writes capped at 300/s, reads
    // follow at about the same rate.
    let mut w = Workload { read_fraction: 0.5, duration_ns: Some(20 * NS_PER_S), ..randwrite() };
    w.write.rate_iops = 300.0;
    let r = sim.run_workload(&w).unwrap();
    let (rd, wr) = (r.directions[0].total_ios as f64 / 20.0, r.directions[1].total_ios as f64 / 20.0);
    assert!((wr / 300.0 - 1.0).abs() < 0.01 && (rd / 300.0 - 1.0).abs() < 0.1, "read {rd}/s, write {wr}/s");
}

#[test]
fn phases_end_on_duration_bytes_or_ios() {
    let cfg = small(&[], 1.07);
    let mut sim = filled(&cfg, 10);
    let user = sim.geometry().user_units;
    let t0 = sim.now_ns();
    let r = sim.run_workload(&Workload { duration_ns: Some(2 * NS_PER_S), interval_ns: 100 * NS_PER_MS, ..randwrite() }).unwrap();
    assert!(r.complete);
    assert_eq!((r.duration_ns, r.ios.len()), (2 * NS_PER_S, 20));
    // The drive's clock is at the last completion, at or after the phase's end.
    assert!(sim.now_ns() - t0 >= 2 * NS_PER_S);
    let mut w = Workload { io_bytes: Some(123 * 4096 * 16), ..randwrite() };
    w.write.bssplit = bs(&[(65536, 1), (4096, 1)]);
    let r = sim.run_workload(&w).unwrap();
    assert_eq!(r.host_write_bytes, 123 * 4096 * 16, "the last IO is cut to the byte count");
    let r = sim.run_workload(&Workload { number_ios: Some(777), ..randwrite() }).unwrap();
    assert_eq!(r.total_ios, 777);
    // The first limit reached ends the phase.
    let r = sim.run_workload(&Workload { number_ios: Some(1_000_000), io_bytes: Some(4096 * 1000), ..randwrite() }).unwrap();
    assert_eq!(r.total_ios, 1000);
    let r = sim.run_workload(&Workload { span_bytes: Some(user / 4 * UNIT_BYTES), ..randwrite() }).unwrap();
    assert_eq!(r.host_write_bytes, user / 4 * UNIT_BYTES, "one span's worth without a limit");
    // Progress and live figures work as for jobs.
    sim.start_workload(&Workload { duration_ns: Some(NS_PER_S), ..randwrite() }).unwrap();
    let p = sim.advance(100);
    assert!(!p.done && p.fraction > 0.0 && p.fraction < 1.0);
    assert_eq!(sim.phase_live().unwrap().remaining_ns, Some(NS_PER_S - p.elapsed_ns));
    while !sim.advance(100_000).done {}
    assert!(sim.finish_phase().complete);
}

#[test]
fn replay_reports_a_per_direction_series_that_adds_up_to_its_counts() {
    let cfg = small(&[], 1.07);
    let mut sim = filled(&cfg, 11);
    let user = sim.geometry().user_units;
    let mut rng = Rng::new(1);
    let cmds: Vec<Command> = (0..100_000)
        .map(|_| {
            let units = 1 + rng.below(8);
            let unit = rng.below(user - units);
            match rng.below(10) {
                0..=5 => Command { kind: CmdKind::Write, unit, units },
                6 => Command { kind: CmdKind::Trim, unit, units },
                7 | 8 => Command { kind: CmdKind::Read, unit, units },
                _ => Command { kind: CmdKind::Flush, unit: 0, units: 0 },
            }
        })
        .collect();
    sim.start_replay_with_interval(32, 10_000, 100 * NS_PER_MS).unwrap();
    sim.replay(&cmds).unwrap();
    let rep = sim.finish_replay();
    let s = &rep.series;
    check_directions(s);
    let c = rep.counts;
    assert_eq!([s.directions[0].total_ios, s.directions[1].total_ios, s.directions[2].total_ios], [c.reads, c.writes, c.trims]);
    assert_eq!([s.directions[0].total_bytes, s.directions[1].total_bytes, s.directions[2].total_bytes], [c.read_bytes, c.write_bytes, c.trim_bytes]);
    assert_eq!(s.duration_ns, rep.duration_ns);
    assert_eq!(s.total_ios + c.flushes, c.commands());
    assert_eq!(s.latency.count(), rep.latency.count());
}



/// A drive compressing 4:1 (1 KiB slots, 16 per 16 KiB page) with room for incompressible
/// data: user capacity = NAND / 4 / 1.15.
fn compressing_drive() -> Config {
    let mut cfg = Config::default();
    set(&mut cfg, &[("blocks_per_plane", "128"), ("pages_per_block", "16"), ("compression_ratio", "4")]);
    let physical = 32 * 128 * 16 * 16u64;
    let user = (physical as f64 / 4.0 / 1.15) as u64;
    cfg.set("user_capacity_bytes", &(user * UNIT_BYTES).to_string()).unwrap();
    cfg
}

/// NAND slots and host units written by `w` on `sim`.
fn nand_per_host(r: &PhaseReport) -> f64 {
    let (a, b) = (r.snapshots[0], *r.snapshots.last().unwrap());
    (b.nand_units - a.nand_units) as f64 / (b.host_units - a.host_units) as f64
}

#[test]
fn compressible_writes_take_proportionally_fewer_nand_slots() {
    let cfg = compressing_drive();
    // A sequential pass on a fresh drive (no GC): exactly the slots the data fills.
    for (pct, slots) in [(None, 1.0), (Some(0), 4.0), (Some(25), 3.0), (Some(50), 2.0), (Some(75), 1.0), (Some(100), 1.0), (Some(60), 1.6)] {
        let mut sim = Simulation::new(&cfg, 1).unwrap();
        let mut w = Workload { buffer_compress_pct: pct, ..randwrite() };
        w.write.random_fraction = 0.0;
        w.write.bssplit = bs(&[(131072, 1)]);
        let r = sim.run_workload(&w).unwrap();
        assert_eq!(r.host_write_bytes, sim.geometry().user_units * UNIT_BYTES, "host bytes are the data's, companions aside");
        assert!((nand_per_host(&r) - slots).abs() < 1e-3, "{pct:?} % compressible: {} slots per unit, expected {slots}", nand_per_host(&r));
        sim.device().ftl().check_invariants().unwrap();
    }
    // Steady state: random 4 KiB writes; half-compressible data writes at most half the
    // NAND of incompressible data (half the slots, and more effective spare for GC).
    let steady = |pct| {
        let mut sim = Simulation::new(&cfg, 2).unwrap();
        let user = sim.geometry().user_units;
        let w = Workload { buffer_compress_pct: Some(pct), io_bytes: Some(4 * user * UNIT_BYTES), ..randwrite() };
        sim.run_workload(&w).unwrap();
        let r = sim.run_workload(&w).unwrap();
        sim.device().ftl().check_invariants().unwrap();
        nand_per_host(&r)
    };
    let (n0, n50, n75) = (steady(0), steady(50), steady(75));
    assert!(n0 > 4.0 * 1.2, "incompressible data: {n0} slots per unit, GC included");
    assert!(n50 <= 0.5 * n0 && n75 <= 0.25 * n0 * 1.02, "NAND slots per unit: {n0} (0 %), {n50} (50 %), {n75} (75 %)");
}

#[test]
fn companions_never_leak_and_too_little_nand_is_refused() {
    let cfg = compressing_drive();
    let mut sim = Simulation::new(&cfg, 3).unwrap();
    let user = sim.geometry().user_units;
    let mut w = Workload { buffer_compress_pct: Some(0), ..randwrite() };
    w.write.random_fraction = 0.0;
    sim.run_workload(&w).unwrap();
    let companions = |sim: &Simulation| {
        let ftl = sim.device().ftl();
        (0..user).flat_map(|u| (0..ftl.companions_per_unit()).map(move |j| (u, j))).filter(|&(u, j)| ftl.lookup(ftl.companion_lpn(u, j)).is_some()).count()
    };
    assert_eq!(companions(&sim), 3 * user as usize);
    // A job's writes keep the profile's ratio: one slot per unit; the old companions go.
    let half = user / 2 / 32 * 32;
    sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, half)).unwrap();
    assert_eq!(companions(&sim), 3 * (user - half) as usize);
    // TRIM frees a unit's companions with it.
    sim.run(Job::new(Pattern::Trim, 1, 4, half, user - half)).unwrap();
    assert_eq!(companions(&sim), 0);
    sim.device().ftl().check_invariants().unwrap();
    // Reads and replays work on compressed data.
    let r = sim.run_workload(&Workload { read_fraction: 1.0, number_ios: Some(10_000), ..randwrite() }).unwrap();
    assert_eq!(r.total_ios, 10_000);

    // A drive sized for 4:1 compressible data cannot take incompressible data.
    let mut cfg = compressing_drive();
    let physical = 32 * 128 * 16 * 16u64;
    cfg.set("user_capacity_bytes", &(physical * 9 / 10 * UNIT_BYTES).to_string()).unwrap();
    let mut sim = Simulation::new(&cfg, 3).unwrap();
    let e = sim.start_workload(&Workload { buffer_compress_pct: Some(50), ..randwrite() }).unwrap_err().workload().cloned().unwrap();
    assert_eq!(e.field, "buffer_compress_pct");
    assert!(sim.start_workload(&Workload { buffer_compress_pct: Some(80), ..randwrite() }).is_ok(), "1 slot per unit fits");
    sim.finish_phase();
    // Without compression the data's compressibility changes nothing.
    let mut sim = Simulation::new(&small(&[], 1.07), 3).unwrap();
    let mut w = Workload { buffer_compress_pct: Some(90), ..randwrite() };
    w.write.random_fraction = 0.0;
    let r = sim.run_workload(&w).unwrap();
    assert_eq!(nand_per_host(&r), 1.0);
    assert!(!sim.device().compressing());
}
