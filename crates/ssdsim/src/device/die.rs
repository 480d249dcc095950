//! The dies: when each is free, the calendar of work booked on it that reads may go before,
//! the GC work charged to it, and how the next program's die is picked.

use std::collections::VecDeque;

use super::Device;
use crate::config::StallScope;
use crate::ftl::{FastDiv, GcWork};
use crate::media::MediaWork;
use crate::time::Ns;

/// The dies, by index.
pub(super) struct Dies {
    /// Per die, when it is free of all work booked on it [ns].
    pub(super) free_ns: Vec<Ns>,
    /// Per die, the programs and GC work booked on it, which reads go before if not started.
    pub(super) queue: Vec<DieQueue>,
    /// Page read (sense) time (`t_read_us`) [ns].
    pub(super) t_read_ns: Ns,
    /// Page program time (`t_prog_us`) [ns].
    pub(super) t_prog_ns: Ns,
    /// Block erase time (`t_erase_us`) [ns].
    pub(super) t_erase_ns: Ns,
    /// Per pool (plane), GC-copied data not yet making a full page [units].
    pub(super) gc_carry_units: Vec<u64>,
    /// Per die, GC work booked as `(start, end)` [ns], in time order, back-to-back work
    /// merged; bookings that end by the time given to [`Device::forget_gc_before`] are gone.
    pub(super) gc_booked: Vec<VecDeque<(Ns, Ns)>>,
    /// Latest time given to [`Device::forget_gc_before`] [ns].
    pub(super) gc_forgotten_ns: Ns,
    /// Pool to die (planes per die) and GC-copied units to whole pages (units per page),
    /// without a `div` instruction on every GC booking.
    pub(super) die_of_pool: FastDiv,
    pub(super) pages_of_units: FastDiv,
}

/// Most operations [`Device::start_calendars`] records on a die for the work booked on it
/// before the drive kept calendars: their memory is bounded whatever the timings.
const CALENDAR_PIECES: Ns = 1 << 14;

/// What a die is booked for beyond the reads ([`Device::read_start`]): host programs and GC
/// work in time order (those over by the time of the command that books or reads are
/// dropped), and when its last read ends. Each operation is kept as its start relative to
/// the previous one's and its duration [ns], so a read that moves every later operation
/// back moves one entry.
#[derive(Clone, Default)]
pub(super) struct DieQueue {
    /// `(start - previous start, duration)` [ns]; the first's relative start is unused.
    pub(super) ops: VecDeque<(Ns, Ns)>,
    /// Start of the first and of the last operation [ns].
    first_start: Ns,
    last_start: Ns,
    read_end: Ns,
}

impl DieQueue {
    /// Records work booked on the die from `start` to `end` (after everything booked) by a
    /// command at `now`.
    #[inline(always)]
    pub(super) fn push(&mut self, now: Ns, start: Ns, end: Ns) {
        self.drop_over(now);
        if self.ops.is_empty() {
            self.first_start = start;
            self.ops.push_back((0, end - start));
        } else {
            debug_assert!(start >= self.last_start, "die work is booked in time order");
            self.ops.push_back((start - self.last_start, end - start));
        }
        self.last_start = start;
    }

    /// Drops the operations over by `now`.
    #[inline(always)]
    fn drop_over(&mut self, now: Ns) {
        while let Some(&(_, len)) = self.ops.front() {
            if self.first_start + len > now {
                break;
            }
            self.ops.pop_front();
            if let Some(&(rel, _)) = self.ops.front() {
                self.first_start += rel;
            }
        }
    }

    /// Moves operation `i` and every later one back by `shift` [ns].
    #[inline(always)]
    fn delay_from(&mut self, i: usize, shift: Ns) {
        if i == 0 {
            self.first_start += shift;
        } else {
            self.ops[i].0 += shift;
        }
        self.last_start += shift;
    }
}

