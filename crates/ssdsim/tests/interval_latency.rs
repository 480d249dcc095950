//! Per-interval latency (`PhaseReport::interval_latency`) and the live figures of a running
//! phase (`Simulation::phase_live`).
//!
//! Oracles:
//! - every interval's IO count is the interval's `ios` entry, so the counts add up to the
//!   phase's IOs; the largest interval maximum is the phase maximum;
//! - the whole-phase histogram (merged from the intervals) is the same whatever the interval
//!   length, and a single interval spanning the phase has exactly the phase's quantiles;
//! - at QD1 on a fresh drive (no GC, write buffer never full) every write takes exactly
//!   controller time + link transfer, so every interval's p50, p99 and max are that figure;
//! - drive-scope foreground GC stalls show as intervals whose maximum is far above the
//!   typical interval's median;
//! - the live figures agree with the final series; same seed, same figures.

use ssdsim::stats::IntervalLatency;
use ssdsim::time::{transfer_ns, us_to_ns, NS_PER_MS, NS_PER_S};
use ssdsim::{Config, Job, Pattern, PhaseReport, Simulation, UNIT_BYTES};

fn set(cfg: &mut Config, keys: &[(&str, &str)]) {
    for (k, v) in keys {
        cfg.set(k, v).unwrap();
    }
}

/// A small drive with ~7 % spare area (16-page blocks so GC starts soon), like the golden
/// scenarios.
fn small(keys: &[(&str, &str)]) -> Config {
    let mut cfg = Config::default();
    set(&mut cfg, &[("blocks_per_plane", "128"), ("pages_per_block", "16")]);
    set(&mut cfg, keys);
    let geo = {
        let mut c = cfg.clone();
        c.set("user_capacity_bytes", "4096").unwrap();
        c.validate().unwrap()
    };
    cfg.set("user_capacity_bytes", &(geo.physical_units * 93 / 100 * UNIT_BYTES).to_string()).unwrap();
    cfg
}

/// The `cleanup-later` profile's GC keys: active GC that falls behind, then foreground GC
/// that stops the whole drive.
const CLEANUP_LATER: &[(&str, &str)] = &[
    ("gc_policy", "greedy"),
    ("gc_fg_free_blocks", "2"),
    ("gc_fg_stall", "drive"),
    ("gc_bg_start_free_blocks", "4"),
    ("gc_bg_stop_free_blocks", "5"),
    ("gc_bg_reclaim_ratio", "1.5"),
    ("gc_bg_copies_per_write", "5.5"),
];

/// Fills the drive sequentially, then returns it ready for steady-state random writes.
fn filled(cfg: &Config, seed: u64) -> Simulation {
    let mut sim = Simulation::new(cfg, seed).unwrap();
    let user = sim.geometry().user_units;
    sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    sim
}

/// 4 KiB random writes at QD32 over the whole drive, `units` of them, `interval_ns` series.
fn random_writes(sim: &mut Simulation, units: u64, interval_ns: u64) -> PhaseReport {
    let user = sim.geometry().user_units;
    let mut job = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    job.io_units = Some(units);
    job.interval_ns = interval_ns;
    sim.run(job).unwrap()
}

/// Checks the per-interval figures against the series and the whole-phase histogram.
fn check_consistent(r: &PhaseReport) {
    assert_eq!(r.interval_latency.len(), r.ios.len());
    for (k, (l, &n)) in r.interval_latency.iter().zip(&r.ios).enumerate() {
        match l {
            None => assert_eq!(n, 0, "interval {k}: {n} IOs but no latency"),
            Some(l) => {
                assert_eq!(l.ios, n, "interval {k}");
                assert!(l.p50_ns <= l.p99_ns && l.p99_ns <= l.p999_ns && l.p999_ns <= l.max_ns, "interval {k}: {l:?}");
                assert!(l.max_ns <= r.latency.max_ns(), "interval {k}");
            }
        }
    }
}

