//! The simulation: one drive, a closed-loop host, and phases of work.
//!
//! A *phase* is one fio-like job ([`Job`]: pattern, block size, queue depth, span, duration
//! or byte count) or a richer [`Workload`] (mixes, size splits, distributions, idle gaps,
//! rate caps). The host keeps `qd` commands outstanding: a new command is submitted the
//! moment the earliest outstanding one completes (closed loop), exactly like fio's `iodepth`.
//! Phases run back to back on the same drive; simulated time only moves forward.
//!
//! One host loop (`Simulation::run_loop`) serves every phase, phases of several jobs and
//! trace replays ([`crate::replay`]): it takes commands from a [`Source`] (a workload's
//! generator, or the current chunk of a replay), submits them, honours flush barriers, idle
//! gaps and rate caps, and keeps the per-interval series (IOs, bytes and latency histograms
//! per direction, counter snapshots, live figures); a replay also averages over windows of N
//! completions. The loop is generic over the jobs it serves (`JobSet`): one job keeps its
//! state in the loop's locals, so that instance is the lean single-job loop.
//!
//! A phase may also run several jobs at once ([`Simulation::start_jobs`], fio's `numjobs` or
//! the jobs of one stonewall group): each keeps its own `qd` commands outstanding, with its
//! own generator, pacing, end condition and random numbers; they share the drive, which
//! serves their commands in submission order (the job due first submits first).
//!
//! Callers drive a phase in chunks ([`Simulation::advance`]) so a front end can show
//! progress and stop early, may take the intervals already final between chunks
//! ([`Simulation::take_final_intervals`], so a long phase's series does not pile up here),
//! then take its [`PhaseReport`] with [`Simulation::finish_phase`].
//!
//! Here: [`Simulation`], its host (`Host`: closed loop, completions, several jobs) and
//! the host loop. Commands come from `source.rs` (a workload's generator, a replay chunk);
//! the per-interval series and a replay's windows are kept in `series.rs`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::command::{CmdKind, Command, Job};
use crate::config::{Config, Geometry, UNIT_BYTES};
use crate::device::pipe::END_CODE;
use crate::device::{Device, TimingCounters};
use crate::error::SimError;
use crate::ftl::{FtlCounters, HandleCounters};
use crate::rng::Rng;
use crate::stats::{DirectionReport, IntervalBatch, JobDirection, JobReport, LatencyHistogram, PhaseReport, Snapshot};
use crate::time::{Ns, MAX_CLOCK_NS, NS_PER_S};
use crate::workload::{Pacing, Plan, Workload, WorkloadError, WorkloadJob, MAX_JOBS, MAX_OUTSTANDING, MAX_QD, MAX_THINKTIME_NS, SECTORS_PER_UNIT, SECTOR_BYTES};
use crate::workload::placement::Placer;
use crate::workload::zbd::{WriteZones, ZbdJob};

mod series;
mod shared;
mod source;
mod threads;
mod zoned;

pub use series::{Window, MAX_SERIES_INTERVALS};
pub(crate) use series::{Bin, Series, SeriesLimit, Windows};
pub(crate) use source::{ChunkSource, JobSource, Source, Sources, UniformSource};

/// How often a replay drops the media and GC bookings over by its latest completion
/// [completions].
const FORGET_EVERY_COMPLETIONS: u64 = 1024;

/// How far a phase has got.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// The phase has reached its end (duration or byte count).
    pub done: bool,
    /// Simulated time since the phase started [ns] (time of the latest submission).
    pub elapsed_ns: Ns,
    /// Units submitted so far.
    pub units: u64,
    /// Completed fraction (by time or by units, whichever limits the job), 0..1.
    pub fraction: f64,
}

/// Figures of the running phase over its final intervals (those the submission clock has
/// passed, so no completion can land in them any more).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseLive {
    /// Series interval [ns].
    pub interval_ns: Ns,
    /// Final intervals (the first `intervals_done` of the series).
    pub intervals_done: u64,
    /// IOs and bytes completed in the last final interval (None before the first).
    pub last_ios: Option<u64>,
    pub last_bytes: Option<u64>,
    /// Fewest IOs completed in one final interval (None before the first).
    pub min_ios: Option<u64>,
    /// Final intervals in which nothing completed.
    pub zero_intervals: u64,
    /// Simulated time since the phase started [ns] (time of the latest submission).
    pub elapsed_ns: Ns,
    /// Simulated time left until a timed phase's end [ns]; None for a phase limited by bytes.
    pub remaining_ns: Option<Ns>,
}

/// Completion times of the outstanding commands, each with a tag (a replay's data bytes),
/// earliest first: a min-priority queue of (time, tag), as the `BinaryHeap` it replaces.
///
/// A phase's writes and reads end on the host link and its TRIMs on the controller, each
/// serving commands of one kind in submission order, so the completions of one kind mostly
/// arrive in nondecreasing order (a write, acknowledged once buffered, ends long before the
/// reads submitted before it that wait for their dies): each kind (reads; writes and TRIMs)
/// has its own ring of at most `qd` entries (a power-of-two buffer, indices wrap with a
/// mask, grown as needed), where a push is mostly an append. A push that is out of order
/// is inserted at its sorted place if that is among the last [`MAX_SHIFT`] entries of its
/// ring, else kept in a binary heap beside the rings (a deep queue whose TRIMs end long
/// before its writes would shift thousands of entries per TRIM); the earliest of the rings'
/// first entries and the heap's leaves first, so the queue is exact for any input: entries
/// leave in (time, tag) order, as from one binary heap. An entry is kept as one `u128`, time
/// in the high half and tag in the low, which orders as the pair does and compares in one step;
/// an empty ring's first entry and an empty heap's read as `u128::MAX`, so the earliest is a
/// minimum of three without branches.
pub(crate) struct Completions {
    /// Reads' completions, and writes' and TRIMs'.
    rings: [Ring; 2],
    /// The most entries a ring may need (the queue depth).
    qd: usize,
    /// Completions earlier than all of the last MAX_SHIFT in their ring, earliest first, and
    /// the earliest of them (`u128::MAX` if none).
    early: BinaryHeap<Reverse<u128>>,
    early_first: u128,
}

/// Entries in time order: a power-of-two buffer whose indices wrap with `mask`, with room
/// for one more, which holds `u128::MAX` (so an empty ring's first entry is that).
#[derive(Default)]
struct Ring {
    buf: Vec<u128>,
    mask: usize,
    head: usize,
    len: usize,
}

/// A completion as it is kept: time in the high half, tag in the low.
#[inline(always)]
fn entry(t: Ns, tag: u64) -> u128 {
    (t as u128) << 64 | tag as u128
}

/// The time and tag of a completion kept as [`entry`] made it.
#[inline(always)]
fn unpack(e: u128) -> (Ns, u64) {
    ((e >> 64) as Ns, e as u64)
}

/// Entries of the ring a push out of order may shift; one earlier than them goes to the heap.
const MAX_SHIFT: usize = 32;

/// Entries a ring starts with (it doubles when full, up to the queue depth).
const RING_START: usize = 64;

impl Ring {
    fn new(cap: usize) -> Self {
        Ring { buf: vec![u128::MAX; cap], mask: cap - 1, head: 0, len: 0 }
    }

    /// The earliest entry, or `u128::MAX` when empty.
    #[inline(always)]
    fn first(&self) -> u128 {
        self.buf[self.head]
    }

    /// Twice the room, the entries kept in order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let mut bigger = Ring::new(self.buf.len() * 2);
        for i in 0..self.len {
            bigger.buf[i] = self.buf[(self.head + i) & self.mask];
        }
        bigger.len = self.len;
        *self = bigger;
    }
}

/// A placeholder while a host's queue is lent out (holds nothing; no room until replaced).
impl Default for Completions {
    fn default() -> Self {
        Completions { rings: Default::default(), qd: 0, early: BinaryHeap::new(), early_first: u128::MAX }
    }
}

impl Completions {
    pub(crate) fn new(qd: usize) -> Self {
        let cap = (qd + 1).next_power_of_two().min(RING_START);
        Completions { rings: [Ring::new(cap), Ring::new(cap)], qd, early: BinaryHeap::new(), early_first: u128::MAX }
    }

    /// Adds a completion of a read (`read`) or another command; at most `qd` may be
    /// outstanding.
    #[inline]
    pub(crate) fn push(&mut self, t: Ns, tag: u64, read: bool) {
        debug_assert!(self.len() < self.qd.max(1));
        let e = entry(t, tag);
        let r = &mut self.rings[(!read) as usize];
        if r.len + 1 == r.buf.len() {
            r.grow();
        }
        let mask = r.mask;
        // One earlier than the last MAX_SHIFT of the ring goes to the heap.
        if r.len > MAX_SHIFT && r.buf[(r.head + r.len - 1 - MAX_SHIFT) & mask] > e {
            self.early.push(Reverse(e));
            self.early_first = self.early_first.min(e);
            return;
        }
        // Its place in the ring (rarely before the end: completions mostly come in order),
        // the later completions moving up by one on the way.
        let mut to = (r.head + r.len) & mask;
        for _ in 0..r.len {
            let from = to.wrapping_sub(1) & mask;
            let prev = r.buf[from];
            if prev <= e {
                break;
            }
            r.buf[to] = prev;
            to = from;
        }
        r.buf[to] = e;
        r.len += 1;
        r.buf[(r.head + r.len) & mask] = u128::MAX;
    }

    /// The earliest entry (`u128::MAX` when empty).
    #[inline(always)]
    fn earliest(&self) -> u128 {
        self.rings[0].first().min(self.rings[1].first()).min(self.early_first)
    }

