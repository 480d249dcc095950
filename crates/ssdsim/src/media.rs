//! When the drive carries out the work its counters count: host writes complete, dies
//! program, copy and erase. The FTL decides work (a write needs a block, GC picks a victim)
//! often well before the dies get to it; the per-interval series counts it when it is done,
//! so an interval's NAND bytes and its GC die time describe the same work.
//!
//! Each piece of work is booked on a lane (a die, or the host's completions) over the time
//! that carries it out, `[start, end)` [ns]: a program's units and a host write's bytes at
//! its end (`start == end`), GC copies and erases spread evenly over the die time of the GC
//! work that does them (rounded down; all of it by the end). [`MediaLedger::done_by`] gives
//! the work carried out by a time; [`MediaLedger::settle`] counts everything decided as done
//! (a phase's end: what its dies still have to do is booked in its last interval). While a
//! phase runs, its series asks only about its interval boundaries ([`MediaLedger::set_grid`]),
//! so work within one interval is kept as one booking per lane.

use std::collections::VecDeque;

use crate::time::Ns;

/// Amounts of work the series counts (each cumulative in a [`crate::Snapshot`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MediaWork {
    /// Host 4 KiB units written (companion slots of compressed data left out), and the
    /// bytes the host sent for them [bytes].
    pub host_units: u64,
    pub host_bytes: u64,
    /// 4 KiB units programmed to NAND (host data and companions, GC copies, folding, map
    /// pages written back).
    pub nand_units: u64,
    /// Units relocated by GC.
    pub gc_units: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Units folded from the pseudo-SLC cache into the native mode.
    pub fold_units: u64,
}

impl MediaWork {
    fn fields(&mut self) -> [&mut u64; 6] {
        [&mut self.host_units, &mut self.host_bytes, &mut self.nand_units, &mut self.gc_units, &mut self.erases, &mut self.fold_units]
    }

    /// Applies `f` to each amount of `self` and the same amount of `other`.
    fn zip(&mut self, mut other: MediaWork, f: impl Fn(&mut u64, u64)) {
        for (a, b) in self.fields().into_iter().zip(other.fields()) {
            f(a, *b);
        }
    }

    /// Field by field: on the hot path of every booking, where the generic `zip` costs more.
    #[inline(always)]
    fn add(&mut self, o: MediaWork) {
        self.host_units += o.host_units;
        self.host_bytes += o.host_bytes;
        self.nand_units += o.nand_units;
        self.gc_units += o.gc_units;
        self.erases += o.erases;
        self.fold_units += o.fold_units;
    }

    fn sub(&mut self, other: MediaWork) {
        self.zip(other, |a, b| *a -= b);
    }

    /// Takes from `self` up to `other` of each amount; returns what `other` has left.
    fn take_up_to(&mut self, mut other: MediaWork) -> MediaWork {
        for (s, o) in self.fields().into_iter().zip(other.fields()) {
            let k = (*s).min(*o);
            *s -= k;
            *o -= k;
        }
        other
    }

    /// The share `num / den` of each amount, rounded down.
    fn share(mut self, num: Ns, den: Ns) -> MediaWork {
        for v in self.fields() {
            *v = (*v as u128 * num as u128 / den as u128) as u64;
        }
        self
    }
}

/// Work booked on a lane, carried out evenly over `[start, end)` [ns] (at `end` when they
/// are equal).
#[derive(Clone, Copy, Debug, Default)]
struct Booking {
    start: Ns,
    end: Ns,
    work: MediaWork,
}

impl Booking {
    /// The part carried out by `t`.
    #[inline]
    fn done_by(&self, t: Ns) -> MediaWork {
        if t >= self.end {
            self.work
        } else if t <= self.start {
            MediaWork::default()
        } else {
            self.work.share(t - self.start, self.end - self.start)
        }
    }
}

/// A lane's last booking while it is work at one instant inside the grid cell `(lo, hi]`
/// [ns] (`on`): kept out of the lane's queue, so that the work booked within one cell adds up
/// in a few instructions. Logically the lane is its queue followed by it.
#[derive(Clone, Copy, Debug, Default)]
struct Tail {
    on: bool,
    lo: Ns,
    hi: Ns,
    booking: Booking,
}

