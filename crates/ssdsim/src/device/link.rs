//! The host link and the controller. The link carries each 4 KiB unit between host and
//! write buffer in turn; idle stretches a transfer booked ahead leaves before it (`Gaps`)
//! serve transfers of the other direction (see the module doc of [`crate::device`]). The
//! controller takes one command at a time (`controller_cmd_us`); a TRIM holds it longer.

use super::Device;
use crate::time::Ns;

/// The controller's command processing.
pub(super) struct Controller {
    /// When the controller takes the next command [ns].
    pub(super) free_ns: Ns,
    /// Time to take one command (`controller_cmd_us`) [ns].
    pub(super) cmd_ns: Ns,
    /// Time a TRIM command holds the controller (`trim_cmd_us`) [ns].
    pub(super) trim_cmd_ns: Ns,
    /// Controller time per 4 KiB unit a TRIM deallocates (`trim_us_per_gib`) [ns per unit].
    pub(super) trim_ns_per_unit: f64,
}

/// The host link.
pub(super) struct Link {
    /// End of the link's last booking [ns].
    pub(super) free_ns: Ns,
    /// Idle stretches of the link before `free_ns`.
    pub(super) gaps: Gaps,
    /// Time one 4 KiB unit takes to cross the link [ns].
    pub(super) unit_ns: Ns,
}

/// Stretches [`Gaps::first_ending_from`] counts before it searches further.
const NEAR: usize = 8;

/// Idle stretches of a transfer resource (the host link, a channel) before its last booking,
/// left by transfers booked ahead while their data (or a program's die) was not ready:
/// `(start, end, left by a read)` [ns], disjoint, in time order. Those over by the time of
/// the command that records or looks for one are dropped, so the list holds about one per
/// transfer in flight. A transfer placed in a stretch takes part of it; the parts before and
/// after stay while at least `min` long (on the link, the part before is forgotten).
///
/// Kept in a `Vec` whose live stretches start at `head`: dropping the earliest moves `head`
/// on, and the dead entries before it are reclaimed once they outnumber the live ones. A
/// stretch split in two makes room on the side with fewer entries to move (a transfer is
/// usually placed in one of the earliest stretches).
#[derive(Clone)]
pub(super) struct Gaps {
    /// The stretches, live from `head` on.
    pub(super) gaps: Vec<(Ns, Ns, bool)>,
    head: usize,
    /// Stretches held that each direction may use: `[left by writes, left by reads]`.
    held: [u32; 2],
    /// The shortest stretch worth keeping (one 4 KiB transfer) [ns].
    min: Ns,
    /// Whether the part of a stretch before a transfer placed in it stays.
    keep_before: bool,
}

impl Gaps {
    pub(super) fn new(min: Ns, keep_before: bool) -> Self {
        Gaps { gaps: Vec::new(), head: 0, held: [0; 2], min, keep_before }
    }

    /// Books `len` [ns] of a transfer of a command accepted at `now`, ready at `ready`, on the
    /// resource whose bookings end at `free`: in the earliest stretch it may use (`usable`, as
    /// for [`Gaps::any_for`]) that it fits in, else after the last booking, recording the
    /// stretch before it (left by a read if `by_read`) when the data is ready only later.
    /// Returns the end of the transfer.
    #[inline(always)]
    pub(super) fn book(&mut self, free: &mut Ns, now: Ns, ready: Ns, len: Ns, usable: [bool; 2], by_read: bool) -> Ns {
        if ready < *free && self.any_for(usable) {
            if let Some(done) = self.take(now, ready, len, usable) {
                return done;
            }
        }
        if ready >= *free + self.min {
            self.push(now, *free, ready, by_read);
        }
        *free = (*free).max(ready) + len;
        *free
    }

    /// Drops the stretches over by `now`.
    #[inline(always)]
    fn prune(&mut self, now: Ns) {
        let mut h = self.head;
        while let Some(&(_, end, r)) = self.gaps.get(h) {
            if end > now {
                break;
            }
            h += 1;
            self.held[r as usize] -= 1;
        }
        if h == self.gaps.len() {
            self.gaps.clear();
            h = 0;
        }
        self.head = h;
    }

