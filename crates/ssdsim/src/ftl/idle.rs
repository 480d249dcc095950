//! Idle GC: whole victims collected while the host is idle ([`Ftl::collect_for_idle`], timed
//! by [`crate::device::Device::idle`]).

use super::*;

impl Ftl {
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
}
