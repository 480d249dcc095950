//! The pseudo-SLC write cache and folding ([`ssdsim::slc`]), against analytic oracles.
//!
//! A small TLC drive, one die per channel (no channel sharing), a fast host link and host
//! data to the die free first (as the built-in profiles with a cache), so a sequential
//! stream's rate is what its dies can program:
//! - while the cache has room: dies × program bytes / (channel transfer + SLC program time);
//! - `direct` once it is full: the same with the native program time;
//! - `fold` once it is full: each program also folds one program's worth (SLC page reads +
//!   a native program), and once the dynamic part shrinks (the drive fills the native space
//!   it borrows) 1 + 1/cell_bits programs' worth;
//! - the cache fills at static + dynamic cap (while free space allows the cap), and its
//!   size follows the free user capacity;
//! - write amplification: every unit written to the cache is programmed twice once folded;
//! - idle time folds the cache empty and the next burst runs at SLC speed again, unless
//!   idle folding is off;
//! - with the cache off (the default), nothing changes: the golden scenarios still hold.

use ssdsim::time::{transfer_ns, us_to_ns, NS_PER_S};
use ssdsim::{Config, Job, Pattern, Simulation, UNIT_BYTES};

const MB: f64 = 1e6;
const DIES: u64 = 4;
/// Units per multi-plane program: 2 planes × 4 units per 16 KiB page.
const PROGRAM_UNITS: u64 = 8;
const T_SLC_US: f64 = 150.0;
const T_NATIVE_US: f64 = 900.0;
const T_READ_SLC_US: f64 = 30.0;
const CHANNEL_MBPS: f64 = 800.0;
const STATIC_BYTES: u64 = 64 << 20;
const DYNAMIC_BYTES: u64 = 256 << 20;

fn drive(keys: &[(&str, &str)]) -> Config {
    let mut cfg = Config::default();
    let base: &[(&str, &str)] = &[
        ("channels", "4"), ("dies_per_channel", "1"), ("planes_per_die", "2"), ("blocks_per_plane", "256"),
        ("pages_per_block", "64"), ("page_size_bytes", "16384"), ("user_capacity_bytes", "1845493760"),
        ("cell_bits", "3"), ("t_prog_us", "900"), ("slc_t_prog_us", "150"), ("slc_t_read_us", "30"),
        ("channel_mbps", "800"), ("pcie_gen", "4"), ("pcie_lanes", "4"), ("controller_cmd_us", "1"),
        ("write_buffer_bytes", "1048576"), ("slc_static_bytes", "67108864"), ("slc_dynamic_max_bytes", "268435456"),
        ("gc_idle_delay_ms", "100"), ("die_allocation", "earliest"),
    ];
    for (k, v) in base.iter().chain(keys) {
        cfg.set(k, v).unwrap_or_else(|e| panic!("{k}: {e}"));
    }
    cfg
}

/// Program time of one multi-plane program including its channel transfer [ns].
fn per_program_ns(t_prog_us: f64) -> u64 {
    transfer_ns(PROGRAM_UNITS * UNIT_BYTES, CHANNEL_MBPS * MB) + us_to_ns(t_prog_us)
}

/// Rate of `DIES` dies each taking `per_program` ns per program [MB/s].
fn rate_mbps(per_program: u64) -> f64 {
    DIES as f64 * (PROGRAM_UNITS * UNIT_BYTES) as f64 / (per_program as f64 / NS_PER_S as f64) / MB
}

/// Die time to fold one program's worth: its two SLC pages (one per plane) read, one
/// native program [ns].
fn fold_program_ns() -> u64 {
    2 * us_to_ns(T_READ_SLC_US) + us_to_ns(T_NATIVE_US)
}

