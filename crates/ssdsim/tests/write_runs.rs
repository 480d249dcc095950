//! A write's units bound for one page of a plane go to the FTL at once (`Device::place_run`,
//! `Ftl::write_run`) only where that is exact. Oracle: the same drive with that turned off,
//! placing every unit on its own. Every phase's report (series, counter snapshots, latency
//! histograms) and the final state must be identical, over workloads that take runs and
//! refuse them (sequential writes of many sizes and offsets, multi-unit random rewrites
//! that invalidate, TRIMs, reads, idle time) on drives with each mechanism that can refuse
//! one: active GC, foreground GC at the reserve, payload tracking, SLC cache, map cache,
//! both die allocations.

mod common;

use common::{set, small, DEFAULT_PROFILE_GC};
use ssdsim::time::NS_PER_S;
use ssdsim::{Config, Job, Pattern, Simulation};

/// Runs the workload on `cfg` (write runs on or off); returns every report and the end state.
fn run(cfg: &Config, runs: bool, track: bool) -> Vec<String> {
    let mut sim = Simulation::with_payload_tracking(cfg, 11, track).unwrap();
    sim.set_write_runs(runs);
    let user = sim.geometry().user_units;
    let mut out = vec![];
    let mut job = |sim: &mut Simulation, j: Job| out.push(format!("{:?}", sim.run(j).unwrap()));
    job(&mut sim, Job::new(Pattern::SeqWrite, 32, 32, 0, user));
    for (bs, qd, offset) in [(3, 1, 1), (5, 4, 7), (1, 32, 0), (16, 2, 3), (7, 8, 2)] {
        let mut w = Job::new(Pattern::SeqWrite, bs, qd, offset, user - offset);
        w.io_units = Some(user / 3);
        job(&mut sim, w);
    }
    for bs in [8, 4, 2, 13] {
        let mut w = Job::new(Pattern::RandWrite, bs, 32, 0, user);
        w.io_units = Some(user);
        job(&mut sim, w);
    }
    job(&mut sim, Job::new(Pattern::Trim, 64, 4, user / 2, user / 4));
    sim.idle(3 * NS_PER_S).unwrap();
    let mut w = Job::new(Pattern::RandWrite, 6, 16, 0, user);
    w.io_units = Some(user / 2);
    job(&mut sim, w);
    job(&mut sim, Job::new(Pattern::SeqRead, 8, 8, 0, user / 4));
    out.push(format!("{:?} {:?} {:?}", sim.snapshot(), sim.ftl_counters(), sim.device().ftl().check_invariants()));
    if track {
        out.push(format!("{:?}", (0..user).map(|u| sim.device().ftl().read_payload(u)).collect::<Vec<_>>()));
    }
    out
}

fn same_either_way(name: &str, cfg: &Config, track: bool) {
    let (on, off) = (run(cfg, true, track), run(cfg, false, track));
    assert_eq!(on.len(), off.len());
    for (i, (a, b)) in on.iter().zip(&off).enumerate() {
        assert!(a == b, "{name}: step {i} differs with write runs:\n{a}\nwithout:\n{b}");
    }
}

#[test]
fn write_runs_change_nothing_with_foreground_gc_at_the_reserve() {
    same_either_way("foreground", &small(&[], 1.1), false);
}

#[test]
fn write_runs_change_nothing_with_active_and_idle_gc_and_tracked_payloads() {
    // Fixed-rate active GC, started well above the foreground reserve: busy in every plane.
    let keys = [("gc_bg_start_free_blocks", "8"), ("gc_bg_stop_free_blocks", "12"), ("gc_bg_copies_per_write", "2.5"),
                ("gc_idle_delay_ms", "500"), ("gc_idle_free_blocks", "16")];
    same_either_way("active GC", &small(&keys, 1.15), true);
}

#[test]
fn write_runs_change_nothing_with_earliest_dies_and_an_slc_cache() {
    let keys: Vec<_> = [("die_allocation", "earliest"), ("cell_bits", "3")].iter().chain(DEFAULT_PROFILE_GC).copied().collect();
    let mut cfg = small(&keys, 1.2);
    set(&mut cfg, &[("slc_static_bytes", "4194304"), ("slc_dynamic_max_bytes", "16777216"), ("slc_t_prog_us", "200"),
                    ("slc_when_full", "fold")]);
    same_either_way("slc", &cfg, false);
}

#[test]
fn write_runs_change_nothing_with_a_map_cache_and_four_unit_pages() {
    let keys = [("map_cache_bytes", "8192"), ("map_miss_us", "10"), ("page_size_bytes", "16384")];
    same_either_way("map cache", &small(&keys, 1.25), true);
}
