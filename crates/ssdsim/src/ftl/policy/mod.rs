//! GC victim policies (`gc_policy`): how a plane's closed blocks are kept and which one
//! garbage collection takes next. One file each: [`greedy`] (valid-count buckets: the
//! emptiest block), [`fifo`] (the oldest block), [`cost_benefit`] (free space gained times
//! age over cost) and [`d_choices`] (the emptiest of d sampled at random). [`VictimPolicy`] is
//! what the FTL asks of a policy; the profile's [`GcPolicy`] dispatches to its policy
//! statically (a `match` the compiler inlines), here and nowhere else.

use super::*;

mod cost_benefit;
mod d_choices;
mod fifo;
mod greedy;

use cost_benefit::CostBenefit;
use d_choices::DChoices;
use fifo::Fifo;
use greedy::Greedy;

/// What the FTL asks of a victim policy, for plane `pool` (planes keep their closed blocks
/// apart). A policy's state lives in the plane's [`Pool`].
pub(super) trait VictimPolicy {
    /// Block `b` of plane `pool` was closed (filled): from now on it may be a victim.
    fn closed(&self, ftl: &mut Ftl, pool: usize, b: u32);
    /// A unit of closed block `b` was invalidated; the block held `old_valid` valid units.
    #[inline(always)]
    fn invalidated(&self, _ftl: &mut Ftl, _b: u32, _old_valid: usize) {}
    /// Whether the plane has a closed block to collect.
    fn has_victim(&self, ftl: &Ftl, pool: usize) -> bool;
    /// Valid units of the emptiest closed block [units]; None if no closed block.
    fn peek_victim_valid(&self, ftl: &Ftl, pool: usize) -> Option<u32>;
    /// Takes the next victim out of the policy's structure; the plane must have one.
    fn select(&self, ftl: &mut Ftl, pool: usize) -> u32;
    /// [`VictimPolicy::select`], or None (nothing taken) when collecting its victim cannot
    /// free anything for certain. Only greedy knows that: its victim, the emptiest closed
    /// block, is then fully valid. (Other policies may relocate a full block and move on.)
    fn select_useful(&self, ftl: &mut Ftl, pool: usize) -> Option<u32> {
        Some(self.select(ftl, pool))
    }
    /// Takes closed block `b` out of the policy's structure (to collect it out of turn).
    fn take(&self, ftl: &mut Ftl, pool: usize, b: u32);
    /// Checks the policy's structure of plane `pool` against the blocks' states and valid
    /// counts; returns how many closed blocks it holds.
    fn check(&self, ftl: &Ftl, pool: usize) -> Result<usize, String>;
}

/// A policy that chooses its victim from the plane's unordered list of closed blocks
/// (cost-benefit, d-choices): the list's upkeep is the same for each.
pub(super) trait FromClosedList {
    /// Chooses the victim from the closed list (it has one) and takes it out.
    fn select_from_list(&self, ftl: &mut Ftl, pool: usize) -> u32;
}

impl<P: FromClosedList> VictimPolicy for P {
    fn closed(&self, ftl: &mut Ftl, pool: usize, b: u32) {
        ftl.meta[b as usize].mtime = ftl.pools[pool].host_units;
        ftl.closed_push(pool, b);
    }

    fn has_victim(&self, ftl: &Ftl, pool: usize) -> bool {
        !ftl.pools[pool].closed.is_empty()
    }

    /// The emptiest closed block's, as greedy's (a cheap scan).
    fn peek_victim_valid(&self, ftl: &Ftl, pool: usize) -> Option<u32> {
        ftl.pools[pool].closed.iter().map(|&b| ftl.blocks[b as usize].valid).min()
    }

    fn select(&self, ftl: &mut Ftl, pool: usize) -> u32 {
        self.select_from_list(ftl, pool)
    }

    fn take(&self, ftl: &mut Ftl, pool: usize, b: u32) {
        ftl.closed_remove(pool, b);
    }

    fn check(&self, ftl: &Ftl, pool: usize) -> Result<usize, String> {
        ftl.closed_check(pool)
    }
}

