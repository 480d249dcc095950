//! The simulation: one drive, a closed-loop host, and phases of work.
//!
//! A *phase* is one fio-like job (pattern, block size, queue depth, span, duration or byte
//! count). The host keeps `qd` commands outstanding: a new command is submitted the moment
//! the earliest outstanding one completes (closed loop), exactly like fio's `iodepth`.
//! Phases run back to back on the same drive; simulated time only moves forward.
//!
//! Callers drive a phase in chunks ([`Simulation::advance`]) so a front end can show
//! progress and stop early, then take its [`PhaseReport`] with [`Simulation::finish_phase`].

use crate::config::{Config, ConfigError, Geometry, UNIT_BYTES};
use crate::device::{Device, TimingCounters};
use crate::ftl::FtlCounters;
use crate::replay::ReplayState;
use crate::rng::Rng;
use crate::stats::{IntervalLatency, LatencyHistogram, PhaseReport, Snapshot};
use crate::time::{Ns, NS_PER_S};

/// Access pattern of a phase (fio `rw=` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Sequential writes from the start of the span (wrapping at its end).
    SeqWrite,
    /// Uniformly random, block-aligned writes over the span.
    RandWrite,
    SeqRead,
    RandRead,
    /// Sequential TRIM (deallocate) commands over the span.
    Trim,
}

impl Pattern {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "write" => Pattern::SeqWrite,
            "randwrite" => Pattern::RandWrite,
            "read" => Pattern::SeqRead,
            "randread" => Pattern::RandRead,
            "trim" => Pattern::Trim,
            _ => return None,
        })
    }

    fn is_random(self) -> bool {
        matches!(self, Pattern::RandWrite | Pattern::RandRead)
    }
}

/// One phase of host work. Addresses and sizes are in 4 KiB units.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub pattern: Pattern,
    /// Block size [4 KiB units].
    pub bs_units: u64,
    /// Commands kept outstanding.
    pub qd: u32,
    /// First logical unit of the span.
    pub start_unit: u64,
    /// Span length [4 KiB units].
    pub span_units: u64,
    /// Stop submitting after this much simulated time [ns]...
    pub duration_ns: Option<Ns>,
    /// ...or after this many units have been submitted (whichever comes first).
    pub io_units: Option<u64>,
    /// Series interval [ns].
    pub interval_ns: Ns,
}

impl Job {
    /// A job over the whole span: `duration_ns` or, if None, one pass over the span.
    pub fn new(pattern: Pattern, bs_units: u64, qd: u32, start_unit: u64, span_units: u64) -> Self {
        Job { pattern, bs_units, qd, start_unit, span_units, duration_ns: None, io_units: None, interval_ns: NS_PER_S }
    }
}

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

/// Completion times of the outstanding commands, earliest first (a min-priority queue, as
/// the `BinaryHeap` it replaces).
///
/// A phase's writes and reads end on the host link and its TRIMs on the controller, each
/// serving commands in submission order, so completions arrive in nondecreasing order and a
/// push is an append to a ring of at most `qd` entries (a power-of-two buffer, indices wrap
/// with a mask). A push that is out of order is inserted at its sorted place, so the queue is
/// exact for any input; only equal times can trade places, and those are indistinguishable.
struct Completions {
    buf: Vec<Ns>,
    mask: usize,
    head: usize,
    len: usize,
}

impl Completions {
    fn new(qd: usize) -> Self {
        let cap = qd.next_power_of_two();
        Completions { buf: vec![0; cap], mask: cap - 1, head: 0, len: 0 }
    }

    /// Adds a completion; at most `qd` may be outstanding.
    #[inline]
    fn push(&mut self, t: Ns) {
        debug_assert!(self.len < self.buf.len());
        let mut i = self.len;
        // Shift later completions up by one (almost never: completions come in order).
        while i > 0 && self.buf[(self.head + i - 1) & self.mask] > t {
            self.buf[(self.head + i) & self.mask] = self.buf[(self.head + i - 1) & self.mask];
            i -= 1;
        }
        self.buf[(self.head + i) & self.mask] = t;
        self.len += 1;
    }

