//! Flexible Data Placement against the single-stream model: two streams of disjoint LBA
//! ranges, each overwritten uniformly at random through a reclaim unit handle of its own.
//!
//! With persistently isolated handles every block holds one handle's data, so each handle
//! is a log of its own over the blocks it holds; greedy GC over the plane takes the
//! emptiest block whatever its handle. Each handle's write amplification then follows
//! Desnoyers' greedy model (`wa_model::a_greedy`) at its own α: the 4 KiB slots of the
//! blocks it holds (averaged over the measurement) over its LBAs. Without FDP (or with
//! initially isolated handles, whose GC copies share blocks) the streams mix, and the
//! hot/cold mix costs more than isolation.

use ssdsim::ftl::Ftl;
use ssdsim::rng::Rng;
use ssdsim::Config;

mod wa_model;
use wa_model::a_greedy;

const PPB: u64 = 64;
const BLOCKS: u64 = 8192;

/// A one-plane drive of BLOCKS blocks of PPB 4 KiB units at physical/user ratio `alpha`.
fn drive(alpha: f64, fdp: Option<&str>) -> Config {
    let mut cfg = Config::default();
    for (k, v) in [("channels", "1"), ("dies_per_channel", "1"), ("planes_per_die", "1"), ("page_size_bytes", "4096")] {
        cfg.set(k, v).unwrap();
    }
    cfg.set("blocks_per_plane", &BLOCKS.to_string()).unwrap();
    cfg.set("pages_per_block", &PPB.to_string()).unwrap();
    if let Some(ruh_type) = fdp {
        cfg.set("fdp", "1").unwrap();
        cfg.set("fdp_reclaim_unit_handles", "2").unwrap();
        cfg.set("fdp_ruh_type", ruh_type).unwrap();
    }
    let user = ((BLOCKS * PPB) as f64 / alpha).floor() as u64;
    cfg.set("user_capacity_bytes", &(user * 4096).to_string()).unwrap();
    cfg
}

/// What one run measured, over its second half (steady state).
struct Run {
    /// Per handle: host units, NAND units, mean blocks held.
    handles: Vec<(u64, u64, f64)>,
    wa: f64,
    ftl: Ftl,
    /// LBAs of stream 0 (stream 1 has the rest).
    split: u64,
}

/// Stream 0 owns the first `lba_share` of the LBAs and takes `write_share` of the writes;
/// stream 1 the rest. Stream s writes through handle s.
fn run(cfg: &Config, lba_share: f64, write_share: f64, seed: u64) -> Run {
    let geo = cfg.validate().unwrap();
    let user = geo.user_units;
    let split = (user as f64 * lba_share) as u64;
    let mut ftl = Ftl::new(&geo, false);
    let mut rng = Rng::new(seed);
    let write = |ftl: &mut Ftl, rng: &mut Rng| {
        let s = usize::from(rng.unit_f64() >= write_share);
        let lpn = if s == 0 { rng.below(split) } else { split + rng.below(user - split) };
        ftl.set_handle(s);
        ftl.write(lpn, 0, 0);
    };
    for lpn in 0..user {
        ftl.set_handle(usize::from(lpn >= split));
        ftl.write(lpn, 0, 0);
    }
    for _ in 0..8 * user {
        write(&mut ftl, &mut rng);
    }
    let (before, before_h) = (ftl.counters(), ftl.handle_counters().to_vec());
    let samples = 64;
    let mut held = vec![0.0; before_h.len()];
    for _ in 0..samples {
        for _ in 0..8 * user / samples {
            write(&mut ftl, &mut rng);
        }
        for (h, b) in held.iter_mut().zip(ftl.handle_blocks()) {
            *h += b as f64 / samples as f64;
        }
    }
    let after = ftl.counters();
    let handles = ftl
        .handle_counters()
        .iter()
        .zip(&before_h)
        .zip(held)
        .map(|((a, b), held)| (a.host_units - b.host_units, a.nand_units() - b.nand_units(), held))
        .collect();
    let wa = (after.nand_units() - before.nand_units()) as f64 / (after.host_units - before.host_units) as f64;
    Run { handles, wa, ftl, split }
}

fn close(what: &str, measured: f64, model: f64, tol: f64) {
    let err = (measured - model).abs() / model;
    assert!(err <= tol, "{what}: measured WA {measured:.4} vs model {model:.4} ({:.1}% off, limit {:.0}%)", err * 100.0, tol * 100.0);
}

#[test]
fn persistently_isolated_handles_each_follow_the_greedy_model_at_their_own_alpha() {
    // Hot/cold: 20% of the LBAs take half the writes; and equal streams of equal rates.
    for (lba_share, write_share, alpha) in [(0.2, 0.5, 1.15), (0.5, 0.5, 1.25)] {
        let r = run(&drive(alpha, Some("persistently-isolated")), lba_share, write_share, 7);
        let user = r.ftl.geometry().user_units;
        let lbas = [r.split, user - r.split];
        for (h, &(host, nand, held)) in r.handles.iter().enumerate() {
            let own_alpha = held * PPB as f64 / lbas[h] as f64;
            let wa = nand as f64 / host as f64;
            close(&format!("handle {h} ({:.0}% of the LBAs, α_h = {own_alpha:.3})", 100.0 * lbas[h] as f64 / user as f64), wa, a_greedy(own_alpha, PPB as f64), 0.04);
        }
    }
}

