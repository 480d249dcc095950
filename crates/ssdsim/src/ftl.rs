//! Page-mapped flash translation layer, without time.
//!
//! The FTL maps 4 KiB logical units (LPNs) to physical slots (PPNs). A slot is one 4 KiB
//! unit inside a NAND page; `slot = block * slots_per_block + offset`. Each plane is a GC
//! *pool* with its own free blocks, an open block for host data and an open block for GC
//! copies. Garbage collection picks a victim block by the configured policy, copies its
//! valid units into the GC block and erases it. It runs in three ways:
//! - foreground: a host write needs a new block and the plane is below
//!   `gc_fg_free_blocks`; whole victims are collected until `gc_fg_target_free_blocks`;
//! - active (background): below `gc_bg_start_free_blocks`, each host unit written to the
//!   plane pays `gc_bg_copies_per_write` relocations of an incrementally collected victim,
//!   until the plane is back at `gc_bg_stop_free_blocks`;
//! - idle: [`Ftl::collect_for_idle`], called by the timing model when the host is idle.
//!
//! The FTL only counts work (page reads, unit copies, erases); [`crate::device`] turns the
//! counts into die time. State is compact: 4 bytes per logical unit (L2P), 4 bytes per
//! physical slot (P2L) and a few words per block.

use std::collections::VecDeque;

use crate::config::{GcPolicy, Geometry};
use crate::mem::big_vec;
use crate::rng::Rng;

/// Asks the CPU to bring the cache line holding `p` closer (a hint; never faults).
#[inline(always)]
fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch(p as *const i8, _MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Marks an unmapped logical unit in L2P and an invalid (stale or erased) slot in P2L.
pub const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockState {
    Free,
    Open,
    Closed,
    /// Being collected incrementally by active GC.
    Victim,
}

#[derive(Clone, Debug)]
struct Block {
    /// Valid units in the block.
    valid: u32,
    /// Next slot to program (0..=slots_per_block).
    write_ptr: u32,
    erase_count: u32,
    state: BlockState,
    /// Greedy bucket links (closed blocks only), NONE-terminated.
    prev: u32,
    next: u32,
    /// Cost-benefit / d-choices: index in the pool's closed list.
    pos: u32,
    /// Cost-benefit: host-write clock when the block last changed (closed or invalidated).
    mtime: u64,
}

/// One plane: its blocks are `first_block .. first_block + blocks_per_pool`.
#[derive(Clone, Debug)]
struct Pool {
    free: VecDeque<u32>,
    host_open: u32,
    gc_open: u32,
    /// Greedy: heads of doubly linked lists of closed blocks indexed by valid count.
    buckets: Vec<u32>,
    /// Greedy: no closed block has fewer valid units than this.
    min_hint: usize,
    /// FIFO: closed blocks in the order they were closed.
    closed_fifo: VecDeque<u32>,
    /// Cost-benefit / d-choices: closed blocks, unordered.
    closed: Vec<u32>,
    /// Active GC: victim being collected (NONE if none), next slot to examine, whether active
    /// GC is running (hysteresis between the start and stop watermarks), copy credit.
    bg_victim: u32,
    bg_cursor: u32,
    bg_on: bool,
    bg_credit: f64,
    /// Active GC: page of the victim last read (NONE before the first), to count page reads.
    bg_read_page: u32,
    /// Active GC: relocations owed per host unit written (fixed, or set per victim).
    bg_rate: f64,
}

/// Work done by garbage collection, for the timing model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcWork {
    /// NAND pages read (pages holding at least one valid unit of a victim).
    pub page_reads: u64,
    /// 4 KiB units copied (relocated) by GC.
    pub units_copied: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Victims collected by foreground GC (a host write had to wait for them).
    pub foreground_victims: u64,
}