    /// Time of the earliest completion (0 when empty).
    #[inline]
    pub(crate) fn earliest_ns(&self) -> Ns {
        match self.earliest() {
            u128::MAX => 0,
            e => unpack(e).0,
        }
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(Ns, u64)> {
        (self.len() > 0).then(|| self.pop_front())
    }

    /// Removes the earliest completion; the queue must not be empty.
    #[inline(always)]
    pub(crate) fn pop_front(&mut self) -> (Ns, u64) {
        debug_assert!(self.len() > 0);
        let (a, b) = (self.rings[0].first(), self.rings[1].first());
        if self.early_first < a.min(b) {
            return self.pop_early();
        }
        let r = &mut self.rings[(b < a) as usize];
        let e = r.buf[r.head];
        r.head = (r.head + 1) & r.mask;
        r.len -= 1;
        unpack(e)
    }

    /// Removes the heap's earliest completion.
    #[cold]
    #[inline(never)]
    fn pop_early(&mut self) -> (Ns, u64) {
        let Reverse(e) = self.early.pop().expect("a completion outstanding");
        self.early_first = self.early.peek().map_or(u128::MAX, |&Reverse(h)| h);
        unpack(e)
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.rings[0].len + self.rings[1].len + self.early.len()
    }

    /// Completions before `t`.
    pub(crate) fn count_before(&self, t: Ns) -> usize {
        let before = |e: u128| unpack(e).0 < t;
        let in_ring = |r: &Ring| (0..r.len).filter(|&i| before(r.buf[(r.head + i) & r.mask])).count();
        in_ring(&self.rings[0]) + in_ring(&self.rings[1]) + self.early.iter().filter(|&&Reverse(e)| before(e)).count()
    }
}

/// The running phase's command source.
enum PhaseSource {
    /// One job (its host is the phase's).
    One(JobSource),
    /// Several jobs, each with its own host and source.
    Jobs(Box<Jobs>),
}

/// One job of a phase of several: its own closed loop (queue, limits, pacing and clock in
/// `host`, whose series stays unused), command source and random numbers.
struct JobRun {
    host: Host,
    src: JobSource,
    rng: Rng,
    /// NAND slots a unit it writes fills and the fraction carried between its units (the
    /// drive's [`Device::write_compressed`] state while it writes).
    slots: (f64, f64),
    /// What it did, per direction.
    dirs: [JobDirection; 3],
    /// Its next submission: time [ns] and command; None once it has ended.
    next: Option<(Ns, Command)>,
    /// The jobs it stops when it ends (fio's `exitall`, [`WorkloadJob::exit_stops`]).
    exit_stops: Vec<usize>,
    /// Its flow control ([`WorkloadJob::flow`]): the group, weight and submissions so far.
    flow: Option<FlowRun>,
}

/// A job's share of its flow group ([`crate::workload::Flow`]) as it runs.
struct FlowRun {
    flow: crate::workload::Flow,
    /// Commands it has submitted.
    count: u64,
    /// When it was first held back since its last submission [ns].
    held_since: Option<Ns>,
}

/// The jobs of a phase of several and what they share.
struct Jobs {
    runs: Vec<JobRun>,
    /// Latest completion of any command submitted so far [ns]: the drive has no host work
    /// after it until the next submission.
    busy_until_ns: Ns,
    /// The jobs write data of different compressibility: each job's slot state is swapped
    /// into the drive around its writes.
    swap_slots: bool,
    /// Some job has flow control.
    flows: bool,
    /// The last submission's time [ns].
    clock_ns: Ns,
}

impl Jobs {
    /// The job that submits next (the one due first; ties: the first job), its submission
    /// time and command; None once every job has ended. With flow control, a job over its
    /// share waits ([`crate::workload::Flow`]): a job whose wait takes it past its end ends.
    #[inline]
    fn due(&mut self) -> Option<(usize, Ns, Command)> {
        if self.flows {
            return self.due_with_flow();
        }
        let (t, i) = self.runs.iter().enumerate().filter_map(|(i, j)| j.next.map(|(t, _)| (t, i))).min()?;
        let (_, cmd) = self.runs[i].next.expect("the job due has a command");
        Some((i, t, cmd))
    }

    fn due_with_flow(&mut self) -> Option<(usize, Ns, Command)> {
        let clock = self.clock_ns;
        // Per group: submissions + 1 and weight of its jobs (fio's flow counter starts at 1),
        // the same for those still submitting, and when the last of the others (done
        // submitting, a command still outstanding) leaves: a job leaves its group once its
        // last command has completed (fio's flow_exit_job), taking its count and weight.
        struct Group {
            id: u32,
            all: (u64, u64),
            running: (u64, u64),
            leave_ns: Ns,
        }
        let mut groups: Vec<Group> = Vec::new();
        for j in &self.runs {
            let Some(f) = j.flow.as_ref() else { continue };
            let running = j.next.is_some();
            if !running && j.host.max_completion <= clock {
                continue;
            }
            let g = match groups.iter().position(|g| g.id == f.flow.id) {
                Some(k) => &mut groups[k],
                None => {
                    groups.push(Group { id: f.flow.id, all: (1, 0), running: (1, 0), leave_ns: 0 });
                    groups.last_mut().expect("just pushed")
                }
            };
            g.all = (g.all.0 + f.count, g.all.1 + u64::from(f.flow.weight));
            if running {
                g.running = (g.running.0 + f.count, g.running.1 + u64::from(f.flow.weight));
            } else {
                g.leave_ns = g.leave_ns.max(j.host.max_completion);
            }
        }
        // Over its share: its count / counter above its weight / the group's weight.
        let over = |count: u64, weight: u32, (counter, total): (u64, u64)| u128::from(count) * u128::from(total) > u128::from(weight) * u128::from(counter);
        let mut best: Option<(Ns, usize)> = None;
        for (i, j) in self.runs.iter_mut().enumerate() {
            let Some((mut t, _)) = j.next else { continue };
            if let Some(f) = j.flow.as_mut() {
                let g = groups.iter().find(|g| g.id == f.flow.id).expect("its group");
                let mut go = None;
                if over(f.count, f.flow.weight, g.all) {
                    if over(f.count, f.flow.weight, g.running) {
                        f.held_since.get_or_insert(t);
                        continue;
                    }
                    // Within its share once the finishing jobs have left.
                    f.held_since.get_or_insert(t);
                    go = Some(g.leave_ns);
                }
                if let Some(since) = f.held_since {
                    // Let go by the last submission (or by the others leaving): it tries
                    // again then, or at its next wake-up.
                    let go = clock.max(since).max(go.unwrap_or(0));
                    t = if f.flow.sleep_ns > 0 { since + (go - since).div_ceil(f.flow.sleep_ns) * f.flow.sleep_ns } else { go };
                    if f.flow.quiesce {
                        t = t.max(j.host.max_completion);
                    }
                    if t >= j.host.end_ns.unwrap_or(Ns::MAX).min(j.host.stop_ns) {
                        j.next = None;
                        j.host.done = true;
                        j.host.timed_out = t >= j.host.end_ns.unwrap_or(Ns::MAX);
                        continue;
                    }
                }
            }
            if best.map_or(true, |(b, _)| t < b) {
                best = Some((t, i));
            }
        }
        let (t, i) = best?;
        let j = &mut self.runs[i];
        if let Some(f) = j.flow.as_mut() {
            f.count += 1;
            f.held_since = None;
        }
        self.clock_ns = t;
        let (_, cmd) = j.next.expect("the job due has a command");
        Some((i, t, cmd))
    }
}

/// The jobs the host loop serves: one ([`One`]: a phase of one job, a trace replay) or
/// several ([`Jobs`]). One job's state (queue, clock, counts) stays in the loop's locals
/// throughout, so that instance of the loop is the single-job loop it always was; with
/// several, each submission loads the state of the job due and stores it back.
trait JobSet {
    /// Several jobs: each submission is made by the job due first ([`Jobs::due`]).
    const MANY: bool;
    type Src: Source;
    /// Job `i`'s command source and the random numbers it draws (one job: `rng`, the
    /// simulation's).
    fn source<'a>(&'a mut self, i: usize, rng: &'a mut Rng) -> (&'a mut Self::Src, &'a mut Rng);
    /// The several jobs; called only when [`JobSet::MANY`].
    fn jobs(&mut self) -> &mut Jobs;
}

/// The single job of a phase or a replay, with its command source.
struct One<'s, S>(&'s mut S);

impl<S: Source> JobSet for One<'_, S> {
    const MANY: bool = false;
    type Src = S;

    #[inline(always)]
    fn source<'a>(&'a mut self, _i: usize, rng: &'a mut Rng) -> (&'a mut S, &'a mut Rng) {
        (self.0, rng)
    }

    fn jobs(&mut self) -> &mut Jobs {
        unreachable!("one job has no job set")
    }
}

impl JobSet for Jobs {
    const MANY: bool = true;
    type Src = JobSource;

    #[inline(always)]
    fn source<'a>(&'a mut self, i: usize, _rng: &'a mut Rng) -> (&'a mut JobSource, &'a mut Rng) {
        let j = &mut self.runs[i];
        (&mut j.src, &mut j.rng)
    }

    #[inline(always)]
    fn jobs(&mut self) -> &mut Jobs {
        self
    }
}

/// The submitting job's closed-loop state, in the host loop's locals (see [`JobSet`]).
struct Lane {
    qd: usize,
    limit_units: u64,
    limit_ios: u64,
    end_ns: Ns,
    paced: bool,
    sectors: bool,
    q: Completions,
    units: u64,
    ios: u64,
    last_submit: Ns,
    max_completion: Ns,
}

impl Lane {
    /// When the next command can be submitted, before any rate cap: once a slot of the queue
    /// is free (the earliest completion if it is full), not before the last submission.
    #[inline(always)]
    fn next_submit_ns(&self) -> Ns {
        if self.q.len() >= self.qd { self.q.earliest_ns().max(self.last_submit) } else { self.last_submit }
    }

    /// Takes a host's state (its completion queue moves into the lane).
    #[inline(always)]
    fn of(h: &mut Host) -> Lane {
        Lane {
            qd: h.qd,
            limit_units: h.limit_units,
            limit_ios: h.limit_ios,
            end_ns: h.end_ns.unwrap_or(Ns::MAX),
            paced: h.pacing.is_some(),
            sectors: h.sectors,
            q: std::mem::take(&mut h.outstanding),
            units: h.units,
            ios: h.ios,
            last_submit: h.last_submit,
            max_completion: h.max_completion,
        }
    }

    /// Switches to another host's state: the queue held so far goes to that host, which
    /// [`Lane::store`] undoes (the queues swap in place: a queue is too large to copy twice
    /// per command).
    #[inline(always)]
    fn load(&mut self, h: &mut Host) {
        (self.qd, self.limit_units, self.limit_ios) = (h.qd, h.limit_units, h.limit_ios);
        (self.end_ns, self.paced, self.sectors) = (h.end_ns.unwrap_or(Ns::MAX), h.pacing.is_some(), h.sectors);
        (self.units, self.ios, self.last_submit, self.max_completion) = (h.units, h.ios, h.last_submit, h.max_completion);
        std::mem::swap(&mut self.q, &mut h.outstanding);
    }