/// Sequential 1 MiB writes at QD1 in segments of `seg` bytes from the start of the drive:
/// (bytes written at the end of the segment, MB/s over it).
fn stream(sim: &mut Simulation, from: u64, bytes: u64, seg: u64) -> Vec<(u64, f64)> {
    let mut out = vec![];
    let mut at = from;
    while at < from + bytes {
        let n = seg.min(from + bytes - at);
        let mut job = Job::new(Pattern::SeqWrite, 256, 1, at / UNIT_BYTES, n / UNIT_BYTES);
        job.io_units = Some(n / UNIT_BYTES);
        let r = sim.run(job).unwrap();
        at += n;
        out.push((at, n as f64 / (r.duration_ns as f64 / NS_PER_S as f64) / MB));
    }
    out
}

fn assert_near(got: f64, want: f64, rel: f64, what: &str) {
    assert!((got / want - 1.0).abs() <= rel, "{what}: {got:.1} against {want:.1} (±{:.1} %)", rel * 100.0);
}

/// Mean rate of the segments ending in (lo, hi] bytes.
fn mean_rate(rates: &[(u64, f64)], lo: u64, hi: u64) -> f64 {
    let sel: Vec<f64> = rates.iter().filter(|(w, _)| *w > lo && *w <= hi).map(|r| r.1).collect();
    assert!(!sel.is_empty(), "no segment in ({lo}, {hi}]");
    sel.iter().sum::<f64>() / sel.len() as f64
}

const SEG: u64 = 16 << 20;

#[test]
fn direct_to_native_once_the_cache_is_full() {
    let cfg = drive(&[("slc_when_full", "direct")]);
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    let user = sim.geometry().user_units * UNIT_BYTES / SEG * SEG;
    let rates = stream(&mut sim, 0, user, SEG);
    let cache = STATIC_BYTES + DYNAMIC_BYTES;
    assert_near(mean_rate(&rates, SEG, cache - SEG), rate_mbps(per_program_ns(T_SLC_US)), 0.02, "SLC rate");
    // Direct to the native mode until the dynamic part shrinks below what the cache holds
    // (a third of the free capacity below its cap); then each program also folds a third of
    // a program's worth, so the cache keeps within its size.
    let shrink_at = sim.geometry().user_units * UNIT_BYTES - 3 * DYNAMIC_BYTES;
    assert_near(mean_rate(&rates, cache + SEG, shrink_at), rate_mbps(per_program_ns(T_NATIVE_US)), 0.02, "native rate");
    let want = rate_mbps(per_program_ns(T_NATIVE_US) + fold_program_ns() / 3);
    assert_near(mean_rate(&rates, shrink_at + 2 * SEG, user - SEG), want, 0.03, "native rate, cache shrinking");
    // The first segment wholly after the cache is slow, the last wholly in it fast.
    let fast = rate_mbps(per_program_ns(T_SLC_US)) * 0.9;
    let last_fast = rates.iter().filter(|r| r.1 > fast).map(|r| r.0).max().unwrap();
    assert!(last_fast.abs_diff(cache) <= SEG, "cache ends at {last_fast} bytes, expected {cache}");
    // Without background folding only what the shrinking cache could not hold was folded:
    // on the full drive it holds its static part.
    let s = sim.snapshot();
    assert_eq!(s.nand_units, s.host_units + s.fold_units);
    assert_eq!(s.slc_units + s.fold_units, cache / UNIT_BYTES);
    assert!(s.slc_units * UNIT_BYTES <= STATIC_BYTES + (sim.geometry().user_units * UNIT_BYTES - user) / 3 + 8 * UNIT_BYTES);
}

