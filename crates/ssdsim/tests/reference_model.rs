//! Reference-model test: the FTL against a `BTreeMap` (LPN -> last version written).
//!
//! Over a million seeded random writes, TRIMs and reads on a tiny drive (thousands of GC
//! cycles), after every step: each read returns the last version written (nothing lost,
//! nothing stale, TRIMmed data reads as unmapped), and L2P/P2L, valid counts, free-block
//! accounting and the GC victim structures agree (`Ftl::check_invariants`).

use std::collections::BTreeMap;

use ssdsim::ftl::Ftl;
use ssdsim::rng::Rng;
use ssdsim::Config;

fn tiny_drive(policy: &str) -> Config {
    tiny_drive_with(policy, &[])
}

fn tiny_drive_with(policy: &str, extra: &[(&str, &str)]) -> Config {
    let mut cfg = Config::default();
    for (k, v) in [
        ("channels", "1"),
        ("dies_per_channel", "1"),
        ("planes_per_die", "2"),
        ("blocks_per_plane", "16"),
        ("pages_per_block", "8"),
        ("page_size_bytes", "8192"),
        ("user_capacity_bytes", &(320 * 4096).to_string()),
        ("gc_policy", policy),
    ] {
        cfg.set(k, v).unwrap();
    }
    for (k, v) in extra {
        cfg.set(k, v).unwrap();
    }
    cfg
}

fn run_against_model(policy: &str, steps: u64, seed: u64) {
    run_config_against_model(&tiny_drive(policy), steps, seed)
}

fn run_config_against_model(cfg: &Config, steps: u64, seed: u64) {
    let policy = cfg.gc_policy.clone();
    let geo = cfg.validate().unwrap();
    let user = geo.user_units;
    let mut ftl = Ftl::with_seed(&geo, true, seed);
    let mut model: BTreeMap<u64, u64> = BTreeMap::new();
    let mut rng = Rng::new(seed);
    let mut version = 0u64;
    let (mut writes, mut trims, mut reads) = (0u64, 0u64, 0u64);
    for step in 0..steps {
        // Skewed addresses half of the time (a hot 10%), so GC sees mixed victims.
        let lpn = if rng.below(2) == 0 { rng.below(user / 10) } else { rng.below(user) };
        match rng.below(100) {
            0..=69 => {
                version += 1;
                let pool = rng.below(geo.pools as u64) as usize;
                ftl.write(lpn, pool, version);
                model.insert(lpn, version);
                writes += 1;
            }
            70..=70 => {
                // Idle-time GC in a random plane (sorting by LBA region if configured, a burst
                // of victims; the region blocks stay open across later host writes half of
                // the time).
                let pool = rng.below(geo.pools as u64) as usize;
                if geo.gc_idle_sort_regions != 0 {
                    // An idle period: up to 40 victims, as the timing model would collect.
                    for i in 0..40 {
                        if !ftl.sort_for_idle((pool + i) % geo.pools, 12) {
                            break;
                        }
                    }
                    if rng.below(2) == 0 {
                        ftl.close_sort_streams();
                    }
                } else {
                    ftl.collect_for_idle(pool, 6);
                }
                for p in 0..geo.pools {
                    let _ = ftl.take_gc_work(p);
                }
            }
            71..=79 => {
                let was_mapped = ftl.trim(lpn);
                assert_eq!(was_mapped, model.remove(&lpn).is_some(), "step {step}: trim({lpn}) mapped state");
                trims += 1;
            }
            _ => {
                assert_eq!(ftl.read_payload(lpn), model.get(&lpn).copied(), "step {step}: read({lpn})");
                reads += 1;
            }
        }
        if let Err(e) = ftl.check_invariants() {
            panic!("step {step} ({policy}): {e}");
        }
    }
    // Every LPN, at the end, holds exactly the model's version.
    for lpn in 0..user {
        assert_eq!(ftl.read_payload(lpn), model.get(&lpn).copied(), "final read({lpn})");
    }
    let c = ftl.counters();
    assert_eq!(c.host_units, writes);
    assert!(c.gc_runs > 10_000, "only {} GC cycles: the test must exercise GC heavily", c.gc_runs);
    assert!(trims > 0 && reads > 0);
}

#[test]
fn greedy_ftl_matches_reference_model_over_a_million_ops() {
    run_against_model("greedy", 1_000_000, 2024);
}

#[test]
fn fifo_ftl_matches_reference_model_over_a_million_ops() {
    run_against_model("fifo", 1_000_000, 2025);
}

#[test]
fn cost_benefit_ftl_matches_reference_model() {
    run_against_model("cost-benefit", 500_000, 2026);
}

#[test]
fn d_choices_ftl_matches_reference_model() {
    run_against_model("d-choices", 500_000, 2027);
}

/// Active (incremental) GC interleaves single-unit relocations with host writes and keeps a
/// half-collected victim across operations: the riskiest code path for stale data.
#[test]
fn active_gc_ftl_matches_reference_model_over_a_million_ops() {
    for policy in ["greedy", "d-choices"] {
        let cfg = tiny_drive_with(policy, &[("gc_bg_start_free_blocks", "5"), ("gc_bg_stop_free_blocks", "7"), ("gc_bg_copies_per_write", "2.5")]);
        run_config_against_model(&cfg, 1_000_000, 2028);
    }
}

#[test]
fn batched_foreground_gc_matches_reference_model() {
    let cfg = tiny_drive_with("greedy", &[("gc_fg_target_free_blocks", "6")]);
    run_config_against_model(&cfg, 500_000, 2029);
}

/// Idle GC that sorts by LBA region copies across planes into per-region blocks and takes
/// fully valid blocks as victims: every copy must keep the last version.
#[test]
fn idle_sorting_ftl_matches_reference_model() {
    for policy in ["greedy", "fifo", "cost-benefit"] {
        let cfg = tiny_drive_with(policy, &[("gc_idle_free_blocks", "6"), ("gc_idle_sort_regions", "4")]);
        run_config_against_model(&cfg, 500_000, 2030);
    }
}

/// The invariant checker itself must catch corruption, or the test above proves nothing.
#[test]
fn invariant_checker_detects_a_lost_update() {
    let geo = tiny_drive("greedy").validate().unwrap();
    let mut ftl = Ftl::new(&geo, true);
    ftl.write(3, 0, 1);
    ftl.write(3, 1, 2);
    assert!(ftl.check_invariants().is_ok());
    assert_eq!(ftl.read_payload(3), Some(2));
    // A second FTL with a different history reads a different version: the model check fails.
    let mut other = Ftl::new(&geo, true);
    other.write(3, 0, 1);
    assert_ne!(other.read_payload(3), Some(2));
}
