//! Flexible Data Placement (NVMe TP4146): each write names a reclaim unit handle (RUH), and
//! every plane keeps one open host block per handle, so data written through different
//! handles never shares a block when written. A reclaim unit (RU) is one erase block of a
//! plane (the FTL's erase and GC unit). GC then follows the handle type: *initially
//! isolated* handles share the plane's one GC block (GC mixes their data), *persistently
//! isolated* ones each have a GC block of their own in every plane (a block only ever holds
//! one handle's data).
//!
//! The plane's `host_open` (and, persistently isolated, `gc_open`) is the block of the
//! handle it last wrote through; the other handles' blocks wait in `host_stash` / `gc_stash`
//! and are swapped in when a write (or a GC victim) of their handle comes to the plane, so
//! the write and GC paths are those of a drive without FDP. Each block records the handle whose data it holds
//! ([`SHARED`] for a GC block of initially isolated handles): every valid unit of a block of
//! one handle was last written through that handle, so GC copies out of it count for the
//! block's handle. Only initially isolated handles, whose shared GC blocks mix handles, also
//! record for each logical unit the handle it was last written through.

use super::*;

/// The handle tag of a block that may hold several handles' data (the shared GC block of
/// initially isolated handles).
pub(super) const SHARED: u16 = u16::MAX;

/// What happened to the data of one reclaim unit handle, cumulative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandleCounters {
    /// Host 4 KiB units written through the handle [units].
    pub host_units: u64,
    /// Units of the handle's data relocated by GC [units]. The handle's NAND units are
    /// `host_units + gc_units`, its write amplification their ratio to `host_units`.
    pub gc_units: u64,
    /// Reclaim units (erase blocks) the handle's host writes filled [RUs].
    pub ru_filled: u64,
    /// Reclaim units holding only this handle's data that were erased [RUs].
    pub ru_reclaimed: u64,
}

impl HandleCounters {
    /// Units programmed to NAND for the handle's data (host + GC).
    pub fn nand_units(&self) -> u64 {
        self.host_units + self.gc_units
    }
}

/// The FTL's FDP state; empty (no handles) with FDP off.
#[derive(Clone, Debug, Default)]
pub(super) struct Fdp {
    /// Reclaim unit handles (0: FDP off).
    handles: usize,
    /// The handle host writes go through now.
    handle: usize,
    /// The handle whose open host block is each plane's `host_open` (a plane takes
    /// `handle`'s when a host write comes to it: a switch of handles touches no plane).
    host_handle: Vec<u32>,
    /// Open host block of handle h in plane p at `p * handles + h` (NONE for
    /// `host_handle[p]`'s, which is in the plane's `host_open`).
    host_stash: Vec<u32>,
    /// Persistently isolated: the open GC block of each handle, as `host_stash`, and the
    /// handle whose GC block each plane's `gc_open` is. Empty when initially isolated.
    gc_stash: Vec<u32>,
    gc_handle: Vec<u32>,
    /// Handle each logical unit was last written through; initially isolated handles only
    /// (empty when persistently isolated: no block holds several handles' data).
    lpn_handle: Vec<u8>,
    counters: Vec<HandleCounters>,
    /// Reclaim units erased that held data of several handles (initially isolated GC blocks).
    shared_reclaimed: u64,
}

impl Fdp {
    /// Heap bytes of the FDP state.
    pub(super) fn state_bytes(&self) -> usize {
        (self.host_handle.capacity() + self.host_stash.capacity() + self.gc_stash.capacity() + self.gc_handle.capacity()) * 4
            + self.lpn_handle.capacity()
            + self.counters.capacity() * std::mem::size_of::<HandleCounters>()
    }
}

