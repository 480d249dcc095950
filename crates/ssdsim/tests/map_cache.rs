//! The mapping-table cache of DRAM-less drives ([`ssdsim::map_cache`]), against oracles:
//! - under uniform random lookups over S map pages, a cache of C pages hits C/S of them (any
//!   demand-paging policy under the independent reference model with equal popularities);
//! - a page replaced is written back only if a write dirtied it since it was loaded;
//! - on the drive: random reads over a span the cache covers never miss once warm and run as
//!   fast as with the whole map in DRAM; with every lookup a miss they run at one command per
//!   (controller time + miss time), the serialised part;
//! - map pages written back count as NAND writes;
//! - with the bypass policy, a window in which the main cache hits less than the threshold
//!   sends the next window to the SRAM cache (which then hits SRAM/span), and a window in
//!   which it hits enough brings it back.

use ssdsim::map_cache::{Lookup, MapCache, WINDOW_LOOKUPS};
use ssdsim::rng::Rng;
use ssdsim::time::NS_PER_S;
use ssdsim::{Config, Job, Pattern, Simulation};

fn cache(cache_bytes: u64, user_units: u64) -> MapCache {
    let mut cfg = Config::default();
    cfg.set("map_cache_bytes", &cache_bytes.to_string()).unwrap();
    MapCache::new(&cfg, user_units).unwrap()
}

#[test]
fn uniform_random_lookups_hit_cover_over_span() {
    // 4 KiB map pages of 1024 entries; 64 pages cached.
    for span_pages in [32u64, 64, 96, 128, 256, 1024] {
        let mut c = cache(64 * 4096, span_pages * 1024 * 4);
        let mut rng = Rng::new(span_pages);
        for _ in 0..20_000 {
            c.lookup(rng.below(span_pages), false);
        }
        let (h0, m0) = (c.hits, c.misses);
        let n = 200_000;
        for _ in 0..n {
            c.lookup(rng.below(span_pages), false);
        }
        let hit = (c.hits - h0) as f64 / n as f64;
        let want = (64.0 / span_pages as f64).min(1.0);
        assert!((hit - want).abs() < 0.01, "{span_pages} pages: hit ratio {hit:.3}, expected {want:.3} ({} misses)", c.misses - m0);
    }
}

#[test]
fn only_dirty_pages_are_written_back() {
    let mut c = cache(2 * 4096, 16 * 1024);
    assert_eq!(c.slots(), 2);
    assert_eq!(c.lookup(0, false), Lookup::Miss { writeback: false });
    assert_eq!(c.lookup(1, true), Lookup::Miss { writeback: false });
    assert_eq!(c.lookup(1, false), Lookup::Hit);
    // Both referenced: CLOCK clears both bits, then replaces the one at the hand (page 0, clean).
    assert_eq!(c.lookup(2, false), Lookup::Miss { writeback: false });
    // Page 1 (dirty) goes next.
    assert_eq!(c.lookup(3, false), Lookup::Miss { writeback: true });
    assert_eq!(c.writeback_units, 1);
    assert_eq!((c.hits, c.misses), (1, 4));
}

/// A small drive with one die per channel, filled; `map_cache_bytes` as given.
fn filled(map_cache_bytes: u64) -> Simulation {
    let mut cfg = Config::default();
    for (k, v) in [("channels", "4"), ("dies_per_channel", "2"), ("planes_per_die", "2"), ("blocks_per_plane", "128"),
                   ("pages_per_block", "64"), ("page_size_bytes", "16384"), ("user_capacity_bytes", "943718400"),
                   ("controller_cmd_us", "2"), ("map_miss_us", "12"), ("map_cache_bytes", &map_cache_bytes.to_string())] {
        cfg.set(k, v).unwrap();
    }
    let mut sim = Simulation::new(&cfg, 3).unwrap();
    let user = sim.geometry().user_units;
    sim.run(Job::new(Pattern::SeqWrite, 64, 8, 0, user)).unwrap();
    sim
}

/// 4 KiB random reads at QD32 over the first `span_units`: IOs per second.
fn random_reads(sim: &mut Simulation, span_units: u64) -> f64 {
    let mut job = Job::new(Pattern::RandRead, 1, 32, 0, span_units);
    job.duration_ns = Some(NS_PER_S / 2);
    let r = sim.run(job).unwrap();
    r.total_ios as f64 / (r.duration_ns as f64 / NS_PER_S as f64)
}

#[test]
fn reads_within_the_cover_run_as_with_a_dram_map_and_all_misses_run_at_the_controller_rate() {
    // 64 KiB of entries cover 64 MiB of LBA space (16,384 units).
    let cover_units = 64 * 1024 / 4;
    let mut dram = filled(0);
    let mut dramless = filled(64 * 1024);
    // The same history on both drives: a first run warms the cache.
    random_reads(&mut dram, cover_units);
    let want = random_reads(&mut dram, cover_units);
    random_reads(&mut dramless, cover_units);
    let misses = dramless.device().map_cache().unwrap().misses;
    let got = random_reads(&mut dramless, cover_units);
    assert_eq!(dramless.device().map_cache().unwrap().misses, misses, "no miss within the cover once warm");
    assert!((got / want - 1.0).abs() < 0.01, "{got:.0} IOPS against {want:.0} with the map in DRAM");
    // A cache of one page over the whole drive: (almost) every read misses; the controller
    // serialises 2 µs per command plus 12 µs per miss.
    let mut one = filled(4096);
    let span = one.geometry().user_units;
    random_reads(&mut one, span); // past the fill's last programs, as above
    let all_miss = random_reads(&mut one, span);
    let oracle = 1e6 / 14.0;
    assert!((all_miss / oracle - 1.0).abs() < 0.03, "{all_miss:.0} IOPS against {oracle:.0}");
}

