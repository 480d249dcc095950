//! The series counts host writes, NAND programs, GC copies and erases when they are carried
//! out (a write completes, a die programs, copies, erases), not when the FTL decides them:
//! an interval in which the dies spend their time collecting shows the copies they make,
//! and a phase's intervals still add up to everything it decided.

mod common;

use ssdsim::ftl::FtlCounters;
use ssdsim::time::{Ns, NS_PER_MS, NS_PER_S};
use ssdsim::{Config, Job, Pattern, PhaseReport, Simulation, Snapshot, UNIT_BYTES};

/// Foreground GC only (a plane out of free blocks collects while writes wait), host data
/// to the dies in turn: the built-in `recovery` profile's GC, ~7 % spare.
fn foreground() -> Config {
    common::small(&[("gc_fg_free_blocks", "2"), ("t_prog_us", "1500")], 1.07)
}

/// Active GC that relocates 400 units per host unit once started, as the `stalling` profile:
/// a whole round decided at once, carried out over seconds.
fn rounds() -> Config {
    common::small(&[("gc_bg_start_free_blocks", "3"), ("gc_bg_stop_free_blocks", "3"), ("gc_bg_copies_per_write", "400")], 1.07)
}

/// Fill, random writes to steady state (twice the user capacity), then `secs` of 4 KiB
/// random writes at QD32 with the series at `interval_ns`; with the FTL's counters before
/// and after that phase.
fn steady(cfg: &Config, secs: u64, interval_ns: Ns) -> (Simulation, PhaseReport, FtlCounters, FtlCounters) {
    let mut sim = common::filled(cfg, 3);
    let user = sim.geometry().user_units;
    let mut warm = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    warm.io_units = Some(2 * user);
    sim.run(warm).unwrap();
    let before = sim.ftl_counters();
    let mut job = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    job.duration_ns = Some(secs * NS_PER_S);
    job.interval_ns = interval_ns;
    let r = sim.run(job).unwrap();
    let after = sim.ftl_counters();
    (sim, r, before, after)
}

/// Per-interval increase of one counter.
fn deltas(r: &PhaseReport, f: fn(&Snapshot) -> u64) -> Vec<u64> {
    r.snapshots.windows(2).map(|w| f(&w[1]).checked_sub(f(&w[0])).expect("a counter went down")).collect()
}

#[test]
fn the_intervals_add_up_to_everything_the_phase_decided() {
    for cfg in [foreground(), rounds()] {
        let (mut sim, r, before, after) = steady(&cfg, 10, 100 * NS_PER_MS);
        let sum = |f: fn(&Snapshot) -> u64| deltas(&r, f).iter().sum::<u64>();
        assert_eq!(sum(|s| s.nand_units), after.nand_units() - before.nand_units());
        assert_eq!(sum(|s| s.gc_units), after.gc_units - before.gc_units);
        assert_eq!(sum(|s| s.erases), after.erases - before.erases);
        assert_eq!(sum(|s| s.host_units), after.host_units - before.host_units);
        assert_eq!(sum(|s| s.host_bytes), r.host_write_bytes);
        assert_eq!(r.host_write_bytes, sum(|s| s.host_units) * UNIT_BYTES);
        // The phase ended with work in flight (its last interval took it) ...
        let end = *r.snapshots.last().unwrap();
        assert!(end.gc_die_done_ns < end.gc_die_ns, "no GC in flight at the end: {end:?}");
        // ... which the next phase does not count again.
        let user = sim.geometry().user_units;
        let mut next = Job::new(Pattern::RandWrite, 1, 32, 0, user);
        next.duration_ns = Some(NS_PER_S);
        let n = sim.run(next).unwrap();
        let media = |s: &Snapshot| (s.host_units, s.host_bytes, s.nand_units, s.gc_units, s.erases);
        assert_eq!(media(&n.start), media(&end));
        assert_eq!(media(n.snapshots.last().unwrap()), media(&sim.snapshot()));
    }
}

#[test]
fn an_interval_whose_dies_collect_shows_the_copies_and_programs_they_make() {
    let interval = 100 * NS_PER_MS;
    for (name, cfg) in [("foreground", foreground()), ("rounds", rounds())] {
        let (sim, r, _, _) = steady(&cfg, 20, interval);
        let dies = sim.geometry().dies as u64;
        let (gc_die, nand, copies) = (deltas(&r, |s| s.gc_die_done_ns), deltas(&r, |s| s.nand_units), deltas(&r, |s| s.gc_units));
        // Intervals in which the dies spent most of their time collecting.
        let busy: Vec<usize> = (0..gc_die.len()).filter(|&i| gc_die[i] * 2 > dies * interval).collect();
        assert!(busy.len() * 4 > gc_die.len(), "{name}: the drive should be collecting most of the time ({} of {})", busy.len(), gc_die.len());
        for &i in &busy {
            assert!(nand[i] > 0 && copies[i] > 0, "{name}: interval {i}: {} ns of GC die time, {} units programmed, {} copied", gc_die[i], nand[i], copies[i]);
        }
    }
}
