//! Active (background) GC: below `gc_bg_start_free_blocks`, each host unit written to a
//! plane pays `gc_bg_copies_per_write` relocations (or, with `gc_bg_reclaim_ratio`, what its
//! victim needs) of a victim collected incrementally, until the plane is back at
//! `gc_bg_stop_free_blocks`.

use super::*;

impl Ftl {
    /// Active GC after a host write to `pool`: hysteresis between the start and stop
    /// watermarks; while on, relocates `gc_bg_copies_per_write` units per host unit.
    ///
    /// Each whole unit of credit pays one *step*: the relocation of the victim's next valid
    /// unit, or the erase of the victim once it has none (choosing a victim first if needed).
    /// If a step cannot be done the credit is dropped.
    /// Returns the units copied and pages read (not yet in `pending`); erases and victim
    /// selections are recorded as usual.
    #[inline]
    pub(super) fn active_gc(&mut self, pool: usize) -> ActiveWork {
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

    /// [`Ftl::spend_active_gc_credit`] when it takes exactly one step that relocates a unit
    /// (less than two units of credit, a victim with a valid unit left, room in the GC block):
    /// that unit moved as [`Ftl::active_gc_steps`] would move it, without setting up a run.
    /// None otherwise, having changed nothing but (with FDP) which GC block is the plane's
    /// open one, as the general path makes it first. The usual case while active GC runs: a
    /// host write pays a reclaim ratio's worth of copies, one or none.
    #[inline(always)]
    fn active_gc_one_copy(&mut self, pool: usize) -> Option<ActiveWork> {
        let spb = self.geo.slots_per_block;
        let p = &self.pools[pool];
        let (victim, gc) = (p.bg_victim, p.gc_open as usize);
        if p.bg_credit >= 2.0 || victim == NONE || self.meta[gc].write_ptr as usize == spb {
            return None;
        }
        let base = victim as usize * spb;
        let s = self.valid.next_set(base + p.bg_cursor as usize, base + spb);
        if s == base + spb {
            return None;
        }
        // With FDP, the GC block of the victim's handle.
        self.fdp_gc_for(pool, victim);
        let gc = self.pools[pool].gc_open as usize;
        if self.meta[gc].write_ptr as usize == spb {
            return None;
        }
        let off = s - base;
        let mut fetched = self.pools[pool].bg_fetched as usize;
        if !self.stream_map {
            prefetch_victim_ahead(&self.valid, &self.p2l[base..base + spb], &self.l2p, base, &mut fetched, (off + BG_AHEAD + 1).min(spb));
        }
        let page = self.div_upp.div(off as u32);
        let read = u64::from(page != self.pools[pool].bg_read_page);
        let dst = gc * spb + self.meta[gc].write_ptr as usize;
        let lpn = self.p2l[s];
        self.p2l[dst] = lpn;
        if self.stream_map {
            store_streamed(&mut self.l2p[lpn as usize], dst as u32);
        } else {
            self.l2p[lpn as usize] = dst as u32;
        }
        if let Some(p) = self.payload.as_mut() {
            p[dst] = p[s];
        }
        self.valid.clear(s);
        self.valid.set(dst);
        self.fdp_moved_slots(victim, dst, dst + 1);
        self.meta[gc].write_ptr += 1;
        self.blocks[gc].valid += 1;
        self.blocks[victim as usize].valid -= 1;
        let p = &mut self.pools[pool];
        p.bg_cursor = off as u32 + 1;
        p.bg_read_page = page;
        p.bg_fetched = fetched as u32;
        p.bg_credit -= 1.0;
        self.counters.gc_units += 1;
        Some(ActiveWork { copied: 1, page_reads: read })
    }

    #[inline(never)]
    pub(super) fn spend_active_gc_credit(&mut self, pool: usize) -> ActiveWork {
        if let Some(work) = self.active_gc_one_copy(pool) {
            return work;
        }
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
    pub(super) fn start_active_victim(&mut self, pool: usize) -> bool {
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
        // L2 meanwhile), then (unless active GC streams its L2P stores) start fetching the L2P
        // entries of its first valid units.
        let base = v as usize * spb;
        for line in self.p2l[base..base + spb].chunks(16) {
            prefetch_ptr(line.as_ptr());
        }
        if !self.stream_map {
            for s in base..base + BG_AHEAD.min(spb) {
                if self.valid.get(s) {
                    self.prefetch(self.p2l[s] as u64);
                }
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
    pub(super) fn active_gc_steps(&mut self, pool: usize, credit: &mut f64) -> (BgStop, ActiveWork) {
        let spb = self.geo.slots_per_block;
        let victim = self.pools[pool].bg_victim;
        debug_assert_ne!(victim, NONE);
        self.fdp_gc_for(pool, victim);
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
            let (k, run_reads) = match (self.payload.is_some(), self.stream_map) {
                (true, _) => self.active_run::<true, false>(victim as usize, gc, wp, &mut run),
                (false, false) => self.active_run::<false, false>(victim as usize, gc, wp, &mut run),
                (false, true) => self.active_run::<false, true>(victim as usize, gc, wp, &mut run),
            };
            (cursor, read_page, fetched, *credit) = (run.cursor, run.read_page, run.fetched, run.credit);
            reads += run_reads;
            // Every valid slot of the victim in run_start..cursor moved to the run's slots.
            self.valid.fill(base + run_start, base + cursor, false);
            self.valid.fill(gc * spb + wp, gc * spb + wp + k, true);
            self.fdp_moved_slots(victim, gc * spb + wp, gc * spb + wp + k);
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
    /// `TRACK`: payload tracking (a separate instance keeps the common loop lean). `STREAM`:
    /// the L2P entries are written with [`store_streamed`] instead of prefetched
    /// ([`Ftl::stream_map`]; the payload-tracking instance, for tests, only prefetches).
    #[inline(always)]
    pub(super) fn active_run<const TRACK: bool, const STREAM: bool>(&mut self, victim: usize, gc: usize, wp: usize, run: &mut RunState) -> (usize, u64) {
        let spb = self.geo.slots_per_block;
        let (base, dst0) = (victim * spb, gc * spb + wp);
        let (src, dst) = two_blocks_mut(&mut self.p2l, victim, gc, spb);
        let dst = &mut dst[wp..];
        let (l2p, bits, div_upp) = (&mut self.l2p[..], &self.valid, self.div_upp);
        let mut payload = if TRACK { self.payload.as_deref_mut() } else { None };
        let mut units = bits.iter_set(base + run.cursor, base + spb);
        let (c, mut page_seen, mut reads, mut k, mut fetched) = (run.credit, run.read_page, 0u64, 0usize, run.fetched);
        // One unit per whole unit of credit (`as` truncates, saturating: infinite credit is no
        // limit): `k` steps of `c -= 1.0` (exact for 1 <= c < 2^53) leave `c - k`; at most the
        // room in the GC block.
        let limit = (c as usize).min(dst.len());
        while k < limit {
            let Some(s) = units.next() else {
                run.cursor = spb;
                break;
            };
            let off = s - base;
            if !STREAM {
                prefetch_victim_ahead(bits, src, l2p, base, &mut fetched, (off + BG_AHEAD + 1).min(spb));
            }
            let page = div_upp.div(off as u32);
            reads += u64::from(page != page_seen);
            page_seen = page;
            let lpn = src[off];
            dst[k] = lpn;
            if STREAM {
                store_streamed(&mut l2p[lpn as usize], (dst0 + k) as u32);
            } else {
                l2p[lpn as usize] = (dst0 + k) as u32;
            }
            if TRACK {
                if let Some(p) = payload.as_deref_mut() {
                    p[dst0 + k] = p[s];
                }
            }
            k += 1;
            run.cursor = off + 1;
        }
        run.credit = c - k as f64;
        run.read_page = page_seen;
        run.fetched = fetched;
        (k, reads)
    }

    /// If active GC has a victim in `pool`, collects it to the end (unlimited credit) and
    /// returns whether it was erased; None if there is no such victim.
    pub(super) fn finish_active_victim(&mut self, pool: usize) -> Option<bool> {
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

    /// Whether collecting in `pool` can gain space: some closed block holds invalid data.
    /// O(1) for greedy; a scan of the closed blocks for the other policies.
    pub(super) fn victim_has_invalid(&self, pool: usize) -> bool {
        self.peek_victim_valid(pool).is_some_and(|v| (v as usize) < self.geo.slots_per_block)
    }
}

/// Prefetches the L2P entries of the valid units of a victim (its valid bits from slot
/// `base`, its P2L entries `src`) from slot offset `*fetched` up to `want`, a word of valid
/// bits at a time (up to 63 slots further than `want`), and moves `*fetched` on.
#[inline(always)]
fn prefetch_victim_ahead(bits: &ValidBits, src: &[u32], l2p: &[u32], base: usize, fetched: &mut usize, want: usize) {
    let spb = src.len();
    while *fetched < want {
        let from = base + *fetched;
        let end = ((from | 63) + 1).min(base + spb);
        let mut w = bits.word_from(from, end);
        while w != 0 {
            let o = (from & !63) + w.trailing_zeros() as usize - base;
            prefetch_ptr(l2p.as_ptr().wrapping_add(src[o] as usize));
            w &= w - 1;
        }
        *fetched = end - base;
    }
}
