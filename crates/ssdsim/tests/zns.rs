//! A zoned namespace (NVMe ZNS): the zone state machine on the timed drive, each zone's
//! data in blocks of its own, resets that return the zone's capacity with write
//! amplification 1 and no GC, and the errors a zoned drive returns counted by kind.

use std::collections::{HashMap, HashSet};

use ssdsim::device::Device;
use ssdsim::zns::{ZoneError, ZoneState};
use ssdsim::{BlockSize, Config, DirectionMix, Simulation, Workload};

/// Units of one zone's capacity (and size): 4 blocks of 64 units.
const ZONE: u64 = 256;
const ZONES: u64 = 48;
const T_ERASE_NS: u64 = 3_500_000;

/// Four planes (two dies of two) of 64 blocks of 64 4 KiB units; 48 zones of 1 MiB, each
/// striped over the four planes, a block in each.
fn zoned(max_open: u64, max_active: u64) -> Config {
    let mut c = Config::default();
    for (k, v) in [
        ("channels", "2"),
        ("dies_per_channel", "1"),
        ("planes_per_die", "2"),
        ("blocks_per_plane", "64"),
        ("pages_per_block", "16"),
        ("page_size_bytes", "16384"),
        ("gc_bg_start_free_blocks", "0"),
        ("gc_idle_free_blocks", "0"),
        ("write_buffer_bytes", "1MiB"),
    ] {
        c.set(k, v).unwrap();
    }
    c.set("user_capacity_bytes", &(ZONES * ZONE * 4096).to_string()).unwrap();
    c.set("zns_zone_size_bytes", &(ZONE * 4096).to_string()).unwrap();
    c.set("zns_max_open_zones", &max_open.to_string()).unwrap();
    c.set("zns_max_active_zones", &max_active.to_string()).unwrap();
    c
}

/// Writes `units` at zone `z`'s write pointer in commands of `bs` units; returns the time.
fn fill(dev: &mut Device, z: u64, units: u64, bs: u64, mut t: u64) -> u64 {
    let wp = dev.zones().unwrap().write_pointer(z as usize);
    for k in (0..units).step_by(bs as usize) {
        t = dev.write_zoned(z * ZONE + wp + k, bs, t).unwrap();
    }
    t
}

#[test]
fn resets_return_the_capacity_the_drive_rewritten_many_times_with_write_amplification_one() {
    let mut dev = Device::new(&zoned(0, 0), false, 1).unwrap();
    let free0 = dev.ftl().free_blocks();
    let mut t = 0;
    let passes = 6;
    for pass in 0..passes {
        // Four zones written at once, 16 units per command, in turn.
        for group in (0..ZONES).step_by(4) {
            for k in (0..ZONE).step_by(16) {
                for z in group..group + 4 {
                    t = dev.write_zoned(z * ZONE + k, 16, t).unwrap();
                }
            }
        }
        assert!((0..ZONES as usize).all(|z| dev.zones().unwrap().state(z) == ZoneState::Full));
        assert_eq!(dev.ftl().free_blocks(), free0 - ZONES * 4, "pass {pass}: every zone holds its 4 blocks");
        for z in 0..ZONES as usize {
            t = dev.reset_zone(z, t);
        }
        assert_eq!(dev.ftl().free_blocks(), free0, "pass {pass}: the resets gave every block back");
        assert_eq!(dev.ftl().mapped_units(), 0);
    }
    let c = dev.ftl().counters();
    assert_eq!(c.host_units, passes * ZONES * ZONE);
    assert_eq!((c.gc_units, c.gc_runs), (0, 0), "no GC");
    assert_eq!(c.nand_units() as f64 / c.host_units as f64, 1.0);
    assert_eq!(c.erases, passes * ZONES * 4, "each reset erases the zone's 4 blocks");
    assert_eq!(dev.timing().gc_die_ns, c.erases * T_ERASE_NS, "the erases take die time");
    assert_eq!(dev.zones().unwrap().counters().resets, passes * ZONES);
    assert!(dev.ftl().check_space().is_ok());
}

#[test]
fn each_open_zone_writes_blocks_of_its_own_striped_over_its_planes() {
    let mut dev = Device::new(&zoned(0, 0), false, 1).unwrap();
    let mut t = 0;
    // Eight zones open at once, written a page (4 units) at a time in turn, half full.
    for k in (0..ZONE / 2).step_by(4) {
        for z in 0..8 {
            t = dev.write_zoned(z * ZONE + k, 4, t).unwrap();
        }
    }
    let spb = dev.geometry().slots_per_block as u64;
    let blocks_per_pool = dev.geometry().blocks_per_pool as u64;
    let mut owner: HashMap<u64, u64> = HashMap::new();
    for z in 0..8 {
        let mut planes = HashSet::new();
        for lpn in z * ZONE..z * ZONE + ZONE / 2 {
            let block = dev.ftl().lookup(lpn).unwrap() as u64 / spb;
            let first = *owner.entry(block).or_insert(z);
            assert_eq!(first, z, "block {block} holds zones {first} and {z}");
            planes.insert(block / blocks_per_pool);
        }
        assert_eq!(planes.len(), 4, "zone {z} is striped over the 4 planes");
    }
    assert_eq!(owner.len(), 32, "8 zones × 4 planes, one block each");
}

