//! Oracle: steady-state write amplification of skewed random writes (fio's `zipf:1.2` and
//! `zoned:80/20:20/80`) against uniform ones on the same drive, under each GC policy.
//!
//! Expected result: uniform traffic matches Desnoyers' models (greedy, LRW for FIFO); zipf
//! 1.2 writes far less NAND than uniform under greedy, cost-benefit and d-choices, and far
//! *more* under FIFO; zoned 80/20 writes more than uniform under FIFO and greedy, less under
//! cost-benefit. Buggy result: skew helping or hurting every policy alike.
//!
//! The drive: the timed simulator with 2 channels × 2 dies × 2 planes × 512 blocks of 16
//! pages of 16 KiB (64 units a block), at α = 1.07 (the built-in profiles' 7 % spare) and
//! α = 1.25 (the reviewers' 75 % span); sequential fill, then 4 KiB random writes at QD32:
//! 6 × the user capacity to reach steady state, 6 × measured (20 × and 10 × give the same
//! figures within 0.5 %).
//!
//! Why, after Desnoyers ("Analytic modeling of SSD write performance", SYSTOR 2012; ACM TOS
//! 2014; the models are in `wa_model`):
//!
//! - **Uniform.** Greedy follows A_greedy(α'), FIFO follows A_LRW(α'), where α' = α·(B − f − 1)/B
//!   counts only the blocks that can hold data: of the B blocks of a plane, the
//!   f = `gc_fg_free_blocks` that foreground GC keeps free and the host and GC open blocks
//!   (half full on average: one block together) hold none.
//! - **Zoned 80/20** mixes hot and cold data in every block. LRW follows the multi-zone
//!   model, above uniform. Greedy degrades too: Desnoyers' hot/cold model shows non-uniform
//!   traffic raising WA under both LRW and greedy cleaning unless hot and cold data are kept
//!   in separate blocks, which this FTL does not do. Cost-benefit ranks blocks by
//!   (1 − u)/2u × age (Rosenblum & Ousterhout's LFS cleaner, built for this traffic): it
//!   leaves young hot blocks to empty further and cleans old cold ones while they are still
//!   mostly valid, and writes less than under uniform traffic.
//! - **Zipf 1.2** leaves nearly all data static (over ~2.3·10^5 blocks, the ranks beyond 10^4
//!   get ~7 % of the writes). After the sequential fill the static data sits in its own fully valid
//!   blocks, which greedy, cost-benefit and d-choices never pick: the hot data has the spare
//!   area to itself and WA falls far below uniform. FIFO cleans every block in turn and
//!   copies the static data on every pass of the log: a pass writes only the spare,
//!   (α' − 1) × user capacity, of host data, so WA tends to α'/(α' − 1), the all-static limit.
//!
//! Measured WA (seed 5; seeds 6 and 7 within 1 %):
//!
//! | α    | policy       | uniform | zipf 1.2 | zoned 80/20 |
//! |------|--------------|---------|----------|-------------|
//! | 1.07 | greedy       | 7.51    | 4.18     | 7.82        |
//! | 1.07 | cost-benefit | 7.69    | 2.62     | 6.88        |
//! | 1.07 | fifo         | 8.44    | 14.61    | 8.81        |
//! | 1.07 | d-choices    | 7.98    | 3.58     | 7.62        |
//! | 1.25 | greedy       | 2.65    | 2.46     | 2.89        |
//! | 1.25 | cost-benefit | 2.67    | 1.51     | 2.47        |
//! | 1.25 | fifo         | 2.75    | 4.66     | 3.09        |
//! | 1.25 | d-choices    | 2.76    | 1.67     | 2.73        |
//!
//! Models at α' (α = 1.07 / 1.25): greedy 7.56 / 2.65, LRW 8.52 / 2.75, LRW zoned 80/20
//! 8.88 / 3.09, all-static limit 16.7 / 5.12.

mod wa_model;

use std::sync::OnceLock;

use ssdsim::{Config, Distribution, Job, Pattern, Simulation, Workload, Zone, UNIT_BYTES};
use wa_model::{a_greedy, a_lrw, a_lrw_zones};

const BLOCKS_PER_PLANE: u64 = 512;
/// 16 pages of four 4 KiB units.
const UNITS_PER_BLOCK: f64 = 64.0;
/// The built-in profiles' 7 % spare and the 25 % of a 75 % span.
const ALPHAS: [f64; 2] = [1.07, 1.25];
/// The zoned workload's zones as (LBA fraction, write fraction).
const ZONES_80_20: [(f64, f64); 2] = [(0.2, 0.8), (0.8, 0.2)];

