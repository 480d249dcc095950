//! Idle GC that sorts data by LBA region (`gc_idle_sort_regions`, the `recovery` profile).
//!
//! What it is for (seed 000, Plextor M3): after a random-write torture, GC has packed the
//! valid data of unrelated LBAs into the same blocks, so a full sequential overwrite (HD
//! Tach's write pass) empties blocks only bit by bit and copies a lot; after 40 min of idle
//! the drive writes as if clean again. Compaction alone cannot do that (it keeps the data
//! mixed); sorting can. These tests check the mechanism directly on a small drive:
//! - after a long idle, no block mixes regions and the planes have even free space;
//! - a sequential overwrite of the whole span then copies almost nothing (write
//!   amplification ≈ 1), against a large WA for the same drive idled without sorting;
//! - random writes interleaved with idle periods of every length never leave a plane
//!   without a victim (no panic), and the mapping stays consistent.

use ssdsim::rng::Rng;
use ssdsim::time::NS_PER_S;
use ssdsim::{Config, Job, Pattern, Simulation};

const REGIONS: u64 = 32;

/// The `recovery` profile's GC keys on a 4 GB drive (8 planes of 512 blocks of 1 MiB, 6.9 %
/// spare).
fn drive(sort_regions: u64) -> Config {
    let mut cfg = Config::default();
    for (k, v) in [
        ("channels", "2"),
        ("dies_per_channel", "2"),
        ("planes_per_die", "2"),
        ("blocks_per_plane", "512"),
        ("pages_per_block", "64"),
        ("user_capacity_bytes", "4000002048"),
        ("gc_policy", "greedy"),
        ("gc_fg_free_blocks", "2"),
        ("gc_idle_delay_ms", "1000"),
        ("gc_idle_free_blocks", "256"),
        ("t_prog_us", "1500"),
    ] {
        cfg.set(k, v).unwrap();
    }
    cfg.set("gc_idle_sort_regions", &sort_regions.to_string()).unwrap();
    cfg
}

/// Fill, then `spans` × the span of 4 KiB random writes at QD32: a tortured drive.
fn tortured(sort_regions: u64, spans: f64) -> Simulation {
    let mut sim = Simulation::new(&drive(sort_regions), 7).unwrap();
    let user = sim.geometry().user_units;
    sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    let mut rw = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    rw.io_units = Some((spans * user as f64) as u64);
    sim.run(rw).unwrap();
    sim
}

/// Write amplification of one sequential 128 KiB pass over the whole span.
fn full_pass_wa(sim: &mut Simulation) -> f64 {
    let user = sim.geometry().user_units;
    let a = sim.snapshot();
    sim.run(Job::new(Pattern::SeqWrite, 32, 1, 0, user)).unwrap();
    let b = sim.snapshot();
    (b.nand_units - a.nand_units) as f64 / (b.host_units - a.host_units) as f64
}

#[test]
fn long_sorting_idle_leaves_no_block_mixing_regions_and_even_planes() {
    let mut sim = tortured(REGIONS, 0.5);
    let (holding, mixed) = sim.device().ftl().region_mixing(REGIONS);
    assert!(mixed * 2 > holding, "the torture should mix most blocks: {mixed} of {holding}");
    let victims = sim.idle(600 * NS_PER_S).unwrap();
    assert!(victims > 0);
    let ftl = sim.device().ftl();
    ftl.check_invariants().unwrap();
    let (holding, mixed) = ftl.region_mixing(REGIONS);
    // Only the planes' open host and GC blocks (written before the idle) may still mix.
    let pools = sim.geometry().pools as u64;
    assert!(mixed <= 2 * pools, "{mixed} of {holding} blocks still mix regions after a long idle");
    let free: Vec<usize> = (0..pools as usize).map(|p| ftl.pool_free_blocks(p)).collect();
    let (lo, hi) = (*free.iter().min().unwrap(), *free.iter().max().unwrap());
    // Even to within a few blocks (the planes of the last victims gain a little).
    assert!(hi - lo <= 5 && hi * 5 <= lo * 6, "free blocks per plane after sorting: {free:?}");
    // And the free space is the spare area: nothing was lost to the region blocks.
    let unsorted = tortured(0, 0.5);
    let mut unsorted = unsorted;
    unsorted.idle(600 * NS_PER_S).unwrap();
    let (f_sorted, f_plain) = (sim.snapshot().free_blocks, unsorted.snapshot().free_blocks);
    assert!(f_sorted + REGIONS >= f_plain, "sorted idle left {f_sorted} free blocks, plain compaction {f_plain}");
}