/// Cumulative FTL counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FtlCounters {
    /// Host 4 KiB units written.
    pub host_units: u64,
    /// Units relocated by GC.
    pub gc_units: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Units unmapped by TRIM (only those that were mapped).
    pub trimmed_units: u64,
    /// GC victim selections.
    pub gc_runs: u64,
}

impl FtlCounters {
    /// Units programmed to NAND (host + GC).
    pub fn nand_units(&self) -> u64 {
        self.host_units + self.gc_units
    }
}

/// The FTL state of one drive.
pub struct Ftl {
    geo: Geometry,
    l2p: Vec<u32>,
    p2l: Vec<u32>,
    /// Optional per-slot payload (a version tag), moved by GC: lets tests check that every
    /// read returns the last data written.
    payload: Option<Vec<u64>>,
    blocks: Vec<Block>,
    pools: Vec<Pool>,
    counters: FtlCounters,
    /// GC work per pool since the last [`Ftl::take_gc_work`].
    pending: Vec<GcWork>,
    /// Scratch list of a victim's valid (slot, lpn) pairs.
    scratch: Vec<(u32, u32)>,
    /// Random choices of the d-choices policy.
    rng: Rng,
    free_blocks_total: u64,
}

impl Ftl {
    /// An erased drive. `track_payload` keeps a u64 per slot for reference-model tests.
    pub fn new(geo: &Geometry, track_payload: bool) -> Self {
        Self::with_seed(geo, track_payload, 0)
    }

