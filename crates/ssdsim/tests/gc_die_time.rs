//! GC die time in the series: decided (`gc_die_ns`, when a write needs the work) and carried
//! out (`gc_die_done_ns`, when the dies do it).
//!
//! A drive that decides a whole round of GC at once (here: active GC relocating 400 units per
//! host unit, as the `stalling` profile) books seconds of die time in one interval; the dies
//! carry it out over the following intervals. The carried-out figure must never exceed the
//! dies times the interval, must not depend on the series interval (it is a function of
//! time), and must catch up with the decided figure once the drive has had time to finish.

mod common;

use ssdsim::time::{NS_PER_MS, NS_PER_S};
use ssdsim::{Job, Pattern, PhaseReport, Simulation};

fn stalling() -> ssdsim::Config {
    common::small(
        &[("gc_bg_start_free_blocks", "3"), ("gc_bg_stop_free_blocks", "3"), ("gc_bg_copies_per_write", "400")],
        1.07,
    )
}

/// Fill, then 4 KiB random writes at QD32 for `secs`, the series at `interval_ns`.
fn torture(interval_ns: u64, secs: u64) -> (Simulation, PhaseReport) {
    let mut sim = common::filled(&stalling(), 5);
    let user = sim.geometry().user_units;
    let mut job = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    job.duration_ns = Some(secs * NS_PER_S);
    job.interval_ns = interval_ns;
    let r = sim.run(job).unwrap();
    (sim, r)
}

#[test]
fn carried_out_gc_time_stays_within_the_dies_while_decided_time_runs_ahead() {
    let interval = 20 * NS_PER_MS;
    let (sim, r) = torture(interval, 20);
    let dies = sim.geometry().dies as u64;
    let mut decided_over = 0;
    for w in r.snapshots.windows(2) {
        let done = w[1].gc_die_done_ns - w[0].gc_die_done_ns;
        assert!(done <= dies * interval, "{done} ns of GC in a {interval} ns interval on {dies} dies");
        decided_over += (w[1].gc_die_ns - w[0].gc_die_ns > dies * interval) as u32;
        assert!(w[1].gc_die_done_ns <= w[1].gc_die_ns);
    }
    // The drive is one that decides rounds at once: otherwise this test shows nothing.
    assert!(decided_over > 0, "no interval decided more GC than its dies can do");
    let done: u64 = r.snapshots.last().unwrap().gc_die_done_ns - r.snapshots[0].gc_die_done_ns;
    assert!(done > 0);
}

#[test]
fn carried_out_gc_time_is_a_function_of_time_not_of_the_series_interval() {
    let (_, coarse) = torture(100 * NS_PER_MS, 10);
    let (_, fine) = torture(10 * NS_PER_MS, 10);
    assert_eq!(fine.snapshots.len(), 10 * (coarse.snapshots.len() - 1) + 1);
    for (i, s) in coarse.snapshots.iter().enumerate() {
        assert_eq!(s.gc_die_done_ns, fine.snapshots[10 * i].gc_die_done_ns, "boundary {i}");
    }
}

#[test]
fn after_idle_time_the_dies_have_carried_out_all_that_was_decided() {
    let (mut sim, r) = torture(100 * NS_PER_MS, 10);
    let end = *r.snapshots.last().unwrap();
    assert!(end.gc_die_done_ns < end.gc_die_ns, "nothing left to carry out at the phase end: {end:?}");
    let decided = sim.snapshot().gc_die_ns;
    sim.idle(60 * NS_PER_S).unwrap();
    let after = sim.snapshot();
    // Idle GC may decide more; what was decided before has been carried out.
    assert!(after.gc_die_done_ns >= decided, "{after:?}");
    assert_eq!(after.gc_die_done_ns, after.gc_die_ns);
}