impl Device {
    /// Die time of the GC work decided so far that the dies have carried out by `t`, summed
    /// over dies [ns]: [`super::TimingCounters::gc_die_ns`] less the booked work still ahead of
    /// `t`, or by the last time given to [`Device::forget_gc_before`] if that is later (it
    /// no longer knows the work between). In the time since an earlier `t`, it grows by at
    /// most the number of dies times that time.
    pub fn gc_die_done_ns(&self, t: Ns) -> Ns {
        let t = t.max(self.dies.gc_forgotten_ns);
        let mut ahead = 0;
        for booked in &self.dies.gc_booked {
            for &(start, end) in booked.iter().rev() {
                if end <= t {
                    break;
                }
                ahead += end - start.max(t);
            }
        }
        self.timing.gc_die_ns - ahead
    }

    /// Drops the GC bookings that end by `t` and the work the series counts that is over by
    /// then: the caller asks [`Device::gc_die_done_ns`] and [`Device::media_done`] about no
    /// earlier time from now on.
    pub fn forget_gc_before(&mut self, t: Ns) {
        self.dies.gc_forgotten_ns = self.dies.gc_forgotten_ns.max(t);
        self.media.forget_before(t);
        for booked in &mut self.dies.gc_booked {
            while booked.front().is_some_and(|&(_, end)| end <= t) {
                booked.pop_front();
            }
        }
    }

    /// The die for the next program: with `striped` allocation the one after the last used;
    /// with `earliest`, the one free earliest, so a die busy with GC is skipped while others
    /// can take data (ties go round-robin after the last die used): the first die, in cyclic
    /// order from the one after the last used, whose free time is the minimum, found as the
    /// minimum (a vectorised scan), then its first position.
    #[inline]
    pub(super) fn pick_die(&self) -> usize {
        let start = if self.buf.die + 1 == self.geo.dies { 0 } else { self.buf.die + 1 };
        if self.geo.die_striped {
            return start;
        }
        let free = &self.dies.free_ns[..];
        let earliest = *free.iter().min().expect("a drive has dies");
        let (before, after) = free.split_at(start);
        match after.iter().position(|&t| t == earliest) {
            Some(i) => start + i,
            None => before.iter().position(|&t| t == earliest).expect("the minimum is in the slice"),
        }
    }

    /// Books `busy` [ns] of work (GC, folding, map write-back) on `die` from when it is free,
    /// no earlier than `from`, in its calendar too once the drive keeps one (reads go before
    /// work booked later); returns the start. Inlined: a call per GC booking costs more than it.
    #[inline(always)]
    pub(super) fn occupy_die(&mut self, die: usize, from: Ns, busy: Ns) -> Ns {
        let start = self.dies.free_ns[die].max(from);
        self.dies.free_ns[die] = start + busy;
        if busy > 0 && self.calendars {
            self.dies.queue[die].push(self.ctrl.free_ns, start, start + busy);
        }
        start
    }

    /// Occupies the die of `pool` with the GC work, starting no earlier than `now`. Inlined:
    /// once GC runs, nearly every host write books some, and the call's register saves cost
    /// a tenth of the booking.
    #[inline(always)]
    pub(super) fn charge_gc(&mut self, pool: usize, work: GcWork, now: Ns) {
        let die = self.dies.die_of_pool.div(pool as u32) as usize;
        let carry = &mut self.dies.gc_carry_units[pool];
        *carry += work.units_copied;
        let programs = match u32::try_from(*carry) {
            Ok(units) => self.dies.pages_of_units.div(units) as u64,
            Err(_) => *carry / self.geo.units_per_page as u64,
        };
        *carry -= programs * self.geo.units_per_page as u64;
        let busy = work.page_reads * self.dies.t_read_ns + programs * self.dies.t_prog_ns + work.erases * self.dies.t_erase_ns;
        let start = self.occupy_die(die, now, busy);
        self.timing.gc_die_ns += busy;
        let (copied, erases) = (work.units_copied, work.erases);
        self.media.book(die, start, start + busy, move || MediaWork { nand_units: copied, gc_units: copied, erases, ..MediaWork::default() });
        if busy > 0 {
            let booked = &mut self.dies.gc_booked[die];
            match booked.back_mut() {
                Some(last) if last.1 == start => last.1 = start + busy,
                _ => booked.push_back((start, start + busy)),
            }
        }
        if self.geo.gc_fg_stall == StallScope::Drive && work.foreground_victims != 0 {
            // Firmware that stops serving the host while it collects.
            self.ctrl.free_ns = self.ctrl.free_ns.max(start + busy);
        }
    }

