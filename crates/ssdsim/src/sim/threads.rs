//! A phase on two threads ([`crate::device::pipe`]): the FTL's thread draws the commands and
//! makes their FTL calls, ahead; the calling thread runs the host loop and the timing model
//! on the FTL's results. The same commands, FTL calls and results in the same order as on
//! one thread, so the same figures.

use super::source::Source;
use super::{Completions, Host, One, Simulation};
use crate::time::Ns;
use crate::command::{CmdKind, Command};
use crate::device::pipe::{placeholder_ftl, push_command, push_slot, Place, Ring, Rx, Tx, END_CODE};
use crate::ftl::Ftl;
use crate::rng::Rng;

/// Commands a call must have left to run on two threads: starting the FTL's thread costs
/// tens of microseconds, and the ring's warm-up more.
const MIN_PIPED_CMDS: u64 = 20_000;

/// Stops the other side of a ring from waiting on this one when dropped (on return, or as
/// a panic unwinds).
pub(super) struct StopOnDrop<'r>(pub(super) &'r Ring);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The host loop's stand-in source in a two-thread phase: the commands come from the ring
/// ([`Simulation::run_loop`] takes them there), and the FTL's thread has drawn them.
pub(super) struct FromRing;

impl Source for FromRing {
    fn peek(&mut self) -> Option<Command> {
        unreachable!("a two-thread phase takes its commands from the ring")
    }

    #[inline(always)]
    fn advance(&mut self, _rng: &mut Rng, _ftl: &Ftl) {}
}

/// Which way a phase runs fastest, one thread or two, as measured on its own calls: the
/// results are the same either way, the speed depends on the mix (two threads gain where
/// the FTL's work and the timing model's are both large, as with reads among writes with GC;
/// a phase of only writes or only reads runs as fast or faster on one).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Pace {
    /// Commands per wall second of the latest call run on one thread and on two (0: none yet).
    rate: [f64; 2],
    /// Calls the phase has run with both ways open to it.
    calls: u64,
    /// The start and the commands before of a call left to one thread to be timed.
    one_since: Option<(std::time::Instant, u64)>,
}

/// Every this many calls a phase runs one the way it found slower, in case its mix changed.
const PROBE_EVERY: u64 = 16;

impl Pace {
    /// Ends a call on one thread that [`Simulation::run_host_piped`] left to be timed, the
    /// phase's commands now `ios`.
    pub(crate) fn end_one(&mut self, ios: u64) {
        if let Some((start, before)) = self.one_since.take() {
            self.rate[0] = (ios - before) as f64 / start.elapsed().as_secs_f64().max(1e-9);
        }
    }

    /// Whether the next call runs on two threads: each way once, then the faster.
    fn two(&self) -> bool {
        let [one, two] = self.rate;
        if two == 0.0 || one == 0.0 {
            return two == 0.0;
        }
        (two > one) != (self.calls % PROBE_EVERY == PROBE_EVERY - 1)
    }
}

impl Simulation {
    /// Runs the next `max_cmds` commands of the phase on two threads, if the drive, the phase
    /// and [`Simulation::set_threads`] allow it and that has been the faster way for this
    /// phase ([`Pace`]); returns false (having done nothing) to leave them to one thread.
    pub(crate) fn run_host_piped<S: Source + Send>(&mut self, h: &mut Host, src: &mut S, max_cmds: u64) -> bool {
        let left = max_cmds.min(h.limit_ios.saturating_sub(h.ios));
        if self.threads < 2 || !plain(h) || left < MIN_PIPED_CMDS || h.units >= h.limit_units || !self.dev.pipelinable() {
            return false;
        }
        h.pace.calls += 1;
        if !h.pace.two() {
            // This call on one thread, timed for the next choice ([`Pace::end_one`]).
            h.pace.one_since = Some((std::time::Instant::now(), h.ios));
            return false;
        }
        let start = std::time::Instant::now();
        // A timed phase: whether a command is submitted at all depends on the completions
        // before it; the FTL's thread makes only those the host loop is sure to submit.
        let granted = match h.end_ns {
            None => u64::MAX,
            Some(end) => granted(h.ios, h.qd, &h.outstanding, h.last_submit, h.max_completion, end),
        };
        let ring = Ring::new(granted, 1);
        let mut place = self.dev.place();
        let mut ftl = self.dev.start_pipe(placeholder_ftl(), Rx::new(ring.clone(), 0, self.dev.free_blocks()));
        let mut rng = std::mem::replace(&mut self.rng, Rng::new(0));
        let mut tx = Tx::new(ring.clone());
        let (units, ios, limit_units, limit_ios) = (h.units, h.ios, h.limit_units, h.limit_ios);
        let joined = std::thread::scope(|scope| {
            let ahead = scope.spawn(|| ftl_thread(&ring, &mut ftl, src, &mut rng, &mut place, &mut tx, (units, ios), (limit_units, limit_ios), max_cmds));
            {
                let _stop = StopOnDrop(&ring);
                self.run_loop::<One<FromRing>, false, true>(h, &mut One(&mut FromRing), max_cmds);
            }
            ahead.join()
        });
        let rx = self.dev.end_pipe(ftl);
        self.rng = rng;
        if let Err(panic) = joined {
            std::panic::resume_unwind(panic);
        }
        assert!(rx.drained(), "the host loop of a two-thread phase left FTL results unread");
        assert_eq!(place, self.dev.place(), "the FTL's thread placed host data where the device did not");
        self.piped_commands += h.ios - ios;
        h.pace.rate[1] = (h.ios - ios) as f64 / start.elapsed().as_secs_f64().max(1e-9);
        true
    }
}

