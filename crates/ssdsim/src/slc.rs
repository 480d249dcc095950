//! The pseudo-SLC write cache of TLC and QLC drives, and folding.
//!
//! NAND whose native mode stores `cell_bits` bits per cell (TLC 3, QLC 4) can run blocks as
//! pseudo-SLC: one bit per cell, so a block holds 1/`cell_bits` of its native data but
//! programs several times faster (`slc_t_prog_us` against the native `t_prog_us`). Drives
//! write host data into such blocks first (the cache) and later *fold* it: read it back and
//! program it in the native mode, which frees the SLC blocks again.
//!
//! The NAND pays for every mode: a block in SLC mode stores `page_size_bytes ×
//! pages_per_block / cell_bits` ([`slc_block_units`]). The cache holds a static part
//! (`slc_static_bytes`, whole blocks kept in SLC mode in every plane, taken from the physical
//! blocks before the user capacity is checked: [`Config::validate`] refuses a profile whose
//! user capacity, static blocks and FTL reserve do not fit the NAND, and the FTL's planes are
//! the blocks left) and a dynamic part: free native capacity run as SLC. The dynamic part is
//! 1/`cell_bits` of the user capacity not holding data (the user capacity less the data
//! mapped, cached data included: the native room folding the cache will need), capped at
//! `slc_dynamic_max_bytes`; the native blocks it borrows are never the spare area, which the
//! FTL keeps for garbage collection, so a full drive has only its static part. On some NAND
//! the dynamic part's programs are slower than the static part's (`slc_dynamic_t_prog_us`),
//! except the first `slc_fast_bytes` of the cache, which take the static part's time.
//! The dynamic part shrinks as the drive fills; data in the cache beyond its current size
//! must be folded.
//!
//! Each host program (one multi-plane page per die) goes to SLC while the cache has room.
//! Once it is full, `slc_when_full` says what the drive does:
//! - `direct`: host data is programmed in the native mode (direct-to-TLC) until the host
//!   leaves the drive idle (during a sustained stream it stays direct);
//! - `fold`: the drive folds a program's worth of cached data on that die to make room and
//!   programs the host data into SLC (cache recycling: every host unit then costs an SLC
//!   program, an SLC read and a native program). The fold is booked on the dies in turn
//!   (the cached data is spread over them), as firmware folding continuously keeps the
//!   room ready.
//!
//! Background folding: while the cache holds more than `slc_fold_start_pct` % of its current
//! size (and, `direct`, while it is exhausted), each host program is followed by folding
//! `slc_fold_units_per_write` units per host unit written, and whatever the cache holds
//! beyond its size (its dynamic part has shrunk) is folded at once. In idle time (after
//! `gc_idle_delay_ms`) every die folds until the cache is empty, unless `slc_idle_fold = 0`.
//!
//! What is simplified: the FTL maps every unit into native blocks at once (its garbage
//! collection does not see the dynamic part's SLC blocks, which the free user capacity
//! always has room for; the static blocks are not in its planes at all); the cache is
//! a count of units written to SLC and not yet folded, so data overwritten or trimmed while
//! cached is still folded, and reads of cached data take the native read time.

use crate::config::{Config, Geometry, UNIT_BYTES};
use crate::time::{us_to_ns, Ns};

/// 4 KiB units a block holds in SLC mode: 1/`cell_bits` of its native `slots_per_block`
/// (a block of 1024 16 KiB TLC pages holds 16 MiB natively, 5.33 MiB as SLC) [units].
pub fn slc_block_units(slots_per_block: u64, cell_bits: u64) -> u64 {
    slots_per_block / cell_bits.max(1)
}

/// Blocks every plane keeps in SLC mode for a static part of `static_units` over `planes`
/// planes (whole blocks in every plane, rounded up) [blocks per plane].
pub fn static_blocks_per_plane(static_units: u64, slots_per_block: u64, cell_bits: u64, planes: u64) -> u64 {
    if static_units == 0 {
        return 0;
    }
    let per_block = slc_block_units(slots_per_block, cell_bits).max(1);
    static_units.div_ceil(per_block).div_ceil(planes)
}

/// What the drive does with a host program once the cache is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenFull {
    /// Program host data in the native mode.
    Direct,
    /// Fold cached data on the die first, then program the host data into SLC.
    Fold,
}

impl WhenFull {
    pub const NAMES: &'static [&'static str] = &["direct", "fold"];

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "direct" => Some(WhenFull::Direct),
            "fold" => Some(WhenFull::Fold),
            _ => None,
        }
    }
}

