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

/// The cache's state and settings; see the module doc.
#[derive(Clone, Debug)]
pub struct MapCache {
    /// Units whose entries one map page holds.
    units_per_page: u64,
    /// 4 KiB units one map page takes in NAND (at least 1).
    page_units: u64,
    /// Per map page, its slot in the cache (NONE: not cached).
    slot_of: Vec<u32>,
    /// Per slot, its map page (NONE: empty), referenced and dirty bits.
    page_in: Vec<u32>,
    referenced: Vec<bool>,
    dirty: Vec<bool>,
    hand: usize,
    /// Controller time per miss [ns].
    pub miss_ns: Ns,
    /// Lookups that hit and missed, map-page units written back.
    pub hits: u64,
    pub misses: u64,
    pub writeback_units: u64,
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
        let slots = ((cfg.map_cache_bytes / cfg.map_page_bytes).max(1) as usize).min(pages);
        Some(MapCache {
            units_per_page,
            page_units: cfg.map_page_bytes.div_ceil(UNIT_BYTES).max(1),
            slot_of: vec![NONE; pages],
            page_in: vec![NONE; slots],
            referenced: vec![false; slots],
            dirty: vec![false; slots],
            hand: 0,
            miss_ns: us_to_ns(cfg.map_miss_us),
            hits: 0,
            misses: 0,
            writeback_units: 0,
        })
    }

    /// The map pages holding the entries of units `lpn..lpn + n`.
    #[inline]
    pub fn pages(&self, lpn: u64, n: u64) -> std::ops::RangeInclusive<u64> {
        lpn / self.units_per_page..=(lpn + n.max(1) - 1) / self.units_per_page
    }

    /// Looks up map page `page` for a read or (`write`) an update of its entries.
    #[inline]
    pub fn lookup(&mut self, page: u64, write: bool) -> Lookup {
        let slot = self.slot_of[page as usize];
        if slot != NONE {
            let s = slot as usize;
            self.referenced[s] = true;
            self.dirty[s] |= write;
            self.hits += 1;
            return Lookup::Hit;
        }
        self.misses += 1;
        // CLOCK: the first slot, from the hand on, not referenced since the hand last passed.
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
            if writeback {
                self.writeback_units += self.page_units;
            }
            self.page_in[s] = page as u32;
            self.slot_of[page as usize] = s as u32;
            self.referenced[s] = true;
            self.dirty[s] = write;
            return Lookup::Miss { writeback };
        }
    }

    /// 4 KiB units one map page takes in NAND.
    pub fn page_units(&self) -> u64 {
        self.page_units
    }

    /// Map pages the cache holds at most.
    pub fn slots(&self) -> usize {
        self.page_in.len()
    }

    /// Heap bytes held.
    pub fn state_bytes(&self) -> usize {
        self.slot_of.capacity() * 4 + self.page_in.capacity() * 6
    }
}