fn zipf_1_2() -> Distribution {
    Distribution::Zipf { theta: 1.2, center_fraction: None }
}

fn zoned_80_20() -> Distribution {
    Distribution::Zoned { zones: vec![Zone { access_pct: 80, span_pct: 20.0 }, Zone { access_pct: 20, span_pct: 80.0 }] }
}

/// Steady-state write amplification of one policy at one spare level, per distribution.
struct Measured {
    /// Physical over user capacity, counting only the blocks that can hold data (α').
    alpha_data: f64,
    uniform: f64,
    zipf: f64,
    zoned: f64,
}

/// NAND units over host units of 4 KiB QD32 random writes with `dist`, after a sequential
/// fill and 6 × the user capacity of the same writes.
fn steady_wa(cfg: &Config, dist: Distribution) -> f64 {
    let mut sim = Simulation::new(cfg, 5).unwrap();
    let user = sim.geometry().user_units;
    sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    let w = Workload { distribution: dist, io_bytes: Some(6 * user * UNIT_BYTES), ..Workload::default() };
    sim.run_workload(&w).unwrap();
    let before = sim.snapshot();
    sim.run_workload(&w).unwrap();
    let after = sim.snapshot();
    (after.nand_units - before.nand_units) as f64 / (after.host_units - before.host_units) as f64
}

fn measure(policy: &str, alpha: f64) -> Measured {
    let mut cfg = Config::default();
    for (k, v) in [("channels", "2"), ("dies_per_channel", "2"), ("planes_per_die", "2"), ("pages_per_block", "16"),
                   ("page_size_bytes", "16384"), ("gc_policy", policy)] {
        cfg.set(k, v).unwrap();
    }
    cfg.set("blocks_per_plane", &BLOCKS_PER_PLANE.to_string()).unwrap();
    let physical = 8.0 * BLOCKS_PER_PLANE as f64 * UNITS_PER_BLOCK;
    cfg.set("user_capacity_bytes", &((physical / alpha) as u64 * UNIT_BYTES).to_string()).unwrap();
    let geo = cfg.validate().unwrap();
    assert_eq!(geo.slots_per_block as f64, UNITS_PER_BLOCK);
    let empty_blocks = (cfg.gc_fg_free_blocks + 1) as f64;
    let alpha_data = geo.alpha() * (BLOCKS_PER_PLANE as f64 - empty_blocks) / BLOCKS_PER_PLANE as f64;
    Measured {
        alpha_data,
        uniform: steady_wa(&cfg, Distribution::Uniform),
        zipf: steady_wa(&cfg, zipf_1_2()),
        zoned: steady_wa(&cfg, zoned_80_20()),
    }
}

const POLICIES: [&str; 4] = ["greedy", "fifo", "cost-benefit", "d-choices"];
static MEASURED: [OnceLock<Vec<Measured>>; 4] = [const { OnceLock::new() }; 4];

/// [`measure`] at each of [`ALPHAS`], once per test binary (tests compare policies).
fn measured(policy: &str) -> impl Iterator<Item = (f64, &'static Measured)> {
    let i = POLICIES.iter().position(|p| *p == policy).unwrap();
    let all = MEASURED[i].get_or_init(|| ALPHAS.iter().map(|&alpha| measure(policy, alpha)).collect());
    ALPHAS.into_iter().zip(all.iter())
}

fn assert_close(what: &str, measured: f64, model: f64, tol: f64) {
    let err = (measured - model).abs() / model;
    assert!(err <= tol, "{what}: measured WA {measured:.4} vs model {model:.4} ({:.2}% off, limit {:.0}%)", err * 100.0, tol * 100.0);
}

/// Greedy (the profiles' policy): uniform on the model; zoned 80/20 above uniform (hot and
/// cold data share blocks: Desnoyers' greedy hot/cold model); zipf 1.2 below uniform, far
/// below at 7 % spare. With 25 % spare the zipf gain shrinks to ~7 %: greedy ignores age and
/// cleans young hot blocks before they have emptied, which the age-aware policies below
/// avoid, keeping the gain.
#[test]
fn greedy_skew_follows_the_hot_cold_models() {
    for (alpha, m) in measured("greedy") {
        assert_close(&format!("greedy uniform α={alpha}"), m.uniform, a_greedy(m.alpha_data, UNITS_PER_BLOCK), 0.02);
        assert!(m.zoned > 1.02 * m.uniform, "greedy α={alpha}: zoned 80/20 WA {:.3} vs uniform {:.3}", m.zoned, m.uniform);
        let most = if alpha < 1.1 { 0.7 } else { 1.0 };
        assert!(m.zipf < most * m.uniform, "greedy α={alpha}: zipf 1.2 WA {:.3} vs uniform {:.3}", m.zipf, m.uniform);
    }
}