/// How one host program is written ([`SlcCache::plan_program`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramPlan {
    /// Programmed in SLC mode, taking this long (else in the native mode) [ns].
    pub slc_t_prog: Option<Ns>,
    /// Units to fold on the program's die: to make room for it (`fold`), to keep the cache
    /// within its size, and background folding [units].
    pub fold_units: u64,
}

/// The cache's state and settings; see the module doc.
#[derive(Clone, Debug)]
pub struct SlcCache {
    cell_bits: u64,
    static_units: u64,
    dynamic_max_units: u64,
    /// Units of the cache, from empty, programmed at `t_prog_slc` (at least the static part).
    fast_units: u64,
    when_full: WhenFull,
    /// Background folding starts above this share of the cache's current size.
    fold_start: f64,
    fold_per_write: f64,
    idle_fold: bool,
    t_prog_slc: Ns,
    /// SLC program time in the dynamic part (native blocks run as SLC).
    t_prog_dynamic: Ns,
    t_read_slc: Ns,
    t_prog_native: Ns,
    units_per_page: u64,
    units_per_program: u64,
    /// Units written to SLC and not yet folded.
    used_units: u64,
    /// Background folding owed but not yet a whole program [units].
    fold_credit: f64,
    /// Units folded so far (each a native program of data already counted once).
    folded_units: u64,
    /// `direct`: the cache filled up; host data goes to the native mode until the host
    /// leaves the drive idle (firmware leaves the cache alone during a sustained stream).
    exhausted: bool,
    /// Units the host wrote into SLC so far.
    slc_written_units: u64,
}

impl SlcCache {
    /// The drive's cache, or None when the profile has none (both sizes 0).
    pub fn new(cfg: &Config, geo: &Geometry) -> Option<Self> {
        if cfg.slc_static_bytes == 0 && cfg.slc_dynamic_max_bytes == 0 {
            return None;
        }
        Some(SlcCache {
            cell_bits: cfg.cell_bits,
            static_units: cfg.slc_static_bytes / UNIT_BYTES,
            dynamic_max_units: cfg.slc_dynamic_max_bytes / UNIT_BYTES,
            fast_units: (cfg.slc_fast_bytes / UNIT_BYTES).max(cfg.slc_static_bytes / UNIT_BYTES),
            when_full: WhenFull::parse(&cfg.slc_when_full).expect("validated"),
            fold_start: cfg.slc_fold_start_pct / 100.0,
            fold_per_write: cfg.slc_fold_units_per_write,
            idle_fold: cfg.slc_idle_fold != 0,
            t_prog_slc: us_to_ns(cfg.slc_t_prog_us),
            t_prog_dynamic: us_to_ns(if cfg.slc_dynamic_t_prog_us > 0.0 { cfg.slc_dynamic_t_prog_us } else { cfg.slc_t_prog_us }),
            t_read_slc: us_to_ns(cfg.slc_t_read_us),
            t_prog_native: us_to_ns(cfg.t_prog_us),
            units_per_page: geo.units_per_page as u64,
            units_per_program: geo.units_per_program as u64,
            used_units: 0,
            fold_credit: 0.0,
            folded_units: 0,
            exhausted: false,
            slc_written_units: 0,
        })
    }

    /// The cache's size now [units]: the static part plus the dynamic part, which the user
    /// capacity not holding data (`free_user_units`) allows.
    #[inline]
    pub fn capacity_units(&self, free_user_units: u64) -> u64 {
        self.static_units + self.dynamic_max_units.min(free_user_units / self.cell_bits)
    }

    /// Units in the cache (written to SLC, not yet folded).
    pub fn used_units(&self) -> u64 {
        self.used_units
    }

    /// Units folded so far.
    pub fn folded_units(&self) -> u64 {
        self.folded_units
    }

    /// Units the host wrote into SLC so far.
    pub fn slc_written_units(&self) -> u64 {
        self.slc_written_units
    }

    /// Die time to fold `units` (whole programs): SLC page reads, then native programs [ns].
    #[inline]
    pub fn fold_ns(&self, units: u64) -> Ns {
        units.div_ceil(self.units_per_page) * self.t_read_slc + units.div_ceil(self.units_per_program) * self.t_prog_native
    }

    /// `units` rounded up to whole programs: folding programs whole pages of the native mode.
    fn whole_programs(&self, units: u64) -> u64 {
        units.div_ceil(self.units_per_program) * self.units_per_program
    }