#[test]
fn zones_written_in_turn_program_whole_multi_plane_pages_on_each_die() {
    let mut dev = Device::new(&zoned(0, 0), false, 1).unwrap();
    // Zone 1 two pages (one die's program) ahead of zone 0: their next pages are always bound
    // for different dies.
    let mut t = fill(&mut dev, 1, 8, 8, 0);
    for _ in 0..ZONE / 8 - 2 {
        t = fill(&mut dev, 0, 4, 4, t);
        t = fill(&mut dev, 1, 4, 4, t);
    }
    dev.flush(t);
    // Each die fills its own program (2 planes × 4 units), as a zoned drive buffers each open
    // zone's data: whole programs, not a page each time the writes change die.
    let units = dev.ftl().counters().host_units;
    assert_eq!((units, dev.timing().host_programs), (8 + 2 * 4 * (ZONE / 8 - 2), units / 8));
}

#[test]
fn refused_writes_are_counted_by_kind_and_change_nothing() {
    let mut dev = Device::new(&zoned(2, 3), false, 1).unwrap();
    let mut t = fill(&mut dev, 0, ZONE, 64, 0);
    let before = dev.ftl().counters();
    let err = |r: Result<u64, (ZoneError, u64)>| r.unwrap_err().0;
    assert_eq!(err(dev.write_zoned(0, 8, t)), ZoneError::Full);
    t = fill(&mut dev, 1, 8, 8, t);
    assert_eq!(err(dev.write_zoned(ZONE, 8, t)), ZoneError::InvalidWrite, "behind the write pointer");
    assert_eq!(err(dev.write_zoned(ZONE + 16, 8, t)), ZoneError::InvalidWrite, "ahead of it");
    assert_eq!(err(dev.write_zoned(2 * ZONE - 4, 8, t)), ZoneError::Boundary, "across the zone's end");
    // Zones 1, 2 open; 3 closes the oldest (1): three active, the limit.
    t = fill(&mut dev, 2, 8, 8, t);
    t = fill(&mut dev, 3, 8, 8, t);
    assert_eq!(dev.zones().unwrap().state(1), ZoneState::Closed);
    assert_eq!(err(dev.write_zoned(4 * ZONE, 8, t)), ZoneError::TooManyActive);
    dev.open_zone(2, t).unwrap();
    dev.open_zone(3, t).unwrap();
    assert_eq!(err(dev.write_zoned(ZONE + 8, 8, t)), ZoneError::TooManyOpen, "both open zones were opened explicitly");
    let c = dev.zones().unwrap().counters();
    assert_eq!(
        (c.full_writes, c.invalid_writes, c.boundary_errors, c.too_many_active, c.too_many_open),
        (1, 2, 1, 1, 1)
    );
    // The refused writes wrote nothing: only the three zones' 24 units were added.
    assert_eq!(dev.ftl().counters().host_units, before.host_units + 24);
    // Zone Finish frees an active and open resource: zone 1 can open again.
    dev.finish_zone(3, t);
    assert!(dev.write_zoned(ZONE + 8, 8, t).is_ok());
    // Zone Append writes at the write pointer, which the drive returns.
    let (lpn, _) = dev.zone_append(1, 8, t).unwrap();
    assert_eq!(lpn, ZONE + 16);
}

fn seq_write(bs_bytes: u64, random: f64) -> Workload {
    Workload {
        write: DirectionMix { bssplit: vec![BlockSize { bs_bytes, weight: 1 }], random_fraction: random, ..DirectionMix::default() },
        qd: 1,
        ..Workload::default()
    }
}

#[test]
fn a_host_that_ignores_the_zones_gets_errors_counted_in_the_snapshot_and_the_same_seed_the_same_result() {
    let run = |seed| {
        let mut sim = Simulation::new(&zoned(0, 0), seed).unwrap();
        // One sequential pass fills every zone, in order, at its write pointer.
        let r = sim.run_workload(&seq_write(65536, 0.0)).unwrap();
        let s = sim.snapshot();
        assert_eq!(s.zone_invalid_writes + s.zone_full_writes + s.zone_boundary_errors, 0);
        assert_eq!(s.host_units, ZONES * ZONE);
        // A second pass: every zone is full.
        sim.run_workload(&seq_write(65536, 0.0)).unwrap();
        let s = sim.snapshot();
        assert_eq!(s.zone_full_writes, ZONES * ZONE / 16);
        assert_eq!(s.host_units, ZONES * ZONE);
        // TRIM of the whole drive resets every zone; then random writes miss the write pointers.
        let free0 = sim.device().ftl().free_blocks() + ZONES * 4;
        let mut trim = seq_write(ZONE * 4096, 0.0);
        (trim.trim, trim.trim_fraction) = (trim.write.clone(), 1.0);
        sim.run_workload(&trim).unwrap();
        let s = sim.snapshot();
        assert_eq!((s.zone_resets, s.free_blocks), (ZONES, free0));
        sim.run_workload(&seq_write(16384, 1.0)).unwrap();
        let s = sim.snapshot();
        assert!(s.zone_invalid_writes > 0, "{s:?}");
        (r.ios.clone(), s)
    };
    let (a, b) = (run(7), run(7));
    assert_eq!(a.0, b.0);
    assert_eq!(format!("{:?}", a.1), format!("{:?}", b.1));
}