/// Work booked and when it is carried out; see the module doc.
#[derive(Clone, Default)]
pub struct MediaLedger {
    /// Work booked so far and what [`MediaLedger::settle`] counted before it was booked.
    booked: MediaWork,
    /// Bookings not yet forgotten, per lane. On a die's lane they end in time order (a die's
    /// free time only grows); on the host's nearly so.
    lanes: Vec<VecDeque<Booking>>,
    /// Work [`MediaLedger::settle`] counted before it was booked (units of a program still
    /// being filled): the next bookings of that much are not counted again.
    credit: MediaWork,
    /// Whether `credit` holds any work (checked on every booking).
    in_credit: bool,
    /// The only times asked about while set ([`MediaLedger::set_grid`]): `start + k ×
    /// interval` [ns] up to `last`: (start, interval, last).
    grid: Option<(Ns, Ns, Ns)>,
    /// Per lane, the grid cell `(lo, hi]` [ns] looked up last.
    cells: Vec<(Ns, Ns)>,
    /// Per lane, its last booking if that is work at one instant in a grid cell.
    tails: Vec<Tail>,
}

impl MediaLedger {
    /// A ledger of `dies` die lanes and the host's lane.
    pub fn new(dies: usize) -> Self {
        MediaLedger {
            booked: MediaWork::default(),
            lanes: vec![VecDeque::new(); dies + 1],
            credit: MediaWork::default(),
            in_credit: false,
            grid: None,
            cells: vec![(0, 0); dies + 1],
            tails: vec![Tail::default(); dies + 1],
        }
    }

    /// Moves every lane's tail to the end of its queue.
    fn flush_tails(&mut self) {
        for (q, t) in self.lanes.iter_mut().zip(&mut self.tails) {
            if std::mem::take(&mut t.on) {
                q.push_back(t.booking);
            }
        }
    }

    /// From now until [`MediaLedger::settle`], counts are asked about only at `start + k ×
    /// interval` [ns] for k up to `cells` (a phase's interval boundaries): work carried out
    /// within one interval, or after the last boundary, is kept as one booking at its end,
    /// so a lane holds a few bookings per interval rather than one per command.
    pub fn set_grid(&mut self, start: Ns, interval: Ns, cells: u64) {
        let interval = interval.max(1);
        self.flush_tails();
        self.grid = Some((start, interval, start.saturating_add(cells.saturating_mul(interval))));
        self.cells.fill((0, 0));
    }

    /// The grid cell `(lo, hi]` holding `t`, if a grid is set (looked up for `lane`, whose
    /// bookings mostly fall in the cell of its last one).
    #[inline(always)]
    fn cell_of(&mut self, lane: usize, t: Ns) -> Option<(Ns, Ns)> {
        let (start, interval, last) = self.grid?;
        let cell = &mut self.cells[lane];
        if !(cell.0 < t && t <= cell.1) {
            *cell = if t > last {
                (last, Ns::MAX)
            } else {
                let hi = start + t.saturating_sub(start).div_ceil(interval) * interval;
                (hi.saturating_sub(interval), hi)
            };
        }
        Some(*cell)
    }

    /// The host's lane (host writes, by completion time).
    pub fn host_lane(&self) -> usize {
        self.lanes.len() - 1
    }

    /// Books `work()` on `lane`, carried out over `[start, end)` (at `end` if they are equal).
    /// Each booking is spread over its own time: work at the same instant as the lane's last
    /// booking joins it, and on a grid ([`MediaLedger::set_grid`]) so does all work within
    /// one cell.
    ///
    /// `work` builds the amounts where each path uses them: from the caller's registers on
    /// the paths inlined here, and in memory only for the calls out of line. (One value
    /// passed to those calls as well would live in memory on every path, written a field at
    /// a time and read back two at a time by the queue's copy: a failed store forward.)
    #[inline(always)]
    pub fn book(&mut self, lane: usize, start: Ns, end: Ns, work: impl Fn() -> MediaWork) {
        debug_assert!(start <= end);
        if self.in_credit {
            return self.book_in_credit(lane, start, end, work());
        }
        self.booked.add(work());
        // Within the grid cell of the lane's last booking, work at one instant: joins it.
        let t = &mut self.tails[lane];
        if t.on && t.lo < end && end <= t.hi && t.lo <= start {
            t.booking.end = t.booking.end.max(end);
            t.booking.start = t.booking.end;
            t.booking.work.add(work());
            return;
        }
        if self.grid.is_none() {
            // No grid (a replay's windows end at completion times): every booking is queued.
            return Self::queue(&mut self.lanes[lane], start, end, work());
        }
        self.book_queued(lane, start, end, work());
    }

