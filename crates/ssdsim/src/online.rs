//! The online drive: host commands submitted one at a time, each at a simulated time the
//! caller chooses, instead of by a closed loop at a queue depth.
//!
//! An emulator in front of a real host (a block device whose requests go through the
//! simulator) learns of each command when the host sends it and must answer with its
//! completion time at once: [`Simulation::online_submit`] takes a command and its
//! submission time and returns when it completes. The queue depth is whatever the caller
//! has in flight. Commands reach the drive in submission order, so submission times never
//! go back: one earlier than the previous submission is taken at the previous one.
//!
//! It is the same host as a phase's or a replay's (the per-interval series, counter
//! snapshots and latency histograms of a [`PhaseReport`], drive calls in the same order),
//! so the commands a replay issues, submitted here at the replay's submission times,
//! complete at the replay's times. Two things a closed loop never does happen here:
//!
//! - **Idle time.** A command submitted after everything earlier has completed finds the
//!   drive idle since then: before it is issued, the drive idles that gap (one call of
//!   [`crate::device::Device::idle`], so idle-time GC and pSLC folding run, as in a phase's
//!   thinktime). [`Simulation::online_idle_until`] ends a gap early, for a caller that wants
//!   the drive's state at a time with nothing submitted.
//! - **Flushes** are barriers as in a replay: a flush starts once every earlier command has
//!   completed, and commands submitted after it start once it has completed.

use crate::error::SimError;
use crate::command::{CmdKind, Command};
use crate::sim::{Host, SeriesLimit, Simulation};
use crate::stats::PhaseReport;
use crate::time::Ns;

/// One command as the online drive took it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// When the drive took it [ns]: the time asked for, or later (after the previous
    /// submission; after a flush's completion).
    pub submit_ns: Ns,
    /// When it completes [ns].
    pub done_ns: Ns,
    /// The idle gap the drive had before taking it (0: it was busy) [ns].
    pub idle_ns: Ns,
}

/// Where an online drive stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnlineState {
    /// Time of the latest submission or idle gap's end [ns]: no command may be taken earlier.
    pub last_submit_ns: Ns,
    /// Latest completion of any command taken [ns]: the drive has no host work after it.
    pub busy_until_ns: Ns,
    /// Commands taken and not completed by `last_submit_ns`.
    pub outstanding: u64,
    /// Reads, writes and TRIMs taken (flushes are not IOs).
    pub ios: u64,
    /// Idle gaps the drive has had and their simulated time [ns].
    pub idle_gaps: u64,
    pub idle_ns: Ns,
}

impl Simulation {
    /// Starts an online drive at the current time: up to `max_outstanding` commands in
    /// flight at once (1 to [`crate::workload::MAX_QD`]), a per-interval series of
    /// `interval_ns`. End it with [`Simulation::finish_online`].
    pub fn start_online(&mut self, max_outstanding: u32, interval_ns: Ns) -> Result<(), SimError> {
        self.check_idle()?;
        if max_outstanding == 0 || interval_ns == 0 {
            return Err(SimError::Invalid("max_outstanding and the interval must be positive".into()));
        }
        if max_outstanding > crate::workload::MAX_QD {
            return Err(SimError::Invalid(format!("max_outstanding {max_outstanding} is more than {}", crate::workload::MAX_QD)));
        }
        // Written data fills the profile's slots per unit, as a replay's without a compressibility.
        self.dev.set_slots_per_unit(1.0);
        let limit = SeriesLimit::new(self.series_limit, None, interval_ns, false);
        let mut h = Host::new(max_outstanding, self.now_ns(), None, u64::MAX, u64::MAX, interval_ns, self.snapshot(), limit);
        h.online = true;
        self.host = Some(Box::new(h));
        Ok(())
    }

    /// True while an online drive is running.
    pub fn online_running(&self) -> bool {
        self.host.as_ref().is_some_and(|h| h.online)
    }