    /// Records the stretch `[start, end)` left by a read (`by_read`) or a write booked ahead
    /// by a command accepted at `now`; it is later than every one recorded.
    #[inline(always)]
    fn push(&mut self, now: Ns, start: Ns, end: Ns, by_read: bool) {
        self.prune(now);
        if self.head > self.gaps.len() - self.head {
            self.gaps.drain(..self.head);
            self.head = 0;
        }
        self.gaps.push((start, end, by_read));
        self.held[by_read as usize] += 1;
    }

    /// The first live stretch that ends at or after `t` (they end in time order; a transfer
    /// can use none before it). A channel holds tens of stretches (programs booked ahead of
    /// their die's GC leave them, reads split them), and a read's is nearly always among the
    /// first few: the first [`NEAR`] are counted in one pass without branches (independent
    /// loads of a few cache lines), and only if all end before `t` is the rest searched, by
    /// std's binary search (without branches too, but a chain of dependent loads).
    #[inline(always)]
    fn first_ending_from(&self, t: Ns) -> usize {
        let live = &self.gaps[self.head..];
        let Some(near) = live.first_chunk::<NEAR>() else {
            return self.head + live.iter().map(|&(_, end, _)| (end < t) as usize).sum::<usize>();
        };
        let before = near.iter().map(|&(_, end, _)| (end < t) as usize).sum::<usize>();
        if before < NEAR {
            return self.head + before;
        }
        self.head + NEAR + live[NEAR..].partition_point(|&(_, end, _)| end < t)
    }

    /// Whether a transfer that may use the stretches left by writes (`usable[0]`) and/or by
    /// reads (`usable[1]`) may find one here.
    #[inline(always)]
    fn any_for(&self, usable: [bool; 2]) -> bool {
        (usable[0] && self.held[0] != 0) || (usable[1] && self.held[1] != 0)
    }

    /// Makes room for a stretch after the one at `i`: moves the entries before it one place
    /// down, or those after it one place up, whichever are fewer. Returns the index of the
    /// stretch that was at `i`; the new one goes right after it.
    #[inline(always)]
    fn open_after(&mut self, i: usize) -> usize {
        if self.head > 0 && i - self.head < self.gaps.len() - i {
            self.gaps.copy_within(self.head..=i, self.head - 1);
            self.head -= 1;
            i - 1
        } else {
            self.gaps.insert(i + 1, (0, 0, false));
            i
        }
    }

    /// Removes the stretch at `i`, moving the entries before it or after it, whichever are
    /// fewer.
    #[inline(always)]
    fn remove(&mut self, i: usize) {
        if i - self.head < self.gaps.len() - i {
            self.gaps.copy_within(self.head..i, self.head + 1);
            self.head += 1;
        } else {
            self.gaps.remove(i);
        }
    }

    /// Books `len` [ns] of time starting no earlier than `ready`, for a transfer of a command
    /// accepted at `now`, in the earliest stretch it may use (`usable`, as for
    /// [`Gaps::any_for`]) that it fits in. What is left of the stretch after the transfer
    /// stays if at least `min` long, and so does the part before it if `keep_before`.
    /// Returns the end of the transfer, or None if no stretch has room.
    #[inline(always)]
    fn take(&mut self, now: Ns, ready: Ns, len: Ns, usable: [bool; 2]) -> Option<Ns> {
        let (min, keep_before) = (self.min, self.keep_before);
        self.prune(now);
        let first = self.first_ending_from(ready + len);
        let i = first + self.gaps[first..].iter().position(|&(start, end, r)| usable[r as usize] && start.max(ready) + len <= end)?;
        let (start, end, r) = self.gaps[i];
        let from = start.max(ready);
        let done = from + len;
        match (keep_before && from >= start + min, end >= done + min) {
            (true, true) => {
                let i = self.open_after(i);
                self.gaps[i] = (start, from, r);
                self.gaps[i + 1] = (done, end, r);
                self.held[r as usize] += 1;
            }
            (true, false) => self.gaps[i] = (start, from, r),
            (false, true) => self.gaps[i] = (done, end, r),
            (false, false) => {
                // Too short for another transfer.
                self.remove(i);
                self.held[r as usize] -= 1;
            }
        }
        Some(done)
    }
}