    /// Queues a booking on lane `q`; work at the same instant as its last booking joins it.
    #[inline(always)]
    fn queue(q: &mut VecDeque<Booking>, start: Ns, end: Ns, work: MediaWork) {
        match q.back_mut() {
            // Two at the same instant.
            Some(last) if start == end && last.start == end && last.end == end => last.work.add(work),
            _ => q.push_back(Booking { start, end, work }),
        }
    }

    /// [`MediaLedger::book`] of `work` (already counted in `booked`) past the lane's tail:
    /// the tail goes to the queue, and the booking joins the lane's last or is queued.
    #[inline(never)]
    fn book_queued(&mut self, lane: usize, start: Ns, end: Ns, work: MediaWork) {
        let t = &mut self.tails[lane];
        if std::mem::take(&mut t.on) {
            self.lanes[lane].push_back(t.booking);
        }
        // Within one grid cell: nobody asks about a time inside it, so the work counts as
        // done at its end, together with the lane's last booking if that is in the cell too.
        if let Some((lo, hi)) = self.cell_of(lane, end).filter(|&(lo, _)| lo <= start) {
            let q = &mut self.lanes[lane];
            let booking = match q.back() {
                Some(last) if last.start == last.end && lo < last.end && last.end <= hi => {
                    let mut last = q.pop_back().expect("checked above");
                    last.end = last.end.max(end);
                    last.start = last.end;
                    last.work.add(work);
                    last
                }
                _ => Booking { start: end, end, work },
            };
            self.tails[lane] = Tail { on: true, lo, hi, booking };
            return;
        }
        Self::queue(&mut self.lanes[lane], start, end, work);
    }

    /// [`MediaLedger::book`] while work is in credit: `work` less what is still in credit,
    /// which it uses up.
    #[cold]
    #[inline(never)]
    fn book_in_credit(&mut self, lane: usize, start: Ns, end: Ns, work: MediaWork) {
        let work = self.credit.take_up_to(work);
        self.in_credit = self.credit != MediaWork::default();
        self.booked.add(work);
        self.book_queued(lane, start, end, work);
    }

    /// The work carried out by `t` [ns], cumulative (`t` no earlier than the last time given
    /// to [`MediaLedger::forget_before`]): all booked less what is still ahead of `t`.
    pub fn done_by(&self, t: Ns) -> MediaWork {
        let mut ahead = MediaWork::default();
        let host = self.host_lane();
        for (i, (q, tail)) in self.lanes.iter().zip(&self.tails).enumerate() {
            let tail = tail.on.then_some(&tail.booking);
            for b in q.iter().chain(tail).rev() {
                if b.end <= t {
                    // A die's bookings before one over by `t` are over too.
                    if i == host {
                        continue;
                    }
                    break;
                }
                ahead.add(b.work);
                ahead.sub(b.done_by(t));
            }
        }
        let mut out = self.booked;
        out.sub(ahead);
        out
    }

    /// All the work decided so far, carried out or not, with `unbooked` (decided, not yet
    /// booked: what [`MediaLedger::settle`] would count now), cumulative: what a phase
    /// ending now would count.
    pub fn decided(&self, unbooked: MediaWork) -> MediaWork {
        let mut out = self.booked;
        let mut beyond_credit = unbooked;
        beyond_credit.zip(self.credit, |a, b| *a = a.saturating_sub(b));
        out.add(beyond_credit);
        out
    }