    /// Submits `cmd` (a read, write or TRIM of `units` ≥ 1 from `unit`, or a flush) at
    /// `at_ns`; returns when the drive took it and when it completes. Errors (nothing
    /// submitted): a command outside the drive, more than `max_outstanding` commands in
    /// flight, or the drive out of room ([`Simulation::check_space`]).
    pub fn online_submit(&mut self, cmd: Command, at_ns: Ns) -> Result<Submitted, SimError> {
        self.check_space()?;
        let user = self.geometry().user_units;
        if cmd.kind != CmdKind::Flush && (cmd.units == 0 || cmd.unit.checked_add(cmd.units).is_none_or(|end| end > user)) {
            return Err(SimError::Invalid(format!("{} units at unit {} do not fit the drive's {} units", cmd.units, cmd.unit, user)));
        }
        let mut h = self.take_online_host();
        let result = self.submit_on(&mut h, cmd, at_ns);
        self.host = Some(h);
        self.dev.ftl.fence();
        result
    }

    fn submit_on(&mut self, h: &mut Host, cmd: Command, at_ns: Ns) -> Result<Submitted, SimError> {
        let mut t = at_ns.max(h.last_submit);
        // Completions by `t` leave the queue (a closed loop takes them when full; the order
        // they leave in changes nothing but the queue).
        while h.outstanding.len() > 0 && h.outstanding.earliest_ns() <= t {
            h.outstanding.pop_front();
        }
        if cmd.kind != CmdKind::Flush && h.outstanding.len() >= h.qd {
            return Err(SimError::Invalid(format!("more than {} commands in flight at {t} ns", h.qd)));
        }
        let from = h.max_completion.max(h.last_submit);
        let idle_before = h.idle_ns;
        if t > from {
            h.idle_gaps += 1;
            self.idle_gap(h, from, t);
            t = h.last_submit;
        }
        let idle_ns = h.idle_ns - idle_before;
        if cmd.kind == CmdKind::Flush {
            // A barrier, as in a replay: after every earlier command.
            while h.outstanding.pop().is_some() {}
            let start = t.max(h.max_completion);
            let done = self.dev.flush(start);
            h.last_submit = done;
            h.max_completion = h.max_completion.max(done);
            return Ok(Submitted { submit_ns: start, done_ns: done, idle_ns });
        }
        if t >= h.series.next_snapshot_ns {
            self.pass_boundaries(&mut h.series, t, t);
        }
        let (done, data_bytes) = self.issue(&mut h.series, cmd.kind, cmd.unit, cmd.units, t);
        h.units += cmd.units;
        h.ios += 1;
        h.last_submit = t;
        h.max_completion = h.max_completion.max(done);
        h.outstanding.push(done, data_bytes, cmd.kind == CmdKind::Read);
        Ok(Submitted { submit_ns: t, done_ns: done, idle_ns })
    }

    /// Ends the idle gap since the drive's last host work at `until_ns` (the drive idles
    /// it now, in one call, as it would before the next command); nothing if the drive is
    /// busy then or the gap is already over. Commands are then taken from `until_ns` on. Each
    /// call is a gap of its own to the drive (idle GC waits `gc_idle_delay_ms` into each):
    /// call it when the drive's state at a time matters, not on a timer.
    pub fn online_idle_until(&mut self, until_ns: Ns) {
        let mut h = self.take_online_host();
        let from = h.max_completion.max(h.last_submit);
        if until_ns > from {
            h.idle_gaps += 1;
            self.idle_gap(&mut h, from, until_ns);
        }
        self.host = Some(h);
        self.dev.ftl.fence();
    }

    /// Where the online drive stands.
    pub fn online_state(&self) -> OnlineState {
        let h = self.host.as_deref().filter(|h| h.online).expect("online_state() without start_online()");
        OnlineState {
            last_submit_ns: h.last_submit,
            busy_until_ns: h.max_completion,
            outstanding: h.outstanding.len() as u64,
            ios: h.ios,
            idle_gaps: h.idle_gaps,
            idle_ns: h.idle_ns,
        }
    }

    /// Ends the online drive: waits for every outstanding command and returns the report
    /// of everything it took (as a phase's). The drive's clock moves to the last completion.
    pub fn finish_online(&mut self) -> PhaseReport {
        let mut h = self.take_online_host();
        self.drain(&mut h);
        h.done = true;
        self.close_host(*h)
    }

    fn take_online_host(&mut self) -> Box<Host> {
        let h = self.host.take().expect("an online drive call without start_online()");
        assert!(h.online, "an online drive call during a phase or replay");
        h
    }
}