impl Device {
    /// The controller takes a command submitted at `submit` (`controller_cmd_us`, in turn);
    /// returns when it has.
    #[inline]
    pub(super) fn accept_command(&mut self, submit: Ns) -> Ns {
        self.ctrl.free_ns = self.ctrl.free_ns.max(submit) + self.ctrl.cmd_ns;
        self.ctrl.free_ns
    }

    /// Books the link for one unit of write data ready (buffer space held) at `t`, of a
    /// command accepted at `now`; returns when it has crossed. Until the drive has served a
    /// read, simply after the last booking; then see [`Device::transfer`].
    #[inline(always)]
    pub(super) fn write_transfer(&mut self, now: Ns, t: Ns) -> Ns {
        if self.calendars {
            return self.transfer(now, t, false);
        }
        self.link.free_ns = self.link.free_ns.max(t) + self.link.unit_ns;
        self.link.free_ns
    }

    /// Books the link for one unit of data of a read (`by_read`) or write accepted at `now`,
    /// ready at `ready`: in the earliest idle stretch that a transfer of the other direction
    /// left and that it fits in, else after the last booking, leaving the link idle before
    /// it for the other direction if the data is ready only later. Returns when it has crossed.
    #[inline(never)]
    pub(super) fn transfer(&mut self, now: Ns, ready: Ns, by_read: bool) -> Ns {
        self.link.gaps.book(&mut self.link.free_ns, now, ready, self.link.unit_ns, [by_read, !by_read], by_read)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::Gaps;
    use crate::rng::Rng;
    use crate::time::Ns;

    /// The stretches as a plain list: the earliest that fits found by a scan from the first,
    /// a split stretch's second part inserted after the first. The reference [`Gaps`] must
    /// agree with transfer by transfer.
    struct Plain {
        gaps: VecDeque<(Ns, Ns, bool)>,
        min: Ns,
        keep_before: bool,
    }

    impl Plain {
        fn book(&mut self, free: &mut Ns, now: Ns, ready: Ns, len: Ns, usable: [bool; 2], by_read: bool) -> Ns {
            self.gaps.retain(|&(_, end, _)| end > now);
            if ready < *free {
                let fits = |&(start, end, r): &(Ns, Ns, bool)| usable[r as usize] && end >= ready + len && start.max(ready) + len <= end;
                if let Some(i) = self.gaps.iter().position(fits) {
                    let (start, end, r) = self.gaps[i];
                    let from = start.max(ready);
                    let done = from + len;
                    self.gaps.remove(i);
                    if end >= done + self.min {
                        self.gaps.insert(i, (done, end, r));
                    }
                    if self.keep_before && from >= start + self.min {
                        self.gaps.insert(i, (start, from, r));
                    }
                    return done;
                }
            }
            if ready >= *free + self.min {
                self.gaps.push_back((*free, ready, by_read));
            }
            *free = (*free).max(ready) + len;
            *free
        }
    }

    /// Random transfers of both directions, some ready long after the last booking (leaving
    /// stretches), most ready before it (taking them), on a resource that keeps the part of a
    /// stretch before a transfer (a channel) and one that does not (the link).
    #[test]
    fn gaps_place_every_transfer_where_a_plain_list_of_stretches_does() {
        for keep_before in [true, false] {
            let mut rng = Rng::new(7 + keep_before as u64);
            let (min, len) = (10, 10);
            let mut gaps = Gaps::new(min, keep_before);
            let mut plain = Plain { gaps: VecDeque::new(), min, keep_before };
            let (mut free, mut plain_free, mut now) = (0, 0, 0);
            let mut longest = 0;
            for step in 0..30_000 {
                now += rng.below(40);
                // Some ready after the last booking (leaving a stretch before them), the
                // others soon (placed in a stretch if one fits).
                let ready = if rng.below(4) == 0 { free.max(now) + rng.below(200) } else { now + rng.below(100) };
                let by_read = rng.below(2) == 0;
                let usable = match rng.below(3) {
                    0 => [true, true],
                    _ => [by_read, !by_read],
                };
                let len = len + rng.below(3) * 5;
                let done = gaps.book(&mut free, now, ready, len, usable, by_read);
                let expect = plain.book(&mut plain_free, now, ready, len, usable, by_read);
                assert_eq!((done, free), (expect, plain_free), "transfer {step}");
                longest = longest.max(plain.gaps.len());
            }
            assert!(longest > 20, "the test keeps many stretches at once: {longest}");
        }
    }
}