/// FIFO (LRW): uniform and zoned 80/20 on their models; zipf 1.2 above uniform, near the
/// all-static limit α'/(α' − 1) and below it.
#[test]
fn fifo_skew_follows_the_lrw_models() {
    for (alpha, m) in measured("fifo") {
        let uniform = a_lrw(m.alpha_data);
        assert_close(&format!("fifo uniform α={alpha}"), m.uniform, uniform, 0.02);
        let zoned = a_lrw_zones(m.alpha_data, &ZONES_80_20);
        assert_close(&format!("fifo zoned 80/20 α={alpha}"), m.zoned, zoned, 0.02);
        assert!(zoned > 1.04 * uniform, "the zoned model {zoned:.3} should be above the uniform one {uniform:.3}");
        let all_static = m.alpha_data / (m.alpha_data - 1.0);
        assert!(m.zipf > 1.5 * m.uniform && m.zipf < all_static && m.zipf > 0.85 * all_static,
                "fifo α={alpha}: zipf 1.2 WA {:.3} vs uniform {:.3} and the all-static limit {all_static:.3}", m.zipf, m.uniform);
    }
}

/// Cost-benefit tells hot from cold blocks by age: both skews write less NAND than uniform
/// traffic, and less than greedy does under the same skew; on uniform traffic, where age
/// says little, it stays within 3 % of greedy (2.4 % and 0.8 % above). Age is that of the
/// block's youngest data (when it was closed, on its plane's host-write clock), as in LFS.
/// Counted from the block's last invalidation instead, it made the emptiest blocks look
/// youngest and the policy clean nearly in age order, like FIFO (uniform WA 8.43 at
/// α = 1.07, FIFO 8.48); on the drive-wide clock, with the `earliest` die allocation, a
/// plane's blocks looked old while its die was busy collecting and took less data (8.44).
#[test]
fn cost_benefit_gains_from_both_skews() {
    for ((alpha, m), (_, greedy)) in measured("cost-benefit").zip(measured("greedy")) {
        assert!(m.uniform < 1.03 * greedy.uniform, "cost-benefit α={alpha}: uniform WA {:.3} vs greedy {:.3}", m.uniform, greedy.uniform);
        assert!(m.zipf < 0.7 * m.uniform, "cost-benefit α={alpha}: zipf 1.2 WA {:.3} vs uniform {:.3}", m.zipf, m.uniform);
        assert!(m.zoned < 0.95 * m.uniform, "cost-benefit α={alpha}: zoned 80/20 WA {:.3} vs uniform {:.3}", m.zoned, m.uniform);
        assert!(m.zipf < greedy.zipf && m.zoned < greedy.zoned,
                "cost-benefit α={alpha} (zipf {:.3}, zoned {:.3}) vs greedy (zipf {:.3}, zoned {:.3})", m.zipf, m.zoned, greedy.zipf, greedy.zoned);
    }
}

/// d-choices (greedy among 8 random blocks) sits between greedy and FIFO on uniform traffic
/// (at 25 % spare, where the two models are 4 % apart, at the FIFO end: 0.4 % above LRW);
/// under skew the random sample now and then passes over a young hot block, which then
/// empties further: zipf 1.2 far below uniform, zoned 80/20 no worse than uniform and below
/// greedy's zoned figure.
#[test]
fn d_choices_gains_from_skew() {
    for ((alpha, m), (_, greedy_m)) in measured("d-choices").zip(measured("greedy")) {
        let (greedy, lrw) = (a_greedy(m.alpha_data, UNITS_PER_BLOCK), a_lrw(m.alpha_data));
        assert!(m.uniform > greedy && m.uniform < 1.01 * lrw, "d-choices α={alpha}: uniform WA {:.3} outside greedy {greedy:.3} .. LRW {lrw:.3}", m.uniform);
        assert!(m.zipf < 0.7 * m.uniform, "d-choices α={alpha}: zipf 1.2 WA {:.3} vs uniform {:.3}", m.zipf, m.uniform);
        assert!(m.zoned < m.uniform && m.zoned < greedy_m.zoned,
                "d-choices α={alpha}: zoned 80/20 WA {:.3} vs uniform {:.3}, greedy's {:.3}", m.zoned, m.uniform, greedy_m.zoned);
    }
}