    /// Gives the state back to the host it was loaded from (the queue swaps back).
    #[inline(always)]
    fn store(&mut self, h: &mut Host) {
        (h.units, h.ios, h.last_submit, h.max_completion) = (self.units, self.ios, self.last_submit, self.max_completion);
        std::mem::swap(&mut h.outstanding, &mut self.q);
    }
}

/// How a phase ended, or stands, as its report gives it: a phase of several jobs takes the
/// jobs' clocks; it lasts until its last job's end (a timed-out job's end of time, another's
/// last completion).
struct PhaseEnd {
    done: bool,
    timed_out: bool,
    duration_ns: Option<Ns>,
    max_completion: Ns,
    last_submit: Ns,
}

impl PhaseEnd {
    fn of(h: &Host, runs: Option<&[JobRun]>) -> Self {
        let own = PhaseEnd { done: h.done, timed_out: h.timed_out, duration_ns: h.duration_ns, max_completion: h.max_completion, last_submit: h.last_submit };
        let Some(runs) = runs else { return own };
        let timed_out = runs.iter().any(|j| j.host.timed_out);
        let end_ns = runs.iter().map(|j| if j.host.timed_out { j.host.end_ns.unwrap_or(0) } else { j.host.max_completion }).max();
        PhaseEnd {
            done: runs.iter().all(|j| j.host.done),
            timed_out,
            duration_ns: match (timed_out, end_ns) {
                (true, Some(end)) => Some(end.saturating_sub(h.start_ns)),
                _ => h.duration_ns,
            },
            max_completion: runs.iter().map(|j| j.host.max_completion).fold(h.max_completion, Ns::max),
            last_submit: runs.iter().map(|j| j.host.last_submit).fold(h.last_submit, Ns::max),
        }
    }

    /// (Its length [ns], the intervals its series holds): a phase time ended keeps exactly its
    /// duration (completions after the end are dropped); any other keeps every completion.
    fn span(&self, h: &Host) -> (Ns, usize) {
        let end_ns = if self.done && self.timed_out { self.duration_ns.map(|d| h.start_ns + d) } else { None };
        let duration_ns = end_ns.unwrap_or(self.max_completion.max(self.last_submit)) - h.start_ns;
        let s = &h.series;
        let intervals = match end_ns {
            Some(_) => duration_ns.div_ceil(s.interval_ns) as usize,
            None => (s.base + s.bins.len()).max(duration_ns.div_ceil(s.interval_ns) as usize),
        };
        (duration_ns, intervals)
    }
}

/// The closed-loop host of a running phase or replay.
pub(crate) struct Host {
    pub(crate) qd: usize,
    pub(crate) start_ns: Ns,
    duration_ns: Option<Ns>,
    end_ns: Option<Ns>,
    /// Units / IOs after which the phase ends (`u64::MAX`: no such limit).
    limit_units: u64,
    limit_ios: u64,
    pub(crate) outstanding: Completions,
    /// Time of the latest submission (the host's clock).
    pub(crate) last_submit: Ns,
    pub(crate) max_completion: Ns,
    /// Units and IOs (reads, writes, TRIMs) submitted.
    pub(crate) units: u64,
    pub(crate) ios: u64,
    pub(crate) done: bool,
    /// It ended at `end_ns` (its duration), not at a byte or IO count: the phase lasts its
    /// whole duration. A job with a duration that runs out of bytes first ends there, as fio's
    /// `runtime` without `time_based`.
    timed_out: bool,
    /// Another job's end stopped it (fio's `exitall`): it submits nothing at or after this [ns].
    stop_ns: Ns,
    pacing: Option<Box<Pacing>>,
    /// The placement id of each write on a drive with FDP (None: handle 0).
    placer: Option<Box<Placer>>,
    /// fio's zonemode=zbd host (None: commands as generated).
    zbd: Option<Box<ZbdJob>>,
    pub(crate) idle_gaps: u64,
    pub(crate) idle_ns: Ns,
    pub(crate) series: Series,
    /// A replay's windows of N completions.
    pub(crate) windows: Option<Box<Windows>>,
    /// Which way the phase has run fastest, one thread or two ([`Simulation::set_threads`]).
    pub(crate) pace: threads::Pace,
    /// The job's name (a phase of several jobs: one host per job, plus the phase's).
    name: String,
    /// A job among several: its idle gaps leave the drive to the others (the phase lets the
    /// drive idle only when no job has work, see [`Simulation::run_loop`]).
    shares_drive: bool,
    /// Its commands, units and limits count 512-byte sectors, not 4 KiB units.
    sectors: bool,
    /// The host of an online drive ([`crate::online`]): its caller submits each command at a
    /// time it chooses.
    pub(crate) online: bool,
}

impl Host {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(qd: u32, start_ns: Ns, duration_ns: Option<Ns>, limit_units: u64, limit_ios: u64, interval_ns: Ns, first: Snapshot, series: SeriesLimit) -> Self {
        Host {
            qd: qd as usize,
            start_ns,
            duration_ns,
            end_ns: duration_ns.map(|d| start_ns.saturating_add(d)),
            limit_units,
            limit_ios,
            outstanding: Completions::new(qd as usize),
            last_submit: start_ns,
            max_completion: start_ns,
            units: 0,
            ios: 0,
            done: false,
            timed_out: false,
            stop_ns: Ns::MAX,
            pacing: None,
            placer: None,
            zbd: None,
            idle_gaps: 0,
            idle_ns: 0,
            series: Series::new(start_ns, interval_ns, first, series.intervals, series.ends_phase),
            windows: None,
            pace: threads::Pace::default(),
            name: String::new(),
            shares_drive: false,
            sectors: false,
            online: false,
        }
    }
}

/// A workload's series interval refused for the series it would make (see
/// [`Simulation::check_series_length`]): the error of its `interval_ns` field.
fn interval_error(e: SimError) -> SimError {
    SimError::Interval(WorkloadError { field: "interval_ns".into(), message: e.to_string() })
}

/// A simulated drive with a host attached.
pub struct Simulation {
    pub(crate) dev: Device,
    rng: Rng,
    now_ns: Ns,
    /// The running phase or replay.
    pub(crate) host: Option<Box<Host>>,
    /// The running phase's command source (None during a replay).
    source: Option<PhaseSource>,
    /// Most intervals a series may hold ([`MAX_SERIES_INTERVALS`] unless set lower).
    pub(crate) series_limit: u64,
    /// fio's write target zones of the running phase's zbd jobs.
    write_zones: WriteZones,
    /// Threads a phase may use ([`Simulation::set_threads`]).
    threads: usize,
    /// Commands run on two threads so far.
    piped_commands: u64,
    /// This simulation's number in the process (a shared replay's leader is named by it).
    id: u64,
    /// Set while this drive's FTL is behind the leader of a shared replay
    /// ([`Simulation::replay_shared`]).
    following: Option<shared::Following>,
}

impl Simulation {
    /// A fresh (purged) drive from a profile. The seed fixes every random choice.
    pub fn new(cfg: &Config, seed: u64) -> Result<Self, SimError> {
        Self::with_payload_tracking(cfg, seed, false)
    }

    /// Like [`Simulation::new`], optionally tracking a version tag per slot (tests).
    pub fn with_payload_tracking(cfg: &Config, seed: u64, track: bool) -> Result<Self, SimError> {
        Ok(Simulation { dev: Device::new(cfg, track, seed).map_err(SimError::Profile)?, rng: Rng::new(seed), now_ns: 0, host: None, source: None, series_limit: MAX_SERIES_INTERVALS, write_zones: WriteZones::default(), threads: 1, piped_commands: 0, id: shared::next_id(), following: None })
    }