    /// Like [`Ftl::new`]; `seed` drives the random choices of the d-choices policy.
    pub fn with_seed(geo: &Geometry, track_payload: bool, seed: u64) -> Self {
        let spb = geo.slots_per_block as u32;
        let blocks = vec![
            Block { valid: 0, write_ptr: 0, erase_count: 0, state: BlockState::Free, prev: NONE, next: NONE, pos: NONE, mtime: 0 };
            geo.blocks
        ];
        let mut pools = Vec::with_capacity(geo.pools);
        for p in 0..geo.pools {
            let first = (p * geo.blocks_per_pool) as u32;
            let free: VecDeque<u32> = (first..first + geo.blocks_per_pool as u32).collect();
            pools.push(Pool {
                free,
                host_open: NONE,
                gc_open: NONE,
                buckets: if geo.gc_policy == GcPolicy::Greedy { vec![NONE; spb as usize + 1] } else { Vec::new() },
                min_hint: 0,
                closed_fifo: VecDeque::new(),
                closed: Vec::new(),
                bg_victim: NONE,
                bg_cursor: 0,
                bg_on: false,
                bg_credit: 0.0,
                bg_read_page: NONE,
                bg_rate: geo.gc_bg_copies_per_write,
            });
        }
        let mut ftl = Ftl {
            geo: geo.clone(),
            l2p: big_vec(geo.user_units as usize, NONE),
            p2l: big_vec(geo.physical_units as usize, NONE),
            payload: track_payload.then(|| big_vec(geo.physical_units as usize, 0)),
            blocks,
            pools,
            counters: FtlCounters::default(),
            pending: vec![GcWork::default(); geo.pools],
            scratch: Vec::with_capacity(geo.slots_per_block),
            rng: Rng::new(seed ^ 0x6763_2d63_686f_6963),
            free_blocks_total: geo.blocks as u64,
        };
        for p in 0..geo.pools {
            let b = ftl.pop_free(p);
            ftl.pools[p].host_open = b;
            let b = ftl.pop_free(p);
            ftl.pools[p].gc_open = b;
        }
        ftl
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    pub fn counters(&self) -> FtlCounters {
        self.counters
    }

    /// Heap bytes held by the FTL's state (maps, block records, pools), by capacity.
    pub fn state_bytes(&self) -> usize {
        use std::mem::size_of;
        let pools: usize = self
            .pools
            .iter()
            .map(|p| {
                size_of::<Pool>()
                    + p.free.capacity() * 4
                    + p.buckets.capacity() * 4
                    + p.closed_fifo.capacity() * 4
                    + p.closed.capacity() * 4
            })
            .sum();
        self.l2p.capacity() * 4
            + self.p2l.capacity() * 4
            + self.payload.as_ref().map_or(0, |p| p.capacity() * 8)
            + self.blocks.capacity() * size_of::<Block>()
            + pools
            + self.pending.capacity() * size_of::<GcWork>()
            + self.scratch.capacity() * 8
    }

    /// Free (erased, unallocated) blocks in the whole drive.
    pub fn free_blocks(&self) -> u64 {
        self.free_blocks_total
    }

    /// Pool (plane) holding a physical slot.
    #[inline]
    pub fn pool_of_slot(&self, slot: u32) -> usize {
        (slot as usize / self.geo.slots_per_block) / self.geo.blocks_per_pool
    }

    /// Current physical slot of a logical unit.
    #[inline]
    pub fn lookup(&self, lpn: u64) -> Option<u32> {
        let s = self.l2p[lpn as usize];
        (s != NONE).then_some(s)
    }

    /// Payload stored for `lpn` (only with payload tracking).
    pub fn read_payload(&self, lpn: u64) -> Option<u64> {
        let slot = self.lookup(lpn)?;
        self.payload.as_ref().map(|p| p[slot as usize])
    }

    /// Hints the CPU to fetch the mapping entry of `lpn` (used by workload generators that
    /// know future addresses).
    #[inline]
    pub fn prefetch(&self, lpn: u64) {
        prefetch_ptr(unsafe { self.l2p.as_ptr().add(lpn as usize) });
    }

    /// Second-stage prefetch for a write of `lpn` a few I/Os ahead: reads its (already
    /// prefetched) L2P entry and fetches the P2L entry and block record that invalidating
    /// the old copy will touch.
    #[inline]
    pub fn prefetch_old(&self, lpn: u64) {
        let old = self.l2p[lpn as usize];
        if old != NONE {
            prefetch_ptr(unsafe { self.p2l.as_ptr().add(old as usize) });
            prefetch_ptr(unsafe { self.blocks.as_ptr().add(old as usize / self.geo.slots_per_block) });
        }
    }

    /// Writes logical unit `lpn` into the host open block of `pool`; returns the slot.
    /// May run foreground GC in that pool first (see [`Ftl::take_gc_work`]).
    #[inline]
    pub fn write(&mut self, lpn: u64, pool: usize, payload: u64) -> u32 {
        let old = self.l2p[lpn as usize];
        if old != NONE {
            self.invalidate(old);
        }
        let slot = self.alloc_host_slot(pool);
        self.p2l[slot as usize] = lpn as u32;
        self.l2p[lpn as usize] = slot;
        if let Some(p) = self.payload.as_mut() {
            p[slot as usize] = payload;
        }
        self.counters.host_units += 1;
        if self.geo.gc_bg_start_free_blocks != 0 {
            self.active_gc(pool);
        }
        slot
    }

    /// Active GC after a host write to `pool`: hysteresis between the start and stop
    /// watermarks; while on, relocates `gc_bg_copies_per_write` units per host unit.
    #[inline]
    fn active_gc(&mut self, pool: usize) {
        let free = self.pools[pool].free.len();
        let p = &mut self.pools[pool];
        if !p.bg_on {
            if free >= self.geo.gc_bg_start_free_blocks {
                return;
            }
            p.bg_on = true;
        } else if free >= self.geo.gc_bg_stop_free_blocks && p.bg_victim == NONE {
            p.bg_on = false;
            p.bg_credit = 0.0;
            return;
        }
        p.bg_credit += p.bg_rate;
        while self.pools[pool].bg_credit >= 1.0 {
            if !self.step_active_gc(pool) {
                self.pools[pool].bg_credit = 0.0;
                break;
            }
            self.pools[pool].bg_credit -= 1.0;
        }
    }

    /// Relocates the next valid unit of the active-GC victim (choosing a victim if needed),
    /// erasing the victim when none is left. Returns false if nothing could be done.
    fn step_active_gc(&mut self, pool: usize) -> bool {
        let spb = self.geo.slots_per_block as u32;
        if self.pools[pool].bg_victim == NONE {
            if !self.has_victim(pool)
                || self.pools[pool].free.len() >= self.geo.gc_bg_stop_free_blocks
                || !self.victim_has_invalid(pool)
            {
                return false;
            }
            let v = self.select_victim(pool);
            self.blocks[v as usize].state = BlockState::Victim;
            self.pools[pool].bg_victim = v;
            self.pools[pool].bg_cursor = 0;
            self.pools[pool].bg_read_page = NONE;
            if self.geo.gc_bg_reclaim_ratio > 0.0 {
                // Relocate just enough per host write to reclaim `ratio` units of space.
                let v = self.blocks[v as usize].valid as f64 / spb as f64;
                self.pools[pool].bg_rate = (self.geo.gc_bg_reclaim_ratio * v / (1.0 - v)).min(self.geo.gc_bg_copies_per_write);
            }
            self.counters.gc_runs += 1;
        }
        let victim = self.pools[pool].bg_victim;
        let base = victim * spb;
        let mut cursor = self.pools[pool].bg_cursor;
        while cursor < spb && self.p2l[(base + cursor) as usize] == NONE {
            cursor += 1;
        }
        if cursor == spb {
            self.pools[pool].bg_victim = NONE;
            self.erase(pool, victim);
            return true;
        }
        // Keep the last free block for foreground GC, which must always be able to copy.
        if self.blocks[self.pools[pool].gc_open as usize].write_ptr == spb && self.pools[pool].free.len() <= 1 {
            self.pools[pool].bg_cursor = cursor;
            return false;
        }
        // The next valid units' L2P entries are scattered: fetch them ahead of time.
        for ahead in (cursor + 8..(cursor + 16).min(spb)).step_by(2) {
            let lpn = self.p2l[(base + ahead) as usize];
            if lpn != NONE {
                self.prefetch(lpn as u64);
            }
        }
        let page = cursor / self.geo.units_per_page as u32;
        let first_in_page = self.pools[pool].bg_read_page != page;
        self.pools[pool].bg_read_page = page;
        self.relocate(pool, base + cursor);
        let pending = &mut self.pending[pool];
        pending.units_copied += 1;
        pending.page_reads += u64::from(first_in_page);
        self.counters.gc_units += 1;
        self.pools[pool].bg_cursor = cursor + 1;
        true
    }

    /// Moves the valid unit in `slot` to the GC open block of `pool`.
    #[inline]
    fn relocate(&mut self, pool: usize, slot: u32) {
        let lpn = self.p2l[slot as usize];
        let dst = self.alloc_gc_slot(pool);
        self.p2l[dst as usize] = lpn;
        self.p2l[slot as usize] = NONE;
        self.l2p[lpn as usize] = dst;
        self.blocks[slot as usize / self.geo.slots_per_block].valid -= 1;
        if let Some(p) = self.payload.as_mut() {
            p[dst as usize] = p[slot as usize];
        }
    }

    /// Idle-time GC: collects one whole victim in `pool` if the plane has fewer than
    /// `target_free` free blocks and some block holds invalid data. Returns whether it did;
    /// the work is in [`Ftl::take_gc_work`].
    pub fn collect_for_idle(&mut self, pool: usize, target_free: usize) -> bool {
        if self.pools[pool].free.len() >= target_free {
            return false;
        }
        if self.pools[pool].bg_victim != NONE {
            while self.pools[pool].bg_victim != NONE {
                if !self.step_active_gc(pool) {
                    return false;
                }
            }
            return true;
        }
        if self.has_victim(pool) && self.victim_has_invalid(pool) {
            self.collect_one(pool);
            return true;
        }
        false
    }

    /// Whether collecting in `pool` can gain space: some closed block holds invalid data.
    /// O(1) for greedy; a scan of the closed blocks for the other policies.
    fn victim_has_invalid(&self, pool: usize) -> bool {
        self.peek_victim_valid(pool).is_some_and(|v| (v as usize) < self.geo.slots_per_block)
    }

    /// Free blocks in one plane.
    pub fn pool_free_blocks(&self, pool: usize) -> usize {
        self.pools[pool].free.len()
    }

    /// Unmaps `lpn` (TRIM / deallocate). Returns whether it was mapped.
    #[inline]
    pub fn trim(&mut self, lpn: u64) -> bool {
        let old = self.l2p[lpn as usize];
        if old == NONE {
            return false;
        }
        self.invalidate(old);
        self.l2p[lpn as usize] = NONE;
        self.counters.trimmed_units += 1;
        true
    }

    /// GC work done in `pool` since the last call, and resets it.
    #[inline]
    pub fn take_gc_work(&mut self, pool: usize) -> GcWork {
        std::mem::take(&mut self.pending[pool])
    }

    /// Erase counts of all blocks.
    pub fn erase_counts(&self) -> impl Iterator<Item = u32> + '_ {
        self.blocks.iter().map(|b| b.erase_count)
    }

