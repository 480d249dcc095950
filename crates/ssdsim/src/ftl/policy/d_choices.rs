//! d-choices: the emptiest of `gc_d_choices` closed blocks drawn at random (with
//! replacement, from the FTL's seeded random numbers).

use super::super::*;
use super::VictimPolicy;

/// Blocks drawn per victim [count].
pub(super) struct DChoices(pub(super) usize);

impl VictimPolicy for DChoices {
    fn closed(&self, ftl: &mut Ftl, pool: usize, b: u32) {
        ftl.meta[b as usize].mtime = ftl.pools[pool].host_units;
        ftl.closed_push(pool, b);
    }

    fn has_victim(&self, ftl: &Ftl, pool: usize) -> bool {
        !ftl.pools[pool].closed.is_empty()
    }

    /// The emptiest closed block's, as greedy's (a cheap scan).
    fn peek_victim_valid(&self, ftl: &Ftl, pool: usize) -> Option<u32> {
        ftl.closed_min_valid(pool)
    }

    fn select(&self, ftl: &mut Ftl, pool: usize) -> u32 {
        let n = ftl.pools[pool].closed.len() as u64;
        assert!(n > 0, "plane {pool}: no closed block to collect");
        let mut best = NONE;
        for _ in 0..self.0 {
            let b = ftl.pools[pool].closed[ftl.rng.below(n) as usize];
            if best == NONE || ftl.blocks[b as usize].valid < ftl.blocks[best as usize].valid {
                best = b;
            }
        }
        ftl.closed_remove(pool, best);
        best
    }

    fn take(&self, ftl: &mut Ftl, pool: usize, b: u32) {
        ftl.closed_remove(pool, b);
    }

    fn check(&self, ftl: &Ftl, pool: usize) -> Result<usize, String> {
        ftl.closed_check(pool)
    }
}
