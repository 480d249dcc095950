//! Same profile and seed => identical results; a different seed => different results.

use ssdsim::{Config, Job, Pattern, PhaseReport, Simulation};

fn small() -> Config {
    let mut cfg = Config::default();
    for (k, v) in [("channels", "2"), ("dies_per_channel", "2"), ("blocks_per_plane", "128"), ("pages_per_block", "32"), ("user_capacity_bytes", "240MiB")] {
        cfg.set(k, v).unwrap();
    }
    cfg
}

fn consistency_run(seed: u64) -> (PhaseReport, PhaseReport) {
    let mut sim = Simulation::new(&small(), seed).unwrap();
    let user = sim.geometry().user_units;
    let fill = sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    let mut rw = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    rw.duration_ns = Some(20 * ssdsim::time::NS_PER_S);
    let rand = sim.run(rw).unwrap();
    (fill, rand)
}

/// A phase's IOs, bytes, snapshots, latency quantiles and IO count.
type Fingerprint = (Vec<u64>, Vec<u64>, Vec<ssdsim::Snapshot>, Vec<Option<u64>>, u64);

fn fingerprint(r: &PhaseReport) -> Fingerprint {
    let q = [0.01, 0.5, 0.99, 0.999, 1.0].iter().map(|&q| r.latency.quantile_ns(q)).collect();
    (r.ios.clone(), r.bytes.clone(), r.snapshots.clone(), q, r.total_ios)
}

#[test]
fn same_seed_gives_identical_series_counters_and_latencies() {
    let (f1, r1) = consistency_run(77);
    let (f2, r2) = consistency_run(77);
    assert_eq!(fingerprint(&f1), fingerprint(&f2));
    assert_eq!(fingerprint(&r1), fingerprint(&r2));
    assert!(r1.snapshots.last().unwrap().gc_units > 0, "the run must reach GC to be a meaningful check");
}

#[test]
fn different_seed_gives_different_random_phase() {
    let (_, r1) = consistency_run(77);
    let (_, r3) = consistency_run(78);
    assert_ne!(fingerprint(&r1), fingerprint(&r3));
}
