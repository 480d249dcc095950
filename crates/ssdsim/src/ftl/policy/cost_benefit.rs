//! Cost-benefit (Rosenblum and Ousterhout's LFS cleaner): the closed block with the highest
//! (1 − u) × age / 2u, u its valid fraction and age the host units written to its plane
//! since it was closed (an empty block first).

use super::super::*;
use super::FromClosedList;

pub(super) struct CostBenefit;

impl FromClosedList for CostBenefit {
    fn select_from_list(&self, ftl: &mut Ftl, pool: usize) -> u32 {
        let spb = ftl.geo.slots_per_block as f64;
        let now = ftl.pools[pool].host_units;
        let mut best = (f64::NEG_INFINITY, NONE);
        for &b in &ftl.pools[pool].closed {
            let u = ftl.blocks[b as usize].valid as f64 / spb;
            let age = (now - ftl.meta[b as usize].mtime) as f64 + 1.0;
            let score = if u == 0.0 { f64::INFINITY } else { (1.0 - u) * age / (2.0 * u) };
            if score > best.0 {
                best = (score, b);
            }
        }
        assert!(best.1 != NONE, "plane {pool}: no closed block to collect");
        ftl.closed_remove(pool, best.1);
        best.1
    }
}