    #[inline]
    fn invalidate(&mut self, slot: u32) {
        let spb = self.geo.slots_per_block;
        let b = slot as usize / spb;
        self.p2l[slot as usize] = NONE;
        let blk = &mut self.blocks[b];
        debug_assert!(blk.valid > 0);
        let old_valid = blk.valid;
        blk.valid -= 1;
        if blk.state == BlockState::Closed {
            match self.geo.gc_policy {
                GcPolicy::Greedy => {
                    let pool = b / self.geo.blocks_per_pool;
                    self.bucket_remove(pool, b as u32, old_valid as usize);
                    self.bucket_push(pool, b as u32, old_valid as usize - 1);
                }
                GcPolicy::CostBenefit => blk.mtime = self.counters.host_units,
                _ => {}
            }
        }
    }

    #[inline]
    fn alloc_host_slot(&mut self, pool: usize) -> u32 {
        let spb = self.geo.slots_per_block as u32;
        let mut b = self.pools[pool].host_open;
        if self.blocks[b as usize].write_ptr == spb {
            self.close_block(pool, b);
            // Keep gc_fg_free_blocks free after taking one (GC always has a block to copy
            // into); once started, foreground GC reclaims up to its target.
            if self.pools[pool].free.len() <= self.geo.gc_fg_free_blocks {
                while self.pools[pool].free.len() <= self.geo.gc_fg_target_free_blocks && self.has_victim(pool) {
                    // Beyond the minimum reserve, stop the batch once nothing can be gained.
                    if self.pools[pool].free.len() > self.geo.gc_fg_free_blocks && !self.victim_has_invalid(pool) {
                        break;
                    }
                    self.collect_one(pool);
                    self.pending[pool].foreground_victims += 1;
                }
            }
            b = self.pop_free(pool);
            self.pools[pool].host_open = b;
        }
        let blk = &mut self.blocks[b as usize];
        let slot = b * spb + blk.write_ptr;
        blk.write_ptr += 1;
        blk.valid += 1;
        slot
    }

