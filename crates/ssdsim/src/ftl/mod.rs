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
//! - idle: [`Ftl::collect_for_idle`], called by the timing model when the host is idle;
//!   with `gc_idle_sort_regions`, [`Ftl::sort_for_idle`] instead, which copies data into
//!   per-LBA-region blocks so that idle time also undoes the LBA mixing GC causes.
//!
//! The FTL only counts work (page reads, unit copies, erases); [`crate::device`] turns the
//! counts into die time. State is compact: 4 bytes per logical unit (L2P), 4 bytes per
//! physical slot (P2L) plus one valid bit, and a few words per block.
//!
//! Speed: in steady state each host write costs ~WA random L2P cache misses (one for the
//! host's own entry, one per GC relocation), so the code is organised around memory: GC
//! copies a victim in runs (consecutive destination slots, L2P entries prefetched well
//! ahead), invalidation flips a bit in a cache-resident bitmap instead of writing a random
//! P2L entry, and the per-block records touched on every write are 16 bytes. Every such
//! change keeps the simulated results bit-identical (`tests/golden.rs`).
//!
//! One file per mechanism: this one holds the mapping, blocks and pools; `foreground`,
//! `active`, `idle` and `idle_sort` the GC triggers; `victim` the victim policies;
//! `companions` compressed data's extra slots; `invariants` the checker; `bits` the bitmaps
//! and fast division the hot paths use.

use std::collections::VecDeque;

use crate::config::{ConfigError, GcPolicy, Geometry};
use crate::mem::{big_vec, big_vec_pair};
use crate::rng::Rng;

mod active;
pub(crate) mod bits;
mod companions;
mod copy;
mod fdp;
mod foreground;
mod idle;
mod idle_sort;
mod invariants;
mod policy;
mod zoned;

pub(crate) use bits::FastDiv;
pub use bits::cpu_streams_map;
use bits::{fence_streamed, prefetch_ptr, store_streamed, two_blocks_mut, ValidBits};
use policy::VictimPolicy;
pub use fdp::HandleCounters;
#[cfg(feature = "test-hooks")]
pub use invariants::Corruption;

/// Region (0..regions) of logical unit `lpn` when `user_units` are cut into `regions` equal parts.
#[inline]
fn region_of(lpn: u32, regions: u64, user_units: u64) -> usize {
    (lpn as u64 * regions / user_units) as usize
}

/// Marks an unmapped logical unit in L2P (and a never-written slot in P2L; whether a slot
/// holds current data is its valid bit).
pub const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockState {
    Free,
    Open,
    Closed,
    /// Being collected incrementally by active GC.
    Victim,
}

/// The part of a block's record that every host write touches (the old copy's block and,
/// for greedy GC, its bucket neighbours): 16 bytes, so that even a 256 GB drive's 65,536
/// records (1 MiB) stay in the L2 cache. The rest is in [`BlockMeta`].
#[derive(Clone, Debug)]
struct Block {
    /// Valid units in the block.
    valid: u32,
    /// Greedy bucket links (closed blocks only), NONE-terminated.
    prev: u32,
    next: u32,
    state: BlockState,
}

/// The rest of a block's record: used by open blocks, erases and the non-greedy policies.
#[derive(Clone, Debug)]
struct BlockMeta {
    /// Next slot to program (0..=slots_per_block).
    write_ptr: u32,
    erase_count: u32,
    /// Cost-benefit / d-choices: index in the pool's closed list.
    pos: u32,
    /// Cost-benefit: its plane's host-write clock [host units written to the plane] when the
    /// block was closed: the age of its youngest data, Rosenblum & Ousterhout's segment age.
    /// (The drive-wide clock would make a plane's blocks look older while the plane takes
    /// less data than others, as when its die collects.) (Counting from the
    /// block's last invalidation instead makes the emptiest blocks look youngest: on uniform
    /// traffic the policy then cleans nearly in age order, like FIFO.)
    mtime: u64,
    /// Idle sorting: the block holds data of one LBA region (written by a sort stream, or
    /// found to be LBA-local), so idle GC leaves it alone unless it holds invalid data.
    sorted: bool,
    /// FDP: the reclaim unit handle whose data the block holds ([`fdp::SHARED`]: several).
    handle: u16,
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
    /// Active GC: victim slot offset before which every valid unit's L2P entry has been
    /// prefetched.
    bg_fetched: u32,
    /// Active GC: relocations owed per host unit written (fixed, or set per victim).
    bg_rate: f64,
    /// Host units written to the plane: the clock of its blocks' age (cost-benefit).
    host_units: u64,
}

