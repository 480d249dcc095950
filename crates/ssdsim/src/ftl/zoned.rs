//! A zoned namespace's data placement: each zone's data goes to erase blocks of its own,
//! which a zone reset erases whole, so the drive never collects garbage and programs each
//! host unit once (write amplification 1). A zone of capacity C units holds C / slots per
//! block blocks, striped page by page over `g` planes ([`ZoneGeometry`]): page p of the zone
//! goes to plane (z·g + p mod g) mod planes, at row p / g of that plane's share. A zone's
//! block is taken from its plane's free list when the zone's first unit in it is written,
//! stays open (never a GC victim) until the reset, and returns to the free list erased.

use super::*;
use crate::config::ZoneGeometry;

impl Ftl {
    fn zone_geo(&self) -> &ZoneGeometry {
        self.geo.zones.as_ref().expect("a zoned write on a zoned namespace")
    }

    /// Plane, index among the zone's blocks and slot offset in that block of unit `off` of
    /// zone `z`.
    #[inline]
    fn zone_place(&self, z: usize, off: u64) -> (usize, usize, u32) {
        let zg = self.zone_geo();
        let upp = self.geo.units_per_page as u64;
        let pages_per_block = (self.geo.slots_per_block as u64) / upp;
        let page = off / upp;
        let (lane, row) = ((page % zg.planes as u64) as usize, page / zg.planes as u64);
        let pool = (z * zg.planes + lane) % self.geo.pools;
        let index = lane * zg.blocks_per_plane + (row / pages_per_block) as usize;
        (pool, index, ((row % pages_per_block) * upp + off % upp) as u32)
    }

    /// The plane unit `off` of zone `z` is written to.
    #[inline]
    pub(crate) fn zone_pool(&self, z: usize, off: u64) -> usize {
        self.zone_place(z, off).0
    }

    /// Writes logical unit `lpn`, unit `off` of zone `z` (at its write pointer: the zone
    /// state machine has checked it), into the zone's block; returns the slot.
    pub(crate) fn write_zoned(&mut self, lpn: u64, z: usize, off: u64, payload: u64) -> u32 {
        let (pool, index, in_block) = self.zone_place(z, off);
        let i = z * self.zone_geo().blocks() + index;
        if self.zone_blocks.is_empty() {
            self.zone_blocks = vec![NONE; self.zone_geo().zones * self.zone_geo().blocks()];
        }
        if self.zone_blocks[i] == NONE {
            self.zone_blocks[i] = self.pop_free(pool);
        }
        let b = self.zone_blocks[i];
        self.drop_old_copy(lpn as usize);
        let meta = &mut self.meta[b as usize];
        debug_assert_eq!(meta.write_ptr, in_block, "a zone's block is written in order");
        meta.write_ptr = in_block + 1;
        self.blocks[b as usize].valid += 1;
        let slot = b * self.geo.slots_per_block as u32 + in_block;
        self.map_host_unit(lpn, slot, pool, payload);
        slot
    }

    /// Zone reset of zone `z`, whose `held` units from `start` hold data: unmaps them and
    /// erases the zone's blocks (counted as GC work of their planes: the erases and their
    /// die time, [`Ftl::take_gc_work`]). Returns the planes the zone's blocks are in.
    pub(crate) fn reset_zone(&mut self, z: usize, start: u64, held: u64) -> std::ops::Range<usize> {
        for lpn in start..start + held {
            self.unmap(lpn);
        }
        let n = self.zone_geo().blocks();
        for i in z * n..(z + 1) * n {
            let b = self.zone_blocks.get(i).copied().unwrap_or(NONE);
            if b != NONE {
                self.zone_blocks[i] = NONE;
                self.erase(self.div_bpp.div(b) as usize, b);
            }
        }
        let planes = self.zone_geo().planes;
        z * planes..z * planes + planes
    }
}