#[test]
fn interval_counts_add_up_and_the_largest_maximum_is_the_phase_maximum() {
    let mut sim = filled(&small(&[]), 3);
    let user = sim.geometry().user_units;
    let r = random_writes(&mut sim, user, 100 * NS_PER_MS);
    assert!(r.ios.len() > 20, "{} intervals", r.ios.len());
    check_consistent(&r);
    // A phase limited by bytes keeps every completion.
    let counted: u64 = r.interval_latency.iter().flatten().map(|l| l.ios).sum();
    assert_eq!(counted, r.total_ios);
    assert_eq!(r.latency.count(), r.total_ios);
    let max = r.interval_latency.iter().flatten().map(|l| l.max_ns).max().unwrap();
    assert_eq!(max, r.latency.max_ns());
}

#[test]
fn the_phase_histogram_does_not_depend_on_the_interval_and_one_interval_is_the_phase() {
    let cfg = small(&[]);
    let user = filled(&cfg, 5).geometry().user_units;
    let run = |interval_ns| random_writes(&mut filled(&cfg, 5), user, interval_ns);
    let one = run(1000 * NS_PER_S); // longer than the phase: a single interval
    let fine = run(NS_PER_S / 10);
    assert_eq!(one.ios.len(), 1);
    assert!(fine.ios.len() > 20);
    // The interval only changes how completions are binned, never the drive.
    assert_eq!(one.total_ios, fine.total_ios);
    assert_eq!(one.snapshots.last(), fine.snapshots.last());
    let grid = |r: &PhaseReport| (0..=1000).map(|i| r.latency.quantile_ns(i as f64 / 1000.0)).collect::<Vec<_>>();
    assert_eq!(grid(&one), grid(&fine), "whole-phase quantiles differ between interval lengths");
    assert_eq!((one.latency.count(), one.latency.max_ns()), (fine.latency.count(), fine.latency.max_ns()));
    // The single interval's figures are the phase's.
    let l = one.interval_latency[0].unwrap();
    let q = |q| one.latency.quantile_ns(q).unwrap();
    assert_eq!(l, IntervalLatency { ios: one.total_ios, p50_ns: q(0.5), p99_ns: q(0.99), p999_ns: q(0.999), max_ns: q(1.0) });
}

#[test]
fn qd1_writes_on_a_fresh_drive_all_take_controller_plus_link_time() {
    // 16 GiB of NAND; 2 s of 4 KiB writes at QD1 (~0.4 GB) take a few blocks per plane: no
    // GC, and the 16 MiB buffer drains faster (16 dies) than one command at a time fills it.
    let mut cfg = Config::default();
    set(&mut cfg, &[("blocks_per_plane", "128"), ("user_capacity_bytes", "15GiB")]);
    for bs_units in [1u64, 2] {
        let mut sim = Simulation::new(&cfg, 9).unwrap();
        let user = sim.geometry().user_units;
        let mut job = Job::new(Pattern::RandWrite, bs_units, 1, 0, user);
        job.duration_ns = Some(2 * NS_PER_S);
        job.interval_ns = 100 * NS_PER_MS;
        let r = sim.run(job).unwrap();
        assert_eq!(sim.snapshot().gc_units, 0, "GC ran");
        // crate::device: a write is accepted by the controller, then each unit crosses the link.
        let each = us_to_ns(cfg.controller_cmd_us) + bs_units * transfer_ns(UNIT_BYTES, cfg.host_link_mbps * 1e6);
        assert_eq!(r.ios.len(), 20);
        check_consistent(&r);
        for (k, l) in r.interval_latency.iter().enumerate() {
            let l = l.unwrap_or_else(|| panic!("interval {k} is empty"));
            assert_eq!(l.max_ns, each, "interval {k}");
            for v in [l.p50_ns, l.p99_ns, l.p999_ns] {
                assert!(v.abs_diff(each) * 32 <= each, "interval {k}: {v} ns vs {each} ns");
            }
            // ~100 ms / each, give or take the IO straddling each boundary.
            assert!((l.ios as i64 - (100 * NS_PER_MS / each) as i64).abs() <= 1, "interval {k}: {} IOs", l.ios);
        }
    }
}