    /// Threads a phase may use (1 or 2; default 1). With 2, a phase of one job without idle
    /// time, or a trace replay, on a drive whose FTL decides by the order of the commands
    /// alone (striped die allocation, no SLC or map cache, no zones, FDP or compression,
    /// foreground GC that stalls its plane only), may run its FTL on a second thread, ahead
    /// of the timing model, and does in the calls of [`Simulation::advance`] (or
    /// [`Simulation::replay`]) where that has been the faster way for the phase. The same
    /// results either way. Other phases run on one thread.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.clamp(1, 2);
    }

    /// Commands run on two threads so far ([`Simulation::set_threads`]).
    pub fn piped_commands(&self) -> u64 {
        self.piped_commands
    }

    /// Lowers the most intervals a phase's series may hold (at most [`MAX_SERIES_INTERVALS`];
    /// for the next phases): a timed phase with more is refused, any other stops with an
    /// error once it reaches them ([`Simulation::check_series`]).
    pub fn set_series_limit(&mut self, intervals: u64) {
        self.series_limit = intervals.clamp(1, MAX_SERIES_INTERVALS);
    }

    /// Refuses a phase of `duration_ns` (None: not timed) in intervals of `interval_ns` whose
    /// duration alone would make more intervals than a series may hold; the error says what
    /// interval would do. The phase starts check it too.
    pub fn check_series_length(&self, duration_ns: Option<Ns>, interval_ns: Ns) -> Result<(), SimError> {
        if let Some(d) = duration_ns.filter(|_| interval_ns > 0) {
            let n = d.div_ceil(interval_ns);
            if n > self.series_limit {
                return Err(SimError::Series(format!(
                    "{} s in intervals of {} s makes {n} intervals, more than the {} a series may hold: use an interval of at least {} s or a shorter run",
                    d as f64 / NS_PER_S as f64,
                    interval_ns as f64 / NS_PER_S as f64,
                    self.series_limit,
                    d.div_ceil(self.series_limit) as f64 / NS_PER_S as f64,
                )));
            }
        }
        Ok(())
    }

    /// The series limit of a phase of `duration_ns` that only time ends (`timed_only`: no
    /// byte or IO count), in intervals of `interval_ns`; refused as `check_series_length` says.
    fn series_limit_of(&self, duration_ns: Option<Ns>, interval_ns: Ns, timed_only: bool) -> Result<SeriesLimit, SimError> {
        self.check_series_length(duration_ns, interval_ns)?;
        Ok(SeriesLimit::new(self.series_limit, duration_ns, interval_ns, timed_only))
    }

    /// Ok unless the running phase or replay went on past the last interval its series may
    /// hold ([`Simulation::set_series_limit`]; only time can end a phase there): the phase has
    /// then stopped ([`Simulation::advance`] reports it done) and should be finished; the
    /// error says what to change.
    pub fn check_series(&self) -> Result<(), SimError> {
        let Some(h) = self.host.as_deref().filter(|h| h.series.overflow) else { return Ok(()) };
        let runs = match &self.source {
            Some(PhaseSource::Jobs(jobs)) => Some(&jobs.runs[..]),
            _ => None,
        };
        let end = PhaseEnd::of(h, runs);
        // A timed phase still running may yet end by its time, which cuts its series there.
        let lost = if end.done { end.span(h).1 > h.series.limit } else { h.duration_ns.is_none() };
        if !lost {
            return Ok(());
        }
        let s = &h.series;
        Err(SimError::Series(format!(
            "the run went on past the {} intervals of {} s its series may hold (simulated time {} s): use a longer interval (--interval) or a shorter run",
            s.limit,
            s.interval_ns as f64 / NS_PER_S as f64,
            (h.max_completion.max(h.last_submit) - h.start_ns) as f64 / NS_PER_S as f64,
        )))
    }

    pub fn geometry(&self) -> &Geometry {
        self.dev.geometry()
    }

    /// See [`Device::set_write_runs`].
    #[doc(hidden)]
    pub fn set_write_runs(&mut self, on: bool) {
        self.dev.set_write_runs(on);
    }

    /// Makes active GC stream its L2P updates (or not) whatever the map's size: for tests that
    /// compare both ways on a small drive.
    #[doc(hidden)]
    pub fn set_map_streamed(&mut self, on: bool) {
        self.dev.ftl.set_map_streamed(on);
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// The FTL alone, to drive it without the timing model (`examples/ftl_share.rs`);
    /// the simulation's later results then include what was done to it.
    #[doc(hidden)]
    pub fn ftl_mut(&mut self) -> &mut crate::ftl::Ftl {
        &mut self.dev.ftl
    }

    /// Current simulated time [ns].
    pub fn now_ns(&self) -> Ns {
        self.now_ns
    }

    pub fn ftl_counters(&self) -> FtlCounters {
        self.dev.ftl.counters()
    }

    /// Flexible Data Placement: each reclaim unit handle's counters, cumulative (empty
    /// without FDP). Their host and GC units add up to [`Simulation::ftl_counters`]'.
    pub fn handle_counters(&self) -> &[HandleCounters] {
        self.dev.ftl.handle_counters()
    }

    /// FDP: reclaim units erased that held several handles' data (initially isolated GC
    /// blocks); with [`HandleCounters::ru_reclaimed`] of every handle, the erases.
    pub fn shared_ru_reclaimed(&self) -> u64 {
        self.dev.ftl.shared_ru_reclaimed()
    }

    pub fn timing_counters(&self) -> TimingCounters {
        self.dev.timing()
    }

    /// True while a phase or a replay is running.
    pub fn phase_running(&self) -> bool {
        self.host.is_some()
    }

    /// True while a replay is running.
    pub fn replay_running(&self) -> bool {
        self.host.as_ref().is_some_and(|h| h.windows.is_some())
    }

    /// Internal counters now.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_at(self.now_ns)
    }

    /// Internal counters at `t` [ns] (no earlier than the last interval boundary or replay
    /// window the running phase or replay has passed): host writes completed, NAND programs,
    /// GC copies, erases and folding carried out by `t` (all that was decided, once a phase
    /// has ended: [`crate::device::Device::settle_media`]), the GC die time decided and
    /// carried out by `t` ([`crate::device::Device::gc_die_done_ns`]), levels and map-cache
    /// counts as decided so far.
    pub fn snapshot_at(&self, t: Ns) -> Snapshot {
        let m = self.dev.media_done(t);
        let slc_units = self.dev.slc().map_or(0, |c| c.used_units());
        let (map_misses, map_bypassed, map_writeback_units) =
            self.dev.map_cache().map_or((0, 0, 0), |m| (m.misses, m.bypassed, m.writeback_units));
        let z = self.dev.zones().map(|z| z.counters()).unwrap_or_default();
        Snapshot {
            host_units: m.host_units,
            host_bytes: m.host_bytes,
            nand_units: m.nand_units,
            gc_units: m.gc_units,
            erases: m.erases,
            free_blocks: self.dev.free_blocks(),
            gc_die_ns: self.dev.timing().gc_die_ns,
            gc_die_done_ns: self.dev.gc_die_done_ns(t),
            slc_units,
            fold_units: m.fold_units,
            map_misses,
            map_bypassed,
            map_writeback_units,
            erased_units: m.erases * self.geometry().slots_per_block as u64,
            ru_filled: self.dev.ftl.handle_counters().iter().map(|h| h.ru_filled).sum(),
            zone_resets: z.resets,
            zone_finishes: z.finishes,
            zone_invalid_writes: z.invalid_writes,
            zone_full_writes: z.full_writes,
            zone_too_many_open: z.too_many_open,
            zone_too_many_active: z.too_many_active,
            zone_boundary_errors: z.boundary_errors,
        }
    }

    /// Lets simulated time pass with no host activity [ns]; idle-time GC may run (see
    /// `gc_idle_*`). Returns the number of GC victims collected while idle. Refused while a
    /// phase or replay runs, or when the clock would pass [`MAX_CLOCK_NS`].
    pub fn idle(&mut self, duration_ns: Ns) -> Result<u64, SimError> {
        self.check_not_following()?;
        if self.phase_running() {
            return Err(SimError::Invalid("idle() while a phase or replay runs; finish it first".into()));
        }
        if let Some(m) = self.past_clock(Some(duration_ns)) {
            return Err(SimError::Invalid(format!("idle time {m}")));
        }
        let collected = self.dev.idle(self.now_ns, duration_ns);
        self.dev.ftl.fence();
        self.now_ns += duration_ns;
        Ok(collected)
    }

    /// Why `duration_ns` (None: not timed) from now is refused: it would take the clock past
    /// [`MAX_CLOCK_NS`]; None when it is not.
    fn past_clock(&self, duration_ns: Option<Ns>) -> Option<String> {
        let d = duration_ns.filter(|&d| self.now_ns.checked_add(d).is_none_or(|end| end > MAX_CLOCK_NS))?;
        Some(format!(
            "{} s from simulated time {} s would take the clock past its {} s; use a shorter one",
            d as f64 / NS_PER_S as f64,
            self.now_ns as f64 / NS_PER_S as f64,
            MAX_CLOCK_NS / NS_PER_S
        ))
    }

    /// Starts a phase at the current time. Errors name the bad argument (as
    /// `Simulator.start_phase` takes it, in bytes).
    pub fn start_phase(&mut self, job: Job) -> Result<(), SimError> {
        self.check_idle()?;
        let user = self.geometry().user_units;
        let invalid = |m: String| Err(SimError::Invalid(m));
        if !(1..=MAX_QD).contains(&job.qd) {
            return invalid(format!("qd {}: the queue depth must be 1 to {MAX_QD} commands", job.qd));
        }
        if job.bs_units == 0 {
            return invalid("bs_bytes 0: the block size must be positive".into());
        }
        if job.interval_ns == 0 {
            return invalid("interval_s 0: the series interval must be at least 1 ns".into());
        }
        if job.duration_ns == Some(0) || job.io_units == Some(0) {
            let arg = if job.duration_ns == Some(0) { "duration_s" } else { "io_bytes" };
            return invalid(format!("{arg} 0: give a positive one, or None to end after one span"));
        }
        if job.span_units < job.bs_units || job.start_unit.checked_add(job.span_units).is_none_or(|end| end > user) {
            return invalid(format!(
                "span_bytes {} from offset_bytes {} does not fit the drive's {} bytes (or is smaller than bs_bytes {}); use a span inside the drive",
                job.span_units as u128 * UNIT_BYTES as u128,
                job.start_unit as u128 * UNIT_BYTES as u128,
                user * UNIT_BYTES,
                job.bs_units as u128 * UNIT_BYTES as u128
            ));
        }
        if let Some(m) = self.past_clock(job.duration_ns) {
            return invalid(format!("duration_s {m}"));
        }
        let plan = Plan::of_job(&job);
        let limit = self.series_limit_of(plan.duration_ns, plan.interval_ns, plan.timed_only())?;
        self.start_plan(plan, limit);
        self.host.as_mut().expect("started").name = job.pattern.name().into();
        Ok(())
    }

    /// Starts a [`Workload`] at the current time; run it with [`Simulation::advance`] and
    /// [`Simulation::finish_phase`] like a job. Errors name the workload field at fault.
    pub fn start_workload(&mut self, w: &Workload) -> Result<(), SimError> {
        self.check_idle()?;
        let geo = self.geometry().clone();
        let plan = Plan::of_workload(w, &geo, &mut self.rng)?;
        let limit = self.series_limit_of(plan.duration_ns, plan.interval_ns, plan.timed_only()).map_err(interval_error)?;
        if let Some(m) = self.past_clock(w.duration_ns) {
            return Err(WorkloadError { field: "duration_ns".into(), message: m }.into());
        }
        self.start_plan(plan, limit);
        Ok(())
    }

    fn start_plan(&mut self, plan: Plan, limit: SeriesLimit) {
        self.dev.set_slots_per_unit(plan.slots_per_unit);
        // Writes without placement ids go through the default handle.
        self.dev.ftl.set_handle(0);
        let mut h = Host::new(plan.qd, self.now_ns, plan.duration_ns, plan.limit_units, plan.limit_ios, plan.interval_ns, self.snapshot(), limit);
        self.dev.set_media_grid(self.now_ns, plan.interval_ns, limit.intervals as u64);
        h.sectors = plan.sectors;
        h.pacing = plan.pacing.map(|mut p| {
            p.start(self.now_ns);
            Box::new(p)
        });
        h.placer = plan.placer.map(Box::new);
        self.write_zones = WriteZones::new(plan.zbd.as_ref().map_or(0, |z| z.max_write_zones()), self.dev.zones().map_or(&[], |z| z.open_list()));
        h.zbd = plan.zbd.map(Box::new);
        let src = PhaseSource::One(JobSource::of(plan.gen, &mut self.rng));
        self.host = Some(Box::new(h));
        self.source = Some(src);
    }

    /// Starts several jobs at once, sharing the drive (fio's `numjobs`, or the jobs of one
    /// stonewall group); the phase ends when every job has ended. Each job draws from its
    /// own random numbers, seeded from the simulation's stream and its index (same seed,
    /// same jobs: same results). `interval_ns` is the series interval of the phase.
    ///
    /// One job without a start delay runs exactly as [`Simulation::start_workload`] would.
    /// Errors name the field as `jobs[i].field`.
    pub fn start_jobs(&mut self, jobs: &[WorkloadJob], interval_ns: Ns) -> Result<(), SimError> {
        let fail = |field: &str, message: &str| Err(WorkloadError { field: field.into(), message: message.into() }.into());
        self.check_idle()?;
        if jobs.is_empty() {
            return fail("jobs", "needs at least one job");
        }
        if let Some(i) = jobs.iter().position(|j| j.startdelay_ns > MAX_THINKTIME_NS) {
            return Err(WorkloadError { field: "startdelay_ns".into(), message: format!("more than {MAX_THINKTIME_NS} ns (one simulated day)") }.in_job(i).into());
        }
        if jobs.len() > MAX_JOBS {
            return fail("jobs", &format!("{} jobs; at most {MAX_JOBS}", jobs.len()));
        }
        if let Some(i) = jobs.iter().position(|j| j.exit_stops.iter().any(|&k| k >= jobs.len())) {
            return Err(WorkloadError { field: "exit_stops".into(), message: format!("names a job beyond the phase's {}", jobs.len()) }.in_job(i).into());
        }
        let outstanding: u64 = jobs.iter().map(|j| j.workload.qd as u64).sum();
        if outstanding > MAX_OUTSTANDING {
            return fail("jobs", &format!("the jobs keep {outstanding} commands outstanding (the sum of their qd); at most {MAX_OUTSTANDING}"));
        }
        let with_interval = |j: &WorkloadJob| Workload { interval_ns, ..j.workload.clone() };
        if let [one] = jobs {
            // Alone, it has no other job to stop.
            if one.startdelay_ns == 0 {
                self.start_workload(&with_interval(one)).map_err(|e| match e {
                    SimError::Workload(e) | SimError::Interval(e) => e.in_job(0).into(),
                    other => other,
                })?;
                self.host.as_mut().expect("started").name = one.name.clone();
                return Ok(());
            }
        }
        let geo = self.geometry().clone();
        let base_seed = self.rng.next_u64();
        let now = self.now_ns;
        let first = self.snapshot();
        let mut runs = Vec::with_capacity(jobs.len());
        let mut slots = Vec::with_capacity(jobs.len());
        let mut timed_only = true;
        for (i, job) in jobs.iter().enumerate() {
            let mut rng = Rng::new(base_seed.wrapping_add(i as u64));
            let plan = Plan::of_workload(&with_interval(job), &geo, &mut rng).map_err(|e| e.in_job(i))?;
            timed_only &= plan.timed_only();
            let start = now + job.startdelay_ns;
            // A job's own series is not kept (the phase's is).
            let unused = SeriesLimit::new(1, None, interval_ns, false);
            let mut host = Host::new(plan.qd, start, plan.duration_ns, plan.limit_units, plan.limit_ios, interval_ns, first, unused);
            host.name = job.name.clone();
            host.shares_drive = true;
            host.sectors = plan.sectors;
            host.pacing = plan.pacing.map(|mut p| {
                p.start(start);
                Box::new(p)
            });
            host.placer = plan.placer.map(Box::new);
            if let Some(z) = &plan.zbd {
                self.write_zones = WriteZones::new(z.max_write_zones(), self.dev.zones().map_or(&[], |z| z.open_list()));
            }
            host.zbd = plan.zbd.map(Box::new);
            let src = JobSource::of(plan.gen, &mut rng);
            slots.push(plan.slots_per_unit);
            let flow = job.flow.map(|flow| FlowRun { flow, count: 0, held_since: None });
            runs.push(JobRun { host, src, rng, slots: (plan.slots_per_unit, 0.0), dirs: Default::default(), next: None, exit_stops: job.exit_stops.clone(), flow });
        }
        // A timed phase when every job is timed: it lasts until the last one's end.
        let duration_ns = jobs.iter().zip(&runs).map(|(j, r)| r.host.duration_ns.map(|d| d.saturating_add(j.startdelay_ns))).collect::<Option<Vec<Ns>>>().map(|d| d.into_iter().max().unwrap_or(0));
        let limit = self.series_limit_of(duration_ns, interval_ns, timed_only).map_err(interval_error)?;
        for (i, j) in jobs.iter().enumerate() {
            if let Some(m) = self.past_clock(j.workload.duration_ns.map(|d| d.saturating_add(j.startdelay_ns))) {
                let with = if j.startdelay_ns > 0 { "with startdelay_s, " } else { "" };
                return Err(WorkloadError { field: "duration_ns".into(), message: format!("{with}{m}") }.in_job(i).into());
            }
        }
        // The drive makes room for the least compressible job's data.
        self.dev.set_slots_per_unit(slots.iter().copied().fold(1.0, f64::max));
        let swap_slots = slots.iter().any(|&x| x != slots[0]);
        let mut h = Host::new(1, now, duration_ns, u64::MAX, u64::MAX, interval_ns, first, limit);
        self.dev.set_media_grid(now, interval_ns, limit.intervals as u64);
        h.name = "jobs".into();
        let flows = runs.iter().any(|r| r.flow.is_some());
        let mut jobs = Box::new(Jobs { runs, busy_until_ns: now, swap_slots, flows, clock_ns: now });
        self.dev.ftl.set_handle(0);
        for j in &mut jobs.runs {
            self.prepare_job(j);
        }
        self.host = Some(Box::new(h));
        self.source = Some(PhaseSource::Jobs(jobs));
        Ok(())
    }

    /// Starts a host for a replay (see [`crate::replay`]).
    pub(crate) fn start_replay_host(&mut self, qd: u32, interval_ns: Ns, windows: Windows, slots_per_unit: f64) {
        self.dev.set_slots_per_unit(slots_per_unit);
        self.dev.ftl.set_handle(0);
        let limit = SeriesLimit::new(self.series_limit, None, interval_ns, false);
        let mut h = Host::new(qd, self.now_ns, None, u64::MAX, u64::MAX, interval_ns, self.snapshot(), limit);
        h.windows = Some(Box::new(windows));
        self.host = Some(Box::new(h));
    }

    /// Runs the current phase for at most `max_ios` more commands.
    pub fn advance(&mut self, max_ios: u64) -> Progress {
        let mut h = self.host.take().expect("advance() without a phase");
        let mut src = self.source.take().expect("advance() during a replay");
        match &mut src {
            PhaseSource::One(JobSource::Uniform(u)) => {
                // A copy on the stack: the compiler keeps its ring position in a register.
                let mut local = **u;
                if !self.run_host_piped(&mut h, &mut local, max_ios) {
                    self.run_host(&mut h, &mut Sources::Uniform(&mut local), max_ios);
                }
                **u = local;
            }
            PhaseSource::One(JobSource::General(g)) => {
                if !self.run_host_piped(&mut h, &mut **g, max_ios) {
                    self.run_host(&mut h, &mut Sources::General(g), max_ios);
                }
            }
            PhaseSource::Jobs(jobs) => self.run_loop::<Jobs, false, false>(&mut h, jobs, max_ios),
        }
        // A series gone past its limit ends a phase that time cannot end (`check_series`
        // says why); a timed phase runs on (its series ends with its time, or the error comes
        // once a count has ended it).
        h.done |= h.series.overflow && h.duration_ns.is_none();
        let progress = match &src {
            PhaseSource::Jobs(jobs) => progress_of_jobs(&h, &jobs.runs),
            PhaseSource::One(_) => progress_of(&h),
        };
        self.host = Some(h);
        self.source = Some(src);
        progress
    }

    /// The host loop of one job: submits up to `max_cmds` commands from `src` while fewer
    /// than `qd` are outstanding (else when the earliest completes), until the phase's end
    /// or the source runs dry. A flush waits for every earlier command, then for the drive
    /// to program what it buffered.
    pub(crate) fn run_host(&mut self, h: &mut Host, src: &mut Sources<'_, '_>, max_cmds: u64) {
        // The commonest phase (plain random pattern, no idle gaps or rate caps, no IO count
        // limit) runs in an instance of the loop without the branches it never takes.
        match src {
            Sources::Uniform(u) if h.pacing.is_none() && h.windows.is_none() && h.limit_ios == u64::MAX && h.placer.is_none() && h.zbd.is_none() => self.run_loop::<One<UniformSource>, true, false>(h, &mut One(*u), max_cmds),
            _ => self.run_loop::<One<Sources>, false, false>(h, &mut One(src), max_cmds),
        }
        // A call [`Simulation::run_host_piped`] left to one thread to be timed ends here.
        h.pace.end_one(h.ios);
    }

    /// The host loop, for one job ([`Simulation::run_host`]) or several ([`Jobs`]: up to
    /// `max_cmds` submissions, each by the job due first, so the drive sees them in time
    /// order; when no job has work outstanding until the next submission, the drive is idle
    /// meanwhile). `PLAIN`: one job without flushes, pacing, windows or IO limit. `PIPED`: a
    /// phase on two threads ([`Simulation::run_host_piped`]): the commands and the FTL's
    /// results come from the FTL's thread.
    #[inline(always)]
    fn run_loop<J: JobSet, const PLAIN: bool, const PIPED: bool>(&mut self, h: &mut Host, jobs: &mut J, max_cmds: u64) {
        // The submitting job's hot scalars live in locals (registers); the cold paths (flush,
        // rate wait, thinktime) see them through its host, written back before and read after.
        let mut lane = Lane::of(h);
        let paced = !PLAIN && lane.paced;
        let sectors = !PLAIN && lane.sectors;
        let mut series = std::mem::take(&mut h.series);
        // The submitting job (always 0 for one job).
        let mut i = 0;
        let mut n = 0;
        while n < max_cmds {
            let (submit, cmd);
            if J::MANY {
                let js = jobs.jobs();
                let Some((k, t, c)) = js.due() else {
                    h.done = true;
                    break;
                };
                if t > js.busy_until_ns {
                    self.dev.idle(js.busy_until_ns, t - js.busy_until_ns);
                    js.busy_until_ns = t;
                }
                i = k;
                lane.load(&mut js.runs[i].host);
                (submit, cmd) = (t, c);
            } else {
                if (lane.units >= lane.limit_units) | (!PLAIN && lane.ios >= lane.limit_ios) {
                    h.done = true;
                    break;
                }
                let c = if PIPED {
                    // A timed phase ends before its next command is taken from the ring: the
                    // FTL's thread makes none that would be submitted at or after the end.
                    if lane.next_submit_ns() >= lane.end_ns {
                        h.done = true;
                        h.timed_out = true;
                        break;
                    }
                    if self.dev.pipe().paused() {
                        break;
                    }
                    let (code, unit, units) = self.dev.pipe().command();
                    if code == END_CODE {
                        break;
                    }
                    Command { kind: CmdKind::from_code(code).expect("the FTL's thread sends a command's kind"), unit, units }
                } else {
                    let Some(c) = jobs.source(0, &mut self.rng).0.peek() else { break };
                    c
                };
                if !PLAIN && c.kind == CmdKind::Flush {
                    h.last_submit = lane.last_submit;
                    h.outstanding = lane.q;
                    self.drain(h);
                    lane.q = std::mem::take(&mut h.outstanding);
                    let done = self.dev.flush(h.last_submit);
                    lane.last_submit = done;
                    lane.max_completion = lane.max_completion.max(done);
                    if let Some(w) = h.windows.as_deref_mut() {
                        w.flushes += 1;
                        if w.complete(done, 0) {
                            w.close(self);
                        }
                    }
                    let (src, rng) = jobs.source(0, &mut self.rng);
                    src.advance(rng, &self.dev.ftl);
                    n += 1;
                    continue;
                }
                let mut t = lane.next_submit_ns();
                if paced {
                    (h.last_submit, h.ios, h.outstanding) = (lane.last_submit, lane.ios, lane.q);
                    t = self.rate_wait(h, c.kind.code() as usize, t);
                    lane.last_submit = h.last_submit;
                    lane.q = std::mem::take(&mut h.outstanding);
                }
                if t >= lane.end_ns {
                    h.done = true;
                    h.timed_out = true;
                    break;
                }
                (submit, cmd) = (t, c);
            }
            if lane.q.len() >= lane.qd {
                let (t, tag) = lane.q.pop_front();
                if let Some(w) = h.windows.as_deref_mut().filter(|_| !PLAIN && !J::MANY) {
                    if w.complete(t, tag) {
                        w.close(self);
                    } else if w.completed % FORGET_EVERY_COMPLETIONS == 0 {
                        // Later windows close at `t` or after, later snapshots at the next
                        // boundary or after: the bookings over by then can go (a replay has
                        // no grid, so every booking is queued; a short queue stays in cache).
                        self.dev.forget_gc_before(t.min(series.next_snapshot_ns));
                    }
                }
            }
            // `next_snapshot_ns` saves a division per command. Replay windows close at
            // completion times, the earliest outstanding one first.
            if submit >= series.next_snapshot_ns {
                let floor = if h.windows.is_some() && lane.q.len() > 0 { lane.q.earliest_ns().min(submit) } else { submit };
                self.pass_boundaries(&mut series, submit, floor);
            }
            let (src, rng) = jobs.source(i, &mut self.rng);
            src.advance(rng, &self.dev.ftl);
            let zbd = if PLAIN { None } else if J::MANY { jobs.jobs().runs[i].host.zbd.as_deref_mut() } else { h.zbd.as_deref_mut() };
            let cmd = match zbd.map(|z| z.adjust(&mut self.write_zones, &mut self.dev, cmd, submit)) {
                None => cmd,
                Some(Some(c)) => c,
                Some(None) => {
                    // Nothing written to read (zonemode=zbd): fio ends the job.
                    if J::MANY {
                        let js = jobs.jobs();
                        let j = &mut js.runs[i];
                        lane.store(&mut j.host);
                        j.host.done = true;
                        self.prepare_job(j);
                        if !j.exit_stops.is_empty() {
                            Self::exit_all(js, i);
                        }
                        n += 1;
                        continue;
                    }
                    h.done = true;
                    break;
                }
            };
            let units = cmd.units.min(lane.limit_units - lane.units);
            if !PLAIN && cmd.kind == CmdKind::Write {
                // FDP: the write's placement id (a job without any writes through handle 0).
                let placer = if J::MANY { jobs.jobs().runs[i].host.placer.as_deref_mut() } else { h.placer.as_deref_mut() };
                let handle = placer.map_or(0, |p| p.pick(cmd.unit));
                self.dev.ftl.set_handle(handle);
            }
            let swap = J::MANY && jobs.jobs().swap_slots && cmd.kind == CmdKind::Write;
            if swap {
                self.dev.swap_slot_state(&mut jobs.jobs().runs[i].slots);
            }
            let (done, data_bytes) = if (J::MANY && lane.sectors) || sectors {
                self.issue_sectors(&mut series, cmd.kind, cmd.unit, units, submit)
            } else {
                self.issue_bytes::<PIPED>(&mut series, cmd.kind, cmd.unit, units, units * UNIT_BYTES, submit)
            };
            if swap {
                self.dev.swap_slot_state(&mut jobs.jobs().runs[i].slots);
            }
            lane.units += units;
            lane.ios += 1;
            lane.last_submit = submit;
            lane.max_completion = lane.max_completion.max(done);
            lane.q.push(done, data_bytes, cmd.kind == CmdKind::Read);
            if PIPED && lane.end_ns != Ns::MAX {
                let granted = threads::granted(lane.ios, lane.qd, &lane.q, lane.last_submit, lane.max_completion, lane.end_ns);
                self.dev.pipe().grant(granted);
            }
            let d = cmd.kind.code() as usize;
            if J::MANY {
                // The job's own report, its next submission; the phase's totals and clock.
                let js = jobs.jobs();
                js.busy_until_ns = js.busy_until_ns.max(done);
                (h.units, h.ios, h.last_submit) = (h.units + units, h.ios + 1, submit);
                let j = &mut js.runs[i];
                j.dirs[d].record(units * if lane.sectors { SECTOR_BYTES } else { UNIT_BYTES }, done - submit);
                lane.store(&mut j.host);
                if lane.paced {
                    self.after_io(&mut j.host, d, submit);
                }
                self.prepare_job(j);
                if j.host.done && !j.exit_stops.is_empty() {
                    Self::exit_all(js, i);
                }
            } else if paced {
                (h.last_submit, h.ios, h.outstanding) = (lane.last_submit, lane.ios, lane.q);
                self.after_io(h, d, submit);
                lane.last_submit = h.last_submit;
                lane.q = std::mem::take(&mut h.outstanding);
            }
            n += 1;
        }
        if J::MANY {
            // The phase's own (unused) queue goes back; its totals were kept as it ran.
            std::mem::swap(&mut h.outstanding, &mut lane.q);
            if h.done {
                // A timed phase: the drive idles from its last host work to the phase's end.
                let js = jobs.jobs();
                if let Some(end) = h.end_ns.filter(|&e| e > js.busy_until_ns) {
                    self.dev.idle(js.busy_until_ns, end - js.busy_until_ns);
                    js.busy_until_ns = end;
                }
            }
        } else {
            lane.store(h);
        }
        h.series = series;
        self.dev.ftl.fence();
    }

    /// Snapshots the internal counters at each interval boundary the submission clock has
    /// passed, `submit >= s.next_snapshot_ns` (GC die time as carried out by the boundary),
    /// and closes the intervals no completion can land in any more. GC bookings that end by
    /// the last boundary passed and by `floor` are dropped: no later snapshot is earlier (a
    /// replay window closes at a completion time, `floor`: the earliest outstanding one).
    /// Once per interval, so out of line: the host loop only compares the times.
    #[inline(never)]
    pub(crate) fn pass_boundaries(&mut self, s: &mut Series, submit: Ns, floor: Ns) {
        let mut k = ((submit - s.start_ns) / s.interval_ns) as usize;
        if k > s.limit {
            s.past_limit();
            k = s.limit;
        }
        while s.base + s.snapshots.len() <= k {
            let at = s.start_ns + (s.base + s.snapshots.len()) as Ns * s.interval_ns;
            s.snapshots.push(self.snapshot_at(at));
        }
        self.dev.forget_gc_before((s.start_ns + k as Ns * s.interval_ns).min(floor));
        let due = (s.base + s.snapshots.len()) as u64;
        // No snapshot is due after the series' last boundary.
        s.next_snapshot_ns = if k == s.limit { Ns::MAX } else { s.start_ns.saturating_add(due.saturating_mul(s.interval_ns)) };
        // Every later completion is at or after `submit`, in interval k or later.
        s.finalize_until(k);
    }

    /// Sends one read, write or TRIM of `units` from `unit` to the drive at `submit` and
    /// counts it in the series; returns its completion time and data bytes.
    #[inline(always)]
    pub(crate) fn issue(&mut self, s: &mut Series, kind: CmdKind, unit: u64, units: u64, submit: Ns) -> (Ns, u64) {
        self.issue_bytes::<false>(s, kind, unit, units, units * UNIT_BYTES, submit)
    }

    /// [`Simulation::issue`] counting `bytes` for the IO in the series. `PIPED`: in a
    /// two-thread phase (no zones, no compression), the FTL's results come from its thread.
    #[inline(always)]
    fn issue_bytes<const PIPED: bool>(&mut self, s: &mut Series, kind: CmdKind, unit: u64, units: u64, bytes: u64, submit: Ns) -> (Ns, u64) {
        // The constant direction in each arm lets `record` index without checks.
        if !PIPED && self.dev.zones().is_some() && kind != CmdKind::Read {
            return self.issue_zoned(s, kind, unit, units, bytes, submit);
        }
        match kind {
            CmdKind::Write => {
                let done = if !PIPED && self.dev.compressing() { self.dev.write_compressed(unit, units, submit) } else { self.dev.write_in::<PIPED>(unit, units, submit) };
                self.dev.book_host_write(units, bytes, done);
                s.record(1, submit, done, bytes);
                (done, bytes)
            }
            CmdKind::Read => {
                let done = if PIPED { self.dev.read_piped(unit, units, submit) } else { self.dev.read(unit, units, submit) };
                s.record(0, submit, done, bytes);
                (done, bytes)
            }
            CmdKind::Trim => {
                let done = if PIPED {
                    self.dev.trim_piped(unit, units, submit)
                } else if self.dev.compressing() {
                    self.dev.trim_compressed(unit, units, submit)
                } else {
                    self.dev.trim(unit, units, submit)
                };
                s.record(2, submit, done, bytes);
                (done, 0)
            }
            CmdKind::Flush => unreachable!("flushes are handled above"),
        }
    }

    /// [`Simulation::issue`] of a command in 512-byte sectors (`sector`, `sectors`): the drive
    /// gets the 4 KiB units it touches. A write covering its first or last unit only partly
    /// reads, modifies and writes that unit ([`Device::write_partial`]); a read reads whole
    /// units; a TRIM deallocates only the units it covers whole. The series counts the bytes
    /// asked for.
    #[inline(never)]
    fn issue_sectors(&mut self, s: &mut Series, kind: CmdKind, sector: u64, sectors: u64, submit: Ns) -> (Ns, u64) {
        let bytes = sectors * SECTOR_BYTES;
        let end = sector + sectors;
        let (unit, units) = (sector / SECTORS_PER_UNIT, end.div_ceil(SECTORS_PER_UNIT) - sector / SECTORS_PER_UNIT);
        let (head, tail) = (!sector.is_multiple_of(SECTORS_PER_UNIT), !end.is_multiple_of(SECTORS_PER_UNIT));
        match kind {
            CmdKind::Write if (head || tail) && self.dev.zones().is_none() => {
                let done = self.dev.write_partial(unit, units, head, tail, units * SECTORS_PER_UNIT - sectors, submit);
                self.dev.book_host_write(units, bytes, done);
                s.record(1, submit, done, bytes);
                (done, bytes)
            }
            CmdKind::Trim => {
                let whole = sector.div_ceil(SECTORS_PER_UNIT);
                self.issue_bytes::<false>(s, kind, whole, (end / SECTORS_PER_UNIT).saturating_sub(whole), bytes, submit)
            }
            _ => self.issue_bytes::<false>(s, kind, unit, units, bytes, submit),
        }
    }

    /// fio's `exitall`: job `i` has ended; the jobs it stops submit nothing at or after its
    /// last completion (a command they were to submit before then still goes); one that ends
    /// so stops those it stops.
    #[cold]
    fn exit_all(js: &mut Jobs, i: usize) {
        let mut ended = vec![i];
        while let Some(i) = ended.pop() {
            let end = js.runs[i].host.max_completion;
            for k in std::mem::take(&mut js.runs[i].exit_stops) {
                let run = &mut js.runs[k];
                run.host.stop_ns = run.host.stop_ns.min(end);
                if run.next.is_some_and(|(t, _)| t >= end) {
                    // It ends now, stopping those it stops in turn.
                    run.next = None;
                    run.host.done = true;
                    if run.host.ios == 0 {
                        // Never started: its clock stays out of the phase's length.
                        run.host.max_completion = run.host.max_completion.min(end);
                        run.host.last_submit = run.host.last_submit.min(end);
                    }
                    ended.push(k);
                }
            }
        }
    }

    /// Works out when job `j` submits next (waiting for its queue, its rate caps) and with
    /// which command; ends it when it has reached its end. Only the job's own state moves:
    /// a job's rate wait leaves the drive to the others.
    fn prepare_job(&mut self, j: &mut JobRun) {
        let h = &mut j.host;
        j.next = None;
        if h.done || h.units >= h.limit_units || h.ios >= h.limit_ios {
            h.done = true;
            return;
        }
        let cmd = j.src.next_command();
        let mut submit = if h.outstanding.len() >= h.qd { h.outstanding.earliest_ns().max(h.last_submit) } else { h.last_submit };
        if h.pacing.is_some() {
            submit = self.rate_wait(h, cmd.kind.code() as usize, submit);
        }
        if submit >= h.end_ns.unwrap_or(Ns::MAX) {
            h.done = true;
            h.timed_out = true;
            return;
        }
        if submit >= h.stop_ns {
            h.done = true;
            return;
        }
        j.next = Some((submit, cmd));
    }

    /// Waits for every outstanding command (counting them in a replay's windows); the
    /// host's clock moves to the last completion, which it returns.
    pub(crate) fn drain(&mut self, h: &mut Host) -> Ns {
        while let Some((t, tag)) = h.outstanding.pop() {
            if let Some(w) = h.windows.as_deref_mut() {
                if w.complete(t, tag) {
                    w.close(self);
                }
            }
            h.last_submit = h.last_submit.max(t);
        }
        h.last_submit
    }

    /// Rate caps: when the next IO of direction `d` is ahead of the schedule at `submit`,
    /// the host (as fio submitting inline) waits for its outstanding IOs, then for the
    /// schedule; the drive is idle meanwhile. Returns the submission time.
    #[cold]
    fn rate_wait(&mut self, h: &mut Host, d: usize, submit: Ns) -> Ns {
        let Some(allowed) = h.pacing.as_deref().map(|p| p.allowed_ns(h.start_ns, d)) else { return submit };
        if allowed <= submit {
            return submit;
        }
        let t = self.drain(h);
        let resume = allowed.max(t);
        self.idle_gap(h, t, resume);
        resume
    }

    /// After an IO of direction `d` submitted at `submit`: counts it for the rate caps and,
    /// when a thinktime is due, waits for every outstanding IO and stays idle the thinktime.
    #[cold]
    fn after_io(&mut self, h: &mut Host, d: usize, submit: Ns) {
        let full = h.outstanding.len() >= h.qd;
        let Some(p) = h.pacing.as_deref_mut() else { return };
        p.count(d);
        if p.thinktime_ns == 0 {
            return;
        }
        // Completed IOs as fio counts them: those the host has taken (every IO submitted
        // and no longer outstanding), plus the one a full queue waits for.
        let taken = h.ios - h.outstanding.len() as u64;
        let count = if p.count_issued { p.issued_total } else { taken + full as u64 };
        let by_blocks = p.thinktime_blocks != 0 && count >= p.last_gap_count + p.thinktime_blocks;
        let by_time = p.thinktime_period_ns != 0 && submit >= p.time_gap_due_ns;
        if !(by_blocks || by_time) {
            return;
        }
        p.last_gap_count = count;
        p.time_gap_due_ns = submit.saturating_add(p.thinktime_period_ns);
        let gap = p.thinktime_ns;
        let t = self.drain(h);
        h.idle_gaps += 1;
        self.idle_gap(h, t, t.saturating_add(gap));
    }

    /// The host leaves the drive idle from `from` to `until` (cut at a timed phase's end):
    /// idle GC may run; the host's clock moves to the end of the gap.
    pub(crate) fn idle_gap(&mut self, h: &mut Host, from: Ns, until: Ns) {
        let until = h.end_ns.map_or(until, |e| until.min(e.max(from)));
        if until > from {
            if !h.shares_drive {
                self.dev.idle(from, until - from);
            }
            h.idle_ns += until - from;
        }
        h.last_submit = h.last_submit.max(until);
    }

    /// Figures of the running phase over its final intervals (O(1)); None without a phase.
    pub fn phase_live(&self) -> Option<PhaseLive> {
        let h = self.host.as_ref()?;
        let s = &h.series;
        let any = s.final_bins > 0;
        let elapsed_ns = h.last_submit - h.start_ns;
        Some(PhaseLive {
            interval_ns: s.interval_ns,
            intervals_done: s.final_bins as u64,
            last_ios: any.then_some(s.last_final_ios),
            last_bytes: any.then_some(s.last_final_bytes),
            min_ios: any.then_some(s.min_final_ios),
            zero_intervals: s.zero_final,
            elapsed_ns,
            remaining_ns: h.duration_ns.map(|d| d.saturating_sub(elapsed_ns)),
        })
    }

    /// Takes the running phase's final intervals not taken before (see [`IntervalBatch`]):
    /// [`Simulation::finish_phase`] then reports only the later ones. None without a phase
    /// or during a replay (whose series is its windows).
    pub fn take_final_intervals(&mut self) -> Option<IntervalBatch> {
        let h = self.host.as_mut().filter(|h| h.windows.is_none())?;
        Some(h.series.take_final())
    }

    /// Ok while the drive can take data; once a plane has run out of room, the error (it
    /// names the profile key to change). The phase or replay running then should end: the
    /// drive drops data that needs a new block. See [`crate::ftl::Ftl::check_space`].
    pub fn check_space(&self) -> Result<(), SimError> {
        self.dev.ftl.check_space().map_err(SimError::DriveFull)
    }

    /// Ok unless a phase, replay or online drive is running (a call that starts one then is
    /// refused).
    pub(crate) fn check_idle(&self) -> Result<(), SimError> {
        self.check_not_following()?;
        if self.phase_running() {
            return Err(SimError::Invalid("a phase or replay is already running; finish it first".into()));
        }
        Ok(())
    }

    /// Runs the current phase to its end (or until the drive runs out of room).
    pub fn run_to_end(&mut self) {
        while !self.advance(1 << 20).done && self.check_space().is_ok() {}
    }

    /// Ends the current phase (complete or not), waits for outstanding commands, and
    /// returns its report. The drive's clock moves to the last completion.
    pub fn finish_phase(&mut self) -> PhaseReport {
        let mut h = self.host.take().expect("finish_phase() without a phase");
        let Some(PhaseSource::Jobs(jobs)) = self.source.take() else { return self.close_host(*h) };
        // The phase's host takes the jobs' clocks and totals; each job reports its own.
        let mut reports = Vec::with_capacity(jobs.runs.len());
        let end = PhaseEnd::of(&h, Some(&jobs.runs));
        (h.done, h.timed_out, h.duration_ns, h.max_completion, h.last_submit) = (end.done, end.timed_out, end.duration_ns, end.max_completion, end.last_submit);
        for j in jobs.runs {
            let jh = j.host;
            h.idle_gaps += jh.idle_gaps;
            h.idle_ns += jh.idle_ns;
            reports.push(JobReport { name: jh.name, directions: j.dirs, idle_gaps: jh.idle_gaps, idle_ns: jh.idle_ns });
        }
        let mut r = self.close_host(*h);
        r.jobs = reports;
        r
    }

    /// Closes a host's series into a report (its queue already drained for a replay) and
    /// moves the drive's clock to the last completion (a timed phase: at least its end).
    pub(crate) fn close_host(&mut self, h: Host) -> PhaseReport {
        let (duration_ns, intervals) = PhaseEnd::of(&h, None).span(&h);
        let Host { start_ns, max_completion, last_submit, mut series, ios: total_ios, idle_gaps, idle_ns, name, done, .. } = h;
        let s = &mut series;
        s.close_first(s.open.len());
        let interval_ns = s.interval_ns;
        // At most the series' limit: a phase stopped before its end, or stopped at the limit
        // (`Simulation::check_series`), counts what completed after it in the totals only.
        let intervals = intervals.min(s.limit);
        // The intervals taken are final, so before a timed phase's end.
        debug_assert!(s.base <= intervals);
        let intervals = intervals - s.base.min(intervals);
        // Every IO submitted is in a bin (before the bins after a timed phase's end go).
        let mut totals = s.taken;
        for b in &s.bins {
            totals.add(b);
        }
        s.bins.resize(intervals, Bin::default());
        s.interval_latency.resize(intervals, None);
        let mut snapshots = std::mem::take(&mut s.snapshots);
        snapshots.truncate(intervals);
        // The intervals no submission reached: the counters as carried out by each boundary.
        // The last one, at the phase's end, counts all the work the phase decided (the
        // dies' work still ahead is booked in the last interval), with the GC die time as
        // carried out by then.
        let phase_end = start_ns + duration_ns;
        while snapshots.len() < intervals {
            let at = (start_ns + (s.base + snapshots.len()) as Ns * interval_ns).min(phase_end);
            snapshots.push(self.snapshot_at(at));
        }
        self.dev.settle_media();
        snapshots.push(self.snapshot_at(phase_end));
        self.now_ns = max_completion.max(last_submit).max(start_ns + duration_ns);
        self.dev.forget_gc_before(phase_end);
        let mut latency = LatencyHistogram::default();
        for l in &s.latency {
            latency.merge(l);
        }
        let directions: [DirectionReport; 3] = std::array::from_fn(|d| {
            let mut il = std::mem::take(&mut s.dir_interval_latency[d]);
            il.resize(intervals, None);
            DirectionReport {
                ios: s.bins.iter().map(|b| b.ios[d]).collect(),
                bytes: s.bins.iter().map(|b| b.bytes[d]).collect(),
                latency: std::mem::take(&mut s.latency[d]),
                interval_latency: il,
                total_ios: totals.ios[d],
                total_bytes: totals.bytes[d],
            }
        });
        PhaseReport {
            start_ns,
            first_interval: s.base,
            start: s.start,
            duration_ns,
            interval_ns,
            ios: s.bins.iter().map(Bin::ios).collect(),
            bytes: s.bins.iter().map(Bin::data_bytes).collect(),
            snapshots,
            latency,
            interval_latency: std::mem::take(&mut s.interval_latency),
            total_ios,
            host_write_bytes: totals.bytes[1],
            host_read_bytes: totals.bytes[0],
            complete: done,
            jobs: vec![JobReport {
                name,
                directions: std::array::from_fn(|d| JobDirection {
                    total_ios: directions[d].total_ios,
                    total_bytes: directions[d].total_bytes,
                    latency: directions[d].latency.clone(),
                }),
                idle_gaps,
                idle_ns,
            }],
            directions,
            idle_gaps,
            idle_ns,
        }
    }

    /// Runs a whole job and returns its report.
    pub fn run(&mut self, job: Job) -> Result<PhaseReport, SimError> {
        self.check_space()?;
        self.start_phase(job)?;
        self.run_started()
    }

    /// Runs a whole workload and returns its report.
    pub fn run_workload(&mut self, w: &Workload) -> Result<PhaseReport, SimError> {
        self.check_space()?;
        self.start_workload(w)?;
        // Its series interval is a workload field.
        self.run_started().map_err(|e| match e {
            SimError::Series(_) => interval_error(e),
            e => e,
        })
    }

    /// Runs the phase just started to its end and returns its report; an error if it went
    /// past the intervals its series may hold or the drive ran out of room.
    fn run_started(&mut self) -> Result<PhaseReport, SimError> {
        self.run_to_end();
        let series = self.check_series();
        let report = self.finish_phase();
        series?;
        self.check_space()?;
        Ok(report)
    }
}

