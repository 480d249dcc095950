//! Oracle: steady-state write amplification under uniform random 4 KiB writes must match
//! Desnoyers' analytic models ("Analytic modeling of SSD write performance", SYSTOR 2012;
//! ACM TOS 2014).
//!
//! - LRW / FIFO:  A = α / (α + W0(−α·e^−α)), α = physical / user units.
//! - Greedy:      A ≈ A_LRW(k·α) / k with k = 1 + 1/(2·Np), Np = 4 KiB units per erase block.
//! - LRW with several zones of uniform traffic (zone i: fraction f_i of the LBAs receives a
//!   fraction r_i of the writes; the TOS 2014 extension, "Eq. 14"): a zone-i page is still
//!   valid when cleaned with probability v_i = exp(−h·r_i / (f_i·U)), h = host writes per
//!   traversal of the log; zone i enters the log at r_i / (1 − v_i) pages per host write, so
//!   h = P / Σ r_i/(1 − v_i) (solved by fixed point) and A = Σ r_i / (1 − v_i).

use ssdsim::ftl::Ftl;
use ssdsim::rng::Rng;
use ssdsim::Config;

/// Principal branch of the Lambert W function on [−1/e, 0) by Halley's iteration.
fn lambert_w0(x: f64) -> f64 {
    assert!((-1.0 / std::f64::consts::E..0.0).contains(&x));
    let mut w = if x < -0.3 { -1.0 + (2.0 * (1.0 + std::f64::consts::E * x)).sqrt() } else { x };
    for _ in 0..100 {
        let ew = w.exp();
        let f = w * ew - x;
        let wn = w - f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
        if (wn - w).abs() < 1e-15 {
            return wn;
        }
        w = wn;
    }
    w
}

fn a_lrw(alpha: f64) -> f64 {
    alpha / (alpha + lambert_w0(-alpha * (-alpha).exp()))
}

fn a_greedy(alpha: f64, pages_per_block: f64) -> f64 {
    let k = 1.0 + 1.0 / (2.0 * pages_per_block);
    a_lrw(k * alpha) / k
}

/// Multi-zone LRW write amplification; `zones` = (LBA fraction, write fraction).
fn a_lrw_zones(alpha: f64, zones: &[(f64, f64)]) -> f64 {
    // In units of U = 1: P = α. Solve h = α / Σ r/(1 − exp(−h r/f)) by bisection on h.
    let g = |h: f64| h * zones.iter().map(|&(f, r)| r / (1.0 - (-h * r / f).exp())).sum::<f64>() - alpha;
    let (mut lo, mut hi) = (1e-12, alpha);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if g(mid) > 0.0 { hi = mid } else { lo = mid }
    }
    let h = 0.5 * (lo + hi);
    zones.iter().map(|&(f, r)| r / (1.0 - (-h * r / f).exp())).sum()
}

/// Measures steady-state WA of a single-plane drive with `blocks` blocks of `ppb` 4 KiB
/// pages at physical/user ratio `alpha`, under the given policy.
fn measure_wa(policy: &str, alpha: f64, blocks: u64, ppb: u64, seed: u64) -> (f64, f64) {
    measure_wa_zones(policy, alpha, blocks, ppb, seed, &[(1.0, 1.0)])
}

/// Like [`measure_wa`] with non-uniform traffic: `zones` = (LBA fraction, write fraction).
fn measure_wa_zones(policy: &str, alpha: f64, blocks: u64, ppb: u64, seed: u64, zones: &[(f64, f64)]) -> (f64, f64) {
    let mut cfg = Config::default();
    for (k, v) in [("channels", "1"), ("dies_per_channel", "1"), ("planes_per_die", "1"), ("page_size_bytes", "4096")] {
        cfg.set(k, v).unwrap();
    }
    cfg.set("blocks_per_plane", &blocks.to_string()).unwrap();
    cfg.set("pages_per_block", &ppb.to_string()).unwrap();
    cfg.set("gc_policy", policy).unwrap();
    let physical = blocks * ppb;
    let user = (physical as f64 / alpha).floor() as u64;
    cfg.set("user_capacity_bytes", &(user * 4096).to_string()).unwrap();
    let geo = cfg.validate().unwrap();
    let mut ftl = Ftl::new(&geo, false);
    for lpn in 0..user {
        ftl.write(lpn, 0, 0);
    }
    let mut rng = Rng::new(seed);
    // Zone boundaries in LBAs and cumulative write probabilities.
    let mut bounds = Vec::new();
    let (mut start, mut cum) = (0u64, 0.0);
    for &(f, r) in zones {
        let len = ((f * user as f64).round() as u64).min(user - start).max(1);
        cum += r;
        bounds.push((start, len, cum));
        start += len;
    }
    let next = |rng: &mut Rng| {
        let x = rng.unit_f64() * cum;
        let &(s, len, _) = bounds.iter().find(|b| x < b.2).unwrap_or(bounds.last().unwrap());
        s + rng.below(len)
    };
    for _ in 0..8 * user {
        let lpn = next(&mut rng);
        ftl.write(lpn, 0, 0);
    }
    let before = ftl.counters();
    for _ in 0..8 * user {
        let lpn = next(&mut rng);
        ftl.write(lpn, 0, 0);
    }
    let after = ftl.counters();
    let wa = (after.nand_units() - before.nand_units()) as f64 / (after.host_units - before.host_units) as f64;
    (wa, geo.alpha())
}

