//! Drives shared by the integration tests: small, with 16-page blocks so GC starts soon.
#![allow(dead_code)] // each test file uses some of these

use ssdsim::{Config, Job, Pattern, Simulation, UNIT_BYTES};

pub fn set(cfg: &mut Config, keys: &[(&str, &str)]) {
    for (k, v) in keys {
        cfg.set(k, v).unwrap();
    }
}

/// The GC keys of the built-in `default` profile (python/ssdlab/profiles/default.toml; its
/// other keys are the simulator's defaults): active GC with a reclaim ratio, idle GC.
pub const DEFAULT_PROFILE_GC: &[(&str, &str)] = &[
    ("gc_bg_start_free_blocks", "4"),
    ("gc_bg_stop_free_blocks", "6"),
    ("gc_bg_reclaim_ratio", "1.2"),
    ("gc_bg_copies_per_write", "12.0"),
    ("gc_idle_delay_ms", "1000.0"),
    ("gc_idle_free_blocks", "32"),
];

/// A small drive (128 blocks of 16 pages per plane, then `keys`) whose physical capacity is
/// `alpha` times its user capacity.
pub fn small(keys: &[(&str, &str)], alpha: f64) -> Config {
    let mut cfg = Config::default();
    set(&mut cfg, &[("blocks_per_plane", "128"), ("pages_per_block", "16")]);
    set(&mut cfg, keys);
    let geo = {
        let mut c = cfg.clone();
        c.set("user_capacity_bytes", "4096").unwrap();
        c.validate().unwrap()
    };
    let user = (geo.physical_units as f64 / alpha) as u64;
    cfg.set("user_capacity_bytes", &(user * UNIT_BYTES).to_string()).unwrap();
    cfg
}

/// A fresh drive of `cfg` after one sequential pass over its user capacity.
pub fn filled(cfg: &Config, seed: u64) -> Simulation {
    let mut sim = Simulation::new(cfg, seed).unwrap();
    let user = sim.geometry().user_units;
    sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    sim
}

/// Median of `v` (sorted in place; the upper one of an even count), for the benches and
/// examples that repeat a measurement.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
