//! Reference-model test: the FTL against a `BTreeMap` (LPN -> last version written).
//!
//! Over a million seeded random writes, TRIMs and reads on a tiny drive (thousands of GC
//! cycles), after every step: each read returns the last version written (nothing lost,
//! nothing stale, TRIMmed data reads as unmapped), and L2P/P2L, valid counts, free-block
//! accounting and the GC victim structures agree (`Ftl::check_invariants`).

#[path = "common/model.rs"]
mod model;

use model::{check_reads, run_ftl_against_model, Mix};
use ssdsim::ftl::{Corruption, Ftl};
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
    run_config_against_model(&tiny_drive(policy), steps, seed, &Mix::default())
}

/// The reference-model run (`common/model.rs`), which must exercise GC heavily.
fn run_config_against_model(cfg: &Config, steps: u64, seed: u64, mix: &Mix) {
    let run = run_ftl_against_model(cfg, steps, seed, mix).unwrap_or_else(|e| panic!("{} seed {seed}: {e}", cfg.gc_policy));
    assert_eq!(run.out_of_space, None);
    assert!(run.gc_runs > 10_000, "only {} GC cycles: the test must exercise GC heavily", run.gc_runs);
    assert!(run.trims > 0 && run.reads > 0 && run.idle_periods > 0);
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
        run_config_against_model(&cfg, 1_000_000, 2028, &Mix::default());
    }
}

#[test]
fn batched_foreground_gc_matches_reference_model() {
    let cfg = tiny_drive_with("greedy", &[("gc_fg_target_free_blocks", "6")]);
    run_config_against_model(&cfg, 500_000, 2029, &Mix::default());
}

/// Idle GC that sorts by LBA region copies across planes into per-region blocks and takes
/// fully valid blocks as victims: every copy must keep the last version.
#[test]
fn idle_sorting_ftl_matches_reference_model() {
    for policy in ["greedy", "fifo", "cost-benefit"] {
        let cfg = tiny_drive_with(policy, &[("gc_idle_free_blocks", "6"), ("gc_idle_sort_regions", "4")]);
        run_config_against_model(&cfg, 500_000, 2030, &Mix { idle_target: 12, ..Mix::default() });
    }
}

/// The invariant checker must catch each kind of damage, or the tests above prove nothing:
/// each is injected into a drive that passes the check (after enough writes for GC to have
/// run), and the error must say what is wrong.
#[test]
fn invariant_checker_detects_each_kind_of_corruption() {
    for policy in ["greedy", "fifo", "cost-benefit"] {
        let geo = tiny_drive(policy).validate().unwrap();
        // A used drive (GC has run; blocks free, open, closed), then LPN 3 written twice:
        // its first copy is stale.
        let used = || {
            let mut ftl = Ftl::new(&geo, true);
            for i in 0..2_000u64 {
                ftl.write((i * 7919) % 300 + 10, (i % 2) as usize, 10 + i);
            }
            assert!(ftl.counters().gc_runs > 0);
            let first = ftl.write(3, 0, 1);
            let second = ftl.write(3, 1, 2);
            ftl.check_invariants().unwrap();
            assert!(ftl.free_blocks() > 0);
            (ftl, first, second)
        };
        let expect = |c: Corruption, what: &[&str]| {
            let (mut ftl, _, _) = used();
            ftl.corrupt(c);
            let e = ftl.check_invariants().expect_err(&format!("{policy}: {c:?} not detected"));
            for w in what {
                assert!(e.contains(w), "{policy}: {c:?} reported as {e:?}, expected it to mention {w:?}");
            }
        };
        let (ftl, first, second) = used();
        let slot_of = |lpn| ftl.lookup(lpn).unwrap();
        let block_of = |slot: u32| slot as usize / geo.slots_per_block;
        // L2P and P2L disagree: the slot of LPN 3 claims to hold LPN 4.
        expect(Corruption::P2lMismatch { lpn: 3, other: 4 }, &["L2P[3]", "P2L["]);
        // A valid count off by one, either way.
        let b = block_of(slot_of(3));
        expect(Corruption::ValidCount { block: b, delta: 1 }, &[&format!("block {b}: valid count")]);
        expect(Corruption::ValidCount { block: b, delta: -1 }, &[&format!("block {b}: valid count")]);
        // A block in use (LPN 3's, closed or open) also on the free list.
        expect(Corruption::FreeBlockInUse { block: b }, &[&format!("block {b} is on the free list but in use")]);
        // A free block that fell off the free list.
        expect(Corruption::FreeBlockLost { pool: 0 }, &["plane 0: free block", "missing from the free list"]);
        // The count of logical units holding data (the SLC cache's dynamic size follows it) off by one.
        expect(Corruption::MappedCount { delta: 1 }, &["logical units mapped"]);
        expect(Corruption::MappedCount { delta: -1 }, &["logical units mapped"]);
        // A lost update: LPN 3 maps to its first (stale) copy again, and reads the old data.
        assert_eq!(second, slot_of(3));
        expect(Corruption::LostUpdate { lpn: 3, stale_slot: first }, &[&format!("L2P[3] = {first}"), "not valid"]);
        let (mut lost, _, _) = used();
        lost.corrupt(Corruption::LostUpdate { lpn: 3, stale_slot: first });
        assert_eq!(lost.read_payload(3), Some(1));
        // The model check catches the stale read too.
        let model = [(3u64, 2u64)].into_iter().collect();
        let e = check_reads(&lost, &model, 3..4).expect_err("stale read not detected");
        assert!(e.contains("read(3) returned version Some(1), the last written is Some(2)"), "{e}");
    }
}

/// The reference-model run reports damage done in the middle of a run: a run that writes
/// an LPN twice, then finds the first version, fails.
#[test]
fn model_check_fails_on_a_stale_read() {
    let geo = tiny_drive("greedy").validate().unwrap();
    let mut ftl = Ftl::new(&geo, true);
    ftl.write(5, 0, 1);
    let model = [(5u64, 2u64)].into_iter().collect();
    assert!(check_reads(&ftl, &model, 0..10).is_err());
    let model = [(5u64, 1u64)].into_iter().collect();
    assert!(check_reads(&ftl, &model, 0..10).is_ok());
}
