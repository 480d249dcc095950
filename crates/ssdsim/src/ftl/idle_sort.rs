//! Idle GC that sorts by LBA (`gc_idle_sort_regions`): copies each unit into the open block of
//! its LBA region, so that idle time undoes the LBA mixing GC causes.

use super::*;

impl Ftl {
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
    pub(super) fn sort_region(&self, lpn: u32) -> usize {
        region_of(self.owner(lpn), self.sort_open.len() as u64, self.geo.user_units)
    }

    /// Lowest and highest LPN of the valid units in block `b` (None if it holds none).
    pub(super) fn valid_lpn_range(&self, b: usize) -> Option<(u32, u32)> {
        let spb = self.geo.slots_per_block;
        self.valid.iter_set(b * spb, (b + 1) * spb).map(|s| self.p2l[s]).fold(None, |range, lpn| match range {
            None => Some((lpn, lpn)),
            Some((lo, hi)) => Some((lo.min(lpn), hi.max(lpn))),
        })
    }

    /// Whether every region could take a new block without eating into any plane's
    /// foreground-GC reserve (on average over the planes).
    pub(super) fn sort_has_room(&self) -> bool {
        let reserve = (self.geo.pools * (self.geo.gc_fg_free_blocks + 1)) as u64;
        self.free_blocks_total >= reserve + self.sort_open.len() as u64
    }

    /// The next closed, fully valid block of `pool` whose data spans more than one region.
    /// Blocks found to hold one region's data are marked sorted on the way.
    pub(super) fn next_unsorted(&mut self, pool: usize) -> Option<u32> {
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

    /// The open block of region `r`, first closed and replaced if it is full. A region's
    /// blocks go round-robin over the planes (each region starting at a different one), so
    /// that every plane holds an even share of every region: when a sequential overwrite
    /// passes a region, every plane gets its share of emptied blocks back, as it takes its
    /// share of the writes. Planes with fewer free blocks than the drive's average are
    /// skipped, so that sorting leaves the planes with even free space (a plane left short
    /// would soon have to collect nearly full sorted blocks in the foreground).
    pub(super) fn sort_block_with_room(&mut self, r: usize) -> u32 {
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
    pub(super) fn relocate_sorted(&mut self, pool: usize, victim: u32) {
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
}
