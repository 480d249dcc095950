//! Desnoyers' analytic write-amplification models ("Analytic modeling of SSD write
//! performance", SYSTOR 2012; ACM TOS 2014), for oracle tests: `mod wa_model;`.
//!
//! α is physical over user capacity. LRW (FIFO) with zones of uniform traffic, zone i
//! holding a fraction f_i of the LBAs and receiving a fraction r_i of the writes (TOS 2014,
//! "Eq. 14"): a zone-i page is still valid when cleaned with probability
//! v_i = exp(−h·r_i / f_i), h = host writes per traversal of the log (user capacity = 1);
//! zone i enters the log at r_i / (1 − v_i) pages per host write, so h solves
//! h · Σ r_i/(1 − v_i) = α, and A = Σ r_i / (1 − v_i). One zone gives the uniform LRW model
//! A = α / (α + W0(−α·e^−α)). Greedy: A ≈ A_LRW(k·α) / k with k = 1 + 1/(2·Np), Np = 4 KiB
//! units per erase block.

/// LRW / FIFO write amplification with zones of uniform traffic: (LBA fraction, write fraction).
pub fn a_lrw_zones(alpha: f64, zones: &[(f64, f64)]) -> f64 {
    let amplification = |h: f64| zones.iter().map(|&(f, r)| r / (1.0 - (-h * r / f).exp())).sum::<f64>();
    let (mut lo, mut hi) = (1e-12, alpha);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid * amplification(mid) > alpha { hi = mid } else { lo = mid }
    }
    amplification(0.5 * (lo + hi))
}

/// LRW / FIFO write amplification under uniform traffic.
pub fn a_lrw(alpha: f64) -> f64 {
    a_lrw_zones(alpha, &[(1.0, 1.0)])
}

/// Greedy write amplification under uniform traffic, `units_per_block` 4 KiB units a block.
pub fn a_greedy(alpha: f64, units_per_block: f64) -> f64 {
    let k = 1.0 + 1.0 / (2.0 * units_per_block);
    a_lrw(k * alpha) / k
}