    fn alloc_gc_slot(&mut self, pool: usize) -> u32 {
        let spb = self.geo.slots_per_block as u32;
        let mut b = self.pools[pool].gc_open;
        if self.blocks[b as usize].write_ptr == spb {
            self.close_block(pool, b);
            b = self.pop_free(pool);
            self.pools[pool].gc_open = b;
        }
        let blk = &mut self.blocks[b as usize];
        let slot = b * spb + blk.write_ptr;
        blk.write_ptr += 1;
        blk.valid += 1;
        slot
    }

    fn pop_free(&mut self, pool: usize) -> u32 {
        let b = self.pools[pool].free.pop_front().unwrap_or_else(|| {
            panic!("plane {pool} has no free block left: the profile's spare area is too small for this workload")
        });
        self.free_blocks_total -= 1;
        let blk = &mut self.blocks[b as usize];
        debug_assert_eq!(blk.state, BlockState::Free);
        blk.state = BlockState::Open;
        b
    }

    fn close_block(&mut self, pool: usize, b: u32) {
        self.blocks[b as usize].state = BlockState::Closed;
        match self.geo.gc_policy {
            GcPolicy::Greedy => {
                let v = self.blocks[b as usize].valid as usize;
                self.bucket_push(pool, b, v);
            }
            GcPolicy::Fifo => self.pools[pool].closed_fifo.push_back(b),
            GcPolicy::CostBenefit | GcPolicy::DChoices(_) => {
                self.blocks[b as usize].mtime = self.counters.host_units;
                self.blocks[b as usize].pos = self.pools[pool].closed.len() as u32;
                self.pools[pool].closed.push(b);
            }
        }
    }