impl Ftl {
    /// Sets up FDP on a new FTL (`geo.fdp_handles` > 0): opens a host block for every further
    /// handle in every plane, and a GC block too when handles are persistently isolated.
    pub(super) fn init_fdp(&mut self) {
        let (h, pools) = (self.geo.fdp_handles, self.geo.pools);
        if h == 0 {
            return;
        }
        let persistent = self.geo.fdp_persistent;
        self.fdp = Fdp {
            handles: h,
            handle: 0,
            host_handle: vec![0; pools],
            host_stash: vec![NONE; pools * h],
            gc_stash: if persistent { vec![NONE; pools * h] } else { Vec::new() },
            gc_handle: if persistent { vec![0; pools] } else { Vec::new() },
            lpn_handle: if persistent { Vec::new() } else { big_vec(self.l2p.len(), 0) },
            counters: vec![HandleCounters::default(); h],
            shared_reclaimed: 0,
        };
        for p in 0..pools {
            let gc = self.pools[p].gc_open as usize;
            self.meta[gc].handle = if persistent { 0 } else { SHARED };
            for k in 1..h {
                let b = self.pop_free(p);
                self.meta[b as usize].handle = k as u16;
                self.fdp.host_stash[p * h + k] = b;
                if persistent {
                    let b = self.pop_free(p);
                    self.meta[b as usize].handle = k as u16;
                    self.fdp.gc_stash[p * h + k] = b;
                }
            }
        }
    }

    /// FDP: host writes from now on go through reclaim unit handle `handle` (below the
    /// profile's `fdp_reclaim_unit_handles`). No effect with FDP off.
    #[inline]
    pub fn set_handle(&mut self, handle: usize) {
        debug_assert!(handle < self.fdp.handles.max(1));
        if self.fdp.handles != 0 {
            self.fdp.handle = handle;
        }
    }

    /// Before a host write to plane `pool`: makes its `host_open` the block of the handle in
    /// use (nothing with FDP off).
    #[inline(always)]
    pub(super) fn fdp_host_pool(&mut self, pool: usize) {
        let f = &self.fdp;
        if f.handles != 0 && f.host_handle[pool] as usize != f.handle {
            self.fdp_switch_host(pool);
        }
    }

    /// Stashes `pool`'s open host block and takes that of the handle in use.
    fn fdp_switch_host(&mut self, pool: usize) {
        let f = &mut self.fdp;
        let (h, cur, want) = (f.handles, f.host_handle[pool] as usize, f.handle);
        f.host_stash[pool * h + cur] = self.pools[pool].host_open;
        self.pools[pool].host_open = std::mem::replace(&mut f.host_stash[pool * h + want], NONE);
        f.host_handle[pool] = want as u32;
    }

    /// Blocks in use (open, closed or being collected) holding each handle's data only
    /// (empty with FDP off): the physical share each handle holds now [blocks].
    pub fn handle_blocks(&self) -> Vec<u64> {
        let mut out = vec![0; self.fdp.handles];
        if !out.is_empty() {
            for (b, m) in self.blocks.iter().zip(&self.meta) {
                if b.state != BlockState::Free && m.handle != SHARED {
                    out[m.handle as usize] += 1;
                }
            }
        }
        out
    }

    /// The handle host writes go through now (0 with FDP off).
    pub fn handle(&self) -> usize {
        self.fdp.handle
    }

    /// Per reclaim unit handle counters (empty with FDP off).
    pub fn handle_counters(&self) -> &[HandleCounters] {
        &self.fdp.counters
    }

    /// Reclaim units erased that held data of several handles (GC blocks shared by
    /// initially isolated handles) [RUs].
    pub fn shared_ru_reclaimed(&self) -> u64 {
        self.fdp.shared_reclaimed
    }

    /// A host write of `k` units from `lpn` through the current handle.
    #[inline(always)]
    pub(super) fn fdp_host(&mut self, lpn: usize, k: usize) {
        let f = &mut self.fdp;
        if f.handles != 0 {
            if let Some(t) = f.lpn_handle.get_mut(lpn..lpn + k) {
                t.fill(f.handle as u8);
            }
            f.counters[f.handle].host_units += k as u64;
        }
    }

    /// GC relocated the logical units `lpns` out of block `victim`: each counts for its handle.
    #[inline]
    pub(super) fn fdp_moved(&mut self, victim: u32, lpns: &[u32]) {
        count_moved(&mut self.fdp, self.meta[victim as usize].handle, lpns);
    }

