//! One replay's FTL work shared by several drives: drives in the same state replaying the same
//! commands at different queue depths make the same FTL decisions where those do not depend
//! on time ([`crate::device::pipe`]). So one FTL, the leader drive's, runs them on a thread
//! of its own, as in a two-thread phase, and the drives' timing models (host loops, series,
//! windows) run in turn on the calling thread on the results from a ring that all of them
//! read: two threads, one FTL's work for several replays, each drive's figures exactly those
//! of its own replay.
//!
//! The other drives follow the leader. A follower's own FTL is left behind meanwhile:
//! [`Simulation::catch_up`] copies the leader's into it before anything else may use it.

use std::sync::atomic::{AtomicU64, Ordering};

use super::source::ChunkSource;
use super::threads::{ftl_thread, plain, FromRing, StopOnDrop};
use super::{One, Simulation};
use crate::command::Command;
use crate::device::pipe::{most_words, placeholder_ftl, Ring, Rx, Tx, PUBLISH_EVERY, RING_WORDS};
use crate::error::SimError;
use crate::ftl::FtlCounters;
use crate::rng::Rng;

/// A drive whose FTL is behind: its replay's commands ran on the leader's FTL
/// ([`Simulation::replay_shared`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Following {
    /// The leader ([`Simulation`]'s `id`).
    leader: u64,
    /// The leader's FTL counters after the last shared call: a leader whose FTL has moved
    /// on since is no longer the state to catch up with.
    counters: FtlCounters,
}

