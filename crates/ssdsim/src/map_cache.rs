//! The mapping-table cache of DRAM-less drives.
//!
//! A drive with DRAM keeps its whole logical-to-physical table there (4 bytes per 4 KiB
//! unit, about 1 GB per TB). A DRAM-less controller keeps only part of it, in its SRAM or
//! in host memory lent over NVMe (the host memory buffer, HMB): `map_cache_bytes` of table
//! entries, in pages of `map_page_bytes` (each covering `map_page_bytes` / 4 units). The
//! rest lives in NAND.
//!
//! Every host command needs the entries of the units it touches. A page not in the cache is
//! a *miss*: the firmware spends `map_miss_us` of controller time on it (serialised: this
//! caps the miss rate) and reads the page from NAND (a page read on one die) before the
//! command's data can be read; a write then changes the entry, so the page becomes dirty.
//! Pages are replaced by CLOCK (second chance, an LRU approximation firmware uses); a dirty
//! page that leaves is written back to NAND, counted as NAND writes. Random I/O over a span
//! whose entries fit the cache runs at full speed; beyond it, each command risks a miss.
//!
//! **Bypass** (`map_bypass_hit_pct`, `map_sram_bytes`): an HMB drive whose working set
//! outgrows the HMB stops profiting from it. A demand cache of C pages hits C/S of uniform
//! lookups over S pages, so it would still hit half of them at twice its cover, yet the
//! measured Toshiba BG4 reads as slowly as with HMB off once the span is well beyond the
//! cover. With `map_bypass_hit_pct` set, the controller judges the main cache over each
//! window of [`WINDOW_LOOKUPS`] lookups: if fewer than that percent hit, it serves the next
//! window from its own SRAM cache of `map_sram_bytes` alone (as with HMB off), else from the
//! main cache. The main cache's contents follow every lookup meanwhile (as if the firmware
//! kept sampling it, at no cost), so it is used again once the working set fits.
//!
//! What is simplified: a map page's read costs its latency (`t_read`) but no die time (a die
//! is assumed free for it), and pages written back are programmed whole on the dies in
//! turn, outside the FTL's block accounting.

use crate::config::{Config, UNIT_BYTES};
use crate::time::{us_to_ns, Ns};

const NONE: u32 = u32::MAX;
/// Bytes of one mapping-table entry.
pub const ENTRY_BYTES: u64 = 4;

/// What looking up one map page found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit,
    /// Not cached: the page must be read from NAND; `writeback` says whether the page it
    /// replaced was dirty (and must be written back).
    Miss { writeback: bool },
}

/// Lookups per window over which the bypass policy judges the main cache's hit ratio.
pub const WINDOW_LOOKUPS: u64 = 4096;

/// A CLOCK (second chance) cache of map pages: which pages it holds, with their referenced
/// and dirty bits.
#[derive(Clone, Debug)]
struct Clock {
    /// Per map page, its slot in the cache (NONE: not cached).
    slot_of: Vec<u32>,
    /// Per slot, its map page (NONE: empty), referenced and dirty bits.
    page_in: Vec<u32>,
    referenced: Vec<bool>,
    dirty: Vec<bool>,
    hand: usize,
}

impl Clock {
    /// A cache of `slots` pages (at least 1, at most `pages`) of a table of `pages`.
    fn new(slots: usize, pages: usize) -> Self {
        let slots = slots.clamp(1, pages.max(1));
        Clock { slot_of: vec![NONE; pages], page_in: vec![NONE; slots], referenced: vec![false; slots], dirty: vec![false; slots], hand: 0 }
    }

    #[inline]
    fn lookup(&mut self, page: u64, write: bool) -> Lookup {
        let slot = self.slot_of[page as usize];
        if slot != NONE {
            let s = slot as usize;
            self.referenced[s] = true;
            self.dirty[s] |= write;
            return Lookup::Hit;
        }
        // The first slot, from the hand on, not referenced since the hand last passed.
        loop {
            let s = self.hand;
            self.hand = (self.hand + 1) % self.page_in.len();
            if self.referenced[s] {
                self.referenced[s] = false;
                continue;
            }
            let old = self.page_in[s];
            let writeback = old != NONE && self.dirty[s];
            if old != NONE {
                self.slot_of[old as usize] = NONE;
            }
            self.page_in[s] = page as u32;
            self.slot_of[page as usize] = s as u32;
            self.referenced[s] = true;
            self.dirty[s] = write;
            return Lookup::Miss { writeback };
        }
    }