    fn has_victim(&self, pool: usize) -> bool {
        let p = &self.pools[pool];
        match self.geo.gc_policy {
            GcPolicy::Greedy => p.buckets.iter().skip(p.min_hint).any(|&h| h != NONE),
            GcPolicy::Fifo => !p.closed_fifo.is_empty(),
            GcPolicy::CostBenefit | GcPolicy::DChoices(_) => !p.closed.is_empty(),
        }
    }

    /// Valid units of the block greedy would pick (the emptiest closed block); None if no
    /// closed block. For other policies, the emptiest closed block too (a cheap scan).
    fn peek_victim_valid(&self, pool: usize) -> Option<u32> {
        let p = &self.pools[pool];
        match self.geo.gc_policy {
            GcPolicy::Greedy => p.buckets.iter().enumerate().skip(p.min_hint).find(|(_, &h)| h != NONE).map(|(v, _)| v as u32),
            GcPolicy::Fifo => p.closed_fifo.iter().map(|&b| self.blocks[b as usize].valid).min(),
            _ => p.closed.iter().map(|&b| self.blocks[b as usize].valid).min(),
        }
    }

    fn closed_remove(&mut self, pool: usize, b: u32) {
        let i = self.blocks[b as usize].pos as usize;
        let closed = &mut self.pools[pool].closed;
        closed.swap_remove(i);
        if i < closed.len() {
            let moved = closed[i];
            self.blocks[moved as usize].pos = i as u32;
        }
        self.blocks[b as usize].pos = NONE;
    }

    fn select_victim(&mut self, pool: usize) -> u32 {
        match self.geo.gc_policy {
            GcPolicy::Greedy => {
                let p = &mut self.pools[pool];
                let mut v = p.min_hint;
                while v < p.buckets.len() && p.buckets[v] == NONE {
                    v += 1;
                }
                assert!(v < p.buckets.len(), "plane {pool}: no closed block to collect");
                p.min_hint = v;
                let b = p.buckets[v];
                self.bucket_remove(pool, b, v);
                b
            }
            GcPolicy::Fifo => self.pools[pool].closed_fifo.pop_front().expect("no closed block to collect"),
            GcPolicy::CostBenefit => {
                let spb = self.geo.slots_per_block as f64;
                let now = self.counters.host_units;
                let mut best = (f64::NEG_INFINITY, NONE);
                for &b in &self.pools[pool].closed {
                    let blk = &self.blocks[b as usize];
                    let u = blk.valid as f64 / spb;
                    let age = (now - blk.mtime) as f64 + 1.0;
                    let score = if u == 0.0 { f64::INFINITY } else { (1.0 - u) * age / (2.0 * u) };
                    if score > best.0 {
                        best = (score, b);
                    }
                }
                assert!(best.1 != NONE, "plane {pool}: no closed block to collect");
                self.closed_remove(pool, best.1);
                best.1
            }
            GcPolicy::DChoices(d) => {
                let n = self.pools[pool].closed.len() as u64;
                assert!(n > 0, "plane {pool}: no closed block to collect");
                let mut best = NONE;
                for _ in 0..d {
                    let b = self.pools[pool].closed[self.rng.below(n) as usize];
                    if best == NONE || self.blocks[b as usize].valid < self.blocks[best as usize].valid {
                        best = b;
                    }
                }
                self.closed_remove(pool, best);
                best
            }
        }
    }