/// A number for each simulation made in this process, to tell a follower's leader.
pub(crate) fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Simulation {
    /// Whether this drive's replays can share their FTL work with other drives of the same
    /// profile ([`Simulation::replay_shared`]): its FTL decides by the order of the commands
    /// alone.
    pub fn shares_replays(&self) -> bool {
        self.dev.pipelinable()
    }

    /// Whether this drive's FTL is behind a leader's ([`Simulation::catch_up`]).
    pub fn following(&self) -> bool {
        self.following.is_some()
    }

    /// Replays `cmds` on this drive and on each of `followers` at once, each at its own
    /// queue depth ([`Simulation::start_replay`]), as [`Simulation::replay`] on each would:
    /// the same windows, series, reports and errors. The FTL's work is done once, by this
    /// drive's FTL on a thread of its own; the drives' timing models run in turn on the
    /// calling thread.
    ///
    /// The drives must be of one profile, share replays ([`Simulation::shares_replays`]),
    /// be in the same FTL state (checked on a follower's first call: its map, valid data,
    /// block counts and counters), have their replays at the same command, and run no
    /// other phase meanwhile. A follower's FTL stays behind until [`Simulation::catch_up`]:
    /// until then it takes only further shared calls of this leader and `replay_progress`.
    pub fn replay_shared(&mut self, followers: &mut [&mut Simulation], cmds: &[Command]) -> Result<(), SimError> {
        self.check_space()?;
        self.check_shared(followers)?;
        let mut h = self.host.take().expect("checked: a replay runs");
        let mut hs: Vec<_> = followers.iter_mut().map(|f| f.host.take().expect("checked: a replay runs")).collect();
        let mut src = ChunkSource { cmds, pos: 0, user_units: self.geometry().user_units, error: None };
        let max_cmds = cmds.len() as u64;
        // The host loops run in turn on this thread, this drive's first: each turn it takes
        // half a ring of words (to a command's end), the others then the same commands, and
        // each tells the FTL's thread how far it has read. So it is never more than a ring
        // ahead of them, and the FTL's thread never waits on a host loop that is not running
        // (with room to spare for the positions a host loop has not yet published).
        let ring_words = RING_WORDS.max(2 * (cmds.iter().map(most_words).max().unwrap_or(0) + PUBLISH_EVERY)).next_power_of_two();
        let ring = Ring::with_words(u64::MAX, 1 + followers.len(), ring_words);
        let turn_words = ring_words / 2;
        let free_blocks = self.dev.free_blocks();
        let mut place = self.dev.place();
        let mut ftl = self.dev.start_pipe(placeholder_ftl(), Rx::new(ring.clone(), 0, free_blocks));
        let own: Vec<_> = followers.iter_mut().enumerate().map(|(i, f)| f.dev.start_pipe(placeholder_ftl(), Rx::new(ring.clone(), i + 1, free_blocks))).collect();
        let mut rng = std::mem::replace(&mut self.rng, Rng::new(0));
        let mut tx = Tx::new(ring.clone());
        let (units, ios, limit_units, limit_ios) = (h.units, h.ios, h.limit_units, h.limit_ios);
        let joined = std::thread::scope(|scope| {
            let ftl_side = scope.spawn(|| ftl_thread(&ring, &mut ftl, &mut src, &mut rng, &mut place, &mut tx, (units, ios), (limit_units, limit_ios), max_cmds));
            {
                let _stop = StopOnDrop(&ring);
                let mut left = max_cmds;
                while left > 0 {
                    let rx = self.dev.pipe();
                    let taken = rx.taken;
                    rx.pause_after(turn_words);
                    self.run_loop::<One<FromRing>, false, true>(&mut h, &mut One(&mut FromRing), left);
                    let rx = self.dev.pipe();
                    rx.publish_head();
                    let (turn, ended) = (rx.taken - taken, rx.ended);
                    for (f, fh) in followers.iter_mut().zip(hs.iter_mut()) {
                        // The same commands, and the end mark if it came.
                        f.run_loop::<One<FromRing>, false, true>(fh, &mut One(&mut FromRing), turn);
                        f.dev.pipe().publish_head();
                    }
                    // (A host loop that took nothing has stopped for good: the check below
                    // then finds the results it left.)
                    if ended || turn == 0 {
                        break;
                    }
                    left -= turn;
                }
            }
            ftl_side.join()
        });
        let rx = self.dev.end_pipe(ftl);
        self.rng = rng;
        let mut ok = rx.drained() && self.dev.place() == place;
        let following = Following { leader: self.id, counters: self.dev.ftl.counters() };
        for ((f, fh), own) in followers.iter_mut().zip(hs).zip(own) {
            let frx = f.dev.end_pipe(own);
            ok &= frx.drained() && frx.taken == rx.taken && f.dev.place() == place && (fh.ios, fh.units) == (h.ios, h.units);
            f.host = Some(fh);
            f.following = Some(following);
            f.piped_commands += h.ios - ios;
        }
        self.piped_commands += h.ios - ios;
        self.host = Some(h);
        if let Err(panic) = joined {
            std::panic::resume_unwind(panic);
        }
        assert!(ok, "a drive of a shared replay left FTL results unread or placed data elsewhere");
        if let Some(e) = src.error {
            return Err(SimError::Invalid(e));
        }
        self.check_space()?;
        self.check_series()?;
        followers.iter().try_for_each(|f| f.check_series())
    }

    /// Whether `followers` can follow this drive's FTL through a shared call now; an error
    /// that says why not.
    fn check_shared(&self, followers: &[&mut Simulation]) -> Result<(), SimError> {
        let refuse = |why: String| Err(SimError::Invalid(format!("a shared replay: {why}")));
        if self.following.is_some() {
            return refuse("this drive follows another's FTL; it cannot lead".into());
        }
        if !self.shares_replays() {
            return refuse("this drive's FTL decisions depend on time (SLC or map cache, zones, FDP, compression, dies taken by time, or drive-wide GC stalls)".into());
        }
        let h = match self.host.as_deref() {
            Some(h) if h.windows.is_some() && h.end_ns.is_none() && plain(h) => h,
            _ => return refuse("this drive runs no plain replay (start_replay first)".into()),
        };
        for (i, f) in followers.iter().enumerate() {
            let Some(fh) = f.host.as_deref().filter(|fh| fh.windows.is_some() && fh.end_ns.is_none() && plain(fh)) else {
                return refuse(format!("drive {i} runs no plain replay (start_replay first)"));
            };
            if f.geometry() != self.geometry() || f.dev.place() != self.dev.place() {
                return refuse(format!("drive {i} is not of this drive's profile, or holds its data elsewhere"));
            }
            if (fh.ios, fh.units, fh.limit_ios, fh.limit_units) != (h.ios, h.units, h.limit_ios, h.limit_units) {
                return refuse(format!("drive {i}'s replay is at command {}, this one's at {}", fh.ios, h.ios));
            }
            match f.following {
                Some(w) if w == (Following { leader: self.id, counters: self.dev.ftl.counters() }) => {}
                Some(_) => return refuse(format!("drive {i} follows another drive's FTL, or this one's FTL moved on since")),
                None if !f.dev.ftl.same_state(&self.dev.ftl) => return refuse(format!("drive {i}'s FTL is not in this drive's state")),
                None => {}
            }
        }
        Ok(())
    }

    /// Ends following `leader` ([`Simulation::replay_shared`]): this drive's FTL takes the
    /// leader's state. Nothing to do if this drive follows no one; an error if it follows
    /// another drive, or the leader's FTL has moved on since the last shared call.
    pub fn catch_up(&mut self, leader: &Simulation) -> Result<(), SimError> {
        let Some(w) = self.following else { return Ok(()) };
        if w.leader != leader.id || w.counters != leader.dev.ftl.counters() {
            return Err(SimError::Invalid("catch_up: this drive follows another drive's FTL, or that FTL moved on since the shared replay".into()));
        }
        self.dev.ftl.copy_from(&leader.dev.ftl);
        self.following = None;
        Ok(())
    }

    /// An error while this drive's FTL is behind a leader's.
    pub(crate) fn check_not_following(&self) -> Result<(), SimError> {
        match self.following {
            Some(_) => Err(SimError::Invalid("this drive's FTL is behind the drive it followed in a shared replay; catch_up first".into())),
            None => Ok(()),
        }
    }
}
