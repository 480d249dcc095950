//! Idle-time garbage collection and folding: what the dies do while the host leaves the
//! drive idle (`gc_idle_*`, pseudo-SLC folding).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::Device;
use crate::ftl::GcWork;
use crate::time::Ns;

/// Idle-time GC settings.
pub(super) struct IdleGc {
    /// Idle time before idle GC starts (`gc_idle_delay_ms`) [ns].
    pub(super) delay_ns: Ns,
    /// Free blocks per plane idle GC collects up to (`gc_idle_free_blocks`; 0: none) [blocks].
    pub(super) free_blocks: usize,
}

impl Device {
    /// How long the host must leave the drive idle before the idle time changes it
    /// (`gc_idle_delay_ms`: idle GC, an SLC cache folded or taken back in use; a gap only
    /// longer than this does) [ns]; None when idle time never changes it.
    pub fn idle_work_delay_ns(&self) -> Option<Ns> {
        let slc = self.slc.as_ref().is_some_and(|c| c.idle_changes());
        (self.idle.free_blocks > 0 || slc).then_some(self.idle.delay_ns)
    }

    /// The host has been idle from `from` for `duration`: after `gc_idle_delay_ms`, each
    /// die collects victims in its planes (round-robin) until every plane has
    /// `gc_idle_free_blocks` free blocks or the idle period is over. Returns the number of
    /// victims collected. With `gc_idle_sort_regions`, see [`Device::idle_sorting`].
    pub fn idle(&mut self, from: Ns, duration: Ns) -> u64 {
        if duration <= self.idle.delay_ns {
            return 0;
        }
        // Folding first, every die its share: it brings the cache back for the next burst.
        if let Some(mut c) = self.slc.take() {
            c.rest();
            let per_program = c.program_fold_ns().max(1);
            let share = c.idle_programs().div_ceil(self.geo.dies as u64);
            let end = from + duration;
            for die in 0..self.geo.dies {
                let from_die = self.dies.free_ns[die].max(from + self.idle.delay_ns);
                let folded = c.folded_units();
                let busy = c.idle_fold(share.min(end.saturating_sub(from_die) / per_program));
                if busy > 0 {
                    let done = self.occupy_die(die, from_die, busy) + busy;
                    self.book_fold(die, c.folded_units() - folded, done);
                    self.timing.fold_die_ns += busy;
                }
            }
            self.slc = Some(c);
        }
        if self.idle.free_blocks == 0 {
            return 0;
        }
        if self.geo.gc_idle_sort_regions != 0 {
            return self.idle_sorting(from, duration);
        }
        let end = from + duration;
        let planes = self.geo.planes_per_die;
        let mut collected = 0;
        for die in 0..self.geo.dies {
            let mut t = self.dies.free_ns[die].max(from + self.idle.delay_ns);
            let mut plane = 0;
            let mut idle_planes = 0;
            while t < end && idle_planes < planes {
                let pool = die * planes + plane;
                plane = (plane + 1) % planes;
                if !self.ftl.collect_for_idle(pool, self.idle.free_blocks) {
                    idle_planes += 1;
                    continue;
                }
                idle_planes = 0;
                collected += 1;
                let work = self.ftl.take_gc_work(pool);
                self.dies.free_ns[die] = self.dies.free_ns[die].max(t);
                self.charge_gc(pool, work, t);
                t = self.dies.free_ns[die];
            }
        }
        collected
    }

    /// Idle GC that sorts by LBA region ([`Ftl::sort_for_idle`]). Copies cross planes, so
    /// the dies are served in time order: the die free earliest (among those with a plane
    /// that still has work) collects its next victim, reading and erasing on its own die
    /// while the copies are programmed on the dies that hold the region blocks. Open region
    /// blocks are closed at the end. Returns the number of victims collected.
    ///
    /// Time: reads and erase on the victim's die; programs on each destination die, no
    /// earlier than the victim's time.
    pub(super) fn idle_sorting(&mut self, from: Ns, duration: Ns) -> u64 {
        let end = from + duration;
        let start = from + self.idle.delay_ns;
        let planes = self.geo.planes_per_die;
        let mut has_work = vec![true; self.geo.pools];
        let mut planes_with_work = vec![planes; self.geo.dies];
        let mut next_plane = vec![0; self.geo.dies];
        let mut collected = 0;
        // The dies with work by the time they are free (from `start`), earliest first, ties
        // to the lowest die. Keys may lag behind: a die's time only grows, so a popped key
        // older than the die's time is pushed again with it.
        let mut due: BinaryHeap<Reverse<(Ns, usize)>> = (0..self.geo.dies).map(|d| Reverse((self.dies.free_ns[d].max(start), d))).collect();
        // Copies land on every die: stop once any die is booked to the end of the idle
        // period (each die overruns it by at most one victim's work, as without sorting).
        let mut past_end = self.dies.free_ns.iter().any(|&f| f >= end);
        while let Some(Reverse((key, die))) = due.pop() {
            let t = self.dies.free_ns[die].max(start);
            if t > key {
                due.push(Reverse((t, die)));
                continue;
            }
            if t >= end || past_end {
                break;
            }
            let plane = (0..planes).map(|k| (next_plane[die] + k) % planes).find(|&p| has_work[die * planes + p]).expect("die has work");
            next_plane[die] = (plane + 1) % planes;
            let pool = die * planes + plane;
            if !self.ftl.sort_for_idle(pool, self.idle.free_blocks) {
                has_work[pool] = false;
                planes_with_work[die] -= 1;
                if planes_with_work[die] > 0 {
                    due.push(Reverse((t, die)));
                }
                continue;
            }
            collected += 1;
            self.dies.free_ns[die] = t;
            let work = self.ftl.take_gc_work(pool);
            self.charge_gc(pool, work, t);
            for q in (0..self.geo.pools).filter(|&q| q != pool) {
                let work = self.ftl.take_gc_work(q);
                if work != GcWork::default() {
                    self.charge_gc(q, work, t);
                }
            }
            past_end = self.dies.free_ns.iter().any(|&f| f >= end);
            due.push(Reverse((self.dies.free_ns[die].max(start), die)));
        }
        self.ftl.close_sort_streams();
        collected
    }
}