    /// GC of one whole victim in `pool`: relocate its valid units, erase it.
    fn collect_one(&mut self, pool: usize) {
        let victim = self.select_victim(pool);
        let spb = self.geo.slots_per_block;
        let upp = self.geo.units_per_page;
        // Greedy picked the emptiest block: if even that one is full, nothing can be freed.
        // (Other policies may legitimately relocate a full block and move on.)
        if self.geo.gc_policy == GcPolicy::Greedy && self.blocks[victim as usize].valid as usize == spb {
            panic!(
                "plane {pool}: every closed block is fully valid, GC cannot free space; \
                 the profile's spare area is too small for this workload"
            );
        }
        let base = victim as usize * spb;
        let mut work = GcWork { erases: 1, ..GcWork::default() };
        // Pass 1: the victim's valid units (a sequential scan of its P2L range).
        let mut valid = std::mem::take(&mut self.scratch);
        valid.clear();
        for page in (base..base + spb).step_by(upp) {
            let before = valid.len();
            for s in page..page + upp {
                let lpn = self.p2l[s];
                if lpn != NONE {
                    valid.push((s as u32, lpn));
                }
            }
            work.page_reads += u64::from(valid.len() > before);
        }
        // Pass 2: relocate them. Their L2P entries are scattered over the whole table, so
        // fetch them a few copies ahead to overlap the cache misses.
        const AHEAD: usize = 16;
        for &(_, lpn) in valid.iter().take(AHEAD) {
            self.prefetch(lpn as u64);
        }
        for i in 0..valid.len() {
            if let Some(&(_, lpn)) = valid.get(i + AHEAD) {
                self.prefetch(lpn as u64);
            }
            self.relocate(pool, valid[i].0);
        }
        work.units_copied = valid.len() as u64;
        self.scratch = valid;
        self.erase(pool, victim);
        self.counters.gc_units += work.units_copied;
        self.counters.gc_runs += 1;
        let pending = &mut self.pending[pool];
        pending.page_reads += work.page_reads;
        pending.units_copied += work.units_copied;
    }

    /// Erases an emptied victim and returns it to the free list.
    fn erase(&mut self, pool: usize, victim: u32) {
        let blk = &mut self.blocks[victim as usize];
        debug_assert_eq!(blk.valid, 0);
        blk.valid = 0;
        blk.write_ptr = 0;
        blk.erase_count += 1;
        blk.state = BlockState::Free;
        self.pools[pool].free.push_back(victim);
        self.free_blocks_total += 1;
        self.counters.erases += 1;
        self.pending[pool].erases += 1;
    }

    #[inline]
    fn bucket_push(&mut self, pool: usize, b: u32, v: usize) {
        let p = &mut self.pools[pool];
        let head = p.buckets[v];
        self.blocks[b as usize].prev = NONE;
        self.blocks[b as usize].next = head;
        if head != NONE {
            self.blocks[head as usize].prev = b;
        }
        p.buckets[v] = b;
        if v < p.min_hint {
            p.min_hint = v;
        }
    }

    #[inline]
    fn bucket_remove(&mut self, pool: usize, b: u32, v: usize) {
        let (prev, next) = (self.blocks[b as usize].prev, self.blocks[b as usize].next);
        if prev != NONE {
            self.blocks[prev as usize].next = next;
        } else {
            self.pools[pool].buckets[v] = next;
        }
        if next != NONE {
            self.blocks[next as usize].prev = prev;
        }
    }