    /// Folds up to `units` (fewer if the cache holds fewer); returns the units folded.
    fn fold(&mut self, units: u64) -> u64 {
        let n = units.min(self.used_units);
        self.used_units -= n;
        self.folded_units += n;
        n
    }

    /// How a host program of `units` is written, with the cache's size as
    /// `free_user_units` allows (see the module doc); updates the cache.
    #[inline]
    pub fn plan_program(&mut self, units: u64, free_user_units: u64) -> ProgramPlan {
        let capacity = self.capacity_units(free_user_units);
        let mut plan = ProgramPlan { slc_t_prog: None, fold_units: 0 };
        let mut slc = false;
        let fits = self.used_units + units <= capacity;
        if !fits && self.when_full == WhenFull::Direct {
            self.exhausted = true;
        }
        if fits && !self.exhausted {
            slc = true;
        } else if self.when_full == WhenFull::Fold && units <= capacity {
            // Make room: fold what the program needs and whatever the cache holds beyond its size.
            plan.fold_units = self.fold(self.whole_programs(self.used_units + units - capacity));
            slc = true;
        }
        if slc {
            // The static part fills first; the cache's first fast_units take the fast time.
            let slow = self.used_units + units > self.fast_units;
            plan.slc_t_prog = Some(if slow { self.t_prog_dynamic } else { self.t_prog_slc });
            self.used_units += units;
            self.slc_written_units += units;
        }
        let folding = self.exhausted || self.used_units as f64 > self.fold_start * capacity as f64;
        if self.fold_per_write > 0.0 && folding {
            self.fold_credit += self.fold_per_write * units as f64;
            let whole = (self.fold_credit / self.units_per_program as f64) as u64 * self.units_per_program;
            self.fold_credit -= whole as f64;
            plan.fold_units += self.fold(whole);
        } else {
            self.fold_credit = 0.0;
        }
        // Cached data beyond the cache's size (the drive has filled the native space its
        // dynamic part borrowed) must go, in whole programs.
        let excess = self.used_units.saturating_sub(capacity);
        if excess > 0 {
            plan.fold_units += self.fold(self.whole_programs(excess));
        }
        plan
    }

    /// Programs' worth of cached data idle time may fold (0 when idle folding is off).
    pub fn idle_programs(&self) -> u64 {
        if self.idle_fold { self.used_units.div_ceil(self.units_per_program) } else { 0 }
    }

    /// Die time to fold one program's worth [ns].
    pub fn program_fold_ns(&self) -> Ns {
        self.fold_ns(self.units_per_program)
    }

    /// Whether idle time past the idle delay changes the cache: it folds it (`slc_idle_fold`)
    /// or, `direct`, takes it back in use ([`SlcCache::rest`]).
    pub fn idle_changes(&self) -> bool {
        self.idle_fold || self.when_full == WhenFull::Direct
    }

    /// The host has left the drive idle (past the idle delay): host data may go to the
    /// cache again where it has room.
    pub fn rest(&mut self) {
        self.exhausted = false;
    }