#[test]
fn map_pages_written_back_count_as_nand_writes() {
    let mut sim = filled(4096);
    let before = sim.snapshot();
    let written_back = sim.device().map_cache().unwrap().writeback_units;
    let user = sim.geometry().user_units;
    let mut job = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    job.io_units = Some(20_000);
    sim.run(job).unwrap();
    let after = sim.snapshot();
    let m = sim.device().map_cache().unwrap();
    let map_units = m.writeback_units - written_back;
    assert!(map_units > 10_000, "random writes over the drive evict dirty pages: {map_units}");
    let ftl = sim.ftl_counters();
    assert_eq!(after.nand_units, ftl.nand_units() + m.writeback_units);
    assert!(after.nand_units - before.nand_units >= 20_000 + map_units, "host units, GC copies and map pages");
}

#[test]
fn map_keys_are_checked() {
    for (key, value) in [("map_page_bytes", "10"), ("map_page_bytes", "4097"), ("map_cache_bytes", "100"), ("map_miss_us", "-1")] {
        let mut cfg = Config::default();
        cfg.set("map_cache_bytes", "1048576").unwrap();
        cfg.set(key, value).unwrap();
        let e = cfg.validate().expect_err(&format!("{key} = {value} accepted"));
        assert!(e.to_string().contains(key), "{key} = {value}: {e}");
    }
    for (sets, key) in [(&[("map_bypass_hit_pct", "101")][..], "map_bypass_hit_pct"),
                        (&[("map_bypass_hit_pct", "80")], "map_sram_bytes"),
                        (&[("map_bypass_hit_pct", "80"), ("map_sram_bytes", "4096"), ("map_cache_bytes", "0")], "map_bypass_hit_pct")] {
        let mut cfg = Config::default();
        cfg.set("map_cache_bytes", "1048576").unwrap();
        for (k, v) in sets {
            cfg.set(k, v).unwrap();
        }
        let e = cfg.validate().expect_err(&format!("{sets:?} accepted"));
        assert!(e.to_string().contains(key), "{sets:?}: {e}");
    }
}

/// A map cache of 64 pages that falls back to 8 pages of SRAM when fewer than 80 % of a
/// window's lookups hit it.
fn bypassing() -> MapCache {
    let mut cfg = Config::default();
    for (k, v) in [("map_cache_bytes", "262144"), ("map_sram_bytes", "32768"), ("map_bypass_hit_pct", "80")] {
        cfg.set(k, v).unwrap();
    }
    cfg.validate().unwrap();
    MapCache::new(&cfg, 1024 * 1024 * 4).unwrap()
}

/// Uniform lookups over `span` pages: (hit ratio, share of lookups served from SRAM) over
/// `n` lookups after `warm` lookups.
fn uniform(c: &mut MapCache, rng: &mut Rng, span: u64, warm: u64, n: u64) -> (f64, f64) {
    for _ in 0..warm {
        c.lookup(rng.below(span), false);
    }
    let (h0, b0) = (c.hits, c.bypassed);
    for _ in 0..n {
        c.lookup(rng.below(span), false);
    }
    ((c.hits - h0) as f64 / n as f64, (c.bypassed - b0) as f64 / n as f64)
}

#[test]
fn a_thrashing_map_cache_is_bypassed_for_the_sram_and_used_again_once_the_span_fits() {
    let mut c = bypassing();
    let mut rng = Rng::new(7);
    let n = 100 * WINDOW_LOOKUPS;
    // 72 pages: the main cache hits 64/72 = 89 % >= 80 %: never bypassed once warm.
    let (hit, bypassed) = uniform(&mut c, &mut rng, 72, 20 * WINDOW_LOOKUPS, n);
    assert_eq!(bypassed, 0.0);
    assert!((hit - 64.0 / 72.0).abs() < 0.01, "hit ratio {hit:.3}");
    // 128 pages: it would hit 50 %: every window after the first is served from the SRAM,
    // which hits 8/128.
    let (hit, bypassed) = uniform(&mut c, &mut rng, 128, 2 * WINDOW_LOOKUPS, n);
    assert_eq!(bypassed, 1.0);
    assert!((hit - 8.0 / 128.0).abs() < 0.01, "hit ratio {hit:.3}");
    // Back to 48 pages: the main cache, kept up to date meanwhile, holds them all within a
    // window, and serves again (judged by the SRAM's hits, 8/48, it would not).
    let (hit, bypassed) = uniform(&mut c, &mut rng, 48, 2 * WINDOW_LOOKUPS, n);
    assert_eq!((hit, bypassed), (1.0, 0.0));
}