    /// GC relocated the units now in slots `from..to` of the P2L table out of block `victim`.
    #[inline]
    pub(super) fn fdp_moved_slots(&mut self, victim: u32, from: usize, to: usize) {
        count_moved(&mut self.fdp, self.meta[victim as usize].handle, &self.p2l[from..to]);
    }

    /// The current handle's host block was filled and closed.
    #[inline]
    pub(super) fn fdp_filled(&mut self) {
        let f = &mut self.fdp;
        if f.handles != 0 {
            f.counters[f.handle].ru_filled += 1;
        }
    }

    /// Block `b`, a reclaim unit, is being erased.
    #[inline]
    pub(super) fn fdp_erased(&mut self, b: u32) {
        let f = &mut self.fdp;
        if f.handles != 0 {
            match self.meta[b as usize].handle {
                SHARED => f.shared_reclaimed += 1,
                h => f.counters[h as usize].ru_reclaimed += 1,
            }
        }
    }

    /// Persistently isolated handles: makes `pool`'s GC block that of the handle whose data
    /// `victim` holds, before GC copies it.
    #[inline(always)]
    pub(super) fn fdp_gc_for(&mut self, pool: usize, victim: u32) {
        if !self.fdp.gc_handle.is_empty() {
            self.fdp_switch_gc(pool, victim);
        }
    }

    /// [`Ftl::fdp_gc_for`] with persistently isolated handles (out of line: active GC calls
    /// it on every step, and most drives have no handles).
    #[inline(never)]
    fn fdp_switch_gc(&mut self, pool: usize, victim: u32) {
        let f = &mut self.fdp;
        let want = self.meta[victim as usize].handle as u32;
        let cur = f.gc_handle[pool];
        if want != cur {
            let h = f.handles;
            f.gc_stash[pool * h + cur as usize] = self.pools[pool].gc_open;
            self.pools[pool].gc_open = std::mem::replace(&mut f.gc_stash[pool * h + want as usize], NONE);
            f.gc_handle[pool] = want;
        }
    }

    /// The handle tag a new GC block of `pool` takes.
    #[inline]
    pub(super) fn fdp_gc_tag(&self, pool: usize) -> u16 {
        match self.fdp.gc_handle.get(pool) {
            Some(&h) => h as u16,
            None if self.fdp.handles != 0 => SHARED,
            None => 0,
        }
    }

    /// Grows the per-unit handle table with the logical unit table (companion units, which
    /// hold their owner's data: they take its handle).
    pub(super) fn fdp_resize(&mut self) {
        if !self.fdp.lpn_handle.is_empty() {
            let (user, per) = (self.geo.user_units as usize, self.companions as usize);
            let t = &mut self.fdp.lpn_handle;
            t.resize(self.l2p.len(), 0);
            for c in user..t.len() {
                t[c] = t[(c - user) / per];
            }
        }
    }

    /// The handle tag of a new host block: the handle in use.
    #[inline]
    pub(super) fn fdp_host_tag(&self) -> u16 {
        self.fdp.handle as u16
    }


    /// Whether block `b` of plane `p` is an open block of a handle not in use (stashed).
    pub(super) fn fdp_stashed(&self, p: usize, b: u32) -> bool {
        let h = self.fdp.handles;
        let of = |v: &Vec<u32>| v.get(p * h..(p + 1) * h).is_some_and(|s| s.contains(&b));
        h != 0 && (of(&self.fdp.host_stash) || of(&self.fdp.gc_stash))
    }
}

/// Counts GC copies of the logical units `lpns`, moved out of a block tagged `tag`, for their
/// handles (nothing with FDP off): all for the block's handle, unless the block is a shared
/// GC block (each unit for the handle it was last written through).
#[inline]
fn count_moved(f: &mut Fdp, tag: u16, lpns: &[u32]) {
    if f.handles == 0 {
        return;
    }
    if tag != SHARED {
        debug_assert!(f.lpn_handle.is_empty() || lpns.iter().all(|&l| f.lpn_handle[l as usize] as u16 == tag));
        f.counters[tag as usize].gc_units += lpns.len() as u64;
        return;
    }
    for &l in lpns {
        f.counters[f.lpn_handle[l as usize] as usize].gc_units += 1;
    }
}
