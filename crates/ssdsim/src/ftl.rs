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

use std::collections::VecDeque;

use crate::config::{ConfigError, GcPolicy, Geometry};
use crate::mem::big_vec;
use crate::rng::Rng;

/// Region (0..regions) of logical unit `lpn` when `user_units` are cut into `regions` equal parts.
#[inline]
fn region_of(lpn: u32, regions: u64, user_units: u64) -> usize {
    (lpn as u64 * regions / user_units) as usize
}

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

/// Exact division of a u32 by a divisor fixed at construction, without a `div` instruction
/// (20-40 cycles) on the hot paths that turn slots into blocks and blocks into planes:
/// a shift for powers of two, else Lemire's multiply-high, `n / d == (ceil(2^64 / d) * n) >> 64`
/// for every 32-bit `n` and `d` (Lemire, Kaser & Kurz, "Faster remainder by direct
/// computation", 2019, Theorem 1 with N = 32, F = 64).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastDiv {
    /// ceil(2^64 / d); 0 when `d` is a power of two (use `shift`).
    magic: u64,
    shift: u32,
}

impl FastDiv {
    pub(crate) fn new(d: usize) -> Self {
        assert!(d > 0 && d <= u32::MAX as usize, "divisor {d} out of range");
        if d.is_power_of_two() {
            FastDiv { magic: 0, shift: d.trailing_zeros() }
        } else {
            FastDiv { magic: u64::MAX / d as u64 + 1, shift: 0 }
        }
    }

    #[inline(always)]
    pub(crate) fn div(self, n: u32) -> u32 {
        if self.magic == 0 {
            n >> self.shift
        } else {
            ((self.magic as u128 * n as u128) >> 64) as u32
        }
    }
}

/// One bit per physical slot, set while the slot holds current data.
///
/// P2L entries are meaningful only where the bit is set. Overwriting or trimming a unit
/// clears its old slot's bit instead of writing the old slot's P2L entry: the bitmap is 32
/// times smaller than P2L (1 MiB for a 32 GB drive, so it stays in cache), which saves a
/// random P2L cache miss on every host write. GC finds a victim's valid units by scanning
/// its bits a word (64 slots) at a time.
struct ValidBits(Vec<u64>);

impl ValidBits {
    fn new(slots: usize) -> Self {
        ValidBits(big_vec(slots.div_ceil(64), 0))
    }

    #[inline]
    fn get(&self, s: usize) -> bool {
        self.0[s >> 6] >> (s & 63) & 1 != 0
    }

    #[inline]
    fn set(&mut self, s: usize) {
        self.0[s >> 6] |= 1 << (s & 63);
    }

    #[inline]
    fn clear(&mut self, s: usize) {
        self.0[s >> 6] &= !(1 << (s & 63));
    }

    /// The first set bit in `from..end`, or `end` if there is none.
    #[inline]
    fn next_set(&self, from: usize, end: usize) -> usize {
        let mut i = from;
        while i < end {
            let w = self.0[i >> 6] >> (i & 63);
            if w != 0 {
                return (i + w.trailing_zeros() as usize).min(end);
            }
            i = (i | 63) + 1;
        }
        end
    }

    /// Calls `f` with every set bit in `from..end`, in increasing order, a word at a time.
    #[inline]
    fn for_each_set(&self, from: usize, end: usize, mut f: impl FnMut(usize)) {
        let mut i = from;
        while i < end {
            let lo = i & 63;
            let n = (64 - lo).min(end - i);
            let mask = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << lo };
            let mut w = self.0[i >> 6] & mask;
            let word_start = i - lo;
            while w != 0 {
                f(word_start + w.trailing_zeros() as usize);
                w &= w - 1;
            }
            i += n;
        }
    }

    /// The set bits in `from..end`, in increasing order.
    #[inline]
    fn iter_set(&self, from: usize, end: usize) -> SetBits<'_> {
        let word = if from < end { self.0[from >> 6] & (u64::MAX << (from & 63)) } else { 0 };
        SetBits { words: &self.0, word, word_start: from & !63, end }
    }

    /// Sets (`on`) or clears every bit in `from..end`.
    fn fill(&mut self, from: usize, end: usize, on: bool) {
        let mut i = from;
        while i < end {
            let lo = i & 63;
            let n = (64 - lo).min(end - i);
            let mask = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << lo };
            let w = &mut self.0[i >> 6];
            *w = if on { *w | mask } else { *w & !mask };
            i += n;
        }
    }

    /// Set bits in `from..end`.
    fn count(&self, from: usize, end: usize) -> usize {
        (from..end).filter(|&s| self.get(s)).count()
    }

    /// Address of the word holding bit `s`, for prefetching.
    #[inline]
    fn word_ptr(&self, s: usize) -> *const u64 {
        self.0.as_ptr().wrapping_add(s >> 6)
    }

    fn capacity_bytes(&self) -> usize {
        self.0.capacity() * 8
    }
}

/// Iterator over set bits (see [`ValidBits::iter_set`]).
struct SetBits<'a> {
    words: &'a [u64],
    /// Bits of the current word not yet returned.
    word: u64,
    word_start: usize,
    end: usize,
}

impl Iterator for SetBits<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.word == 0 {
            self.word_start += 64;
            if self.word_start >= self.end {
                return None;
            }
            self.word = self.words[self.word_start >> 6];
        }
        let s = self.word_start + self.word.trailing_zeros() as usize;
        self.word &= self.word - 1;
        (s < self.end).then_some(s)
    }
}

