//! d-choices: the emptiest of `gc_d_choices` closed blocks drawn at random (with
//! replacement, from the FTL's seeded random numbers).

use super::super::*;
use super::FromClosedList;

/// Blocks drawn per victim [count].
pub(super) struct DChoices(pub(super) usize);

impl FromClosedList for DChoices {
    fn select_from_list(&self, ftl: &mut Ftl, pool: usize) -> u32 {
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
}
