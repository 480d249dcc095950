//! The FTL's invariants, checked by the tests after every step, and the damage the tests
//! inject to prove the checker notices it (`test-hooks` feature).

use super::*;

impl Ftl {
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
                self.blocks[b].state == BlockState::Open
                    && b as u32 != pool.host_open
                    && b as u32 != pool.gc_open
                    && !self.sort_open.contains(&(b as u32))
                    && !self.fdp_stashed(p, b as u32)
            }) {
                return Err(format!("plane {p}: block {b} is open but neither the host, the GC, an FDP handle's nor a region block"));
            }
            if pool.bg_victim != NONE && (!in_pool(pool.bg_victim) || self.blocks[pool.bg_victim as usize].state != BlockState::Victim) {
                return Err(format!("plane {p}: active-GC victim {} is not in victim state", pool.bg_victim));
            }
            let closed = (0..self.geo.blocks_per_pool)
                .map(|i| p * self.geo.blocks_per_pool + i)
                .filter(|&b| self.blocks[b].state == BlockState::Closed)
                .count();
            let listed = self.geo.gc_policy.check(self, p)?;
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