fn assert_close(what: &str, measured: f64, model: f64, tol: f64) {
    let err = (measured - model).abs() / model;
    assert!(err <= tol, "{what}: measured WA {measured:.4} vs model {model:.4} ({:.2}% off, limit {:.0}%)", err * 100.0, tol * 100.0);
}

#[test]
fn greedy_matches_desnoyers_at_three_spare_levels() {
    for (alpha, ppb) in [(1.07, 64u64), (1.20, 64), (1.50, 32)] {
        let (wa, a) = measure_wa("greedy", alpha, (1 << 20) / ppb, ppb, 11);
        assert_close(&format!("greedy α={a:.3} Np={ppb}"), wa, a_greedy(a, ppb as f64), 0.03);
    }
}

#[test]
fn fifo_matches_desnoyers_lrw_at_three_spare_levels() {
    for alpha in [1.07, 1.20, 1.50] {
        let (wa, a) = measure_wa("fifo", alpha, 1 << 14, 64, 12);
        assert_close(&format!("fifo α={a:.3}"), wa, a_lrw(a), 0.03);
    }
}

/// A hot/cold workload against the multi-zone LRW model: 50% of writes to 5% of the LBAs,
/// 30% to 15%, 20% to 80%.
#[test]
fn fifo_hot_cold_matches_desnoyers_multi_zone_model() {
    let zones = [(0.05, 0.5), (0.15, 0.3), (0.80, 0.2)];
    for alpha in [1.1, 1.25] {
        let (wa, a) = measure_wa_zones("fifo", alpha, 1 << 14, 64, 21, &zones);
        let model = a_lrw_zones(a, &zones);
        assert_close(&format!("fifo hot/cold α={a:.3}"), wa, model, 0.05);
        // Skew really matters here: the model is far from the uniform one.
        assert!(model > a_lrw(a) * 1.05, "zones model {model} vs uniform {}", a_lrw(a));
    }
}

#[test]
fn multi_zone_model_reduces_to_uniform_lrw() {
    for alpha in [1.07, 1.2, 1.5] {
        let one = a_lrw_zones(alpha, &[(1.0, 1.0)]);
        let split = a_lrw_zones(alpha, &[(0.3, 0.3), (0.7, 0.7)]);
        assert!((one - a_lrw(alpha)).abs() < 1e-6 && (split - a_lrw(alpha)).abs() < 1e-6);
    }
}

/// On uniform traffic d-choices (d = 8) lies between greedy (d → ∞) and FIFO; cost-benefit
/// cannot beat greedy (age carries no information) and stays near FIFO.
#[test]
fn cost_benefit_and_d_choices_on_uniform_traffic() {
    let alpha = 1.15;
    let (g, _) = measure_wa("greedy", alpha, 1 << 13, 64, 31);
    let (f, _) = measure_wa("fifo", alpha, 1 << 13, 64, 31);
    let (d, _) = measure_wa("d-choices", alpha, 1 << 13, 64, 31);
    let (c, _) = measure_wa("cost-benefit", alpha, 1 << 13, 64, 31);
    assert!(d >= g * 0.995 && d <= f, "d-choices WA {d:.3} outside [greedy {g:.3}, fifo {f:.3}]");
    assert!(d < g * 1.05, "d-choices (d=8) WA {d:.3} should be close to greedy {g:.3}");
    assert!(c >= g * 0.995 && c <= f * 1.05, "cost-benefit WA {c:.3} vs greedy {g:.3}, fifo {f:.3}");
}

#[test]
fn greedy_beats_fifo_where_the_model_says_it_should() {
    // A guard that the two policies really differ: at Np=32, α=1.1 the models differ by 14%.
    let (g, _) = measure_wa("greedy", 1.1, 1 << 15, 32, 13);
    let (f, _) = measure_wa("fifo", 1.1, 1 << 15, 32, 13);
    assert!(f > g * 1.10, "fifo {f:.3} should be >10% above greedy {g:.3}");
}

/// The same oracle through the whole timed simulator: several dies and planes, 16 KiB
/// pages holding four 4 KiB units, sequential fill then QD32 random writes.
#[test]
fn timed_simulator_write_amplification_matches_model() {
    use ssdsim::{Job, Pattern, Simulation};
    let mut cfg = Config::default();
    for (k, v) in [("channels", "2"), ("dies_per_channel", "2"), ("planes_per_die", "2"), ("blocks_per_plane", "512"),
                   ("pages_per_block", "16"), ("page_size_bytes", "16384")] {
        cfg.set(k, v).unwrap();
    }
    let physical = 8 * 512 * 64u64;
    let user = (physical as f64 / 1.25) as u64;
    cfg.set("user_capacity_bytes", &(user * 4096).to_string()).unwrap();
    let mut sim = Simulation::new(&cfg, 5).unwrap();
    let alpha = sim.geometry().alpha();
    let spb = sim.geometry().slots_per_block as f64;
    sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    let mut warm = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    warm.io_units = Some(6 * user);
    sim.run(warm.clone()).unwrap();
    let before = sim.snapshot();
    sim.run(warm).unwrap();
    let after = sim.snapshot();
    let wa = (after.nand_units - before.nand_units) as f64 / (after.host_units - before.host_units) as f64;
    assert_close("timed sim greedy α=1.25", wa, a_greedy(alpha, spb), 0.03);
}