#[test]
fn fold_mode_recycles_the_cache_and_slows_more_once_it_shrinks() {
    let cfg = drive(&[("slc_when_full", "fold")]);
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    let user_bytes = sim.geometry().user_units * UNIT_BYTES;
    let user = user_bytes / SEG * SEG;
    let rates = stream(&mut sim, 0, user, SEG);
    let cache = STATIC_BYTES + DYNAMIC_BYTES;
    let fold = fold_program_ns();
    assert_near(mean_rate(&rates, cache + SEG, cache + 8 * SEG), rate_mbps(per_program_ns(T_SLC_US) + fold), 0.02,
                "recycling rate");
    // The dynamic part shrinks once a third of the free capacity is below its cap.
    let shrink_at = user_bytes - 3 * DYNAMIC_BYTES;
    let want = rate_mbps(per_program_ns(T_SLC_US) + fold * 4 / 3);
    assert_near(mean_rate(&rates, shrink_at + 2 * SEG, user - SEG), want, 0.03, "shrinking rate");
    // Every unit that went through the cache and left it was programmed twice.
    let s = sim.snapshot();
    assert!(s.fold_units > 0);
    assert_eq!(s.nand_units, s.host_units + s.fold_units);
    let c = sim.device().slc().unwrap();
    assert_eq!(c.slc_written_units(), c.folded_units() + c.used_units(), "units in = units folded + units held");
    assert!(c.used_units() * UNIT_BYTES <= STATIC_BYTES + (user_bytes - user) / 3 + PROGRAM_UNITS * UNIT_BYTES,
            "a full drive keeps only the static part: {} units held", c.used_units());
}

#[test]
fn background_folding_steals_die_time_in_proportion() {
    // Folding 0.5 units per unit written from the first program on (start at 0 %): each
    // host program is followed by half a program's worth of folding.
    let cfg = drive(&[("slc_fold_start_pct", "0"), ("slc_fold_units_per_write", "0.5")]);
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    let rates = stream(&mut sim, 0, 8 * SEG, SEG);
    let want = rate_mbps(per_program_ns(T_SLC_US) + fold_program_ns() / 2);
    assert_near(mean_rate(&rates, SEG, 8 * SEG), want, 0.03, "SLC rate with background folding");
    let s = sim.snapshot();
    let folded = s.fold_units as f64 / s.host_units as f64;
    assert_near(folded, 0.5, 0.01, "units folded per unit written");
}

#[test]
fn idle_time_folds_the_cache_and_the_next_burst_is_fast_again_unless_idle_folding_is_off() {
    for idle_fold in ["1", "0"] {
        let cfg = drive(&[("slc_idle_fold", idle_fold)]);
        let mut sim = Simulation::new(&cfg, 1).unwrap();
        let cache = STATIC_BYTES + DYNAMIC_BYTES;
        stream(&mut sim, 0, cache + 2 * SEG, SEG);
        assert!(sim.snapshot().slc_units * UNIT_BYTES >= cache - SEG, "the cache is full");
        // Long enough to fold it all: units / (dies × units per program) programs per die.
        let per_die = (cache / UNIT_BYTES).div_ceil(DIES * PROGRAM_UNITS) * fold_program_ns();
        sim.idle(per_die + 200_000_000).unwrap();
        let held = sim.snapshot().slc_units;
        // The first segment also fills the write buffer at the link's rate: the next ones.
        let next = stream(&mut sim, cache + 2 * SEG, 3 * SEG, SEG);
        let burst = mean_rate(&next, cache + 3 * SEG, cache + 5 * SEG);
        if idle_fold == "1" {
            assert_eq!(held, 0, "idle time folded the cache empty");
            assert_near(burst, rate_mbps(per_program_ns(T_SLC_US)), 0.02, "burst after idle");
        } else {
            assert!(held * UNIT_BYTES >= cache - SEG, "nothing folded");
            assert_near(burst, rate_mbps(per_program_ns(T_NATIVE_US)), 0.02, "burst after idle, cache still full");
        }
    }
}

