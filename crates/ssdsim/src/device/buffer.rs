//! The DRAM write buffer: units wait here for a free slot, are acknowledged once buffered,
//! fill one multi-plane program at a time for the die picked, and free their slots when the
//! program ends. Foreground GC a write triggers and pseudo-SLC folding are booked from here.

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

use super::Device;
use crate::config::StallScope;
use crate::ftl::GcWork;
use crate::media::MediaWork;
use crate::time::Ns;

/// The write buffer and the program being filled.
pub(super) struct WriteBuffer {
    /// Capacity [units].
    pub(super) capacity_units: u64,
    /// Units held (buffered, not yet programmed) [units].
    pub(super) used_units: u64,
    /// Programs in flight per die, oldest first: (end time [ns], units they free). A die's
    /// programs end in the order they were sent (its free time only grows).
    pub(super) pending: Vec<VecDeque<(Ns, u64)>>,
    /// (end of a die's oldest program in flight [ns], die), earliest first; one per die with
    /// programs in flight. A heap of at most one entry per die, not of every program.
    pub(super) next: BinaryHeap<Reverse<(Ns, usize)>>,
    /// The multi-plane program being filled: its die [die index], units so far [units], and
    /// when its data is ready [ns].
    pub(super) die: usize,
    pub(super) fill_units: usize,
    pub(super) ready_ns: Ns,
    /// Plane of the die that the i-th unit of a program goes to (`i / units_per_page`) [plane index].
    pub(super) fill_plane: Vec<usize>,
}

impl Device {
    /// Waits from `t` for write-buffer space for one unit of a write accepted at `accepted`,
    /// then moves the unit over the host link; returns when it has crossed.
    #[inline(always)]
    pub(super) fn buffer_and_send(&mut self, accepted: Ns, t: Ns) -> Ns {
        let t = self.reserve_buffer_unit(t);
        self.write_transfer(accepted, t)
    }

    /// Takes one write-buffer unit at or after `t`; returns when it is available. Space is
    /// freed out of order, as each program ends: data waiting for a die busy with GC does
    /// not block data bound for other dies until the buffer is full.
    #[inline(always)]
    pub(super) fn reserve_buffer_unit(&mut self, mut t: Ns) -> Ns {
        while let Some(mut next) = self.buf.next.peek_mut() {
            let Reverse((end, die)) = *next;
            if end > t && self.buf.used_units < self.buf.capacity_units {
                break;
            }
            let (_, units) = self.buf.pending[die].pop_front().expect("a die in buf_next has a program in flight");
            match self.buf.pending[die].front() {
                Some(&(later, _)) => *next = Reverse((later, die)),
                None => drop(PeekMut::pop(next)),
            }
            self.buf.used_units -= units;
            t = t.max(end);
        }
        self.buf.used_units += 1;
        t
    }

    /// Puts one buffered unit into the program being filled; programs it when full.
    #[inline(always)]
    pub(super) fn place_unit<const PIPED: bool>(&mut self, lpn: u64, ready: Ns) {
        if self.buf.fill_units == 0 {
            self.buf.die = self.pick_die();
        }
        let pool = self.buf.die * self.geo.planes_per_die + self.buf.fill_plane[self.buf.fill_units];
        let payload = self.next_payload;
        self.next_payload += 1;
        let work = if PIPED { self.pipe().work() } else { self.ftl.write_and_take_gc_work(lpn, pool, payload) };
        if work != GcWork::default() {
            self.charge_gc(pool, work, ready);
            if self.geo.gc_fg_stall == StallScope::Drive && work.foreground_victims != 0 {
                self.drive_wide_gc(pool, ready);
            }
        }
        self.buf.fill_units += 1;
        self.buf.ready_ns = ready;
        if self.buf.fill_units == self.geo.units_per_program {
            self.program_pending();
        }
    }

    /// Sends the full multi-plane program to its die and frees its buffer slots at the end.
    /// With a pseudo-SLC cache, the program goes to SLC or the native mode, and the dies
    /// fold cached data where the cache needs room ([`SlcCache::plan_program`],
    /// [`Device::book_folds`]).
    pub(super) fn program_pending(&mut self) {
        let die = self.buf.die;
        let mut t_prog = self.dies.t_prog_ns;
        let mut fold_units = 0;
        if let Some(c) = self.slc.as_mut() {
            let plan = c.plan_program(self.buf.fill_units as u64, self.geo.user_units.saturating_sub(self.ftl.mapped_units()));
            t_prog = plan.slc_t_prog.unwrap_or(t_prog);
            fold_units = plan.fold_units;
        }
        let start = self.program_channel(self.channel_of_die(die), self.dies.free_ns[die].max(self.buf.ready_ns));
        if self.calendars {
            self.dies.queue[die].push(self.ctrl.free_ns, start, start + self.chan.program_ns + t_prog);
        }
        let end = start + self.chan.program_ns + t_prog;
        self.dies.free_ns[die] = end;
        self.timing.host_prog_die_ns += t_prog;
        self.timing.host_programs += 1;
        let in_flight = &mut self.buf.pending[die];
        debug_assert!(in_flight.back().is_none_or(|&(last, _)| last <= end), "a die's programs end in order");
        if in_flight.is_empty() {
            self.buf.next.push(Reverse((end, die)));
        }
        in_flight.push_back((end, self.buf.fill_units as u64));
        let units = self.buf.fill_units as u64;
        self.media.book(die, end, end, move || MediaWork { nand_units: units, ..MediaWork::default() });
        self.buf.fill_units = 0;
        if fold_units > 0 {
            self.book_folds(fold_units, start);
        }
    }

    /// Books folding of `units` from `from` on: a program's worth at a time on the dies in
    /// turn, as the cached data is spread over them. Charged to the host program's own die
    /// it would make that die take less host data than the others with the `earliest` die
    /// allocation, piling data into some planes. (With `striped`, the dies' turns for folding
    /// and for host data run out of step, which costs a few percent of the rate.)
    pub(super) fn book_folds(&mut self, units: u64, from: Ns) {
        let Some(c) = self.slc.as_ref() else { return };
        let per_program = self.geo.units_per_program as u64;
        let (whole_ns, part_ns) = (c.fold_ns(per_program), c.fold_ns(units % per_program));
        for k in 0..units.div_ceil(per_program) {
            let (busy, n) = if (k + 1) * per_program <= units { (whole_ns, per_program) } else { (part_ns, units % per_program) };
            let die = self.fold_die;
            self.fold_die = (self.fold_die + 1) % self.geo.dies;
            let end = self.occupy_die(die, from, busy) + busy;
            self.book_fold(die, n, end);
            self.timing.fold_die_ns += busy;
        }
    }

    /// Books `units` folded on `die`, done at `end`.
    pub(super) fn book_fold(&mut self, die: usize, units: u64, end: Ns) {
        self.media.book(die, end, end, move || MediaWork { nand_units: units, fold_units: units, ..MediaWork::default() });
    }
}
