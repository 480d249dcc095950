//! FIFO: the block closed longest ago, whatever it holds.

use super::super::*;
use super::VictimPolicy;

pub(super) struct Fifo;

impl VictimPolicy for Fifo {
    fn closed(&self, ftl: &mut Ftl, pool: usize, b: u32) {
        ftl.pools[pool].closed_fifo.push_back(b);
    }

    fn has_victim(&self, ftl: &Ftl, pool: usize) -> bool {
        !ftl.pools[pool].closed_fifo.is_empty()
    }

    /// The emptiest closed block's, as greedy's (a cheap scan).
    fn peek_victim_valid(&self, ftl: &Ftl, pool: usize) -> Option<u32> {
        ftl.pools[pool].closed_fifo.iter().map(|&b| ftl.blocks[b as usize].valid).min()
    }

    fn select(&self, ftl: &mut Ftl, pool: usize) -> u32 {
        ftl.pools[pool].closed_fifo.pop_front().expect("no closed block to collect")
    }

    fn take(&self, ftl: &mut Ftl, pool: usize, b: u32) {
        let q = &mut ftl.pools[pool].closed_fifo;
        let i = q.iter().position(|&x| x == b).expect("closed block is in the FIFO");
        q.remove(i);
    }

    fn check(&self, ftl: &Ftl, p: usize) -> Result<usize, String> {
        let bpp = ftl.geo.blocks_per_pool;
        let fifo = &ftl.pools[p].closed_fifo;
        for &b in fifo {
            if !(p * bpp..(p + 1) * bpp).contains(&(b as usize)) || ftl.blocks[b as usize].state != BlockState::Closed {
                return Err(format!("plane {p}: FIFO entry block {b} is not a closed block of the plane"));
            }
        }
        Ok(fifo.len())
    }
}
