//! Compressed data: the companion slots a unit of less compressible data fills beyond its
//! own, mapped as hidden logical units so GC moves them like any data.

use super::*;

impl Ftl {
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
        self.stream_map = self.streams_map();
        self.companions = per_unit;
        self.fdp_resize();
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
    pub(super) fn owner(&self, lpn: u32) -> u32 {
        let user = self.geo.user_units;
        if (lpn as u64) < user || self.companions == 0 {
            lpn
        } else {
            ((lpn as u64 - user) / self.companions) as u32
        }
    }
}
