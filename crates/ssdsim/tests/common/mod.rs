//! Drives shared by the integration tests: small, with 16-page blocks so GC starts soon.
#![allow(dead_code)] // each test file uses some of these

use ssdsim::rng::Rng;
use ssdsim::{CmdKind, Command, Config, Job, Pattern, Simulation, Workload, UNIT_BYTES};

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

/// 4 KiB random read/write 70/30 at QD32, `n` IOs (the mix of `benches/bench_randrw.py`).
pub fn randrw(n: u64) -> Workload {
    Workload { read_fraction: 0.7, number_ios: Some(n), ..Workload::default() }
}

/// The built-in default profile's drive with `blocks_per_plane` and `user_bytes` (`args`
/// 0 and 1 of an example's command line, default the 256 GB drive), filled sequentially,
/// then [`randrw`] writing its capacity `warm` times over (arg 2, default 1).
pub fn randrw_warmed(args: &[String]) -> Simulation {
    let arg = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_string());
    let mut cfg = Config::default();
    set(&mut cfg, DEFAULT_PROFILE_GC);
    for (k, v) in [("blocks_per_plane", arg(0, "2048")), ("user_capacity_bytes", arg(1, "256000000000"))] {
        cfg.set(k, &v).unwrap();
    }
    let warm: f64 = arg(2, "1").parse().expect("warm-up: capacities written");
    let mut sim = filled(&cfg, 1);
    // Writes are 30 % of the IOs.
    let user = sim.geometry().user_units;
    sim.run_workload(&randrw((warm * user as f64 / 0.3) as u64)).unwrap();
    sim
}

/// Median of `v` (sorted in place; the upper one of an even count), for the benches and
/// examples that repeat a measurement.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A trace's commands: writes of 1 to 64 units (a fifth of them after the previous write, so
/// whole pages go to the FTL at once), TRIMs, reads and flushes.
pub fn trace(user_units: u64, n: usize, seed: u64) -> Vec<Command> {
    let mut rng = Rng::new(seed);
    let mut next = 0;
    (0..n)
        .map(|_| {
            let long = rng.below(4) == 0;
            let units = 1 + rng.below(if long { 64 } else { 8 });
            let unit = if rng.below(5) == 0 && next + units <= user_units { next } else { rng.below(user_units - units) };
            match rng.below(100) {
                0..=69 => {
                    next = unit + units;
                    Command { kind: CmdKind::Write, unit, units }
                }
                70..=79 => Command { kind: CmdKind::Trim, unit, units },
                80..=96 => Command { kind: CmdKind::Read, unit, units },
                _ => Command { kind: CmdKind::Flush, unit: 0, units: 0 },
            }
        })
        .collect()
}