#[test]
fn sequential_overwrite_after_sorting_idle_copies_almost_nothing() {
    let mut sorted = tortured(REGIONS, 0.5);
    let mut plain = tortured(0, 0.5);
    // Same torture (same seed): the drives differ only in what idle GC does.
    assert_eq!(sorted.snapshot().nand_units, plain.snapshot().nand_units);
    sorted.idle(600 * NS_PER_S).unwrap();
    plain.idle(600 * NS_PER_S).unwrap();
    let (wa_sorted, wa_plain) = (full_pass_wa(&mut sorted), full_pass_wa(&mut plain));
    eprintln!("full-pass WA: after sorting idle {wa_sorted:.3}, after compacting idle {wa_plain:.3}");
    assert!(wa_sorted < 1.05, "full pass after sorting idle: WA {wa_sorted:.3}");
    assert!(wa_plain > 1.5, "full pass after compacting idle: WA {wa_plain:.3} (expected the torture's mixing to cost copies)");
    // Without any idle the pass is as costly as after compaction: sorting is what helps.
    let mut none = tortured(REGIONS, 0.5);
    let wa_none = full_pass_wa(&mut none);
    assert!(wa_none > 1.5, "full pass right after the torture: WA {wa_none:.3}");
}

#[test]
fn short_idle_periods_sort_part_of_the_drive_and_stay_within_the_period() {
    let mut sim = tortured(REGIONS, 0.5);
    let (_, mixed_before) = sim.device().ftl().region_mixing(REGIONS);
    let mut mixed = mixed_before;
    for _ in 0..5 {
        sim.idle(20 * NS_PER_S).unwrap();
        let (_, m) = sim.device().ftl().region_mixing(REGIONS);
        assert!(m < mixed, "each idle period sorts more: {m} mixed blocks after, {mixed} before");
        mixed = m;
    }
    // The drive answers soon after an idle period: a 4 KiB write issued right after it
    // waits at most for the victims in flight when the period ended (a block's copies and
    // erase per die: ~0.1 s here), not for sorting work booked beyond it.
    sim.idle(20 * NS_PER_S).unwrap();
    let r = sim.run(Job { io_units: Some(1), ..Job::new(Pattern::RandWrite, 1, 1, 0, sim.geometry().user_units) }).unwrap();
    let max_ns = r.latency.max_ns();
    assert!(max_ns < NS_PER_S / 4, "first write after idle took {max_ns} ns");
}

#[test]
fn random_writes_between_idle_periods_of_every_length_stay_consistent() {
    let mut sim = tortured(REGIONS, 0.3);
    let user = sim.geometry().user_units;
    let mut rng = Rng::new(11);
    for round in 0..40 {
        // Random or sequential writes of up to a fifth of the span, then idle 0.5 s to 60 s.
        let n = 1 + rng.below(user / 5);
        let pattern = if rng.below(3) == 0 { Pattern::SeqWrite } else { Pattern::RandWrite };
        let start = rng.below(user - n);
        let mut job = Job::new(pattern, 1, 32, start, n.max(1));
        job.io_units = Some(n);
        sim.run(job).unwrap();
        sim.idle(NS_PER_S / 2 + rng.below(60 * NS_PER_S)).unwrap();
        if let Err(e) = sim.device().ftl().check_invariants() {
            panic!("round {round}: {e}");
        }
    }
}
