//! Greedy: the emptiest closed block. A plane keeps its closed blocks in buckets by valid
//! count (doubly linked lists through the block records), so the victim is found from the
//! lowest non-empty bucket (`min_hint`: no closed block has fewer valid units) and an
//! invalidation moves its block one bucket down.

use super::super::*;
use super::VictimPolicy;

pub(super) struct Greedy;

impl VictimPolicy for Greedy {
    #[inline]
    fn closed(&self, ftl: &mut Ftl, pool: usize, b: u32) {
        let v = ftl.blocks[b as usize].valid as usize;
        ftl.bucket_push(pool, b, v);
    }

    #[inline(always)]
    fn invalidated(&self, ftl: &mut Ftl, b: u32, old_valid: usize) {
        let pool = ftl.div_bpp.div(b) as usize;
        ftl.bucket_remove(pool, b, old_valid);
        ftl.bucket_push(pool, b, old_valid - 1);
    }

    fn has_victim(&self, ftl: &Ftl, pool: usize) -> bool {
        let p = &ftl.pools[pool];
        p.buckets.iter().skip(p.min_hint).any(|&h| h != NONE)
    }

    fn peek_victim_valid(&self, ftl: &Ftl, pool: usize) -> Option<u32> {
        let p = &ftl.pools[pool];
        p.buckets.iter().enumerate().skip(p.min_hint).find(|(_, &h)| h != NONE).map(|(v, _)| v as u32)
    }

    fn select(&self, ftl: &mut Ftl, pool: usize) -> u32 {
        let p = &mut ftl.pools[pool];
        let mut v = p.min_hint;
        while v < p.buckets.len() && p.buckets[v] == NONE {
            v += 1;
        }
        assert!(v < p.buckets.len(), "plane {pool}: no closed block to collect");
        p.min_hint = v;
        let b = p.buckets[v];
        ftl.bucket_remove(pool, b, v);
        b
    }

    /// None when the emptiest closed block is fully valid (it stays where it was).
    fn select_useful(&self, ftl: &mut Ftl, pool: usize) -> Option<u32> {
        let victim = self.select(ftl, pool);
        let spb = ftl.geo.slots_per_block;
        if ftl.blocks[victim as usize].valid as usize == spb {
            ftl.bucket_push(pool, victim, spb);
            return None;
        }
        Some(victim)
    }

    fn take(&self, ftl: &mut Ftl, pool: usize, b: u32) {
        ftl.bucket_remove(pool, b, ftl.blocks[b as usize].valid as usize);
    }

    fn check(&self, ftl: &Ftl, p: usize) -> Result<usize, String> {
        let pool = &ftl.pools[p];
        let mut n = 0;
        for (v, &head) in pool.buckets.iter().enumerate() {
            let mut b = head;
            while b != NONE {
                if ftl.blocks[b as usize].valid as usize != v {
                    return Err(format!("block {b} in greedy bucket {v} has {} valid", ftl.blocks[b as usize].valid));
                }
                if v < pool.min_hint {
                    return Err(format!("plane {p}: block in bucket {v} below min hint {}", pool.min_hint));
                }
                n += 1;
                b = ftl.blocks[b as usize].next;
            }
        }
        Ok(n)
    }
}

impl Ftl {
    #[inline(always)]
    pub(in crate::ftl) fn bucket_push(&mut self, pool: usize, b: u32, v: usize) {
        let p = &mut self.pools[pool];
        let head = p.buckets[v];
        self.blocks[b as usize].prev = NONE;
        self.blocks[b as usize].next = head;
        if head != NONE {
            self.blocks[head as usize].prev = b;
        }
        p.buckets[v] = b;
        if v < p.min_hint {
            p.min_hint = v;
        }
    }

    #[inline(always)]
    pub(in crate::ftl) fn bucket_remove(&mut self, pool: usize, b: u32, v: usize) {
        let (prev, next) = (self.blocks[b as usize].prev, self.blocks[b as usize].next);
        if prev != NONE {
            self.blocks[prev as usize].next = next;
        } else {
            self.pools[pool].buckets[v] = next;
        }
        if next != NONE {
            self.blocks[next as usize].prev = prev;
        }
    }
}