    /// Counts the bookings over by `t` as done: later questions are about `t` or after.
    pub fn forget_before(&mut self, t: Ns) {
        self.flush_tails();
        for q in &mut self.lanes {
            // Counted, then dropped at once (nothing to drop per booking).
            let over = q.iter().take_while(|b| b.end <= t).count();
            q.drain(..over);
        }
    }

    /// Counts all work booked, and `unbooked` (decided, not yet booked), as done from now on;
    /// the next bookings of `unbooked` are not counted again.
    pub fn settle(&mut self, unbooked: MediaWork) {
        for q in &mut self.lanes {
            q.clear();
        }
        self.tails.fill(Tail::default());
        self.booked.add(unbooked);
        self.grid = None;
        self.credit.add(unbooked);
        self.in_credit = self.credit != MediaWork::default();
    }

    /// Heap bytes held.
    pub fn state_bytes(&self) -> usize {
        self.lanes.iter().map(|q| q.capacity() * size_of::<Booking>()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl MediaLedger {
        /// Bookings held for `lane`, its tail included.
        fn bookings(&self, lane: usize) -> usize {
            self.lanes[lane].len() + usize::from(self.tails[lane].on)
        }
    }

    fn nand(units: u64) -> MediaWork {
        MediaWork { nand_units: units, ..MediaWork::default() }
    }

    #[test]
    fn work_is_done_evenly_over_its_booking_and_all_of_it_by_the_end() {
        let mut l = MediaLedger::new(2);
        l.book(0, 100, 200, || nand(10));
        l.book(1, 150, 150, || nand(4));
        assert_eq!(l.done_by(100).nand_units, 0);
        assert_eq!(l.done_by(149).nand_units, 4);
        assert_eq!(l.done_by(150).nand_units, 5 + 4);
        assert_eq!(l.done_by(200).nand_units, 14);
        l.forget_before(160);
        assert_eq!(l.done_by(160).nand_units, 6 + 4);
        assert_eq!(l.done_by(1000).nand_units, 14);
    }

    #[test]
    fn each_booking_is_spread_over_its_own_time() {
        let mut l = MediaLedger::new(1);
        l.book(0, 0, 100, || nand(100));
        l.book(0, 100, 1100, || nand(0));
        l.book(0, 1100, 1200, || nand(10));
        assert_eq!(l.bookings(0), 3);
        assert_eq!(l.done_by(50).nand_units, 50);
        assert_eq!(l.done_by(1150).nand_units, 105);
    }

    #[test]
    fn on_a_grid_work_within_one_cell_is_one_booking_and_counts_at_the_grid_times() {
        let mut l = MediaLedger::new(1);
        l.set_grid(1000, 100, 3);
        for t in 1001..=1100 {
            l.book(0, t, t, || nand(1));
        }
        // A stretch inside the next cell joins nothing before it; one across cells is spread.
        l.book(0, 1110, 1190, || nand(8));
        l.book(0, 1190, 1290, || nand(10));
        assert_eq!(l.bookings(0), 3);
        assert_eq!([l.done_by(1100), l.done_by(1200), l.done_by(1300)].map(|w| w.nand_units), [100, 109, 118]);
        // After the last grid time, all work is one booking.
        for t in [1301, 1500, 9000] {
            l.book(0, t - 1, t, || nand(1));
        }
        assert_eq!(l.bookings(0), 4);
        l.settle(MediaWork::default());
        l.book(0, 2001, 2001, || nand(1));
        l.book(0, 2002, 2002, || nand(1));
        assert_eq!(l.bookings(0), 2, "no grid after settling");
    }

    #[test]
    fn settled_work_is_not_counted_again_when_booked() {
        let mut l = MediaLedger::new(1);
        l.book(0, 0, 100, || nand(10));
        l.settle(nand(3));
        assert_eq!(l.done_by(0).nand_units, 13);
        // The program that held the 3 units settled is booked with 5 more.
        l.book(0, 200, 200, || nand(8));
        assert_eq!(l.done_by(199).nand_units, 13);
        assert_eq!(l.done_by(200).nand_units, 18);
    }
}