/// How far a phase of several jobs has got: as far as the job furthest from its end.
fn progress_of_jobs(h: &Host, runs: &[JobRun]) -> Progress {
    let fraction = if h.done { 1.0 } else { runs.iter().map(|j| progress_of(&j.host).fraction).fold(1.0, f64::min) };
    Progress { done: h.done, elapsed_ns: h.last_submit - h.start_ns, units: h.units, fraction }
}

/// How far a host has got.
fn progress_of(h: &Host) -> Progress {
    let elapsed_ns = h.last_submit - h.start_ns;
    let fraction = if h.done {
        1.0
    } else {
        let of = |n: u64, limit: u64| if limit == u64::MAX { 0.0 } else { n as f64 / limit as f64 };
        let by_time = h.duration_ns.map_or(0.0, |d| elapsed_ns as f64 / d as f64);
        of(h.units, h.limit_units).max(of(h.ios, h.limit_ios)).max(by_time).min(1.0)
    };
    Progress { done: h.done, elapsed_ns, units: h.units, fraction }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Completions leave in (time, tag) order as from a binary heap, whether pushed in order,
    /// a little out of order (shifted in their ring) or far out of order (kept in the heap),
    /// reads and other commands mixed.
    #[test]
    fn completions_leave_in_order_as_from_a_binary_heap() {
        let mut rng = Rng::new(7);
        for qd in [1usize, 3, 64, 1000] {
            let mut q = Completions::new(qd);
            let mut reference = BinaryHeap::new();
            let (mut t, mut used_heap) = (1_000_000u64, false);
            for step in 0..20_000 {
                if q.len() < qd && rng.below(3) > 0 {
                    t += rng.below(100);
                    let done = match rng.below(10) {
                        0 => t - rng.below(1_000_000), // far earlier than the others (a TRIM)
                        1 => t - rng.below(50),
                        _ => t,
                    };
                    let tag = rng.below(4);
                    q.push(done, tag, rng.below(4) == 0);
                    reference.push(Reverse((done, tag)));
                    used_heap |= !q.early.is_empty();
                } else if q.len() > 0 {
                    let want = reference.peek().map(|&Reverse(e)| e).unwrap();
                    assert_eq!(q.earliest_ns(), want.0, "qd {qd}, step {step}");
                    assert_eq!(q.pop_front(), want, "qd {qd}, step {step}");
                    reference.pop();
                }
                assert_eq!(q.len(), reference.len());
            }
            while let Some(Reverse(e)) = reference.pop() {
                assert_eq!(q.pop(), Some(e));
            }
            assert_eq!((q.pop(), q.earliest_ns()), (None, 0));
            // No ring holds more than MAX_SHIFT entries at a shallower queue.
            assert!(used_heap == (qd > MAX_SHIFT) || qd < 1000 && qd > MAX_SHIFT, "qd {qd}: heap used {used_heap}");
        }
    }

    /// A small drive (2^20 user units).
    fn small() -> Simulation {
        let mut c = Config::default();
        c.set("blocks_per_plane", "128").unwrap();
        c.set("user_capacity_bytes", &(4096u64 << 20).to_string()).unwrap();
        Simulation::new(&c.resolved().unwrap(), 1).unwrap()
    }

    /// Misuse is an error naming the argument, and leaves the drive and its clock as they were.
    #[test]
    fn misuse_is_refused_by_argument_not_by_a_panic() {
        let mut sim = small();
        let job = |f: &dyn Fn(&mut Job)| {
            let mut j = Job::new(crate::Pattern::RandWrite, 1, 4, 0, 1 << 10);
            f(&mut j);
            j
        };
        let refused = |sim: &mut Simulation, j: Job| sim.start_phase(j).unwrap_err().to_string();
        assert!(refused(&mut sim, job(&|j| j.qd = 0)).starts_with("qd 0:"));
        assert!(refused(&mut sim, job(&|j| j.bs_units = 0)).starts_with("bs_bytes 0:"));
        assert!(refused(&mut sim, job(&|j| j.io_units = Some(0))).starts_with("io_bytes 0:"));
        assert!(refused(&mut sim, job(&|j| j.start_unit = u64::MAX)).starts_with("span_bytes 4194304 from offset_bytes 75557863725914323415040 "));
        assert!(refused(&mut sim, job(&|j| j.duration_ns = Some(u64::MAX))).starts_with("duration_s 18446744073.709553 s from simulated time 0 s would take the clock past"));
        assert!(sim.idle(MAX_CLOCK_NS + 1).unwrap_err().to_string().starts_with("idle time "));
        sim.idle(NS_PER_S).unwrap();
        assert!(sim.idle(MAX_CLOCK_NS).is_err(), "the clock is at 1 s");
        let long = Workload { duration_ns: Some(MAX_CLOCK_NS), interval_ns: MAX_CLOCK_NS / 1000, ..Workload::default() };
        assert_eq!(sim.start_workload(&long).unwrap_err().workload().unwrap().field, "duration_ns");
        assert_eq!(sim.now_ns(), NS_PER_S);
        sim.start_phase(job(&|_| ())).unwrap();
        assert!(sim.idle(1).unwrap_err().to_string().contains("finish it first"));
        assert!(sim.start_replay(1, 10).unwrap_err().to_string().contains("already running"));
        sim.run_to_end();
        assert_eq!(sim.finish_phase().total_ios, 1 << 10);
        assert!(sim.start_replay(0, 10).unwrap_err().to_string().starts_with("qd 0:"));
        assert!(sim.start_replay(1, 0).unwrap_err().to_string().starts_with("window_commands 0:"));
    }
}
