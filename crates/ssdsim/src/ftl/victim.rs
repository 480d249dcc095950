//! Victim selection: the policies of `gc_policy` (greedy through valid-count buckets, FIFO,
//! cost-benefit, d-choices) over a plane's closed blocks.

use super::*;

impl Ftl {
    pub(super) fn has_victim(&self, pool: usize) -> bool {
        let p = &self.pools[pool];
        match self.geo.gc_policy {
            GcPolicy::Greedy => p.buckets.iter().skip(p.min_hint).any(|&h| h != NONE),
            GcPolicy::Fifo => !p.closed_fifo.is_empty(),
            GcPolicy::CostBenefit | GcPolicy::DChoices(_) => !p.closed.is_empty(),
        }
    }

    /// Valid units of the block greedy would pick (the emptiest closed block); None if no
    /// closed block. For other policies, the emptiest closed block too (a cheap scan).
    pub(super) fn peek_victim_valid(&self, pool: usize) -> Option<u32> {
        let p = &self.pools[pool];
        match self.geo.gc_policy {
            GcPolicy::Greedy => p.buckets.iter().enumerate().skip(p.min_hint).find(|(_, &h)| h != NONE).map(|(v, _)| v as u32),
            GcPolicy::Fifo => p.closed_fifo.iter().map(|&b| self.blocks[b as usize].valid).min(),
            _ => p.closed.iter().map(|&b| self.blocks[b as usize].valid).min(),
        }
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

    pub(super) fn select_victim(&mut self, pool: usize) -> u32 {
        match self.geo.gc_policy {
            GcPolicy::Greedy => {
                let p = &mut self.pools[pool];
                let mut v = p.min_hint;
                while v < p.buckets.len() && p.buckets[v] == NONE {
                    v += 1;
                }
                assert!(v < p.buckets.len(), "plane {pool}: no closed block to collect");
                p.min_hint = v;
                let b = p.buckets[v];
                self.bucket_remove(pool, b, v);
                b
            }
            GcPolicy::Fifo => self.pools[pool].closed_fifo.pop_front().expect("no closed block to collect"),
            GcPolicy::CostBenefit => {
                let spb = self.geo.slots_per_block as f64;
                let now = self.pools[pool].host_units;
                let mut best = (f64::NEG_INFINITY, NONE);
                for &b in &self.pools[pool].closed {
                    let u = self.blocks[b as usize].valid as f64 / spb;
                    let age = (now - self.meta[b as usize].mtime) as f64 + 1.0;
                    let score = if u == 0.0 { f64::INFINITY } else { (1.0 - u) * age / (2.0 * u) };
                    if score > best.0 {
                        best = (score, b);
                    }
                }
                assert!(best.1 != NONE, "plane {pool}: no closed block to collect");
                self.closed_remove(pool, best.1);
                best.1
            }
            GcPolicy::DChoices(d) => {
                let n = self.pools[pool].closed.len() as u64;
                assert!(n > 0, "plane {pool}: no closed block to collect");
                let mut best = NONE;
                for _ in 0..d {
                    let b = self.pools[pool].closed[self.rng.below(n) as usize];
                    if best == NONE || self.blocks[b as usize].valid < self.blocks[best as usize].valid {
                        best = b;
                    }
                }
                self.closed_remove(pool, best);
                best
            }
        }
    }

    #[inline(always)]
    pub(super) fn bucket_push(&mut self, pool: usize, b: u32, v: usize) {
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
    pub(super) fn bucket_remove(&mut self, pool: usize, b: u32, v: usize) {
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
