//! A drive in steady state under 4 KiB random writes returns to the same write rate after a
//! short phase of something else (mixed reads and writes, reads, writes below 4 KiB, idle
//! time): the other phase changes which dies collect when, not how fast the drive can write.
//!
//! Each test fills a small drive twice sequentially, runs random writes at QD32 over three
//! quarters of it for 20 s, then 5 s of the other workload, then the same random writes for
//! 20 s, and compares the mean IOPS of the second half of each random-write phase. GC moves
//! whole victims at once on one die here, for tens of milliseconds (16-page blocks) to over
//! a second (256-page blocks): programs for that die wait behind it, and the other dies of
//! its channel must still get their data meanwhile, however the dies' GC is staggered.
//! Each case runs with both die allocations (`earliest`, `striped`). The other phase starts
//! behind the random writes' full write buffer: with striped allocation most of it is data
//! for the die furthest behind, up to ~2.5 s of its work, which the other phase's writes wait
//! for (5 s leaves it time to run).

mod common;
use common::small;
use ssdsim::{BlockSize, Config, Job, Pattern, PhaseReport, Simulation, Workload, UNIT_BYTES};

const S: u64 = 1_000_000_000;

/// Mean IOs per 1 s interval over the second half of a phase.
fn steady_iops(r: &PhaseReport) -> f64 {
    let n = r.ios.len();
    r.ios[n / 2..].iter().sum::<u64>() as f64 / (n - n / 2) as f64
}

/// What comes between the random-write phases.
enum Other {
    Run(Box<Workload>),
    /// No host I/O for this long [ns].
    Idle(u64),
}

/// IOPS of the random writes before and after `other` (see the module doc).
fn random_writes_around(cfg: &Config, other: &Other) -> (f64, f64) {
    assert!(cfg.die_allocation == "earliest" || cfg.die_allocation == "striped");
    let mut sim = Simulation::new(cfg, 1).unwrap();
    let user = sim.geometry().user_units;
    for _ in 0..2 {
        sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user / 32 * 32)).unwrap();
    }
    let writes = Workload { span_bytes: Some(user * 3 / 4 * UNIT_BYTES), duration_ns: Some(20 * S), ..Workload::default() };
    let before = steady_iops(&sim.run_workload(&writes).unwrap());
    // Over the same span: writes beyond it would move cold data into the blocks the random
    // writes keep cleaning, which raises their write amplification for good (a change of the
    // data's layout, not of the timing).
    match other {
        Other::Run(w) => {
            let r = sim.run_workload(&Workload { span_bytes: writes.span_bytes, ..(**w).clone() }).unwrap();
            assert!(r.total_ios > 1000, "the other phase ran: {} IOs", r.total_ios);
        }
        Other::Idle(ns) => {
            sim.idle(*ns).unwrap();
        }
    }
    let after = steady_iops(&sim.run_workload(&writes).unwrap());
    sim.device().ftl().check_invariants().unwrap();
    (before, after)
}

/// Random writes run at the same rate around `other` on `cfg` with either die allocation.
fn assert_same_rate(cfg: Config, other: &Other) {
    for alloc in ["striped", "earliest"] {
        let mut cfg = cfg.clone();
        cfg.set("die_allocation", alloc).unwrap();
        let (before, after) = random_writes_around(&cfg, other);
        assert!((after / before - 1.0).abs() < 0.1, "{alloc}: random writes {before:.0} IOPS before, {after:.0} after");
    }
}

/// 128 blocks of 16 pages per plane, 7 % spare.
fn short_blocks() -> Config {
    small(&[], 1.07)
}

/// 32 blocks of 256 pages per plane (the profiles' block size), 30 % spare.
fn long_blocks() -> Config {
    small(&[("pages_per_block", "256"), ("blocks_per_plane", "32")], 1.3)
}

fn five_seconds() -> Workload {
    Workload { duration_ns: Some(5 * S), ..Workload::default() }
}

#[test]
fn random_writes_after_a_mixed_phase_run_as_fast_as_before_it() {
    let mix = Workload { read_fraction: 0.65, ..five_seconds() };
    assert_same_rate(short_blocks(), &Other::Run(Box::new(mix.clone())));
    assert_same_rate(long_blocks(), &Other::Run(Box::new(mix)));
}

#[test]
fn random_writes_after_a_read_phase_run_as_fast_as_before_it() {
    let reads = Workload { read_fraction: 1.0, ..five_seconds() };
    assert_same_rate(long_blocks(), &Other::Run(Box::new(reads)));
}

#[test]
fn random_writes_after_sub_4k_writes_run_as_fast_as_before_them() {
    let mut rmw = five_seconds();
    rmw.write.bssplit = vec![BlockSize { bs_bytes: 2048, weight: 1 }];
    assert_same_rate(short_blocks(), &Other::Run(Box::new(rmw)));
}

/// With the default profile's GC (active, and idle GC that frees blocks in 5 s of idle time):
/// the writes after it run faster while the freed blocks last, then back at the same rate.
#[test]
fn random_writes_after_an_idle_period_run_as_fast_as_before_it() {
    let mut cfg = short_blocks();
    for (k, v) in common::DEFAULT_PROFILE_GC {
        cfg.set(k, v).unwrap();
    }
    assert_same_rate(cfg.clone(), &Other::Idle(5 * S));
    assert_same_rate(long_blocks(), &Other::Idle(5 * S));
}