    /// Checks every invariant of the mapping (O(drive size); for tests):
    /// L2P and P2L are inverse, valid counts equal the valid slots in each block, slots at or
    /// past a block's write pointer are invalid, free-block accounting and GC structures
    /// agree with block states.
    pub fn check_invariants(&self) -> Result<(), String> {
        let spb = self.geo.slots_per_block;
        for (lpn, &slot) in self.l2p.iter().enumerate() {
            if slot != NONE && self.p2l[slot as usize] != lpn as u32 {
                return Err(format!("L2P[{lpn}] = {slot} but P2L[{slot}] = {}", self.p2l[slot as usize]));
            }
        }
        let mut free_total = 0u64;
        for (b, blk) in self.blocks.iter().enumerate() {
            let slots = &self.p2l[b * spb..(b + 1) * spb];
            let mut valid = 0;
            for (off, &lpn) in slots.iter().enumerate() {
                if lpn == NONE {
                    continue;
                }
                valid += 1;
                if off as u32 >= blk.write_ptr {
                    return Err(format!("block {b}: slot {off} valid beyond write pointer {}", blk.write_ptr));
                }
                if self.l2p[lpn as usize] != (b * spb + off) as u32 {
                    return Err(format!("P2L[{}] = {lpn} but L2P[{lpn}] = {}", b * spb + off, self.l2p[lpn as usize]));
                }
            }
            if valid != blk.valid {
                return Err(format!("block {b}: valid count {} but {valid} valid slots", blk.valid));
            }
            if blk.state == BlockState::Free {
                free_total += 1;
                if blk.write_ptr != 0 {
                    return Err(format!("free block {b} has write pointer {}", blk.write_ptr));
                }
            }
        }
        if free_total != self.free_blocks_total {
            return Err(format!("free block count {} but {free_total} blocks are free", self.free_blocks_total));
        }
        for (p, pool) in self.pools.iter().enumerate() {
            let closed = (0..self.geo.blocks_per_pool)
                .map(|i| p * self.geo.blocks_per_pool + i)
                .filter(|&b| self.blocks[b].state == BlockState::Closed)
                .count();
            let listed = match self.geo.gc_policy {
                GcPolicy::Fifo => pool.closed_fifo.len(),
                GcPolicy::CostBenefit | GcPolicy::DChoices(_) => {
                    for (i, &b) in pool.closed.iter().enumerate() {
                        if self.blocks[b as usize].pos as usize != i || self.blocks[b as usize].state != BlockState::Closed {
                            return Err(format!("plane {p}: closed list entry {i} (block {b}) out of sync"));
                        }
                    }
                    pool.closed.len()
                }
                GcPolicy::Greedy => {
                    let mut n = 0;
                    for (v, &head) in pool.buckets.iter().enumerate() {
                        let mut b = head;
                        while b != NONE {
                            if self.blocks[b as usize].valid as usize != v {
                                return Err(format!("block {b} in greedy bucket {v} has {} valid", self.blocks[b as usize].valid));
                            }
                            if v < pool.min_hint {
                                return Err(format!("plane {p}: block in bucket {v} below min hint {}", pool.min_hint));
                            }
                            n += 1;
                            b = self.blocks[b as usize].next;
                        }
                    }
                    n
                }
            };
            if listed != closed {
                return Err(format!("plane {p}: {closed} closed blocks but {listed} in the GC structure"));
            }
            let victims = (0..self.geo.blocks_per_pool)
                .filter(|&i| self.blocks[p * self.geo.blocks_per_pool + i].state == BlockState::Victim)
                .count();
            if victims != usize::from(pool.bg_victim != NONE) {
                return Err(format!("plane {p}: {victims} blocks in victim state, active-GC victim {}", pool.bg_victim));
            }
        }
        Ok(())
    }
}