#[test]
fn isolation_beats_mixing_hot_and_cold_data() {
    let alpha = 1.15;
    // 10% of the LBAs take 90% of the writes.
    let mixed = run(&drive(alpha, None), 0.1, 0.9, 9).wa;
    let isolated = run(&drive(alpha, Some("persistently-isolated")), 0.1, 0.9, 9).wa;
    let initially = run(&drive(alpha, Some("initially-isolated")), 0.1, 0.9, 9).wa;
    // Mixed in every block, the hot/cold data cost more than the uniform-traffic model at
    // this α; isolated, each handle's victims are as empty as a uniform stream's.
    assert!(mixed > a_greedy(1.15, PPB as f64) * 1.1, "mixed WA {mixed:.3}");
    assert!(isolated < mixed * 0.9, "isolated WA {isolated:.3} vs mixed {mixed:.3}");
    // Initially isolated handles mix again in GC: between the two.
    assert!(isolated < initially && initially < mixed * 1.01, "isolated {isolated:.3}, initially isolated {initially:.3}, mixed {mixed:.3}");
}

#[test]
fn handle_counters_add_up_to_the_drive_totals() {
    for ruh_type in ["persistently-isolated", "initially-isolated"] {
        let r = run(&drive(1.15, Some(ruh_type)), 0.3, 0.6, 3);
        let (c, hs) = (r.ftl.counters(), r.ftl.handle_counters());
        assert_eq!(hs.iter().map(|h| h.host_units).sum::<u64>(), c.host_units, "{ruh_type}: host units");
        assert_eq!(hs.iter().map(|h| h.gc_units).sum::<u64>(), c.gc_units, "{ruh_type}: GC units");
        assert_eq!(hs.iter().map(|h| h.ru_reclaimed).sum::<u64>() + r.ftl.shared_ru_reclaimed(), c.erases, "{ruh_type}: erases");
        // Each stream's host writes went through its own handle only.
        assert!(hs.iter().all(|h| h.host_units > 0 && h.gc_units > 0 && h.ru_filled > 0), "{ruh_type}: {hs:?}");
        let shared = r.ftl.shared_ru_reclaimed();
        assert_eq!(shared == 0, ruh_type == "persistently-isolated", "{ruh_type}: {shared} shared RUs reclaimed");
        r.ftl.check_invariants().unwrap();
    }
}



/// Two jobs of a phase, one through placement ids drawn at random, the other by a scheme;
/// their handle counters after `seed`'s run.
fn placed_jobs(seed: u64) -> Vec<ssdsim::ftl::HandleCounters> {
    use ssdsim::workload::{Placement, PlacementSelect, SchemeEntry};
    use ssdsim::{Simulation, Workload, WorkloadJob};
    let mut cfg = drive(1.2, Some("initially-isolated"));
    cfg.set("blocks_per_plane", "256").unwrap();
    cfg.set("fdp_reclaim_unit_handles", "4").unwrap();
    cfg.set("user_capacity_bytes", &(256 * 64 * 4096 * 5 / 6).to_string()).unwrap();
    let mut sim = Simulation::new(&cfg, seed).unwrap();
    let half = sim.geometry().user_units / 2 * 4096;
    let job = |name: &str, offset_bytes: u64, placement: Placement| WorkloadJob {
        name: name.into(),
        startdelay_ns: 0,
        exit_stops: vec![],
        flow: None,
        workload: Workload { offset_bytes, span_bytes: Some(half), io_bytes: Some(3 * half), qd: 4, placement: Some(placement), ..Workload::default() },
    };
    let random = Placement { ids: vec![0, 1], select: PlacementSelect::Random };
    let scheme = Placement { ids: vec![], select: PlacementSelect::Scheme(vec![SchemeEntry { start_bytes: half, end_bytes: half + half / 2, id: 3 }]) };
    sim.start_jobs(&[job("random", 0, random), job("scheme", half, scheme)], 1_000_000_000).unwrap();
    sim.run_to_end();
    sim.finish_phase();
    sim.handle_counters().to_vec()
}

#[test]
fn placement_is_deterministic_for_a_seed_and_follows_each_jobs_choice() {
    let a = placed_jobs(5);
    assert_eq!(a, placed_jobs(5));
    let host: Vec<u64> = a.iter().map(|h| h.host_units).collect();
    let job_units = host.iter().sum::<u64>() / 2;
    // The random job's writes split about evenly over ids 0 and 1; the scheme puts the first
    // half of the other job's range on id 3, the rest on the default handle 0.
    let (zero_from_scheme, three) = (job_units / 2, host[3]);
    assert!((three as f64 / (job_units / 2) as f64 - 1.0).abs() < 0.02, "{host:?}");
    let random_on_0 = host[0] - zero_from_scheme.min(host[0]);
    assert!(host[2] == 0 && ((random_on_0 as f64) / host[1] as f64 - 1.0).abs() < 0.05, "{host:?}");
    assert_ne!(host, placed_jobs(6).iter().map(|h| h.host_units).collect::<Vec<_>>());
}