/// How a run of active-GC steps ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BgStop {
    /// Less than one unit of credit left.
    Credit,
    /// The victim was emptied and erased (the run's last step).
    VictimDone,
    /// No step possible: the last free block is reserved for foreground GC.
    Blocked,
}

/// Units copied and pages read by active GC during one call.
#[derive(Clone, Copy, Debug, Default)]
struct ActiveWork {
    copied: u64,
    page_reads: u64,
}

/// Active GC: how far ahead (in victim slots) L2P entries are prefetched (at least; a word of
/// valid bits at a time). At 256 GB the misses already fill the core's miss buffers: 16 ran
/// ~4 % faster than 40, and 96 ~5 % slower.
const BG_AHEAD: usize = 16;

/// Where a run of active-GC steps is in its victim ([`Ftl::active_run`]): the next slot to
/// examine, the page last read (NONE before the first), the slot offset before which every
/// valid unit's L2P entry has been prefetched, and the copy credit left.
struct RunState {
    cursor: usize,
    read_page: u32,
    fetched: usize,
    credit: f64,
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
    /// Blocks GC moved to another plane ([`Ftl::spill`]): their plane held more than its
    /// share of data and could free nothing itself.
    pub spilled_blocks: u64,
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
    /// Slot -> LPN, meaningful where `valid` has the slot's bit set (stale elsewhere).
    p2l: Vec<u32>,
    valid: ValidBits,
    /// Optional per-slot payload (a version tag), moved by GC: lets tests check that every
    /// read returns the last data written.
    payload: Option<Vec<u64>>,
    blocks: Vec<Block>,
    meta: Vec<BlockMeta>,
    pools: Vec<Pool>,
    counters: FtlCounters,
    /// Logical units mapped (holding data), companion units included.
    mapped: u64,
    /// GC work per pool since the last [`Ftl::take_gc_work`].
    pending: Vec<GcWork>,
    /// Scratch lists of a victim's valid units: their LPNs and (payload tracking only) slots.
    scratch: Vec<u32>,
    scratch_slots: Vec<u32>,
    /// slot -> block, block -> pool and slot offset -> page divisions.
    div_spb: FastDiv,
    div_bpp: FastDiv,
    div_upp: FastDiv,
    /// If blocks are whole 64-bit words of valid bits and pages a power of two of units: the
    /// bit of each page's first unit in a word (GC counts a victim's pages a word at a time).
    page_lsbs: Option<u64>,
    /// Random choices of the d-choices policy.
    rng: Rng,
    free_blocks_total: u64,
    /// Idle sorting: the open block of each LBA region (NONE if none), and per plane the
    /// next block (offset in the plane) to examine for fully valid blocks that mix regions.
    sort_open: Vec<u32>,
    sort_scan: Vec<u32>,
    /// Idle sorting: the plane each region takes its next block from.
    sort_next_pool: Vec<u32>,
    /// Compressed data ([`Ftl::enable_companions`]): at most this many companion slots per
    /// logical unit (0: none), mapped as hidden logical units after the user's.
    companions: u64,
    /// Set when a plane ran out of room ([`Ftl::check_space`]); the drive then takes no more
    /// data and idle GC stops.
    out_of_space: Option<OutOfSpace>,
    /// Flexible Data Placement: the reclaim unit handles' blocks and counters.
    fdp: fdp::Fdp,
    /// Zoned namespace: each zone's erase blocks (NONE where not yet written), zone by zone
    /// (`ZoneGeometry::blocks` each); empty until the first zoned write.
    zone_blocks: Vec<u32>,
    /// Active GC writes the new slots of the units it moves into L2P with [`store_streamed`]
    /// (the table is at least [`STREAM_MAP_MIN_BYTES`]); otherwise it prefetches their entries.
    stream_map: bool,
}