/// Whether the host loop of `h` can take its commands from the FTL's thread: one job of
/// 4 KiB units, no pacing, zones, placement handles or host sharing the drive.
pub(super) fn plain(h: &Host) -> bool {
    h.pacing.is_none() && h.zbd.is_none() && h.placer.is_none() && !h.sectors && !h.online && !h.shares_drive
}

/// The commands of a timed phase (ending at `end_ns`) that its host loop is sure to submit,
/// counted from the phase's first, once it has submitted `ios` with `q` outstanding (at
/// most `qd`), the last at `last_submit`, none completing after `max_completion`: the
/// `qd - q.len()` the queue has room for go at `last_submit`; after them, the m-th takes
/// the place of a completion, no later than the m-th earliest of `q` (later commands can
/// only complete sooner), so one for each of `q` completing before the end.
pub(super) fn granted(ios: u64, qd: usize, q: &Completions, last_submit: Ns, max_completion: Ns, end_ns: Ns) -> u64 {
    if last_submit >= end_ns {
        return ios;
    }
    let in_time = if max_completion < end_ns { q.len() } else { q.count_before(end_ns) };
    ios + (qd - q.len() + in_time) as u64
}

/// The FTL's thread of a two-thread call: [`ahead`], stopping the ring's other side from
/// waiting on it once done (or panicking), with active GC's streamed map stores in memory
/// before it ends.
#[allow(clippy::too_many_arguments)]
pub(super) fn ftl_thread<S: Source>(ring: &Ring, ftl: &mut Ftl, src: &mut S, rng: &mut Rng, place: &mut Place, tx: &mut Tx, from: (u64, u64), limits: (u64, u64), max_cmds: u64) {
    let _stop = StopOnDrop(ring);
    ahead(ftl, src, rng, place, tx, from, limits, max_cmds);
    ftl.fence();
}

/// The FTL's side of a two-thread phase: takes the commands the host loop will submit
/// (its limits: `units`/`ios` so far, `limit_units`/`limit_ios`, at most `max_cmds`) from
/// `src`, makes each one's FTL calls on `ftl` and sends the command and the results on `tx`;
/// where `src` runs dry first (a replay chunk's end or refused command), an end mark.
#[allow(clippy::too_many_arguments)]
fn ahead<S: Source>(ftl: &mut Ftl, src: &mut S, rng: &mut Rng, place: &mut Place, tx: &mut Tx, (mut units, mut ios): (u64, u64), (limit_units, limit_ios): (u64, u64), max_cmds: u64) {
    let mut n = 0;
    while n < max_cmds && units < limit_units && ios < limit_ios {
        if !tx.may_make(ios) {
            return;
        }
        let Some(c) = src.peek() else {
            // The host loop stops here too (a replay chunk's end, or a command it refuses).
            push_command(tx, END_CODE, 0, 0, ftl.free_blocks());
            break;
        };
        let u = c.units.min(limit_units - units);
        if !push_command(tx, c.kind.code(), c.unit, u, ftl.free_blocks()) {
            return;
        }
        src.advance(rng, ftl);
        let sent = match c.kind {
            CmdKind::Read => (c.unit..c.unit + u).all(|x| push_slot(tx, ftl.lookup(x))),
            CmdKind::Write => place.write(ftl, c.unit, u, tx),
            CmdKind::Trim => {
                for x in c.unit..c.unit + u {
                    ftl.trim(x);
                }
                true
            }
            CmdKind::Flush => {
                place.flush();
                true
            }
        };
        if !sent || tx.stopped() {
            return;
        }
        tx.publish();
        units += u;
        ios += 1;
        n += 1;
    }
    tx.publish();
}