    #[inline]
    fn earliest(&self) -> Option<Ns> {
        (self.len > 0).then(|| self.buf[self.head])
    }

    #[inline]
    fn pop(&mut self) {
        if self.len > 0 {
            self.head = (self.head + 1) & self.mask;
            self.len -= 1;
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }
}

struct Phase {
    job: Job,
    start_ns: Ns,
    outstanding: Completions,
    last_submit: Ns,
    max_completion: Ns,
    cursor: u64,
    units: u64,
    done: bool,
    /// Random addresses generated ahead, so their mapping entries can be prefetched.
    lookahead: [u64; LOOKAHEAD],
    la_pos: usize,
    /// Random patterns: block-aligned positions in the span (`span_units / bs_units`).
    span_blocks: u64,
    /// Submission time at which the next snapshot is due (start + snapshots × interval).
    next_snapshot_ns: Ns,
    /// Series interval of the latest completion: its index and start time (`Ns::MAX` before
    /// the first completion and after intervals close, so the next completion looks its
    /// interval and `slot` up again).
    bin: usize,
    bin_start_ns: Ns,
    ios: Vec<u64>,
    bytes: Vec<u64>,
    snapshots: Vec<Snapshot>,
    /// Latency histograms of the open intervals (completions may still land there: the
    /// submission clock has not passed their end), as (interval index, histogram) by index;
    /// usually one or two, more when a drive stall pushes completions several intervals
    /// ahead of the submissions.
    open: Vec<(usize, LatencyHistogram)>,
    /// Position in `open` of interval `bin`'s histogram.
    slot: usize,
    /// Emptied histograms, reused for the next open intervals.
    spare: Vec<LatencyHistogram>,
    /// Every closed interval's histogram merged: the whole phase once all are closed.
    latency: LatencyHistogram,
    interval_latency: Vec<Option<IntervalLatency>>,
    /// Intervals `0..final_bins` are final (the submission clock is past their end).
    final_bins: usize,
    /// Over the final intervals: IOs and bytes of the last one, fewest IOs (`u64::MAX`
    /// before the first), intervals with no completion.
    last_final_ios: u64,
    last_final_bytes: u64,
    min_final_ios: u64,
    zero_final: u64,
    total_ios: u64,
    write_bytes: u64,
    read_bytes: u64,
}

const LOOKAHEAD: usize = 16;

impl Phase {
    /// Position in `open` of interval `bin`'s histogram, opening one if needed.
    fn open_slot(&mut self, bin: usize) -> usize {
        debug_assert!(bin >= self.final_bins, "completion in final interval {bin}");
        match self.open.binary_search_by_key(&bin, |(b, _)| *b) {
            Ok(i) => i,
            Err(i) => {
                let h = self.spare.pop().unwrap_or_default();
                self.open.insert(i, (bin, h));
                i
            }
        }
    }

    /// The submission clock has reached interval `k`: intervals before it are final. Closes
    /// their histograms and updates the live figures.
    fn finalize_until(&mut self, k: usize) {
        while self.final_bins < k {
            let b = self.final_bins;
            let ios = self.ios.get(b).copied().unwrap_or(0);
            self.last_final_ios = ios;
            self.last_final_bytes = self.bytes.get(b).copied().unwrap_or(0);
            self.min_final_ios = self.min_final_ios.min(ios);
            self.zero_final += (ios == 0) as u64;
            self.final_bins += 1;
        }
        let n = self.open.iter().take_while(|(b, _)| *b < k).count();
        if n > 0 {
            self.close_first(n);
            // `slot` may have moved: the next completion looks its interval up again.
            self.bin_start_ns = Ns::MAX;
        }
    }