/// The P2L ranges of two different blocks `a` and `b`, both mutable.
#[inline]
fn two_blocks_mut(p2l: &mut [u32], a: usize, b: usize, spb: usize) -> (&mut [u32], &mut [u32]) {
    assert_ne!(a, b);
    if a < b {
        let (lo, hi) = p2l.split_at_mut(b * spb);
        (&mut lo[a * spb..(a + 1) * spb], &mut hi[..spb])
    } else {
        let (lo, hi) = p2l.split_at_mut(a * spb);
        (&mut hi[..spb], &mut lo[b * spb..(b + 1) * spb])
    }
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
    /// Cost-benefit: host-write clock [host units written] when the block was closed: the
    /// age of its youngest data, Rosenblum & Ousterhout's segment age. (Counting from the
    /// block's last invalidation instead makes the emptiest blocks look youngest: on uniform
    /// traffic the policy then cleans nearly in age order, like FIFO.)
    mtime: u64,
    /// Idle sorting: the block holds data of one LBA region (written by a sort stream, or
    /// found to be LBA-local), so idle GC leaves it alone unless it holds invalid data.
    sorted: bool,
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

/// Active GC: how far ahead (in victim slots) L2P entries are prefetched.
const BG_AHEAD: usize = 40;

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
}

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
        let meta = vec![BlockMeta { write_ptr: 0, erase_count: 0, pos: NONE, mtime: 0, sorted: false }; geo.blocks];
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
            });
        }
        let mut ftl = Ftl {
            geo: geo.clone(),
            l2p: big_vec(geo.user_units as usize, NONE),
            p2l: big_vec(geo.physical_units as usize, NONE),
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
    }

    /// Free (erased, unallocated) blocks in the whole drive.
    pub fn free_blocks(&self) -> u64 {
        self.free_blocks_total
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
    #[inline(always)]
    pub(crate) fn write_and_take_gc_work(&mut self, lpn: u64, pool: usize, payload: u64) -> GcWork {
        let (_, active) = self.write_inner(lpn, pool, payload);
        let mut work = self.take_gc_work(pool);
        work.units_copied += active.copied;
        work.page_reads += active.page_reads;
        work
    }

    #[inline(always)]
    fn write_inner(&mut self, lpn: u64, pool: usize, payload: u64) -> (u32, ActiveWork) {
        let old = self.l2p[lpn as usize];
        if old != NONE {
            self.invalidate(old);
        } else {
            self.mapped += 1;
        }
        let slot = self.alloc_host_slot(pool);
        if slot == NONE {
            // Out of space: the data is dropped (the simulation reports the error).
            self.l2p[lpn as usize] = NONE;
            self.mapped -= 1;
            return (NONE, ActiveWork::default());
        }
        self.p2l[slot as usize] = lpn as u32;
        self.valid.set(slot as usize);
        self.l2p[lpn as usize] = slot;
        if let Some(p) = self.payload.as_mut() {
            p[slot as usize] = payload;
        }
        self.counters.host_units += 1;
        let active = if self.geo.gc_bg_start_free_blocks != 0 { self.active_gc(pool) } else { ActiveWork::default() };
        (slot, active)
    }

    /// Active GC after a host write to `pool`: hysteresis between the start and stop
    /// watermarks; while on, relocates `gc_bg_copies_per_write` units per host unit.
    ///
    /// Each whole unit of credit pays one *step*: the relocation of the victim's next valid
    /// unit, or the erase of the victim once it has none (choosing a victim first if needed).
    /// If a step cannot be done the credit is dropped.
    /// Returns the units copied and pages read (not yet in `pending`); erases and victim
    /// selections are recorded as usual.
    #[inline]
    fn active_gc(&mut self, pool: usize) -> ActiveWork {
        let free = self.pools[pool].free.len();
        let p = &mut self.pools[pool];
        if !p.bg_on {
            if free >= self.geo.gc_bg_start_free_blocks {
                return ActiveWork::default();
            }
            p.bg_on = true;
        } else if free >= self.geo.gc_bg_stop_free_blocks && p.bg_victim == NONE {
            p.bg_on = false;
            p.bg_credit = 0.0;
            return ActiveWork::default();
        }
        p.bg_credit += p.bg_rate;
        if p.bg_credit >= 1.0 {
            self.spend_active_gc_credit(pool)
        } else {
            ActiveWork::default()
        }
    }

    #[inline(never)]
    fn spend_active_gc_credit(&mut self, pool: usize) -> ActiveWork {
        let mut credit = self.pools[pool].bg_credit;
        let mut total = ActiveWork::default();
        while credit >= 1.0 {
            if self.pools[pool].bg_victim == NONE && !self.start_active_victim(pool) {
                credit = 0.0;
                break;
            }
            let (stop, work) = self.active_gc_steps(pool, &mut credit);
            total.copied += work.copied;
            total.page_reads += work.page_reads;
            if stop == BgStop::Blocked {
                credit = 0.0;
                break;
            }
        }
        self.pools[pool].bg_credit = credit;
        total
    }

    /// Chooses the next active-GC victim of `pool`, unless there is nothing worth collecting
    /// or the plane is back at the stop watermark. Returns whether a victim was chosen.
    fn start_active_victim(&mut self, pool: usize) -> bool {
        if !self.has_victim(pool) || self.pools[pool].free.len() >= self.geo.gc_bg_stop_free_blocks || !self.victim_has_invalid(pool) {
            return false;
        }
        let spb = self.geo.slots_per_block;
        let v = self.select_victim(pool);
        self.blocks[v as usize].state = BlockState::Victim;
        let p = &mut self.pools[pool];
        p.bg_victim = v;
        p.bg_cursor = 0;
        p.bg_read_page = NONE;
        p.bg_fetched = BG_AHEAD.min(spb) as u32;
        if self.geo.gc_bg_reclaim_ratio > 0.0 {
            // Relocate just enough per host write to reclaim `ratio` units of space.
            let v = self.blocks[v as usize].valid as f64 / spb as f64;
            p.bg_rate = (self.geo.gc_bg_reclaim_ratio * v / (1.0 - v)).min(self.geo.gc_bg_copies_per_write);
        }
        self.counters.gc_runs += 1;
        // Its P2L range will be read over the next host writes: bring it closer (it stays in
        // L2 meanwhile), then start fetching the L2P entries of its first valid units.
        let base = v as usize * spb;
        for line in self.p2l[base..base + spb].chunks(16) {
            prefetch_ptr(line.as_ptr());
        }
        for s in base..base + BG_AHEAD.min(spb) {
            if self.valid.get(s) {
                self.prefetch(self.p2l[s] as u64);
            }
        }
        true
    }

    /// Active-GC steps on the current victim of `pool` (there must be one), one per whole unit
    /// of `credit` (decremented by 1.0 per step, as long as it is >= 1.0): each relocates the
    /// victim's next valid unit, or, when none is left, erases the victim and ends the run.
    /// A step is refused (`Blocked`, the cursor kept) when the GC block is full and the plane's
    /// last free block must stay reserved for foreground GC.
    /// Returns how the run ended and the units copied and pages read (which the caller adds
    /// to `pending`); the erase is recorded as usual.
    fn active_gc_steps(&mut self, pool: usize, credit: &mut f64) -> (BgStop, ActiveWork) {
        let spb = self.geo.slots_per_block;
        let victim = self.pools[pool].bg_victim;
        debug_assert_ne!(victim, NONE);
        let base = victim as usize * spb;
        let mut cursor = self.pools[pool].bg_cursor as usize;
        let mut read_page = self.pools[pool].bg_read_page;
        let mut fetched = self.pools[pool].bg_fetched as usize;
        let (mut copied, mut reads) = (0u64, 0u64);
        let stop = loop {
            if *credit < 1.0 {
                break BgStop::Credit;
            }
            cursor = self.valid.next_set(base + cursor, base + spb) - base;
            if cursor == spb {
                self.pools[pool].bg_victim = NONE;
                self.erase(pool, victim);
                *credit -= 1.0;
                break BgStop::VictimDone;
            }
            // Keep the last free block for foreground GC, which must always be able to copy.
            let gc = self.pools[pool].gc_open as usize;
            if self.meta[gc].write_ptr as usize == spb && self.pools[pool].free.len() <= 1 {
                break BgStop::Blocked;
            }
            // A run of steps into the room left in the GC block (switched first if full, as
            // the allocation of this step's copy would), without per-unit block checks.
            let gc = self.gc_block_with_room(pool) as usize;
            let wp = self.meta[gc].write_ptr as usize;
            let run_start = cursor;
            let mut run = RunState { cursor, read_page, fetched, credit: *credit };
            let (k, run_reads) = if self.payload.is_some() {
                self.active_run::<true>(victim as usize, gc, wp, &mut run)
            } else {
                self.active_run::<false>(victim as usize, gc, wp, &mut run)
            };
            (cursor, read_page, fetched, *credit) = (run.cursor, run.read_page, run.fetched, run.credit);
            reads += run_reads;
            // Every valid slot of the victim in run_start..cursor moved to the run's slots.
            self.valid.fill(base + run_start, base + cursor, false);
            self.valid.fill(gc * spb + wp, gc * spb + wp + k, true);
            self.meta[gc].write_ptr += k as u32;
            self.blocks[gc].valid += k as u32;
            self.blocks[victim as usize].valid -= k as u32;
            copied += k as u64;
        };
        let p = &mut self.pools[pool];
        p.bg_cursor = cursor as u32;
        p.bg_read_page = read_page;
        p.bg_fetched = fetched as u32;
        self.counters.gc_units += copied;
        (stop, ActiveWork { copied, page_reads: reads })
    }

    /// The inner loop of [`Ftl::active_gc_steps`]: moves the victim's valid units from slot
    /// `run.cursor` on into the GC block `gc` from its write pointer `wp`, while
    /// `run.credit >= 1.0` (1.0 per unit) and the block has room. Leaves `run.cursor` on the
    /// slot after the last one examined (`slots_per_block` if the victim has no valid unit
    /// left) and returns the units moved and the pages read. Valid bits and counts are the
    /// caller's to update.
    ///
    /// The L2P entries of the victim's valid units are scattered over the whole table (a
    /// cache miss each): every valid slot up to `BG_AHEAD` slots past the unit being moved has
    /// its entry prefetched (`run.fetched` remembers how far, across calls), so the misses of
    /// the next units overlap the current one's, however the valid slots are spaced.
    /// `TRACK`: payload tracking (a separate instance keeps the common loop lean).
    #[inline(always)]
    fn active_run<const TRACK: bool>(&mut self, victim: usize, gc: usize, wp: usize, run: &mut RunState) -> (usize, u64) {
        let spb = self.geo.slots_per_block;
        let (base, dst0) = (victim * spb, gc * spb + wp);
        let (src, dst) = two_blocks_mut(&mut self.p2l, victim, gc, spb);
        let dst = &mut dst[wp..];
        let (l2p, bits, div_upp) = (&mut self.l2p[..], &self.valid, self.div_upp);
        let mut payload = if TRACK { self.payload.as_deref_mut() } else { None };
        let mut units = bits.iter_set(base + run.cursor, base + spb);
        let (mut c, mut page_seen, mut reads, mut k, mut fetched) = (run.credit, run.read_page, 0u64, 0usize, run.fetched);
        while k < dst.len() && c >= 1.0 {
            let Some(s) = units.next() else {
                run.cursor = spb;
                break;
            };
            let off = s - base;
            let want = (off + BG_AHEAD + 1).min(spb);
            while fetched < want {
                if bits.get(base + fetched) {
                    prefetch_ptr(l2p.as_ptr().wrapping_add(src[fetched] as usize));
                }
                fetched += 1;
            }
            let page = div_upp.div(off as u32);
            reads += u64::from(page != page_seen);
            page_seen = page;
            let lpn = src[off];
            dst[k] = lpn;
            l2p[lpn as usize] = (dst0 + k) as u32;
            if TRACK {
                if let Some(p) = payload.as_deref_mut() {
                    p[dst0 + k] = p[s];
                }
            }
            k += 1;
            run.cursor = off + 1;
            c -= 1.0;
        }
        run.credit = c;
        run.read_page = page_seen;
        run.fetched = fetched;
        (k, reads)
    }

    /// Idle-time GC: collects one whole victim in `pool` if the plane has fewer than
    /// `target_free` free blocks and some block holds invalid data. Returns whether it did;
    /// the work is in [`Ftl::take_gc_work`].
    pub fn collect_for_idle(&mut self, pool: usize, target_free: usize) -> bool {
        if self.pools[pool].free.len() >= target_free || self.out_of_space.is_some() {
            return false;
        }
        if let Some(done) = self.finish_active_victim(pool) {
            return done;
        }
        if self.has_victim(pool) && self.victim_has_invalid(pool) {
            self.collect_one(pool);
            return true;
        }
        false
    }

    /// If active GC has a victim in `pool`, collects it to the end (unlimited credit) and
    /// returns whether it was erased; None if there is no such victim.
    fn finish_active_victim(&mut self, pool: usize) -> Option<bool> {
        if self.pools[pool].bg_victim == NONE {
            return None;
        }
        let mut credit = f64::INFINITY;
        let (stop, work) = self.active_gc_steps(pool, &mut credit);
        let pending = &mut self.pending[pool];
        pending.units_copied += work.copied;
        pending.page_reads += work.page_reads;
        Some(stop == BgStop::VictimDone)
    }

    /// Idle GC that sorts by LBA (`gc_idle_sort_regions` > 0): one victim of `pool`, its
    /// valid units copied into the open blocks of their LBA regions. The victim is the
    /// policy's choice while the plane has fewer than `target_free` free blocks and some
    /// block holds invalid data; then a fully valid closed block whose data spans more than
    /// one region (data that a sequential overwrite would free only at the end). Returns
    /// whether it did anything; the work is in [`Ftl::take_gc_work`] of the victim's plane
    /// (page reads, erase) and of the planes copied into (copies).
    ///
    /// Region blocks are spread over the planes (see `sort_block_with_room`). While the drive
    /// has too few free blocks to give every region a new block, victims are collected the
    /// ordinary way (into the plane's GC block), which frees space.
    pub fn sort_for_idle(&mut self, pool: usize, target_free: usize) -> bool {
        assert!(!self.sort_open.is_empty(), "sort_for_idle without gc_idle_sort_regions");
        if self.out_of_space.is_some() {
            return false;
        }
        if self.pools[pool].free.len() < target_free {
            if let Some(done) = self.finish_active_victim(pool) {
                return done;
            }
            if self.has_victim(pool) && self.victim_has_invalid(pool) {
                if !self.sort_has_room() {
                    self.collect_one(pool);
                    return true;
                }
                let victim = self.select_victim(pool);
                self.relocate_sorted(pool, victim);
                return true;
            }
        }
        if !self.sort_has_room() {
            return false;
        }
        match self.next_unsorted(pool) {
            Some(b) => {
                self.take_closed(pool, b);
                self.relocate_sorted(pool, b);
                true
            }
            None => false,
        }
    }

    /// Closes the open region blocks (partly written ones too: their unwritten slots are
    /// space GC gets back when it collects them). Called when an idle period ends.
    pub fn close_sort_streams(&mut self) {
        for r in 0..self.sort_open.len() {
            let b = std::mem::replace(&mut self.sort_open[r], NONE);
            if b != NONE {
                self.meta[b as usize].sorted = true;
                self.close_block(self.div_bpp.div(b) as usize, b);
            }
        }
    }

    /// LBA region of a logical unit for idle sorting.
    #[inline]
    fn sort_region(&self, lpn: u32) -> usize {
        region_of(self.owner(lpn), self.sort_open.len() as u64, self.geo.user_units)
    }

    /// Room for compressed data: each logical unit may own up to `per_unit` companion slots
    /// (a unit whose compressed data fills k slots has k − 1 companions), mapped as hidden
    /// logical units `user_units + lpn × per_unit + j` so that GC moves them like any data.
    /// Grows the mapping table once; never shrinks.
    pub fn enable_companions(&mut self, per_unit: u64) {
        if per_unit <= self.companions {
            return;
        }
        let user = self.geo.user_units;
        let mut l2p = big_vec((user * (1 + per_unit)) as usize, NONE);
        // Existing companions move to their places in the larger hidden region.
        l2p[..user as usize].copy_from_slice(&self.l2p[..user as usize]);
        for owner in 0..user {
            for j in 0..self.companions {
                let (old, new) = (user + owner * self.companions + j, user + owner * per_unit + j);
                let slot = self.l2p[old as usize];
                l2p[new as usize] = slot;
                if slot != NONE {
                    self.p2l[slot as usize] = new as u32;
                }
            }
        }
        self.l2p = l2p;
        self.companions = per_unit;
    }

    /// Companion slots per logical unit at most (0: no compressed data).
    #[inline]
    pub fn companions_per_unit(&self) -> u64 {
        self.companions
    }

    /// The hidden logical unit of companion `j` (0-based) of `lpn`.
    #[inline]
    pub fn companion_lpn(&self, lpn: u64, j: u64) -> u64 {
        debug_assert!(j < self.companions);
        self.geo.user_units + lpn * self.companions + j
    }

    /// The user's logical unit that a (possibly hidden companion) logical unit belongs to.
    #[inline]
    fn owner(&self, lpn: u32) -> u32 {
        let user = self.geo.user_units;
        if (lpn as u64) < user || self.companions == 0 {
            lpn
        } else {
            ((lpn as u64 - user) / self.companions) as u32
        }
    }

    /// Lowest and highest LPN of the valid units in block `b` (None if it holds none).
    fn valid_lpn_range(&self, b: usize) -> Option<(u32, u32)> {
        let spb = self.geo.slots_per_block;
        self.valid.iter_set(b * spb, (b + 1) * spb).map(|s| self.p2l[s]).fold(None, |range, lpn| match range {
            None => Some((lpn, lpn)),
            Some((lo, hi)) => Some((lo.min(lpn), hi.max(lpn))),
        })
    }

    /// Whether every region could take a new block without eating into any plane's
    /// foreground-GC reserve (on average over the planes).
    fn sort_has_room(&self) -> bool {
        let reserve = (self.geo.pools * (self.geo.gc_fg_free_blocks + 1)) as u64;
        self.free_blocks_total >= reserve + self.sort_open.len() as u64
    }

    /// The next closed, fully valid block of `pool` whose data spans more than one region.
    /// Blocks found to hold one region's data are marked sorted on the way.
    fn next_unsorted(&mut self, pool: usize) -> Option<u32> {
        let bpp = self.geo.blocks_per_pool;
        let first = pool * bpp;
        for _ in 0..bpp {
            let off = self.sort_scan[pool] as usize;
            self.sort_scan[pool] = ((off + 1) % bpp) as u32;
            let b = first + off;
            if self.blocks[b].state != BlockState::Closed || self.meta[b].sorted {
                continue;
            }
            match self.valid_lpn_range(b) {
                Some((lo, hi)) if self.sort_region(lo) != self.sort_region(hi) => return Some(b as u32),
                _ => self.meta[b].sorted = true,
            }
        }
        None
    }

    /// Takes closed block `b` out of the GC policy's structure (to collect it).
    fn take_closed(&mut self, pool: usize, b: u32) {
        match self.geo.gc_policy {
            GcPolicy::Greedy => self.bucket_remove(pool, b, self.blocks[b as usize].valid as usize),
            GcPolicy::Fifo => {
                let q = &mut self.pools[pool].closed_fifo;
                let i = q.iter().position(|&x| x == b).expect("closed block is in the FIFO");
                q.remove(i);
            }
            GcPolicy::CostBenefit | GcPolicy::DChoices(_) => self.closed_remove(pool, b),
        }
    }

    /// The open block of region `r`, first closed and replaced if it is full. A region's
    /// blocks go round-robin over the planes (each region starting at a different one), so
    /// that every plane holds an even share of every region: when a sequential overwrite
    /// passes a region, every plane gets its share of emptied blocks back, as it takes its
    /// share of the writes. Planes with fewer free blocks than the drive's average are
    /// skipped, so that sorting leaves the planes with even free space (a plane left short
    /// would soon have to collect nearly full sorted blocks in the foreground).
    fn sort_block_with_room(&mut self, r: usize) -> u32 {
        let b = self.sort_open[r];
        if b != NONE && (self.meta[b as usize].write_ptr as usize) < self.geo.slots_per_block {
            return b;
        }
        if b != NONE {
            self.meta[b as usize].sorted = true;
            self.close_block(self.div_bpp.div(b) as usize, b);
        }
        let pools = self.geo.pools;
        let from = self.sort_next_pool[r] as usize;
        let at_least = (self.free_blocks_total as usize / pools).max(self.geo.gc_fg_free_blocks + 2);
        let q = (0..pools)
            .map(|k| (from + k) % pools)
            .find(|&q| self.pools[q].free.len() >= at_least)
            .unwrap_or_else(|| (0..pools).max_by_key(|&q| (self.pools[q].free.len(), std::cmp::Reverse(q))).expect("a drive has planes"));
        self.sort_next_pool[r] = ((q + 1) % pools) as u32;
        let b = self.pop_free(q);
        self.sort_open[r] = b;
        b
    }

    /// Copies the valid units of `victim` (out of the GC structure) into their regions'
    /// open blocks, then erases it.
    fn relocate_sorted(&mut self, pool: usize, victim: u32) {
        let spb = self.geo.slots_per_block;
        let base = victim as usize * spb;
        let mut lpns = std::mem::take(&mut self.scratch);
        let mut slots = std::mem::take(&mut self.scratch_slots);
        lpns.clear();
        slots.clear();
        let mut page_reads = 0;
        let mut last_page = u32::MAX;
        for s in self.valid.iter_set(base, base + spb) {
            lpns.push(self.p2l[s]);
            slots.push(s as u32);
            let page = self.div_upp.div((s - base) as u32);
            page_reads += u64::from(page != last_page);
            last_page = page;
        }
        for (&lpn, &src) in lpns.iter().zip(&slots) {
            let b = self.sort_block_with_room(self.sort_region(lpn));
            let meta = &mut self.meta[b as usize];
            let dst = b * spb as u32 + meta.write_ptr;
            meta.write_ptr += 1;
            self.blocks[b as usize].valid += 1;
            self.p2l[dst as usize] = lpn;
            self.valid.set(dst as usize);
            self.l2p[lpn as usize] = dst;
            if let Some(p) = self.payload.as_mut() {
                p[dst as usize] = p[src as usize];
            }
            self.pending[self.div_bpp.div(b) as usize].units_copied += 1;
        }
        let n = lpns.len();
        self.blocks[victim as usize].valid -= n as u32;
        self.valid.fill(base, base + spb, false);
        self.scratch = lpns;
        self.scratch_slots = slots;
        self.erase(pool, victim);
        self.counters.gc_units += n as u64;
        self.counters.gc_runs += 1;
        self.pending[pool].page_reads += page_reads;
    }

    /// Whether collecting in `pool` can gain space: some closed block holds invalid data.
    /// O(1) for greedy; a scan of the closed blocks for the other policies.
    fn victim_has_invalid(&self, pool: usize) -> bool {
        self.peek_victim_valid(pool).is_some_and(|v| (v as usize) < self.geo.slots_per_block)
    }

    /// How mixed the data is by LBA: the user span is cut into `regions` equal regions;
    /// returns (blocks holding valid data, of which those whose valid units fall in more
    /// than one region). O(drive size); for tests and reports.
    pub fn region_mixing(&self, regions: u64) -> (u64, u64) {
        let region = |lpn| region_of(self.owner(lpn), regions, self.geo.user_units);
        let (mut holding, mut mixed) = (0, 0);
        for (lo, hi) in (0..self.geo.blocks).filter_map(|b| self.valid_lpn_range(b)) {
            holding += 1;
            mixed += u64::from(region(lo) != region(hi));
        }
        (holding, mixed)
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
        if blk.state == BlockState::Closed && self.geo.gc_policy == GcPolicy::Greedy {
            let pool = self.div_bpp.div(b as u32) as usize;
            self.bucket_remove(pool, b as u32, old_valid as usize);
            self.bucket_push(pool, b as u32, old_valid as usize - 1);
        }
    }

    #[inline(always)]
    fn alloc_host_slot(&mut self, pool: usize) -> u32 {
        let spb = self.geo.slots_per_block as u32;
        let mut b = self.pools[pool].host_open;
        if self.meta[b as usize].write_ptr == spb {
            if self.out_of_space.is_some() {
                // The drive has failed: its full host blocks stay as they are.
                return NONE;
            }
            self.close_block(pool, b);
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
                // user capacity always has one).
                if self.pools[pool].free.len() <= fg {
                    self.fail_out_of_space(pool);
                    return NONE;
                }
            }
            b = self.pop_free(pool);
            self.pools[pool].host_open = b;
        }
        let meta = &mut self.meta[b as usize];
        let slot = b * spb + meta.write_ptr;
        meta.write_ptr += 1;
        self.blocks[b as usize].valid += 1;
        slot
    }

    /// The GC open block of `pool`, first closed and replaced by a free block if it is full.
    #[inline]
    fn gc_block_with_room(&mut self, pool: usize) -> u32 {
        let b = self.pools[pool].gc_open;
        if self.meta[b as usize].write_ptr as usize != self.geo.slots_per_block {
            return b;
        }
        self.close_block(pool, b);
        let b = self.pop_free(pool);
        self.pools[pool].gc_open = b;
        b
    }

    /// Records that `pool` ran out of room (see [`Ftl::check_space`]).
    #[cold]
    fn fail_out_of_space(&mut self, pool: usize) {
        let spb = self.geo.slots_per_block;
        let bpp = self.geo.blocks_per_pool;
        let valid_units = self.blocks[pool * bpp..(pool + 1) * bpp].iter().map(|b| b.valid as u64).sum();
        self.out_of_space = Some(OutOfSpace {
            plane: pool,
            free_blocks: self.pools[pool].free.len(),
            valid_units,
            plane_limit_units: ((bpp - self.geo.gc_fg_free_blocks - 2) * spb - 1) as u64,
        });
        // The plane's host block may have been collected meanwhile: point its host block at a
        // full record past the drive's blocks, so that every later write to the plane finds
        // it full and stops in `alloc_host_slot`, which touches nothing once the drive failed.
        let full = BlockMeta { write_ptr: spb as u32, erase_count: 0, pos: NONE, mtime: 0, sorted: false };
        self.meta.truncate(self.geo.blocks);
        self.meta.push(full);
        self.pools[pool].host_open = self.geo.blocks as u32;
    }

    /// Ok while every plane can take data. Err once a plane ran out of room: it needed a
    /// block for host data while at its foreground-GC reserve and no block held invalid
    /// data (every closed block fully valid), so GC could free nothing. Profile validation
    /// rules this out while each plane holds no more than its share of the user capacity;
    /// the drive places writes on whichever die is free first (and idle sorting moves data
    /// between planes), so a workload can leave more than that in one plane. The error names
    /// the profile key to change (more spare area: a lower `user_capacity_bytes`).
    /// Once failed, the FTL drops host data that needs a new block and idle GC stops.
    pub fn check_space(&self) -> Result<(), ConfigError> {
        let Some(e) = &self.out_of_space else { return Ok(()) };
        let spb = self.geo.slots_per_block as u64;
        let plane_units = self.geo.blocks_per_pool as u64 * spb;
        Err(ConfigError::new(
            "user_capacity_bytes",
            format!(
                "the simulated drive ran out of space in plane {}: it had {} free blocks (the foreground-GC reserve, gc_fg_free_blocks = {}) \
                 and every closed block was fully valid, so GC could free nothing; the plane held {} valid 4 KiB units \
                 ({:.1}% of its {} slots; at most {} leave GC a block to free). The drive spreads writes over its planes regardless of their \
                 addresses (to the die free first, over its planes in turn), and this workload left more than an even share of its data in this plane. Lower user_capacity_bytes (more spare area \
                 per plane) or raise blocks_per_plane",
                e.plane,
                e.free_blocks,
                self.geo.gc_fg_free_blocks,
                e.valid_units,
                e.valid_units as f64 * 100.0 / plane_units as f64,
                plane_units,
                e.plane_limit_units,
            ),
        ))
    }

    /// Where and how a plane ran out of room, if one did (see [`Ftl::check_space`]).
    pub fn out_of_space(&self) -> Option<&OutOfSpace> {
        self.out_of_space.as_ref()
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
        match self.geo.gc_policy {
            GcPolicy::Greedy => {
                let v = self.blocks[b as usize].valid as usize;
                self.bucket_push(pool, b, v);
            }
            GcPolicy::Fifo => self.pools[pool].closed_fifo.push_back(b),
            GcPolicy::CostBenefit | GcPolicy::DChoices(_) => {
                self.meta[b as usize].mtime = self.counters.host_units;
                self.meta[b as usize].pos = self.pools[pool].closed.len() as u32;
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
        let i = self.meta[b as usize].pos as usize;
        let closed = &mut self.pools[pool].closed;
        closed.swap_remove(i);
        if i < closed.len() {
            let moved = closed[i];
            self.meta[moved as usize].pos = i as u32;
        }
        self.meta[b as usize].pos = NONE;
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
                    let u = self.blocks[b as usize].valid as f64 / spb;
                    let age = (now - self.meta[b as usize].mtime) as f64 + 1.0;
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

    /// GC of one whole victim in `pool`: relocate its valid units, erase it. Returns the
    /// units relocated, or None (nothing done) if greedy's victim, the emptiest closed
    /// block, is fully valid: nothing can be freed. (Other policies may legitimately
    /// relocate a full block and move on.)
    fn collect_one(&mut self, pool: usize) -> Option<usize> {
        let victim = self.select_victim(pool);
        let spb = self.geo.slots_per_block;
        if self.geo.gc_policy == GcPolicy::Greedy && self.blocks[victim as usize].valid as usize == spb {
            self.bucket_push(pool, victim, spb);
            return None;
        }
        let base = victim as usize * spb;
        let mut work = GcWork { erases: 1, ..GcWork::default() };
        // Pass 1: the victim's valid units, in slot order (its valid bits, a word at a time,
        // and their P2L entries), and the pages holding them (each is read once).
        // `buf` holds a block's worth of LPNs; the first `n` are the valid units found.
        let mut buf = std::mem::take(&mut self.scratch);
        buf.resize(spb, 0);
        let mut n = 0;
        let track = self.payload.is_some();
        let mut slots = std::mem::take(&mut self.scratch_slots);
        slots.clear();
        let end = base + spb;
        let p2l = &self.p2l[base..end];
        // The victim's P2L range is cold: request all of its cache lines at once.
        for line in p2l.chunks(16) {
            prefetch_ptr(line.as_ptr());
        }
        if let Some(page_lsbs) = self.page_lsbs {
            // Blocks are whole words and pages never straddle one: a word at a time, counting
            // its pages with a valid unit by folding each page's bits onto the page's first.
            let upp = self.geo.units_per_page;
            for (i, &word) in self.valid.0[base / 64..end / 64].iter().enumerate() {
                let mut fold = word;
                let mut shift = 1;
                while shift < upp {
                    fold |= fold >> shift;
                    shift <<= 1;
                }
                work.page_reads += u64::from((fold & page_lsbs).count_ones());
                let mut w = word;
                while w != 0 {
                    let off = i * 64 + w.trailing_zeros() as usize;
                    w &= w - 1;
                    buf[n] = p2l[off];
                    n += 1;
                    if track {
                        slots.push((base + off) as u32);
                    }
                }
            }
        } else {
            let mut last_page = u32::MAX;
            let div_upp = self.div_upp;
            self.valid.for_each_set(base, end, |s| {
                let off = s - base;
                buf[n] = p2l[off];
                n += 1;
                if track {
                    slots.push(s as u32);
                }
                let page = div_upp.div(off as u32);
                work.page_reads += u64::from(page != last_page);
                last_page = page;
            });
        }
        // Pass 2: copy them, in order, into the GC open block(s) of the plane. Destinations
        // are consecutive slots, so each run that fits in the open block is one tight loop;
        // the block is switched exactly where per-unit allocation would switch it (when the
        // next unit finds it full). The L2P entries are scattered over the whole table (a
        // cache miss each): fetch them AHEAD copies ahead so the misses overlap.
        const AHEAD: usize = 64;
        let valid = &buf[..n];
        for &lpn in valid.iter().take(AHEAD) {
            self.prefetch(lpn as u64);
        }
        let mut i = 0;
        while i < n {
            let b = self.gc_block_with_room(pool);
            let wp = self.meta[b as usize].write_ptr as usize;
            let k = (spb - wp).min(n - i);
            self.meta[b as usize].write_ptr += k as u32;
            self.blocks[b as usize].valid += k as u32;
            let dst0 = b as usize * spb + wp;
            let l2p = &mut self.l2p[..];
            let run = &valid[i..i + k];
            let ahead = valid.get(i + AHEAD..).unwrap_or(&[]);
            for (j, (&lpn, dst)) in run.iter().zip(&mut self.p2l[dst0..dst0 + k]).enumerate() {
                if let Some(&next) = ahead.get(j) {
                    prefetch_ptr(l2p.as_ptr().wrapping_add(next as usize));
                }
                *dst = lpn;
                l2p[lpn as usize] = (dst0 + j) as u32;
            }
            if let Some(p) = self.payload.as_mut() {
                for (j, &src) in slots[i..i + k].iter().enumerate() {
                    p[dst0 + j] = p[src as usize];
                }
            }
            self.valid.fill(dst0, dst0 + k, true);
            i += k;
        }
        // Every valid unit has moved: the victim holds no valid data now.
        self.blocks[victim as usize].valid -= n as u32;
        self.valid.fill(base, end, false);
        self.scratch_slots = slots;
        work.units_copied = n as u64;
        self.scratch = buf;
        self.erase(pool, victim);
        self.counters.gc_units += work.units_copied;
        self.counters.gc_runs += 1;
        let pending = &mut self.pending[pool];
        pending.page_reads += work.page_reads;
        pending.units_copied += work.units_copied;
        Some(n)
    }

    /// Erases an emptied victim and returns it to the free list.
    fn erase(&mut self, pool: usize, victim: u32) {
        let blk = &mut self.blocks[victim as usize];
        debug_assert_eq!(blk.valid, 0);
        blk.valid = 0;
        blk.state = BlockState::Free;
        let meta = &mut self.meta[victim as usize];
        meta.write_ptr = 0;
        meta.erase_count += 1;
        meta.sorted = false;
        self.pools[pool].free.push_back(victim);
        self.free_blocks_total += 1;
        self.counters.erases += 1;
        self.pending[pool].erases += 1;
    }

    #[inline(always)]
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

    #[inline(always)]
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
    /// L2P and P2L are inverse over the valid slots (valid bits), valid counts equal the valid
    /// slots in each block, slots at or past a block's write pointer are invalid, free-block
    /// accounting and GC structures agree with block states, idle sorting's open blocks hold
    /// only their region's data.
    pub fn check_invariants(&self) -> Result<(), String> {
        let spb = self.geo.slots_per_block;
        let mapped = self.l2p.iter().filter(|&&slot| slot != NONE).count() as u64;
        if mapped != self.mapped {
            return Err(format!("{mapped} logical units mapped but the count says {}", self.mapped));
        }
        for (lpn, &slot) in self.l2p.iter().enumerate() {
            if slot != NONE && !self.valid.get(slot as usize) {
                return Err(format!("L2P[{lpn}] = {slot} but slot {slot} is not valid"));
            }
            if slot != NONE && self.p2l[slot as usize] != lpn as u32 {
                return Err(format!("L2P[{lpn}] = {slot} but P2L[{slot}] = {}", self.p2l[slot as usize]));
            }
        }
        let mut free_total = 0u64;
        for (b, (blk, meta)) in self.blocks.iter().zip(&self.meta).enumerate() {
            let slots = &self.p2l[b * spb..(b + 1) * spb];
            let valid = self.valid.count(b * spb, (b + 1) * spb) as u32;
            for (off, &lpn) in slots.iter().enumerate() {
                if !self.valid.get(b * spb + off) {
                    continue;
                }
                if off as u32 >= meta.write_ptr {
                    return Err(format!("block {b}: slot {off} valid beyond write pointer {}", meta.write_ptr));
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
                if meta.write_ptr != 0 {
                    return Err(format!("free block {b} has write pointer {}", meta.write_ptr));
                }
            }
        }
        for (r, &b) in self.sort_open.iter().enumerate() {
            if b == NONE {
                continue;
            }
            let pool = self.div_bpp.div(b) as usize;
            if self.blocks[b as usize].state != BlockState::Open || self.pools[pool].host_open == b || self.pools[pool].gc_open == b {
                return Err(format!("region {r}: open block {b} is not an open sort block"));
            }
            let mut lpns = self.valid.iter_set(b as usize * spb, (b as usize + 1) * spb).map(|s| self.p2l[s]);
            if let Some(lpn) = lpns.find(|&l| self.sort_region(l) != r) {
                return Err(format!("region {r}: open block {b} holds LPN {lpn} of region {}", self.sort_region(lpn)));
            }
        }
        if free_total != self.free_blocks_total {
            return Err(format!("free block count {} but {free_total} blocks are free", self.free_blocks_total));
        }
        let bpp = self.geo.blocks_per_pool;
        let mut listed_free = vec![false; self.geo.blocks];
        for (p, pool) in self.pools.iter().enumerate() {
            let in_pool = |b: u32| (p * bpp..(p + 1) * bpp).contains(&(b as usize));
            // The free list holds exactly the plane's free blocks, each once.
            for &b in &pool.free {
                if !in_pool(b) {
                    return Err(format!("plane {p}: free list holds block {b} of another plane"));
                }
                if self.blocks[b as usize].state != BlockState::Free {
                    return Err(format!("plane {p}: block {b} is on the free list but in use ({:?})", self.blocks[b as usize].state));
                }
                if std::mem::replace(&mut listed_free[b as usize], true) {
                    return Err(format!("plane {p}: block {b} is on the free list twice"));
                }
            }
            if let Some(b) = (p * bpp..(p + 1) * bpp).find(|&b| self.blocks[b].state == BlockState::Free && !listed_free[b]) {
                return Err(format!("plane {p}: free block {b} is missing from the free list"));
            }
            // Open blocks: the host and GC blocks (the host block of a plane that ran out of room
            // is a full record past the drive's blocks) and idle sorting's region blocks.
            for (what, b) in [("host", pool.host_open), ("GC", pool.gc_open)] {
                let state = self.blocks.get(b as usize).map(|blk| blk.state);
                let host_after_failure = what == "host" && self.out_of_space.as_ref().is_some_and(|o| o.plane == p) && b as usize == self.geo.blocks;
                if !host_after_failure && (!in_pool(b) || state != Some(BlockState::Open)) {
                    return Err(format!("plane {p}: {what} open block {b} is not an open block of the plane ({state:?})"));
                }
            }
            if let Some(b) = (p * bpp..(p + 1) * bpp).find(|&b| {
                self.blocks[b].state == BlockState::Open && b as u32 != pool.host_open && b as u32 != pool.gc_open && !self.sort_open.contains(&(b as u32))
            }) {
                return Err(format!("plane {p}: block {b} is open but neither the host, the GC nor a region block"));
            }
            if pool.bg_victim != NONE && (!in_pool(pool.bg_victim) || self.blocks[pool.bg_victim as usize].state != BlockState::Victim) {
                return Err(format!("plane {p}: active-GC victim {} is not in victim state", pool.bg_victim));
            }
            if self.geo.gc_policy == GcPolicy::Fifo {
                for &b in &pool.closed_fifo {
                    if !in_pool(b) || self.blocks[b as usize].state != BlockState::Closed {
                        return Err(format!("plane {p}: FIFO entry block {b} is not a closed block of the plane"));
                    }
                }
            }
            let closed = (0..self.geo.blocks_per_pool)
                .map(|i| p * self.geo.blocks_per_pool + i)
                .filter(|&b| self.blocks[b].state == BlockState::Closed)
                .count();
            let listed = match self.geo.gc_policy {
                GcPolicy::Fifo => pool.closed_fifo.len(),
                GcPolicy::CostBenefit | GcPolicy::DChoices(_) => {
                    for (i, &b) in pool.closed.iter().enumerate() {
                        if self.meta[b as usize].pos as usize != i || self.blocks[b as usize].state != BlockState::Closed {
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

    /// Damages the FTL's state on purpose, so that tests can check that
    /// [`Ftl::check_invariants`] notices (built with the `test-hooks` feature only).
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn corrupt(&mut self, c: Corruption) {
        let spb = self.geo.slots_per_block;
        match c {
            Corruption::P2lMismatch { lpn, other } => {
                let slot = self.l2p[lpn as usize];
                assert_ne!(slot, NONE, "LPN {lpn} is not mapped");
                self.p2l[slot as usize] = other as u32;
            }
            Corruption::ValidCount { block, delta } => {
                let v = &mut self.blocks[block].valid;
                *v = v.wrapping_add_signed(delta);
            }
            Corruption::FreeBlockInUse { block } => {
                let pool = block / self.geo.blocks_per_pool;
                assert_ne!(self.blocks[block].state, BlockState::Free, "block {block} is free");
                self.pools[pool].free.push_back(block as u32);
            }
            Corruption::FreeBlockLost { pool } => {
                self.pools[pool].free.pop_back().expect("the plane has a free block");
            }
            Corruption::LostUpdate { lpn, stale_slot } => {
                assert_eq!(self.p2l[stale_slot as usize], lpn as u32, "slot {stale_slot} never held LPN {lpn}");
                assert!(!self.valid.get(stale_slot as usize), "slot {stale_slot} is current");
                assert!((stale_slot as usize) < self.geo.blocks * spb);
                self.l2p[lpn as usize] = stale_slot;
            }
            Corruption::MappedCount { delta } => self.mapped = self.mapped.wrapping_add_signed(delta),
        }
    }
}

/// Kinds of damage [`Ftl::corrupt`] does (tests only).
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum Corruption {
    /// The P2L entry of `lpn`'s slot names `other` instead.
    P2lMismatch { lpn: u64, other: u64 },
    /// Block `block`'s valid count is off by `delta`.
    ValidCount { block: usize, delta: i32 },
    /// Block `block` (in use) is also put on its plane's free list.
    FreeBlockInUse { block: usize },
    /// The last block of plane `pool`'s free list drops off it (still marked free).
    FreeBlockLost { pool: usize },
    /// `lpn`'s mapping goes back to `stale_slot`, a copy that a later write replaced: the
    /// later write is lost (reads return the old data).
    LostUpdate { lpn: u64, stale_slot: u32 },
    /// The count of mapped logical units is off by `delta`.
    MappedCount { delta: i64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_division_is_exact() {
        let mut rng = Rng::new(9);
        let mut divisors: Vec<usize> = (1..=1100).collect();
        divisors.extend([1536, 3072, 4095, 4096, 6144, 65535, 65536, 100_003, 1 << 20, (1 << 31) - 1, 1 << 31, u32::MAX as usize]);
        for d in divisors {
            let f = FastDiv::new(d);
            let mut ns: Vec<u32> = vec![0, 1, u32::MAX, u32::MAX - 1, d as u32, (d - 1) as u32];
            ns.extend((0..200).map(|_| rng.below(1 << 32) as u32));
            let q = u32::MAX / d as u32;
            ns.extend([q * d as u32, (q * d as u32).wrapping_sub(1), (q * d as u32).saturating_add(1)]);
            for n in ns {
                assert_eq!(f.div(n), n / d as u32, "{n} / {d}");
            }
        }
    }

    #[test]
    fn valid_bits_ranges_and_iteration() {
        let mut rng = Rng::new(4);
        let n = 1000;
        let mut bits = ValidBits::new(n);
        let mut model = vec![false; n];
        for _ in 0..2000 {
            let a = rng.below(n as u64) as usize;
            let b = (a + rng.below(150) as usize).min(n);
            match rng.below(4) {
                0 => {
                    bits.fill(a, b, true);
                    model[a..b].iter_mut().for_each(|x| *x = true);
                }
                1 => {
                    bits.fill(a, b, false);
                    model[a..b].iter_mut().for_each(|x| *x = false);
                }
                2 => {
                    bits.set(a);
                    model[a] = true;
                }
                _ => {
                    bits.clear(a);
                    model[a] = false;
                }
            }
            let expect: Vec<usize> = (a..b).filter(|&s| model[s]).collect();
            assert_eq!(bits.iter_set(a, b).collect::<Vec<_>>(), expect);
            let mut seen = Vec::new();
            bits.for_each_set(a, b, |s| seen.push(s));
            assert_eq!(seen, expect);
            assert_eq!(bits.next_set(a, b), expect.first().copied().unwrap_or(b));
            assert_eq!(bits.count(a, b), expect.len());
            assert!((0..n).all(|s| bits.get(s) == model[s]));
        }
    }
}