/// Calls `$call` on the policy `$policy` names: the one place the policies are dispatched.
macro_rules! dispatch {
    ($policy:expr, $p:ident => $call:expr) => {
        match $policy {
            GcPolicy::Greedy => {
                let $p = Greedy;
                $call
            }
            GcPolicy::Fifo => {
                let $p = Fifo;
                $call
            }
            GcPolicy::CostBenefit => {
                let $p = CostBenefit;
                $call
            }
            GcPolicy::DChoices(d) => {
                let $p = DChoices(d);
                $call
            }
        }
    };
}

impl VictimPolicy for GcPolicy {
    #[inline]
    fn closed(&self, ftl: &mut Ftl, pool: usize, b: u32) {
        dispatch!(*self, p => p.closed(ftl, pool, b))
    }

    #[inline(always)]
    fn invalidated(&self, ftl: &mut Ftl, b: u32, old_valid: usize) {
        dispatch!(*self, p => p.invalidated(ftl, b, old_valid))
    }

    #[inline]
    fn has_victim(&self, ftl: &Ftl, pool: usize) -> bool {
        dispatch!(*self, p => p.has_victim(ftl, pool))
    }

    #[inline]
    fn peek_victim_valid(&self, ftl: &Ftl, pool: usize) -> Option<u32> {
        dispatch!(*self, p => p.peek_victim_valid(ftl, pool))
    }

    #[inline]
    fn select(&self, ftl: &mut Ftl, pool: usize) -> u32 {
        dispatch!(*self, p => p.select(ftl, pool))
    }

    #[inline]
    fn select_useful(&self, ftl: &mut Ftl, pool: usize) -> Option<u32> {
        dispatch!(*self, p => p.select_useful(ftl, pool))
    }

    fn take(&self, ftl: &mut Ftl, pool: usize, b: u32) {
        dispatch!(*self, p => p.take(ftl, pool, b))
    }

    fn check(&self, ftl: &Ftl, pool: usize) -> Result<usize, String> {
        dispatch!(*self, p => p.check(ftl, pool))
    }
}

/// The FTL's questions to the profile's policy.
impl Ftl {
    pub(super) fn has_victim(&self, pool: usize) -> bool {
        self.geo.gc_policy.has_victim(self, pool)
    }

    /// Valid units of the block greedy would pick (the emptiest closed block); None if no
    /// closed block. For other policies, the emptiest closed block too (a cheap scan).
    pub(super) fn peek_victim_valid(&self, pool: usize) -> Option<u32> {
        self.geo.gc_policy.peek_victim_valid(self, pool)
    }

    pub(super) fn select_victim(&mut self, pool: usize) -> u32 {
        let policy = self.geo.gc_policy;
        policy.select(self, pool)
    }

    /// Takes closed block `b` out of the GC policy's structure (to collect it).
    pub(super) fn take_closed(&mut self, pool: usize, b: u32) {
        let policy = self.geo.gc_policy;
        policy.take(self, pool, b)
    }
}

/// The unordered list of closed blocks that cost-benefit and d-choices choose from: each
/// block's place in it is its `pos`.
impl Ftl {
    pub(super) fn closed_push(&mut self, pool: usize, b: u32) {
        self.meta[b as usize].pos = self.pools[pool].closed.len() as u32;
        self.pools[pool].closed.push(b);
    }

    pub(super) fn closed_remove(&mut self, pool: usize, b: u32) {
        let i = self.meta[b as usize].pos as usize;
        let closed = &mut self.pools[pool].closed;
        closed.swap_remove(i);
        if i < closed.len() {
            let moved = closed[i];
            self.meta[moved as usize].pos = i as u32;
        }
        self.meta[b as usize].pos = NONE;
    }

    /// Checks the closed list of plane `pool`: every entry a closed block at its `pos`.
    pub(super) fn closed_check(&self, pool: usize) -> Result<usize, String> {
        let closed = &self.pools[pool].closed;
        for (i, &b) in closed.iter().enumerate() {
            if self.meta[b as usize].pos as usize != i || self.blocks[b as usize].state != BlockState::Closed {
                return Err(format!("plane {pool}: closed list entry {i} (block {b}) out of sync"));
            }
        }
        Ok(closed.len())
    }
}