    /// Closes the first `n` open intervals: records their figures and merges their
    /// histograms into the phase's.
    fn close_first(&mut self, n: usize) {
        for (b, mut h) in self.open.drain(..n) {
            if self.interval_latency.len() <= b {
                self.interval_latency.resize(b + 1, None);
            }
            self.interval_latency[b] = IntervalLatency::of(&h);
            self.latency.merge(&h);
            h.clear();
            self.spare.push(h);
        }
    }
}

/// A simulated drive with a host attached.
pub struct Simulation {
    pub(crate) dev: Device,
    rng: Rng,
    now_ns: Ns,
    phase: Option<Phase>,
    /// A trace replay in progress ([`crate::replay`]).
    pub(crate) replay: Option<Box<ReplayState>>,
}

impl Simulation {
    /// A fresh (purged) drive from a profile. The seed fixes every random choice.
    pub fn new(cfg: &Config, seed: u64) -> Result<Self, ConfigError> {
        Self::with_payload_tracking(cfg, seed, false)
    }

    /// Like [`Simulation::new`], optionally tracking a version tag per slot (tests).
    pub fn with_payload_tracking(cfg: &Config, seed: u64, track: bool) -> Result<Self, ConfigError> {
        Ok(Simulation { dev: Device::new(cfg, track, seed)?, rng: Rng::new(seed), now_ns: 0, phase: None, replay: None })
    }