    /// Folds up to `programs` programs' worth of cached data on one die in idle time;
    /// returns the die time it takes [ns].
    pub fn idle_fold(&mut self, programs: u64) -> Ns {
        let n = self.fold(programs * self.units_per_program);
        self.fold_ns(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two planes of 64 blocks of 96 16 KiB pages (384 units per block natively), 38,400
    /// units of user capacity (50 blocks per plane), `cell_bits`, a static part of
    /// `static_units` and a dynamic part of at most 20,000 units; programs of 8 units.
    fn drive(cell_bits: u64, static_units: u64) -> (Config, Geometry) {
        let mut c = Config::default();
        for (k, v) in [("channels", "1"), ("dies_per_channel", "1"), ("planes_per_die", "2"), ("blocks_per_plane", "64"),
            ("pages_per_block", "96"), ("user_capacity_bytes", &(38_400 * UNIT_BYTES).to_string()), ("cell_bits", &cell_bits.to_string()),
            ("slc_static_bytes", &(static_units * UNIT_BYTES).to_string()), ("slc_dynamic_max_bytes", &(20_000 * UNIT_BYTES).to_string())] {
            c.set(k, v).unwrap();
        }
        let g = c.validate().unwrap();
        (c, g)
    }

    /// Units a 1 MiB-sequential-like fill writes into SLC before the first native program
    /// (`direct`), each program of 8 units seeing the user capacity its data leaves free.
    fn cached_before_direct(cfg: &Config, geo: &Geometry) -> u64 {
        let mut c = SlcCache::new(cfg, geo).unwrap();
        let mut written = 0;
        while c.plan_program(8, geo.user_units - written - 8).slc_t_prog.is_some() {
            written += 8;
        }
        assert_eq!(c.slc_written_units(), written);
        written
    }

    #[test]
    fn the_first_slc_fast_bytes_of_the_cache_take_the_static_parts_time() {
        // Static 1000 units, fast 3000: programs up to unit 3000 at 200 us, the rest of the
        // dynamic part at 400 us; without slc_fast_bytes the static part alone is fast.
        for (fast_units, expect_fast) in [(0, 1000), (3000, 3000)] {
            let (mut cfg, _) = drive(3, 1000);
            cfg.set("slc_dynamic_t_prog_us", "400").unwrap();
            cfg.set("slc_fast_bytes", &(fast_units * UNIT_BYTES).to_string()).unwrap();
            let geo = cfg.validate().unwrap();
            let mut c = SlcCache::new(&cfg, &geo).unwrap();
            let mut fast = 0;
            for written in (0..8000).step_by(8) {
                let t = c.plan_program(8, geo.user_units - written - 8).slc_t_prog.expect("the cache has room");
                if t == us_to_ns(200.0) {
                    assert_eq!(fast, written, "fast programs come first");
                    fast += 8;
                } else {
                    assert_eq!(t, us_to_ns(400.0));
                }
            }
            assert_eq!(fast, expect_fast);
        }
    }

    #[test]
    fn tlc_static_blocks_hold_a_third_and_the_dynamic_part_a_third_of_the_free_user_capacity() {
        // 1000 units in SLC blocks of 384 / 3 = 128 units: 8 blocks, 4 per plane.
        assert_eq!(slc_block_units(384, 3), 128);
        let (cfg, geo) = drive(3, 1000);
        assert_eq!((geo.slc_static_blocks_per_pool, geo.blocks_per_pool), (4, 60));
        let c = SlcCache::new(&cfg, &geo).unwrap();
        assert_eq!(c.capacity_units(38_400), 1000 + 12_800, "empty: 38,400 / 3 dynamic");
        assert_eq!(c.capacity_units(9_000), 1000 + 3_000);
        assert_eq!(c.capacity_units(0), 1000, "full: the static part only");
        // The fill: the cache takes the program while w + 8 <= 1000 + (38,400 - w - 8) / 3,
        // up to w + 8 = 10,344 (10,352 would need 10,352 <= 1000 + 28,048 / 3 = 10,349).
        assert_eq!(cached_before_direct(&cfg, &geo), 10_344);
    }

    #[test]
    fn qlc_static_blocks_hold_a_quarter_and_the_dynamic_part_a_quarter_of_the_free_user_capacity() {
        // 960 units in SLC blocks of 96 units: 10 blocks, 5 per plane.
        let (cfg, geo) = drive(4, 960);
        assert_eq!((geo.slc_static_blocks_per_pool, geo.blocks_per_pool), (5, 59));
        let c = SlcCache::new(&cfg, &geo).unwrap();
        assert_eq!(c.capacity_units(38_400), 960 + 9_600);
        assert_eq!(c.capacity_units(0), 960);
        // w + 8 <= 960 + (38,400 - w - 8) / 4 holds up to w + 8 = 8,448.
        assert_eq!(cached_before_direct(&cfg, &geo), 8_448);
        // The dynamic part's cap binds on an empty drive.
        let (mut cfg, _) = drive(4, 960);
        cfg.set("slc_dynamic_max_bytes", &(5_000 * UNIT_BYTES).to_string()).unwrap();
        let geo = cfg.validate().unwrap();
        assert_eq!(SlcCache::new(&cfg, &geo).unwrap().capacity_units(38_400), 960 + 5_000);
    }

    #[test]
    fn the_largest_static_part_fills_every_block_the_user_capacity_and_reserve_leave() {
        // 64 - 5 reserve - 50 user = 9 blocks per plane: 2 × 9 × 96 QLC SLC units fit, one more does not.
        let (mut cfg, geo) = drive(4, 2 * 9 * 96);
        assert_eq!(geo.blocks_per_pool, 64 - 9);
        cfg.set("slc_static_bytes", &((2 * 9 * 96 + 1) * UNIT_BYTES).to_string()).unwrap();
        let e = cfg.validate().unwrap_err();
        assert!(e.message.contains(&format!("at most {} bytes", 2 * 9 * 96 * UNIT_BYTES)), "{e}");
    }
}
