//! Foreground GC: a host write needs a new block and its plane is at `gc_fg_free_blocks`;
//! whole victims are collected (copied into the plane's GC block, then erased) until
//! `gc_fg_target_free_blocks`; and what happens when a plane runs out of room.

use super::*;

impl Ftl {
    /// GC of one whole victim in `pool`: relocate its valid units, erase it. Returns the
    /// units relocated, or None (nothing done) if collecting the policy's victim can free
    /// nothing ([`VictimPolicy::select_useful`]).
    pub(super) fn collect_one(&mut self, pool: usize) -> Option<usize> {
        let policy = self.geo.gc_policy;
        let victim = policy.select_useful(self, pool)?;
        Some(self.relocate(pool, victim, pool))
    }

    /// Moves the valid units of `victim` (a block of plane `pool`, taken out of its policy's
    /// structure) into the GC block(s) of plane `dest` and erases it; returns the units moved.
    /// `dest` is `pool` but for [`Ftl::spill`]. The page reads and the erase are `pool`'s GC
    /// work, the programs `dest`'s.
    fn relocate(&mut self, pool: usize, victim: u32, dest: usize) -> usize {
        self.fdp_gc_for(dest, victim);
        let spb = self.geo.slots_per_block;
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
            let b = self.gc_block_with_room(dest);
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
        self.fdp_moved(victim, &buf[..n]);
        // Every valid unit has moved: the victim holds no valid data now.
        self.blocks[victim as usize].valid -= n as u32;
        self.valid.fill(base, end, false);
        self.scratch_slots = slots;
        work.units_copied = n as u64;
        self.scratch = buf;
        self.erase(pool, victim);
        self.counters.gc_units += work.units_copied;
        self.counters.gc_runs += 1;
        self.pending[pool].page_reads += work.page_reads;
        self.pending[dest].units_copied += work.units_copied;
        n
    }

    /// A plane at its foreground-GC reserve needs a block for host data and no closed block
    /// holds invalid data, so its own GC can free nothing: GC moves one of its blocks to the
    /// plane holding the least data (after that plane's own GC has made room for it, keeping
    /// its reserve), as a drive's GC balances data over its planes. Planes collect their own
    /// blocks otherwise; writes go to whichever die is free first, so a workload (say two
    /// logs of different lifetimes) can leave more than a plane's share of data in one.
    /// Returns false (the drive is out of space) when no other plane can take a block.
    #[cold]
    pub(super) fn spill(&mut self, pool: usize) -> bool {
        let fg = self.geo.gc_fg_free_blocks;
        let least = (0..self.geo.pools).filter(|&q| q != pool).map(|q| (self.plane_valid_units(q), q)).min();
        let Some((held, dest)) = least else { return false };
        if held + self.geo.slots_per_block as u64 > self.plane_limit_units() || !self.has_victim(pool) {
            return false;
        }
        while self.pools[dest].free.len() <= fg + 1 {
            if !self.victim_has_invalid(dest) || self.collect_one(dest).is_none() {
                return false;
            }
        }
        let policy = self.geo.gc_policy;
        let victim = policy.select(self, pool);
        self.relocate(pool, victim, dest);
        self.counters.spilled_blocks += 1;
        true
    }

    /// Valid 4 KiB units plane `pool` holds (companion slots of compressed data included).
    fn plane_valid_units(&self, pool: usize) -> u64 {
        let bpp = self.geo.blocks_per_pool;
        self.blocks[pool * bpp..(pool + 1) * bpp].iter().map(|b| b.valid as u64).sum()
    }

    /// The most valid units a plane can hold and still always find a block with invalid data
    /// at its reserve: (blocks_per_plane − gc_fg_free_blocks − 2) × slots per block − 1.
    pub(super) fn plane_limit_units(&self) -> u64 {
        ((self.geo.blocks_per_pool - self.geo.gc_fg_free_blocks - 2) * self.geo.slots_per_block - 1) as u64
    }

    /// Erases an emptied victim and returns it to the free list.
    pub(super) fn erase(&mut self, pool: usize, victim: u32) {
        self.fdp_erased(victim);
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

    /// The GC open block of `pool`, first closed and replaced by a free block if it is full.
    #[inline]
    pub(super) fn gc_block_with_room(&mut self, pool: usize) -> u32 {
        let b = self.pools[pool].gc_open;
        if self.meta[b as usize].write_ptr as usize != self.geo.slots_per_block {
            return b;
        }
        self.close_block(pool, b);
        let b = self.pop_free(pool);
        self.meta[b as usize].handle = self.fdp_gc_tag(pool);
        self.pools[pool].gc_open = b;
        b
    }

    /// Records that `pool` ran out of room (see [`Ftl::check_space`]).
    #[cold]
    pub(super) fn fail_out_of_space(&mut self, pool: usize) {
        let spb = self.geo.slots_per_block;
        self.out_of_space = Some(OutOfSpace {
            plane: pool,
            free_blocks: self.pools[pool].free.len(),
            valid_units: self.plane_valid_units(pool),
            plane_limit_units: self.plane_limit_units(),
        });
        // The plane's host block may have been collected meanwhile: point its host block at a
        // full record past the drive's blocks, so that every later write to the plane finds
        // it full and stops in `alloc_host_slot`, which touches nothing once the drive failed.
        let full = BlockMeta { write_ptr: spb as u32, erase_count: 0, pos: NONE, mtime: 0, sorted: false, handle: 0 };
        self.meta.truncate(self.geo.blocks);
        self.meta.push(full);
        self.pools[pool].host_open = self.geo.blocks as u32;
    }

    /// Ok while every plane can take data. Err once a plane ran out of room: it needed a
    /// block for host data while at its foreground-GC reserve and no block held invalid
    /// data (every closed block fully valid), so GC could free nothing, and no other plane
    /// could take one of its blocks ([`Ftl::spill`]). Profile validation rules this out
    /// while each plane holds no more than its share of the user capacity, and a plane given
    /// more (writes go to whichever die is free first, idle sorting moves data between
    /// planes) spills to the plane holding the least, which then holds less than its share;
    /// the property tests hold valid profiles to that. The error names the profile key to
    /// change (more spare area: a lower `user_capacity_bytes`).
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
                 ({:.1}% of its {} slots; at most {} leave GC a block to free), and no other plane could take one of its blocks \
                 (each holds as much, less a block's worth). Lower user_capacity_bytes (more spare area per plane) or raise \
                 blocks_per_plane",
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
}