#[test]
fn the_cache_is_off_by_default_and_its_keys_are_checked() {
    let sim = Simulation::new(&Config::default(), 1).unwrap();
    assert!(sim.device().slc().is_none());
    for (key, value, words) in [
        ("cell_bits", "5", "cell_bits"),
        ("slc_when_full", "later", "slc_when_full"),
        ("slc_fold_start_pct", "120", "slc_fold_start_pct"),
        ("slc_fold_units_per_write", "-1", "slc_fold_units_per_write"),
        ("slc_idle_fold", "2", "slc_idle_fold"),
        ("pcie_lanes", "3", "pcie_lanes"),
    ] {
        let mut cfg = drive(&[]);
        cfg.set(key, value).unwrap();
        let e = cfg.validate().expect_err(&format!("{key} = {value} accepted"));
        assert!(e.to_string().contains(words), "{key} = {value}: {e}");
    }
    let mut slc_nand = drive(&[]);
    slc_nand.set("cell_bits", "1").unwrap();
    assert!(slc_nand.validate().unwrap_err().to_string().contains("cell_bits"));
}

#[test]
fn a_pcie_link_sets_the_host_link_rate() {
    let mut cfg = Config::default();
    assert_eq!(cfg.host_link_rate_mbps(), 550.0);
    cfg.set("pcie_gen", "4").unwrap();
    cfg.set("pcie_lanes", "4").unwrap();
    assert_near(cfg.host_link_rate_mbps(), 4.0 * 1969.2 * 0.9, 1e-9, "PCIe 4.0 x4");
    cfg.set("pcie_gen", "3").unwrap();
    assert_near(cfg.host_link_rate_mbps(), 4.0 * 984.6 * 0.9, 1e-9, "PCIe 3.0 x4");
    // NAND far faster than the link: a stream into the cache runs at the link's rate.
    let cfg = drive(&[("pcie_gen", "2"), ("pcie_lanes", "1"), ("slc_t_prog_us", "1")]);
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    let rates = stream(&mut sim, 0, 4 * SEG, SEG);
    assert_near(mean_rate(&rates, SEG, 4 * SEG), 500.0 * 0.9, 0.01, "PCIe 2.0 x1 link-bound stream");
}

#[test]
fn the_dynamic_part_may_program_slower_than_the_static_part() {
    let cfg = drive(&[("slc_dynamic_t_prog_us", "300")]);
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    let rates = stream(&mut sim, 0, STATIC_BYTES + 8 * SEG, SEG);
    assert_near(mean_rate(&rates, SEG, STATIC_BYTES), rate_mbps(per_program_ns(T_SLC_US)), 0.02, "static part");
    assert_near(mean_rate(&rates, STATIC_BYTES + SEG, STATIC_BYTES + 8 * SEG), rate_mbps(per_program_ns(300.0)), 0.02,
                "dynamic part");
}

#[test]
fn cache_size_follows_the_free_capacity_as_computed_by_hand() {
    // TLC, 64 MiB static, dynamic capped at 256 MiB: at w bytes written (no cache data
    // folded, `direct` with no background folding) the size is
    // 64 MiB + min(256 MiB, (user - w) / 3), in whole units.
    let cfg = drive(&[]);
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    let user = sim.geometry().user_units;
    let written = [0u64, 100 << 20, 1_200 << 20, 1_500 << 20, 1_700 << 20];
    let mut at = 0;
    for w in written {
        if w > at {
            let mut job = Job::new(Pattern::SeqWrite, 256, 1, at / UNIT_BYTES, (w - at) / UNIT_BYTES);
            job.io_units = Some((w - at) / UNIT_BYTES);
            sim.run(job).unwrap();
            at = w;
        }
        let free = user - w / UNIT_BYTES;
        let want = STATIC_BYTES / UNIT_BYTES + (DYNAMIC_BYTES / UNIT_BYTES).min(free / 3);
        let c = sim.device().slc().unwrap();
        assert_eq!(c.capacity_units(sim.device().ftl().geometry().user_units - sim.device().ftl().mapped_units()), want,
                   "cache size after {w} bytes written");
        assert_eq!(sim.device().ftl().mapped_units(), w / UNIT_BYTES);
    }
}