    fn state_bytes(&self) -> usize {
        self.slot_of.capacity() * 4 + self.page_in.capacity() * 6
    }
}

/// The SRAM cache the controller falls back to when the main cache thrashes, and the
/// window's tally that decides it.
#[derive(Clone, Debug)]
struct Bypass {
    sram: Clock,
    /// The main cache's hits needed per window to keep using it.
    min_hits: u64,
    window_lookups: u64,
    window_hits: u64,
    /// The current window is served from the SRAM cache.
    active: bool,
}

/// The cache's state and settings; see the module doc.
#[derive(Clone, Debug)]
pub struct MapCache {
    /// Units whose entries one map page holds.
    units_per_page: u64,
    /// 4 KiB units one map page takes in NAND (at least 1).
    page_units: u64,
    main: Clock,
    bypass: Option<Bypass>,
    /// Controller time per miss [ns].
    pub miss_ns: Ns,
    /// Lookups served that hit and missed (from whichever cache served them), map-page
    /// units written back.
    pub hits: u64,
    pub misses: u64,
    pub writeback_units: u64,
    /// Lookups served from the SRAM cache while the main cache was bypassed.
    pub bypassed: u64,
}

impl MapCache {
    /// The drive's map cache for `user_units` of user capacity, or None with the whole table
    /// in DRAM (`map_cache_bytes` = 0).
    pub fn new(cfg: &Config, user_units: u64) -> Option<Self> {
        if cfg.map_cache_bytes == 0 {
            return None;
        }
        let units_per_page = (cfg.map_page_bytes / ENTRY_BYTES).max(1);
        let pages = user_units.div_ceil(units_per_page) as usize;
        let slots = |bytes: u64| (bytes / cfg.map_page_bytes) as usize;
        let bypass = (cfg.map_bypass_hit_pct > 0.0).then(|| Bypass {
            sram: Clock::new(slots(cfg.map_sram_bytes), pages),
            min_hits: (cfg.map_bypass_hit_pct / 100.0 * WINDOW_LOOKUPS as f64).ceil() as u64,
            window_lookups: 0,
            window_hits: 0,
            active: false,
        });
        Some(MapCache {
            units_per_page,
            page_units: cfg.map_page_bytes.div_ceil(UNIT_BYTES).max(1),
            main: Clock::new(slots(cfg.map_cache_bytes), pages),
            bypass,
            miss_ns: us_to_ns(cfg.map_miss_us),
            hits: 0,
            misses: 0,
            writeback_units: 0,
            bypassed: 0,
        })
    }

    /// The map pages holding the entries of units `lpn..lpn + n`.
    #[inline]
    pub fn pages(&self, lpn: u64, n: u64) -> std::ops::RangeInclusive<u64> {
        lpn / self.units_per_page..=(lpn + n.max(1) - 1) / self.units_per_page
    }

    /// Looks up map page `page` for a read or (`write`) an update of its entries, in the
    /// cache serving the current window.
    #[inline]
    pub fn lookup(&mut self, page: u64, write: bool) -> Lookup {
        let found = match self.bypass.as_mut() {
            None => self.main.lookup(page, write),
            Some(b) => {
                let main = self.main.lookup(page, write && !b.active);
                let found = if b.active {
                    self.bypassed += 1;
                    b.sram.lookup(page, write)
                } else {
                    main
                };
                b.window_hits += (main == Lookup::Hit) as u64;
                b.window_lookups += 1;
                if b.window_lookups == WINDOW_LOOKUPS {
                    b.active = b.window_hits < b.min_hits;
                    (b.window_lookups, b.window_hits) = (0, 0);
                }
                found
            }
        };
        match found {
            Lookup::Hit => self.hits += 1,
            Lookup::Miss { writeback } => {
                self.misses += 1;
                if writeback {
                    self.writeback_units += self.page_units;
                }
            }
        }
        found
    }

    /// 4 KiB units one map page takes in NAND.
    pub fn page_units(&self) -> u64 {
        self.page_units
    }

    /// Map pages the main cache holds at most.
    pub fn slots(&self) -> usize {
        self.main.page_in.len()
    }

    /// Heap bytes held.
    pub fn state_bytes(&self) -> usize {
        self.main.state_bytes() + self.bypass.as_ref().map_or(0, |b| b.sram.state_bytes())
    }
}