    pub fn geometry(&self) -> &Geometry {
        self.dev.geometry()
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Current simulated time [ns].
    pub fn now_ns(&self) -> Ns {
        self.now_ns
    }

    pub fn ftl_counters(&self) -> FtlCounters {
        self.dev.ftl.counters()
    }

    pub fn timing_counters(&self) -> TimingCounters {
        self.dev.timing()
    }

    /// True while a phase or a replay is running.
    pub(crate) fn phase_running(&self) -> bool {
        self.phase.is_some() || self.replay.is_some()
    }

    pub(crate) fn set_now(&mut self, t: Ns) {
        self.now_ns = self.now_ns.max(t);
    }

    /// Internal counters now.
    pub fn snapshot(&self) -> Snapshot {
        let c = self.dev.ftl.counters();
        Snapshot {
            host_units: c.host_units,
            nand_units: c.nand_units(),
            gc_units: c.gc_units,
            erases: c.erases,
            free_blocks: self.dev.ftl.free_blocks(),
            gc_die_ns: self.dev.timing().gc_die_ns,
        }
    }

    /// Lets simulated time pass with no host activity [ns]; idle-time GC may run (see
    /// `gc_idle_*`). Returns the number of GC victims collected while idle.
    pub fn idle(&mut self, duration_ns: Ns) -> u64 {
        assert!(!self.phase_running(), "idle() during a phase or replay");
        let collected = self.dev.idle(self.now_ns, duration_ns);
        self.now_ns += duration_ns;
        collected
    }

    /// Starts a phase at the current time. Errors describe the bad job field.
    pub fn start_phase(&mut self, job: Job) -> Result<(), String> {
        if self.phase_running() {
            return Err("a phase or replay is already running; finish it first".into());
        }
        let user = self.geometry().user_units;
        if job.bs_units == 0 || job.qd == 0 || job.interval_ns == 0 {
            return Err("block size, queue depth and interval must be positive".into());
        }
        if job.span_units < job.bs_units || job.start_unit + job.span_units > user {
            return Err(format!(
                "span of {} units from unit {} does not fit the drive's {} user units (or is smaller than one block)",
                job.span_units, job.start_unit, user
            ));
        }
        let mut p = Phase {
            start_ns: self.now_ns,
            outstanding: Completions::new(job.qd as usize),
            last_submit: self.now_ns,
            max_completion: self.now_ns,
            cursor: 0,
            units: 0,
            done: false,
            lookahead: [0; LOOKAHEAD],
            la_pos: 0,
            span_blocks: job.span_units / job.bs_units,
            next_snapshot_ns: self.now_ns.saturating_add(job.interval_ns),
            bin: 0,
            // No interval yet: the first completion takes the slow path.
            bin_start_ns: Ns::MAX,
            ios: Vec::new(),
            bytes: Vec::new(),
            snapshots: vec![self.snapshot()],
            open: Vec::new(),
            slot: 0,
            spare: Vec::new(),
            latency: LatencyHistogram::default(),
            interval_latency: Vec::new(),
            final_bins: 0,
            last_final_ios: 0,
            last_final_bytes: 0,
            min_final_ios: u64::MAX,
            zero_final: 0,
            total_ios: 0,
            write_bytes: 0,
            read_bytes: 0,
            job,
        };
        if p.job.pattern.is_random() {
            for i in 0..LOOKAHEAD {
                p.lookahead[i] = random_block(&mut self.rng, &p.job, p.span_blocks);
            }
        }
        self.phase = Some(p);
        Ok(())
    }

    /// Runs the current phase for at most `max_ios` more commands.
    pub fn advance(&mut self, max_ios: u64) -> Progress {
        let mut p = self.phase.take().expect("advance() without a phase");
        let job = p.job.clone();
        let end_ns = job.duration_ns.map(|d| p.start_ns + d);
        let limit_units = job.io_units.unwrap_or(if job.duration_ns.is_some() { u64::MAX } else { job.span_units });
        let bytes_per_io = job.bs_units * UNIT_BYTES;
        let mut n = 0;
        while n < max_ios {
            if p.units >= limit_units {
                p.done = true;
                break;
            }
            let submit = if p.outstanding.len() < job.qd as usize {
                p.last_submit
            } else {
                p.outstanding.earliest().unwrap()
            };
            if end_ns.is_some_and(|e| submit >= e) {
                p.done = true;
                break;
            }
            if p.outstanding.len() >= job.qd as usize {
                p.outstanding.pop();
            }
            // Snapshot internal counters at each interval boundary the clock has passed
            // (`next_snapshot_ns` saves a division per command).
            if submit >= p.next_snapshot_ns {
                let k = ((submit - p.start_ns) / job.interval_ns) as usize;
                while p.snapshots.len() <= k {
                    p.snapshots.push(self.snapshot());
                }
                p.next_snapshot_ns = p.start_ns.saturating_add((p.snapshots.len() as u64).saturating_mul(job.interval_ns));
                // Every later completion is at or after `submit`, in interval k or later.
                p.finalize_until(k);
            }
            let lpn = match job.pattern {
                Pattern::RandWrite | Pattern::RandRead => {
                    let next = random_block(&mut self.rng, &job, p.span_blocks);
                    self.dev.ftl.prefetch(next);
                    self.dev.ftl.prefetch_old(p.lookahead[(p.la_pos + LOOKAHEAD / 2) % LOOKAHEAD]);
                    std::mem::replace(&mut p.lookahead[p.la_pos], next)
                }
                _ => job.start_unit + p.cursor,
            };
            p.la_pos = (p.la_pos + 1) % LOOKAHEAD;
            let nunits = job.bs_units.min(limit_units - p.units);
            let done = match job.pattern {
                Pattern::SeqWrite | Pattern::RandWrite => {
                    p.write_bytes += nunits * UNIT_BYTES;
                    self.dev.write(lpn, nunits, submit)
                }
                Pattern::SeqRead | Pattern::RandRead => {
                    p.read_bytes += nunits * UNIT_BYTES;
                    self.dev.read(lpn, nunits, submit)
                }
                Pattern::Trim => self.dev.trim(lpn, nunits, submit),
            };
            if !job.pattern.is_random() {
                p.cursor += nunits;
                if p.cursor + job.bs_units > job.span_units {
                    p.cursor = 0;
                }
            }
            p.units += nunits;
            p.last_submit = submit;
            p.max_completion = p.max_completion.max(done);
            p.outstanding.push(done);
            // Count the completion in its interval; completions mostly fall in the interval
            // of the previous one, which saves a division per command.
            if done < p.bin_start_ns || done - p.bin_start_ns >= job.interval_ns {
                p.bin = ((done - p.start_ns) / job.interval_ns) as usize;
                p.bin_start_ns = p.start_ns + p.bin as u64 * job.interval_ns;
                if p.bin >= p.ios.len() {
                    p.ios.resize(p.bin + 1, 0);
                    p.bytes.resize(p.bin + 1, 0);
                }
                p.slot = p.open_slot(p.bin);
            }
            let bin = p.bin;
            p.ios[bin] += 1;
            p.bytes[bin] += if job.pattern == Pattern::Trim { 0 } else { bytes_per_io.min(nunits * UNIT_BYTES) };
            p.open[p.slot].1.record(done - submit);
            p.total_ios += 1;
            n += 1;
        }
        let elapsed_ns = p.last_submit - p.start_ns;
        let fraction = if p.done {
            1.0
        } else {
            let by_units = if limit_units == u64::MAX { 0.0 } else { p.units as f64 / limit_units as f64 };
            let by_time = job.duration_ns.map_or(0.0, |d| elapsed_ns as f64 / d as f64);
            by_units.max(by_time).min(1.0)
        };
        let progress = Progress { done: p.done, elapsed_ns, units: p.units, fraction };
        self.phase = Some(p);
        progress
    }

    /// Figures of the running phase over its final intervals (O(1)); None without a phase.
    pub fn phase_live(&self) -> Option<PhaseLive> {
        let p = self.phase.as_ref()?;
        let any = p.final_bins > 0;
        let elapsed_ns = p.last_submit - p.start_ns;
        Some(PhaseLive {
            interval_ns: p.job.interval_ns,
            intervals_done: p.final_bins as u64,
            last_ios: any.then_some(p.last_final_ios),
            last_bytes: any.then_some(p.last_final_bytes),
            min_ios: any.then_some(p.min_final_ios),
            zero_intervals: p.zero_final,
            elapsed_ns,
            remaining_ns: p.job.duration_ns.map(|d| d.saturating_sub(elapsed_ns)),
        })
    }

    /// Runs the current phase to its end.
    pub fn run_to_end(&mut self) {
        while !self.advance(1 << 20).done {}
    }

    /// Ends the current phase (complete or not), waits for outstanding commands, and
    /// returns its report. The drive's clock moves to the last completion.
    pub fn finish_phase(&mut self) -> PhaseReport {
        let mut p = self.phase.take().expect("finish_phase() without a phase");
        p.close_first(p.open.len());
        let job = &p.job;
        let end_ns = if p.done { job.duration_ns.map(|d| p.start_ns + d) } else { None };
        let duration_ns = end_ns.unwrap_or(p.max_completion.max(p.last_submit)) - p.start_ns;
        // A timed phase keeps exactly its duration (completions after the end are dropped);
        // a phase limited by bytes keeps every completion.
        let intervals = match end_ns {
            Some(_) => duration_ns.div_ceil(job.interval_ns) as usize,
            None => p.ios.len().max(duration_ns.div_ceil(job.interval_ns) as usize),
        };
        let mut ios = p.ios;
        let mut bytes = p.bytes;
        let mut interval_latency = p.interval_latency;
        ios.resize(intervals, 0);
        bytes.resize(intervals, 0);
        interval_latency.resize(intervals, None);
        let mut snapshots = p.snapshots;
        let last = self.snapshot();
        snapshots.truncate(intervals);
        while snapshots.len() <= intervals {
            snapshots.push(last);
        }
        self.now_ns = p.max_completion.max(p.last_submit).max(p.start_ns + duration_ns);
        PhaseReport {
            start_ns: p.start_ns,
            duration_ns,
            interval_ns: job.interval_ns,
            ios,
            bytes,
            snapshots,
            latency: p.latency,
            interval_latency,
            total_ios: p.total_ios,
            host_write_bytes: p.write_bytes,
            host_read_bytes: p.read_bytes,
            complete: p.done,
        }
    }

    /// Runs a whole job and returns its report.
    pub fn run(&mut self, job: Job) -> Result<PhaseReport, String> {
        self.start_phase(job)?;
        self.run_to_end();
        Ok(self.finish_phase())
    }
}

/// A random block-aligned start in the span; `span_blocks` = `span_units / bs_units`.
#[inline]
fn random_block(rng: &mut Rng, job: &Job, span_blocks: u64) -> u64 {
    job.start_unit + rng.below(span_blocks) * job.bs_units
}
