//! Active GC writes the new L2P entries of the units it moves with streamed (non-temporal)
//! stores on drives whose map is too big for the caches, and prefetches them on smaller
//! drives. Both ways must leave the same drive: one small drive is run both ways, with active
//! GC (one copy per host write and longer runs) beside foreground GC, TRIM and idle GC.

mod common;

use ssdsim::time::NS_PER_S;
use ssdsim::{Config, Job, Pattern, Simulation, Snapshot, Workload};

/// Every phase's snapshots, the final counters and the whole L2P map.
type Outcome = (Vec<Vec<Snapshot>>, Snapshot, Vec<Option<u32>>);

fn run(cfg: &Config, streamed: bool) -> Outcome {
    let mut sim = Simulation::new(cfg, 9).unwrap();
    sim.set_map_streamed(streamed);
    assert_eq!(sim.device().ftl().map_streamed(), streamed && cfg!(target_arch = "x86_64"));
    let user = sim.geometry().user_units;
    let mut phases = vec![sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap().snapshots];
    let mixed = Workload { read_fraction: 0.6, trim_fraction: 0.05, number_ios: Some(3 * user), ..Workload::default() };
    phases.push(sim.run_workload(&mixed).unwrap().snapshots);
    sim.idle(5 * NS_PER_S).unwrap();
    let mut rw = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    rw.io_units = Some(2 * user);
    phases.push(sim.run(rw).unwrap().snapshots);
    sim.device().ftl().check_invariants().unwrap();
    let map = (0..user).map(|lpn| sim.device().ftl().lookup(lpn)).collect();
    (phases, sim.snapshot(), map)
}

fn same_both_ways(keys: &[(&str, &str)]) -> Snapshot {
    let cfg = common::small(keys, 1.12);
    let prefetched = run(&cfg, false);
    let streamed = run(&cfg, true);
    assert_eq!(prefetched.1, streamed.1, "final counters");
    assert_eq!(prefetched.0, streamed.0, "phase series");
    assert!(prefetched.2 == streamed.2, "L2P maps differ");
    streamed.1
}

#[test]
fn active_gc_moves_the_same_units_streamed_or_prefetched() {
    let mut keys = common::DEFAULT_PROFILE_GC.to_vec();
    keys.push(("gc_idle_free_blocks", "8"));
    let s = same_both_ways(&keys);
    assert!(s.gc_units > 0 && s.erases > 0, "GC must run for the comparison to mean anything");
}

#[test]
fn active_gc_one_copy_per_write_is_the_same_streamed_or_prefetched() {
    // A fixed rate of one copy per host write: the path that moves a single unit.
    let mut keys = common::DEFAULT_PROFILE_GC.to_vec();
    keys.extend([("gc_idle_free_blocks", "8"), ("gc_bg_reclaim_ratio", "0"), ("gc_bg_copies_per_write", "1.0")]);
    let s = same_both_ways(&keys);
    assert!(s.gc_units > 0 && s.erases > 0, "GC must run for the comparison to mean anything");
}

#[test]
fn big_maps_are_streamed_small_ones_prefetched() {
    let drive = |bytes: &str| {
        let mut cfg = Config::default();
        cfg.set("user_capacity_bytes", bytes).unwrap();
        Simulation::new(&cfg, 1).unwrap().device().ftl().map_streamed()
    };
    // 4 KiB units, 4 bytes of L2P each: 2 GB is a 1.9 MB map, 8 GB a 7.8 MB one; a CPU
    // that gains nothing from streaming streams neither.
    assert!(!drive("2GB"));
    assert_eq!(drive("8GB"), ssdsim::ftl::cpu_streams_map());
    assert_eq!(ssdsim::ftl::cpu_streams_map(), cpu_vendor_is_amd());
}

/// Whether the CPU is AMD's, read here from Linux's /proc/cpuinfo (elsewhere: false, as the
/// simulator streams only on x86-64).
fn cpu_vendor_is_amd() -> bool {
    cfg!(target_arch = "x86_64")
        && std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|t| t.lines().any(|l| l.starts_with("vendor_id") && l.ends_with("AuthenticAMD")))
}