fn zbd(w: Workload, max_open_zones: u32, reset: (f64, f64)) -> Workload {
    let zbd = ssdsim::workload::Zbd { max_open_zones, job_max_open_zones: 0, reset_threshold: reset.0, reset_frequency: reset.1, read_beyond_wp: false, zone_size_bytes: 0, ignore_zone_limits: false };
    Workload { zbd: Some(zbd), ..w }
}

#[test]
fn fio_zbd_random_writes_keep_max_open_zones_fill_zones_and_reset_them_with_write_amplification_one() {
    let mut sim = Simulation::new(&zoned(0, 0), 3).unwrap();
    let mut w = zbd(seq_write(32768, 1.0), 4, (0.0, 0.0));
    // Four drive capacities of random writes.
    w.io_bytes = Some(4 * ZONES * ZONE * 4096);
    w.qd = 4;
    sim.run_workload(&w).unwrap();
    let s = sim.snapshot();
    let zones = sim.device().zones().unwrap();
    assert_eq!(s.zone_invalid_writes + s.zone_full_writes + s.zone_too_many_open + s.zone_too_many_active + s.zone_boundary_errors, 0, "{s:?}");
    assert!(zones.open_zones() <= 4 && zones.active_zones() <= 4, "{} open", zones.open_zones());
    // Every unit went to a write pointer: the drive was written 4 times over through resets.
    assert_eq!(s.host_units, 4 * ZONES * ZONE);
    assert!(s.zone_resets >= 3 * ZONES - 4, "{} resets", s.zone_resets);
    assert_eq!((s.gc_units, s.nand_units), (0, s.host_units), "no GC: write amplification 1");
    assert_eq!(s.erases, s.zone_resets * 4);
}

#[test]
fn fio_zbd_open_limit_above_the_drives_is_refused_and_the_drive_limit_is_kept() {
    let mut sim = Simulation::new(&zoned(6, 6), 3).unwrap();
    let e = sim.run_workload(&zbd(seq_write(32768, 1.0), 8, (0.0, 0.0))).unwrap_err();
    assert!(e.to_string().contains("zns_max_open_zones"), "{e}");
    // max_open_zones = 0: the drive's 6.
    let mut w = zbd(seq_write(32768, 1.0), 0, (0.0, 0.0));
    w.qd = 8;
    sim.run_workload(&w).unwrap();
    let s = sim.snapshot();
    assert_eq!(s.zone_too_many_active + s.zone_too_many_open, 0);
    assert_eq!(sim.device().zones().unwrap().open_zones(), 6);
    // Without zbd the same random writes miss the write pointers.
    sim.run_workload(&seq_write(32768, 1.0)).unwrap();
    assert!(sim.snapshot().zone_invalid_writes > 0);
}

#[test]
fn fio_zone_reset_threshold_and_frequency_reset_zones_before_they_fill() {
    let run = |seed| {
        let mut sim = Simulation::new(&zoned(0, 0), seed).unwrap();
        let mut w = zbd(seq_write(65536, 1.0), 8, (0.5, 0.125));
        w.span_bytes = Some(8 * ZONE * 4096);
        w.io_bytes = Some(64 * ZONE * 4096);
        sim.run_workload(&w).unwrap();
        let s = sim.snapshot();
        let held: u64 = (0..8).map(|z| sim.device().zones().unwrap().write_pointer(z)).sum();
        (s, held)
    };
    let (s, held) = run(5);
    // Once half the 8 zones hold data, every 8th write resets its zone first: the zones
    // hover around half full instead of filling.
    assert!(held < 6 * ZONE, "{held} units held");
    assert!(s.zone_resets > 64 / 8, "{} resets", s.zone_resets);
    assert_eq!(s.zone_invalid_writes + s.zone_full_writes, 0);
    let (s2, held2) = run(5);
    assert_eq!((format!("{s:?}"), held), (format!("{s2:?}"), held2), "same seed, same result");
}

#[test]
fn a_later_zbd_phase_takes_the_zones_left_open_as_write_targets() {
    let mut sim = Simulation::new(&zoned(6, 6), 3).unwrap();
    for _ in 0..3 {
        let mut w = zbd(seq_write(32768, 1.0), 0, (0.0, 0.0));
        w.io_bytes = Some(ZONE * 4096);
        sim.run_workload(&w).unwrap();
    }
    let s = sim.snapshot();
    // The first phase left 6 zones open, at the active limit: the later ones keep writing
    // them instead of opening more, which the drive would refuse.
    assert_eq!(s.zone_too_many_active + s.zone_too_many_open, 0, "{s:?}");
    assert_eq!(s.host_units, 3 * ZONE);
}