#[test]
fn drive_stalls_show_as_interval_maxima_far_above_the_typical_median() {
    let mut sim = filled(&small(CLEANUP_LATER), 4);
    let user = sim.geometry().user_units;
    // Short intervals, so a stall pushes completions several intervals ahead of submission.
    let r = random_writes(&mut sim, 2 * user, 10 * NS_PER_MS);
    check_consistent(&r);
    let lat: Vec<IntervalLatency> = r.interval_latency.iter().flatten().copied().collect();
    let mut p50: Vec<u64> = lat.iter().map(|l| l.p50_ns).collect();
    p50.sort_unstable();
    let typical = p50[p50.len() / 2];
    let stalled = lat.iter().filter(|l| l.max_ns > 20 * typical).count();
    assert!(stalled >= 3, "{stalled} intervals with a maximum above 20 x the median p50 ({typical} ns)");
    assert!(r.ios.contains(&0), "no interval without completions: no stall longer than an interval");
    assert_eq!(lat.iter().map(|l| l.max_ns).max(), Some(r.latency.max_ns()));
    assert_eq!(lat.iter().map(|l| l.ios).sum::<u64>(), r.total_ios);
}

#[test]
fn a_timed_phase_drops_the_same_intervals_from_ios_and_latency() {
    let mut sim = filled(&small(CLEANUP_LATER), 6);
    let user = sim.geometry().user_units;
    let mut job = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    job.duration_ns = Some(3 * NS_PER_S + 50 * NS_PER_MS);
    job.interval_ns = 100 * NS_PER_MS;
    let r = sim.run(job).unwrap();
    assert_eq!(r.ios.len(), 31);
    check_consistent(&r);
    // The whole-phase histogram keeps the IOs completed after the end; the series does not.
    assert_eq!(r.latency.count(), r.total_ios);
    assert!(r.ios.iter().sum::<u64>() <= r.total_ios);
}

#[test]
fn live_figures_follow_the_final_intervals() {
    let mut sim = filled(&small(CLEANUP_LATER), 8);
    let user = sim.geometry().user_units;
    let mut job = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    let duration_ns = 6 * NS_PER_S;
    job.duration_ns = Some(duration_ns);
    job.interval_ns = 50 * NS_PER_MS;
    sim.start_phase(job).unwrap();
    assert!(sim.phase_live().is_some());
    let mut seen = Vec::new();
    loop {
        let p = sim.advance(997);
        let live = sim.phase_live().unwrap();
        assert_eq!(live.elapsed_ns, p.elapsed_ns);
        assert_eq!(live.remaining_ns, Some(duration_ns - p.elapsed_ns));
        assert_eq!(live.intervals_done, p.elapsed_ns / (50 * NS_PER_MS), "final = intervals the submission clock has passed");
        seen.push(live);
        if p.done {
            break;
        }
    }
    let r = sim.finish_phase();
    assert!(sim.phase_live().is_none());
    let zero_total = r.ios.iter().filter(|&&n| n == 0).count() as u64;
    assert!(zero_total > 0, "the scenario should stall");
    for live in seen {
        let done = live.intervals_done as usize;
        if done == 0 {
            assert_eq!((live.last_ios, live.min_ios, live.last_bytes), (None, None, None));
            continue;
        }
        let final_ios = &r.ios[..done];
        assert_eq!(live.last_ios, Some(final_ios[done - 1]));
        assert_eq!(live.last_bytes, Some(r.bytes[done - 1]));
        assert_eq!(live.min_ios, final_ios.iter().min().copied());
        assert_eq!(live.zero_intervals, final_ios.iter().filter(|&&n| n == 0).count() as u64);
    }
    // A phase limited by bytes has no known remaining time.
    let mut job = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    job.io_units = Some(1000);
    sim.start_phase(job).unwrap();
    sim.advance(10);
    assert_eq!(sim.phase_live().unwrap().remaining_ns, None);
    sim.finish_phase();
}

#[test]
fn same_seed_same_interval_latencies() {
    let cfg = small(CLEANUP_LATER);
    let run = |seed| {
        let mut sim = filled(&cfg, seed);
        let user = sim.geometry().user_units;
        random_writes(&mut sim, user, 100 * NS_PER_MS).interval_latency
    };
    let a = run(11);
    assert_eq!(a, run(11));
    assert_ne!(a, run(12));
}