    /// Drive-scope foreground GC ("clean up later" firmware): once one plane is forced to
    /// collect, every plane at or below the foreground target collects up to it too, all dies
    /// in parallel, and the controller serves no host command until the slowest die is done.
    pub(super) fn drive_wide_gc(&mut self, trigger: usize, now: Ns) {
        let target = self.geo.gc_fg_target_free_blocks + 1;
        for pool in 0..self.geo.pools {
            if pool == trigger || self.ftl.pool_free_blocks(pool) >= target {
                continue;
            }
            while self.ftl.collect_for_idle(pool, target) {}
            let mut work = self.ftl.take_gc_work(pool);
            work.foreground_victims = work.erases;
            if work != GcWork::default() {
                self.charge_gc(pool, work, now);
            }
        }
    }

    /// Starts the dies' calendars at `now`, the first read: what each die has booked beyond
    /// `now` (host programs and GC work of a phase of writes, often well ahead) is recorded as
    /// operations of a program's time each (which work it is is not known), the first in
    /// progress; reads then go before those that have not started, as they would had the
    /// calendar been kept all along.
    pub(super) fn start_calendars(&mut self, now: Ns) {
        self.calendars = true;
        for (q, &free) in self.dies.queue.iter_mut().zip(&self.dies.free_ns) {
            if free > now {
                // The operation in progress started before `now` (when exactly does not matter
                // to a read); the rest is cut into a program's time each, as booked (into
                // longer pieces where that would make more than CALENDAR_PIECES).
                let piece = self.dies.t_prog_ns.max((free - now).div_ceil(CALENDAR_PIECES));
                let mut start = now.saturating_sub(1);
                let mut end = free.min(now + piece);
                loop {
                    q.push(now, start, end);
                    if end == free {
                        break;
                    }
                    (start, end) = (end, free.min(end + piece));
                }
            }
        }
    }

    /// When a read of a command accepted at `t` starts sensing on `die`, which it then
    /// holds for `t_read`: after the die's earlier reads and the program or GC work in
    /// progress at `t`, but before work booked to start later (a controller serves reads
    /// first), which moves back by what the read overlaps of it. Only the die's own schedule
    /// moves: the buffer space and channel time of programs already booked keep their times
    /// (their end is early by at most the reads that went before them).
    /// With no such work (a phase of only reads) this is `max(die free, t)`, as in order.
    pub(super) fn read_start(&mut self, die: usize, t: Ns) -> Ns {
        let q = &mut self.dies.queue[die];
        let mut s = t.max(q.read_end);
        q.drop_over(s);
        // Work that has started by then goes on to its end; `later` is the first operation
        // that starts after, and its start.
        let mut later = None;
        let mut start = q.first_start;
        for (i, &(rel, len)) in q.ops.iter().enumerate() {
            if i > 0 {
                start += rel;
            }
            if start >= s {
                later = Some((i, start));
                break;
            }
            s = s.max(start + len);
        }
        if later.is_none() {
            // Nothing recorded starts later, but the die may be booked later still (by work
            // from before the drive kept its calendars): wait for it, as in order.
            s = s.max(self.dies.free_ns[die]);
        }
        let end = s + self.dies.t_read_ns;
        let shift = later.map_or(0, |(_, start)| end.saturating_sub(start));
        if let (Some((i, _)), true) = (later, shift > 0) {
            q.delay_from(i, shift);
        }
        q.read_end = end;
        let free = &mut self.dies.free_ns[die];
        *free = if *free > s { *free + shift } else { end };
        s
    }
}