/// Smallest L2P table [bytes] whose active-GC updates are streamed ([`store_streamed`]) rather
/// than prefetched. An active-GC move, one or two per host write, writes the L2P entry of a
/// random unit that nothing reads soon; a prefetch of it holds one of the core's few miss
/// buffers for a full memory round trip beside the host's own misses, a streamed store does
/// not. Once the table no longer sits in the caches that pays (4 KiB random writes with the
/// default profile's GC, both ways alternated in one process on a 2-core EPYC with 32 MiB of
/// L3: 1.29x at a 5.4 MB table, 1.45x at 256 GB; on an Intel core it never pays,
/// [`cpu_streams_map`]); a table that does sit there loses the lines
/// it would hit (0.80x at 3.4 MB, 0.76x at 1.9 MB). Foreground GC keeps its prefetch: it
/// knows a whole victim's units up front and fetches 64 ahead, which overlaps more misses
/// than the write-combining buffers drain streamed stores (4 KiB random writes with
/// foreground GC only, alternated the same way: streamed 0.89x at 64 GB, 0.96x at 256 GB).
const STREAM_MAP_MIN_BYTES: usize = 4 << 20;

/// A plane that needed a block for host data while at or below its foreground-GC reserve
/// (`gc_fg_free_blocks`) and had no closed block holding invalid data: GC could not free
/// anything. See [`Ftl::check_space`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutOfSpace {
    pub plane: usize,
    pub free_blocks: usize,
    /// Valid 4 KiB units the plane held (companion slots of compressed data included).
    pub valid_units: u64,
    /// The most valid units a plane can hold and still always find a block with invalid
    /// data at its reserve: (blocks_per_plane − gc_fg_free_blocks − 2) × slots per block − 1.
    pub plane_limit_units: u64,
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
            Block { valid: 0, prev: NONE, next: NONE, state: BlockState::Free };
            geo.blocks
        ];
        let meta = vec![BlockMeta { write_ptr: 0, erase_count: 0, pos: NONE, mtime: 0, sorted: false, handle: 0 }; geo.blocks];
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
                bg_fetched: 0,
                bg_rate: geo.gc_bg_copies_per_write,
                host_units: 0,
            });
        }
        let (l2p, p2l) = big_vec_pair(geo.user_units as usize, geo.physical_units as usize, NONE);
        let mut ftl = Ftl {
            geo: geo.clone(),
            l2p,
            p2l,
            valid: ValidBits::new(geo.physical_units as usize),
            payload: track_payload.then(|| big_vec(geo.physical_units as usize, 0)),
            blocks,
            meta,
            pools,
            counters: FtlCounters::default(),
            mapped: 0,
            pending: vec![GcWork::default(); geo.pools],
            scratch: Vec::with_capacity(geo.slots_per_block),
            scratch_slots: Vec::new(),
            div_spb: FastDiv::new(geo.slots_per_block),
            div_bpp: FastDiv::new(geo.blocks_per_pool),
            div_upp: FastDiv::new(geo.units_per_page),
            page_lsbs: (geo.slots_per_block.is_multiple_of(64) && geo.units_per_page.is_power_of_two() && geo.units_per_page <= 64)
                .then(|| (0..64).step_by(geo.units_per_page).fold(0u64, |m, b| m | 1 << b)),
            rng: Rng::new(seed ^ 0x6763_2d63_686f_6963),
            free_blocks_total: geo.blocks as u64,
            sort_open: vec![NONE; geo.gc_idle_sort_regions],
            sort_scan: vec![0; if geo.gc_idle_sort_regions != 0 { geo.pools } else { 0 }],
            sort_next_pool: (0..geo.gc_idle_sort_regions).map(|r| (r * geo.pools / geo.gc_idle_sort_regions) as u32).collect(),
            companions: 0,
            out_of_space: None,
            fdp: fdp::Fdp::default(),
            zone_blocks: Vec::new(),
            stream_map: false,
        };
        ftl.stream_map = ftl.streams_map();
        for p in 0..geo.pools {
            let b = ftl.pop_free(p);
            ftl.pools[p].host_open = b;
            let b = ftl.pop_free(p);
            ftl.pools[p].gc_open = b;
        }
        ftl.init_fdp();
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
            + self.valid.capacity_bytes()
            + self.payload.as_ref().map_or(0, |p| p.capacity() * 8)
            + self.blocks.capacity() * size_of::<Block>()
            + self.meta.capacity() * size_of::<BlockMeta>()
            + pools
            + self.pending.capacity() * size_of::<GcWork>()
            + self.scratch.capacity() * 4
            + self.scratch_slots.capacity() * 4
            + self.sort_open.capacity() * 4
            + self.sort_scan.capacity() * 4
            + self.sort_next_pool.capacity() * 4
            + self.fdp.state_bytes()
            + self.zone_blocks.capacity() * 4
    }

    /// Free (erased, unallocated) blocks in the whole drive.
    pub fn free_blocks(&self) -> u64 {
        self.free_blocks_total
    }

    /// Whether active GC should stream its L2P updates: the table is at least
    /// [`STREAM_MAP_MIN_BYTES`], on a CPU that gains from it ([`cpu_streams_map`]).
    fn streams_map(&self) -> bool {
        self.l2p.len() * 4 >= STREAM_MAP_MIN_BYTES && cpu_streams_map()
    }

    /// Whether active GC streams its L2P updates ([`STREAM_MAP_MIN_BYTES`]).
    pub fn map_streamed(&self) -> bool {
        self.stream_map
    }

    /// Makes active GC stream its L2P updates (or not) whatever the table's size, for tests that
    /// compare both ways on a small drive (streaming is x86-64 only).
    #[doc(hidden)]
    pub fn set_map_streamed(&mut self, on: bool) {
        self.stream_map = on && cfg!(target_arch = "x86_64");
    }

    /// Orders active GC's streamed L2P stores, if it streams, before this thread's later
    /// stores; for the simulation to call before it returns, so that a thread it is handed to
    /// sees a consistent map. (With no streamed store pending the fence costs a few cycles.)
    #[inline]
    pub fn fence(&self) {
        if self.stream_map {
            fence_streamed();
        }
    }

    /// Pool (plane) holding a physical slot.
    #[inline]
    pub fn pool_of_slot(&self, slot: u32) -> usize {
        self.div_bpp.div(self.div_spb.div(slot)) as usize
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
        prefetch_ptr(self.l2p.as_ptr().wrapping_add(lpn as usize));
    }

    /// Second-stage prefetch for a write of `lpn` a few I/Os ahead: reads its (already
    /// prefetched) L2P entry and fetches the valid-bit word and block record that
    /// invalidating the old copy will touch.
    #[inline]
    pub fn prefetch_old(&self, lpn: u64) {
        let old = self.l2p[lpn as usize];
        if old != NONE {
            prefetch_ptr(self.valid.word_ptr(old as usize));
            prefetch_ptr(self.blocks.as_ptr().wrapping_add(self.div_spb.div(old) as usize));
        }
    }

    /// [`Ftl::prefetch_old`] for the units `lpn..lpn + n` of a multi-unit write or TRIM (their
    /// L2P entries already prefetched): fetches each valid-bit word and block record once
    /// (the old copies of a long command mostly share them).
    #[inline]
    pub fn prefetch_old_range(&self, lpn: u64, n: u64) {
        let mut last_word = usize::MAX;
        for &old in &self.l2p[lpn as usize..(lpn + n) as usize] {
            let word = old as usize >> 6;
            if old != NONE && word != last_word {
                last_word = word;
                prefetch_ptr(self.valid.word_ptr(old as usize));
                prefetch_ptr(self.blocks.as_ptr().wrapping_add(self.div_spb.div(old) as usize));
            }
        }
    }

    /// Third-stage prefetch for a write or TRIM starting at `lpn` a few I/Os ahead (its
    /// block record already prefetched): with greedy GC, fetches what moving the old copy's
    /// block one bucket down will touch: its bucket neighbours' records and the head of the
    /// bucket below. (The first unit's only: a long command's old copies mostly share a
    /// block, whose later moves touch what the first one brought in.)
    #[inline]
    pub fn prefetch_old_links(&self, lpn: u64) {
        let old = self.l2p[lpn as usize];
        if old == NONE || self.geo.gc_policy != GcPolicy::Greedy {
            return;
        }
        let b = self.div_spb.div(old);
        let blk = &self.blocks[b as usize];
        if blk.state == BlockState::Closed {
            let blocks = self.blocks.as_ptr();
            prefetch_ptr(blocks.wrapping_add(blk.prev as usize));
            prefetch_ptr(blocks.wrapping_add(blk.next as usize));
            let pool = &self.pools[self.div_bpp.div(b) as usize];
            prefetch_ptr(pool.buckets.as_ptr().wrapping_add((blk.valid as usize).wrapping_sub(1)));
        }
    }

    /// Writes logical unit `lpn` into the host open block of `pool`; returns the slot.
    /// May run foreground GC in that pool first (see [`Ftl::take_gc_work`]).
    /// Once a plane has run out of room ([`Ftl::check_space`]) a write that needs a new
    /// block is dropped (`lpn` left unmapped) and returns [`NONE`].
    #[inline]
    pub fn write(&mut self, lpn: u64, pool: usize, payload: u64) -> u32 {
        let (slot, active) = self.write_inner(lpn, pool, payload);
        let pending = &mut self.pending[pool];
        pending.units_copied += active.copied;
        pending.page_reads += active.page_reads;
        slot
    }

    /// [`Ftl::write`] followed by [`Ftl::take_gc_work`] on `pool`: the timing model's path.
    ///
    /// The active GC's copies and page reads of this write come back in registers rather
    /// than through `pending`: adding them to `pending` and reading it back at once would make
    /// the (wide) load wait for every earlier store to reach the cache — a failed store
    /// forward that drains the store buffer, full of cache-missing L2P updates, on every write.
    #[doc(hidden)]
    #[inline(always)]
    pub fn write_and_take_gc_work(&mut self, lpn: u64, pool: usize, payload: u64) -> GcWork {
        let (_, active) = self.write_inner(lpn, pool, payload);
        let mut work = self.take_gc_work(pool);
        work.units_copied += active.copied;
        work.page_reads += active.page_reads;
        work
    }

    /// [`Ftl::write_and_take_gc_work`] of units `lpn..lpn + k` in turn, all to `pool`, with
    /// payloads from `payload` on, done at once, if that gives the same state: the units fit
    /// in the plane's open host block (no block is taken, so no foreground GC), active GC is
    /// off or has not started in the plane (so each write would leave it so: the plane's
    /// free blocks do not change), and no GC work waits to be taken (so each write's would
    /// be none). Returns false otherwise, having changed nothing but which of the plane's open
    /// host blocks is its `host_open` (the FDP handle in use's, as any write to it takes).
    /// Sequential writes fill a page of a plane this way, several units per call.
    #[inline(always)]
    pub(crate) fn write_run(&mut self, lpn: u64, k: u64, pool: usize, payload: u64) -> bool {
        self.fdp_host_pool(pool);
        let p = &self.pools[pool];
        let b = p.host_open as usize;
        let spb = self.geo.slots_per_block;
        let wp = self.meta[b].write_ptr as usize;
        let gc_waits = self.geo.gc_bg_start_free_blocks != 0 && (p.bg_on || p.free.len() < self.geo.gc_bg_start_free_blocks);
        if wp + k as usize > spb || gc_waits || self.pending[pool] != GcWork::default() {
            return false;
        }
        let (lpn, k) = (lpn as usize, k as usize);
        // The invalidations commute with the allocations: an old copy in the open block only
        // lowers its valid count, and closed blocks are not touched by allocating.
        for u in lpn..lpn + k {
            self.drop_old_copy(u);
        }
        let first = b * spb + wp;
        self.meta[b].write_ptr += k as u32;
        self.blocks[b].valid += k as u32;
        prefetch_ptr(self.p2l.as_ptr().wrapping_add(first + 128));
        for (j, (p2l, l2p)) in self.p2l[first..first + k].iter_mut().zip(&mut self.l2p[lpn..lpn + k]).enumerate() {
            *p2l = (lpn + j) as u32;
            *l2p = (first + j) as u32;
        }
        self.valid.fill(first, first + k, true);
        if let Some(p) = self.payload.as_mut() {
            for (j, slot) in p[first..first + k].iter_mut().enumerate() {
                *slot = payload + j as u64;
            }
        }
        self.counters.host_units += k as u64;
        self.pools[pool].host_units += k as u64;
        self.fdp_host(lpn, k);
        true
    }

    /// Before unit `lpn` is written anew: invalidates its old copy, or counts it as newly
    /// mapped.
    #[inline(always)]
    fn drop_old_copy(&mut self, lpn: usize) {
        let old = self.l2p[lpn];
        if old != NONE {
            self.invalidate(old);
        } else {
            self.mapped += 1;
        }
    }

    #[inline(always)]
    fn write_inner(&mut self, lpn: u64, pool: usize, payload: u64) -> (u32, ActiveWork) {
        self.drop_old_copy(lpn as usize);
        let slot = self.alloc_host_slot(pool);
        if slot == NONE {
            // Out of space: the data is dropped (the simulation reports the error).
            self.l2p[lpn as usize] = NONE;
            self.mapped -= 1;
            return (NONE, ActiveWork::default());
        }
        self.map_host_unit(lpn, slot, pool, payload);
        self.fdp_host(lpn as usize, 1);
        let active = if self.geo.gc_bg_start_free_blocks != 0 { self.active_gc(pool) } else { ActiveWork::default() };
        (slot, active)
    }

    /// Maps host unit `lpn` (its old copy dropped) to `slot` of plane `pool`, and counts it.
    #[inline(always)]
    fn map_host_unit(&mut self, lpn: u64, slot: u32, pool: usize, payload: u64) {
        self.p2l[slot as usize] = lpn as u32;
        // A plane's host block takes its P2L entries in order, but the planes' streams are
        // too many for the hardware prefetcher: fetch the line 8 ahead (a sequential fill
        // runs 7 % faster).
        prefetch_ptr(self.p2l.as_ptr().wrapping_add(slot as usize + 128));
        self.valid.set(slot as usize);
        self.l2p[lpn as usize] = slot;
        if let Some(p) = self.payload.as_mut() {
            p[slot as usize] = payload;
        }
        self.counters.host_units += 1;
        self.pools[pool].host_units += 1;
    }

    /// Free blocks in one plane.
    pub fn pool_free_blocks(&self, pool: usize) -> usize {
        self.pools[pool].free.len()
    }

    /// Unmaps `lpn` (TRIM / deallocate). Returns whether it was mapped.
    #[inline]
    pub fn trim(&mut self, lpn: u64) -> bool {
        let mapped = self.unmap(lpn);
        self.counters.trimmed_units += mapped as u64;
        mapped
    }

    /// Unmaps `lpn` without counting a TRIM (a companion slot its owner no longer needs).
    #[inline]
    pub(crate) fn unmap(&mut self, lpn: u64) -> bool {
        let old = self.l2p[lpn as usize];
        if old == NONE {
            return false;
        }
        self.invalidate(old);
        self.l2p[lpn as usize] = NONE;
        self.mapped -= 1;
        true
    }

    /// Logical units holding data (companion units of compressed data included).
    #[inline]
    pub fn mapped_units(&self) -> u64 {
        self.mapped
    }

    /// GC work done in `pool` since the last call, and resets it.
    #[inline]
    pub fn take_gc_work(&mut self, pool: usize) -> GcWork {
        std::mem::take(&mut self.pending[pool])
    }

    /// Erase counts of all blocks.
    pub fn erase_counts(&self) -> impl Iterator<Item = u32> + '_ {
        self.meta[..self.geo.blocks].iter().map(|b| b.erase_count)
    }

    #[inline]
    fn invalidate(&mut self, slot: u32) {
        let b = self.div_spb.div(slot) as usize;
        self.valid.clear(slot as usize);
        let blk = &mut self.blocks[b];
        debug_assert!(blk.valid > 0);
        let old_valid = blk.valid;
        blk.valid -= 1;
        if blk.state == BlockState::Closed {
            let policy = self.geo.gc_policy;
            policy.invalidated(self, b as u32, old_valid as usize);
        }
    }

    #[inline(always)]
    fn alloc_host_slot(&mut self, pool: usize) -> u32 {
        self.fdp_host_pool(pool);
        let spb = self.geo.slots_per_block as u32;
        let mut b = self.pools[pool].host_open;
        if self.meta[b as usize].write_ptr == spb {
            if self.out_of_space.is_some() {
                // The drive has failed: its full host blocks stay as they are.
                return NONE;
            }
            self.close_block(pool, b);
            self.fdp_filled();
            // Keep gc_fg_free_blocks free after taking one (GC always has a block to copy
            // into); once started, foreground GC reclaims up to its target.
            let fg = self.geo.gc_fg_free_blocks;
            if self.pools[pool].free.len() <= fg {
                if !self.sort_open.is_empty() {
                    // Region blocks left open by idle sorting become victims too.
                    self.close_sort_streams();
                }
                while self.pools[pool].free.len() <= self.geo.gc_fg_target_free_blocks && self.has_victim(pool) {
                    // Beyond the minimum reserve, stop the batch once nothing can be gained.
                    if self.pools[pool].free.len() > fg && !self.victim_has_invalid(pool) {
                        break;
                    }
                    let Some(moved) = self.collect_one(pool) else { break };
                    self.pending[pool].foreground_victims += 1;
                    // A fully valid victim (not greedy's choice) frees nothing: at the reserve
                    // with no closed block holding invalid data, collecting would go round.
                    if moved == self.geo.slots_per_block && self.pools[pool].free.len() <= fg && !self.victim_has_invalid(pool) {
                        break;
                    }
                }
                // Still at the reserve: no closed block holds invalid data (see
                // `Config::validate` for why a plane holding no more than its share of the
                // user capacity always has one): the plane holds more, and spills a block.
                if self.pools[pool].free.len() <= fg && !self.spill(pool) {
                    self.fail_out_of_space(pool);
                    return NONE;
                }
            }
            b = self.pop_free(pool);
            self.meta[b as usize].handle = self.fdp_host_tag();
            self.pools[pool].host_open = b;
        }
        let meta = &mut self.meta[b as usize];
        let slot = b * spb + meta.write_ptr;
        meta.write_ptr += 1;
        self.blocks[b as usize].valid += 1;
        slot
    }

    /// Takes the plane's next free block. Every caller keeps a free block in hand (foreground
    /// GC fails the drive at its reserve instead of going on, active GC keeps the last free
    /// block, idle sorting takes blocks only from planes above the reserve), so the list is
    /// never empty here.
    fn pop_free(&mut self, pool: usize) -> u32 {
        let b = self.pools[pool].free.pop_front().unwrap_or_else(|| {
            panic!("FTL invariant broken: plane {pool} has no free block to take (every path keeps one)")
        });
        self.free_blocks_total -= 1;
        let blk = &mut self.blocks[b as usize];
        debug_assert_eq!(blk.state, BlockState::Free);
        blk.state = BlockState::Open;
        b
    }

    fn close_block(&mut self, pool: usize, b: u32) {
        self.blocks[b as usize].state = BlockState::Closed;
        let policy = self.geo.gc_policy;
        policy.closed(self, pool, b);
    }
}
