//! Synthetic workloads as rich as fio's: mixed directions, block-size mixes, random and
//! sequential shares, skewed address distributions, idle gaps (thinktime), rate caps and
//! end conditions, run by the closed-loop host of [`crate::sim`].
//!
//! A [`Workload`] is plain data with units in every field name; [`crate::Simulation::start_workload`]
//! checks it (errors name the field) and runs it through the same `advance` / `phase_live` /
//! `finish_phase` flow as a [`crate::command::Job`]. A `Job` is the special case of one direction,
//! one block size, all random or all sequential, uniform addresses; it is run by the same
//! generator and draws the same random numbers as before workloads existed.
//!
//! What follows fio 3.33 (`io_u.c`, `lib/zipf.c`, `lib/gauss.c`, `backend.c`; re-implemented,
//! with this simulator's random numbers, so the same seed gives other offsets than fio):
//!
//! - **Direction** per IO: a draw against `read_fraction` / `trim_fraction` (fio's
//!   `rwmixread`, drawn per IO as fio effectively does once both directions have run).
//! - **Random or sequential** per IO and direction: a draw against `random_fraction` (fio's
//!   `percentage_random`); with `random_every_ios` N > 1 (fio's `rw=randread:N`) only IOs
//!   1, N + 1, 2N + 1... of the job may be random, the others are sequential. A sequential
//!   IO starts where the last IO of its direction ended (fio's `last_pos`, random IOs
//!   included) and wraps to the span's start when it would cross the end.
//! - **Strides** (`seq_stride_bytes`, fio's `rw=read:8k` / `rw=write:-8k`): a sequential IO
//!   starts that many bytes after (or, negative, before) the end of its direction's last IO,
//!   as fio's `get_next_seq_offset`: the first IO at the span's start (with an `offset` and
//!   a backward stride, fio's first IO is at span − offset + stride from the span's start);
//!   forward, a pass ends where the next IO would cross the span's end, the next starts at
//!   the span's start; backward, an IO that would start before the span's start goes to
//!   span + stride.
//! - **Random offsets** are block indices over the span in units of the direction's
//!   smallest block size (fio's `ba` default), drawn from the [`Distribution`]: uniform;
//!   `zipf` and `pareto` (fio's generators: a hot set scattered over the span by fio's
//!   multiplicative hash, shifted by a random or given centre); `normal` (fio's: the mean of
//!   12 uniform draws plus a uniform deviation of `dev_pct` % of the span, hashed and
//!   centred); `zoned` (an access percentage draw picks a zone, then a uniform block in it).
//! - **Random map** (`random_map`, fio's default without `norandommap`): with a uniform
//!   distribution, the random offsets of a direction visit every block (in units of its
//!   `ba`) exactly once per pass over the span, in a seeded pseudo-random order that changes
//!   every pass ([`RandomMap`]: a permutation in O(1) memory, as fio's
//!   `random_generator=lfsr`). With several block sizes the pass is fio's axmap
//!   ([`FreeMap`], one bit per block): a drawn block already done gives the next free one
//!   (wrapping), and an IO is cut short at the first block the pass has done (fio's
//!   `mark_random_map`), so each block is written once per pass and the pass moves exactly
//!   the span's bytes; the job's directions share the map, as fio's one map per file.
//!   Approximation: sequential IOs of a mixed direction do not mark the map.
//!   Without it (the default, fio's `norandommap`) offsets are drawn with replacement: one
//!   pass of single-block IOs leaves about 1/e of the blocks untouched.
//! - **Block size** per IO from the direction's `bssplit` weights (fio's `bssplit`); a size
//!   that would cross the span's end is drawn again, as fio does.
//! - **Thinktime**: after `thinktime_blocks` IOs (completed, or issued) or once
//!   `thinktime_iotime_ns` of IO time has passed, the host waits for every outstanding IO,
//!   then stays idle `thinktime_ns` (fio's `io_u_quiesce` + sleep): the drive is idle and
//!   idle GC runs ([`crate::device::Device::idle`]).
//! - **Rate caps**: IO number k of a direction is not submitted before k / `rate_iops` after
//!   the phase start (fio's linear schedule), or, with `rate_poisson` (fio's
//!   `rate_process=poisson`), before the sum of k exponential gaps of mean 1 / `rate_iops`
//!   (drawn from the job's random numbers); when the host is ahead of the schedule it
//!   waits for its outstanding IOs and then for the schedule (fio's inline submission). The
//!   direction is drawn first and waited for; fio would issue the other direction meanwhile
//!   if that one is behind its own schedule.
//! - **Sizes below 4 KiB and unaligned offsets**: block sizes, `ba_bytes`, the span and
//!   `io_bytes` may be multiples of 512 bytes (fio's JESD219 mix has 512 B..64 KiB). Such a
//!   workload's generator counts in 512-byte sectors, and the host loop sends each command
//!   as the 4 KiB units it touches: a write that covers a unit only partly costs a
//!   read-modify-write ([`crate::device::Device::write_partial`]), a read of part of a unit
//!   reads the whole unit, a TRIM deallocates only the units it covers whole. Workloads
//!   whose every size and offset is a multiple of 4 KiB count in units, as before.
//! - **Ends** at the first of `duration_ns` (fio's `runtime` with `time_based`), `io_bytes`
//!   (fio's `io_size`), `number_ios`; with none of them, after one span's worth of bytes.

use std::fmt;

use crate::config::{Geometry, UNIT_BYTES};

/// The host's addressing unit for sizes below 4 KiB [bytes].
pub const SECTOR_BYTES: u64 = 512;
/// Sectors in a 4 KiB mapping unit.
pub const SECTORS_PER_UNIT: u64 = UNIT_BYTES / SECTOR_BYTES;
use crate::command::{CmdKind, Command, Job, Pattern};
use crate::rng::Rng;
use crate::time::{Ns, NS_PER_S};

pub mod from_keys;
pub mod key_value;
pub mod keys;
pub mod placement;
pub mod zbd;
pub use from_keys::jobs_from_keys;
pub use key_value::KeyValue;
pub use keys::{field_key, KeyError, KeyScope, WORKLOAD_KEYS};
pub use placement::{Placement, PlacementSelect, SchemeEntry};
use placement::Placer;
pub use zbd::Zbd;
use zbd::ZbdJob;

/// A data direction, in fio's order (its logs code them 0, 1, 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    Read = 0,
    Write = 1,
    Trim = 2,
}

impl Direction {
    pub const ALL: [Direction; 3] = [Direction::Read, Direction::Write, Direction::Trim];

    /// 0 read, 1 write, 2 trim (= the [`CmdKind`] code).
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Direction::Read => "read",
            Direction::Write => "write",
            Direction::Trim => "trim",
        }
    }

    fn kind(self) -> CmdKind {
        match self {
            Direction::Read => CmdKind::Read,
            Direction::Write => CmdKind::Write,
            Direction::Trim => CmdKind::Trim,
        }
    }
}

/// One entry of a block-size mix (fio's `bssplit`): IOs of `bs_bytes` with relative `weight`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockSize {
    /// Block size [bytes]; a positive multiple of 512 (below or not a multiple of 4096: the
    /// drive reads, modifies and writes the units it covers partly).
    pub bs_bytes: u64,
    /// Relative weight (fio's percentage; any positive numbers, normalised to their sum).
    pub weight: u32,
}

/// The IOs of one direction.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectionMix {
    /// Block sizes and their weights (one entry: fio's `bs`; several, at most
    /// [`MAX_BSSPLIT`]: fio's `bssplit`); each size at most the span.
    pub bssplit: Vec<BlockSize>,
    /// Share of random IOs [0..1] (fio's `percentage_random` / 100); the rest sequential.
    pub random_fraction: f64,
    /// Cap on this direction's IOs [IOs per second of simulated time], finite and at least
    /// 0.001; 0 = none (fio's `rate_iops` for the direction).
    pub rate_iops: f64,
    /// Alignment of random offsets [bytes, a multiple of 512] (fio's `blockalign`); None:
    /// the smallest block size (fio's default).
    pub ba_bytes: Option<u64>,
}

impl Default for DirectionMix {
    /// 4 KiB, all random, no cap.
    fn default() -> Self {
        DirectionMix { bssplit: vec![BlockSize { bs_bytes: UNIT_BYTES, weight: 1 }], random_fraction: 1.0, rate_iops: 0.0, ba_bytes: None }
    }
}

/// One zone of a zoned distribution: `access_pct` % of the random offsets fall in the next
/// `span_pct` % of the span (zones follow each other from the span's start).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zone {
    /// Share of random offsets [%, whole]; the zones' shares add up to 100.
    pub access_pct: u32,
    /// Share of the span [%]; the zones' shares add up to 100.
    pub span_pct: f64,
}

/// How random offsets spread over the span (fio's `random_distribution`).
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    Uniform,
    /// fio's `zipf:theta[:center]` (theta > 0, not 1).
    Zipf { theta: f64, center_fraction: Option<f64> },
    /// fio's `pareto:h[:center]` (0 < h < 1).
    Pareto { h: f64, center_fraction: Option<f64> },
    /// fio's `normal:dev[:center]`: `dev_pct` [% of the span, 0..100]; centre 0.5 unless given.
    Normal { dev_pct: f64, center_fraction: Option<f64> },
    /// fio's `zoned:a/s:a/s...`.
    Zoned { zones: Vec<Zone> },
}

/// A synthetic workload. Sizes in bytes (multiples of 512; see the module doc for those
/// that are not multiples of 4096), times in ns, rates per second. Each field's doc gives
/// the values [`crate::Simulation::start_workload`] accepts; an error names the field.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Share of IOs that read [0..1] (fio's `rwmixread` / 100).
    pub read_fraction: f64,
    /// Share of IOs that TRIM [0..1]. Writes are the rest: 1 − read − trim.
    pub trim_fraction: f64,
    pub read: DirectionMix,
    pub write: DirectionMix,
    pub trim: DirectionMix,
    /// Random offsets' distribution (every direction).
    pub distribution: Distribution,
    /// Only IOs 1, N + 1, 2N + 1... of the job may be random (fio's `rw=randread:N`), the
    /// others continue sequentially; 0 or 1: every IO may be.
    pub random_every_ios: u64,
    /// Bytes between the end of a direction's sequential IO and the start of its next (fio's
    /// `rw=write:N`; see the module doc), a multiple of 512; negative: backwards, below minus
    /// the largest block size and at least minus the span; 0: contiguous.
    pub seq_stride_bytes: i64,
    /// fio's random map (see the module doc): each direction's random offsets visit every
    /// block of the span once per pass, in a new order each pass. Uniform distribution
    /// only. false: drawn with replacement (fio's `norandommap`).
    pub random_map: bool,
    /// Commands kept outstanding (fio's `iodepth`), 1 to [`MAX_QD`].
    pub qd: u32,
    /// Start of the span [bytes], inside the drive.
    pub offset_bytes: u64,
    /// Length of the span [bytes], positive and inside the drive; None = to its end.
    pub span_bytes: Option<u64>,
    /// Ends after this much simulated time [ns] (fio's `runtime`, time based), positive and
    /// at most [`crate::sim::MAX_SERIES_INTERVALS`] intervals...
    pub duration_ns: Option<Ns>,
    /// ...or once this many bytes were submitted (reads, writes and TRIMs; fio's `io_size`),
    /// positive...
    pub io_bytes: Option<u64>,
    /// ...or after this many IOs (fio's `number_ios`), positive; with none of the three: one
    /// span's worth of bytes. A workload that a byte or IO count ends may run up to
    /// [`crate::sim::MAX_SERIES_INTERVALS`] intervals ([`crate::Simulation::check_series`]).
    pub number_ios: Option<u64>,
    /// Series interval [ns], at least 1 µs.
    pub interval_ns: Ns,
    /// Idle gap [ns] (fio's `thinktime`), at most one day; 0 = none.
    pub thinktime_ns: Ns,
    /// A gap after every this many IOs (fio's `thinktime_blocks`); 0 = fio's default: 1,
    /// or only `thinktime_iotime_ns` when that is set.
    pub thinktime_blocks: u64,
    /// Count issued IOs for `thinktime_blocks` (fio's `thinktime_blocks_type=issue`) rather
    /// than completed ones (fio's default).
    pub thinktime_blocks_issued: bool,
    /// IO time between gaps [ns] (fio's `thinktime_iotime`): the first gap once this much
    /// time has passed since the job's start, each later one once this plus `thinktime_ns`
    /// has passed since the last gap started; at most one day; 0 = none.
    pub thinktime_iotime_ns: Ns,
    /// Cap on all IOs together [IOs per second of simulated time], finite and at least
    /// 0.001; 0 = none.
    pub rate_iops_total: f64,
    /// The direction caps' IOs arrive with exponential gaps (fio's `rate_process=poisson`)
    /// of mean 1 / `rate_iops`, rather than evenly.
    pub rate_poisson: bool,
    /// Written data is this compressible [%, 0..100] (fio's `buffer_compress_percentage`):
    /// on a profile with `compression_ratio` r > 1 (NAND slots of 4096 / r bytes) a unit's
    /// compressed data, (100 − pct) % of 4 KiB, fills that many slots (at least one: data
    /// compressing better than r is stored at r); without compression it changes nothing.
    /// None: the profile's ratio holds for every unit (one slot each), as for jobs.
    pub buffer_compress_pct: Option<u32>,
    /// The placement ids its writes carry on a drive with Flexible Data Placement (fio's
    /// `plids`, `plid_select`, `dp_scheme`; see [`placement`]); None: every write goes
    /// through handle 0, as fio's writes without `fdp=1`. A drive without FDP refuses it.
    pub placement: Option<Placement>,
    /// fio's `zonemode=zbd` on a zoned drive ([`zbd`]): writes go to the write pointers of
    /// the zones the host keeps open, full zones are reset; None: commands go where the
    /// offsets say (a zoned drive refuses writes not at a write pointer).
    pub zbd: Option<Zbd>,
}

impl Default for Workload {
    /// fio's `rw=randwrite bs=4k iodepth=32` over the whole drive, one pass, 1 s intervals.
    fn default() -> Self {
        Workload {
            read_fraction: 0.0,
            trim_fraction: 0.0,
            read: DirectionMix::default(),
            write: DirectionMix::default(),
            trim: DirectionMix::default(),
            distribution: Distribution::Uniform,
            random_every_ios: 0,
            seq_stride_bytes: 0,
            random_map: false,
            qd: 32,
            offset_bytes: 0,
            span_bytes: None,
            duration_ns: None,
            io_bytes: None,
            number_ios: None,
            interval_ns: NS_PER_S,
            thinktime_ns: 0,
            thinktime_blocks: 0,
            thinktime_blocks_issued: false,
            thinktime_iotime_ns: 0,
            rate_iops_total: 0.0,
            rate_poisson: false,
            buffer_compress_pct: None,
            placement: None,
            zbd: None,
        }
    }
}

/// One job of a phase of several ([`crate::Simulation::start_jobs`]; fio's `numjobs`, or the
/// jobs of one stonewall group): its own closed loop of `workload.qd` commands, offsets,
/// mix, pacing and end condition, sharing the drive with the other jobs.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadJob {
    /// The job's label in the report (fio's job section name).
    pub name: String,
    /// The job starts this long after the phase [ns] (fio's `startdelay`), at most one day;
    /// its duration, rate schedule and thinktime count from there.
    pub startdelay_ns: Ns,
    /// What it runs; its `interval_ns` is ignored (the phase's series has one interval).
    pub workload: Workload,
    /// fio's `exitall`: when this job ends (its last IO completed), the jobs of the phase at
    /// these indices stop: they submit nothing more (what they have outstanding completes),
    /// and one that has not started yet does not start. Empty: it stops none.
    pub exit_stops: Vec<usize>,
    /// fio's flow control (`flow`, `flow_id`, `flow_sleep`) among the jobs of a phase; None
    /// without it.
    pub flow: Option<Flow>,
}

/// fio's flow control: the jobs of a phase with the same `id` submit in proportion to their
/// weights. A job may submit while its share of the group's submissions so far is at most
/// its share of the group's weight (fio's `flow_threshold_exceeded`, counted over the jobs
/// still running); otherwise it waits until another job of the group has submitted, polling
/// every `sleep_ns` when that is not 0, and for its own outstanding commands first when
/// `quiesce` (fio does so with `flow_sleep` or `zonemode=zbd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    /// The group (fio's `flow_id`).
    pub id: u32,
    /// The job's weight (fio's `flow`), at least 1.
    pub weight: u32,
    /// How long a held job sleeps before it tries again [ns] (fio's `flow_sleep`); 0: it
    /// tries again as soon as another job has submitted.
    pub sleep_ns: Ns,
    /// A held job waits for its outstanding commands first.
    pub quiesce: bool,
}

/// A workload field the simulator cannot run, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadError {
    /// The field at fault, e.g. `write.bssplit[1].bs_bytes`.
    pub field: String,
    pub message: String,
}

impl WorkloadError {
    /// The same error for the workload of job `i` of a phase of several (`jobs[i].field`).
    pub fn in_job(self, i: usize) -> Self {
        let field = if self.field.is_empty() { format!("jobs[{i}]") } else { format!("jobs[{i}].{}", self.field) };
        WorkloadError { field, message: self.message }
    }

    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        WorkloadError { field: field.into(), message: message.into() }
    }
}

fn err(field: impl Into<String>, message: impl Into<String>) -> WorkloadError {
    WorkloadError::new(field, message)
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "workload field `{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for WorkloadError {}

/// Everything the host loop needs to run a phase, checked, in 4 KiB units (or 512-byte
/// sectors when `sectors`).
pub(crate) struct Plan {
    /// The generator's addresses and sizes, and the limits, count 512-byte sectors: the
    /// workload has sizes or offsets that are not multiples of 4 KiB.
    pub sectors: bool,
    pub qd: u32,
    pub duration_ns: Option<Ns>,
    /// Units / IOs after which the phase ends (`u64::MAX`: no such limit).
    pub limit_units: u64,
    pub limit_ios: u64,
    pub interval_ns: Ns,
    pub gen: Generator,
    pub pacing: Option<Pacing>,
    /// NAND slots a written unit fills on average (1: the profile's compression ratio).
    pub slots_per_unit: f64,
    /// The placement id of each write, on a drive with FDP (None: handle 0).
    pub placer: Option<Placer>,
    /// fio's zonemode=zbd host (None: commands as generated).
    pub zbd: Option<ZbdJob>,
}

impl Plan {
    /// Only its duration ends it (no byte or IO count).
    pub fn timed_only(&self) -> bool {
        self.duration_ns.is_some() && self.limit_units == u64::MAX && self.limit_ios == u64::MAX
    }

    /// The plan of a single-pattern job (its checks are [`crate::sim::Simulation::start_phase`]'s).
    pub fn of_job(job: &Job) -> Plan {
        let dir = match job.pattern {
            Pattern::SeqWrite | Pattern::RandWrite => Direction::Write,
            Pattern::SeqRead | Pattern::RandRead => Direction::Read,
            Pattern::Trim => Direction::Trim,
        };
        let random = matches!(job.pattern, Pattern::RandWrite | Pattern::RandRead);
        let limit_units = job.io_units.unwrap_or(if job.duration_ns.is_some() { u64::MAX } else { job.span_units });
        let mut dirs = [DirGen::unused(Direction::Read), DirGen::unused(Direction::Write), DirGen::unused(Direction::Trim)];
        dirs[dir.index()] = DirGen {
            kind: dir.kind(),
            single_size: job.bs_units,
            sizes: vec![job.bs_units],
            cum_weights: vec![1.0],
            smallest: job.bs_units,
            ba: job.bs_units,
            blocks: job.span_units / job.bs_units,
            random_fraction: if random { 1.0 } else { 0.0 },
            dist: Dist::Uniform,
            cursor: 0,
            seq_started: false,
        };
        Plan {
            sectors: false,
            qd: job.qd,
            duration_ns: job.duration_ns,
            limit_units,
            limit_ios: u64::MAX,
            interval_ns: job.interval_ns,
            gen: Generator::new(job.start_unit, job.span_units, Some(dir.index() as u8), [0.0; 2], dirs, false, Sequence::default()),
            pacing: None,
            slots_per_unit: 1.0,
            placer: None,
            zbd: None,
        }
    }

    /// Checks `w` against a drive of `user_units` and plans it; `rng` draws the random
    /// centres of skewed distributions.
    pub fn of_workload(w: &Workload, geo: &Geometry, rng: &mut Rng) -> Result<Plan, WorkloadError> {
        let user_units = geo.user_units;
        // Counted in sectors when a size or offset the workload uses is not a whole unit.
        let shares_given = [w.read_fraction, 1.0 - w.read_fraction - w.trim_fraction, w.trim_fraction];
        let mixes_used = [&w.read, &w.write, &w.trim].into_iter().zip(shares_given).filter(|(_, share)| *share > 0.0).map(|(m, _)| m);
        let sectors = mixes_used.flat_map(|m| m.bssplit.iter().map(|b| b.bs_bytes).chain(m.ba_bytes)).chain([w.offset_bytes, w.seq_stride_bytes.unsigned_abs()]).chain(w.span_bytes).chain(w.io_bytes).any(|b| !b.is_multiple_of(UNIT_BYTES));
        let grain = if sectors { SECTOR_BYTES } else { UNIT_BYTES };
        // Drive addresses in the plan's grain (units or sectors).
        let per_unit = UNIT_BYTES / grain;
        let fraction = |field: &str, v: f64| {
            if (0.0..=1.0).contains(&v) { Ok(v) } else { Err(err(field, format!("{v} is not a fraction between 0 and 1"))) }
        };
        let read = fraction("read_fraction", w.read_fraction)?;
        let trim = fraction("trim_fraction", w.trim_fraction)?;
        if read + trim > 1.0 + 1e-12 {
            return Err(err("trim_fraction", format!("read_fraction {read} + trim_fraction {trim} exceed 1 (writes are the rest)")));
        }
        let write = (1.0 - read - trim).max(0.0);
        if !(1..=MAX_QD).contains(&w.qd) {
            return Err(err("qd", format!("{} is out of range: expected 1 to {MAX_QD} commands", w.qd)));
        }
        // How many intervals a timed workload's series holds is checked when it starts
        // (`Simulation::start_workload`).
        if w.interval_ns < 1000 {
            return Err(err("interval_ns", format!("{} ns is below the 1 µs the series can resolve", w.interval_ns)));
        }
        let aligned = |field: &str, v: u64| {
            if v.is_multiple_of(grain) { Ok(v / grain) } else { Err(err(field, format!("{v} is not a multiple of {SECTOR_BYTES} bytes"))) }
        };
        // In the plan's grain from here on (the names say units).
        let user_grains = user_units * per_unit;
        let start_unit = aligned("offset_bytes", w.offset_bytes)?;
        if start_unit >= user_grains {
            return Err(err("offset_bytes", format!("{} is at or beyond the drive's end ({} bytes)", w.offset_bytes, user_units * UNIT_BYTES)));
        }
        let span_units = match w.span_bytes {
            None => user_grains - start_unit,
            Some(b) => aligned("span_bytes", b)?,
        };
        if span_units == 0 || start_unit.saturating_add(span_units) > user_grains {
            return Err(err(
                "span_bytes",
                format!("{} bytes from offset {} do not fit the drive's {} bytes (or are 0)", span_units * grain, w.offset_bytes, user_units * UNIT_BYTES),
            ));
        }
        let slots_per_unit = slots_per_unit(w.buffer_compress_pct, geo)?;
        if w.random_map && w.distribution != Distribution::Uniform {
            return Err(err("random_map", "fio's random map applies to uniform random offsets only; a skewed distribution draws with replacement (norandommap)"));
        }
        let shares = [read, write, trim];
        let mixes = [&w.read, &w.write, &w.trim];
        let mut dirs = [DirGen::unused(Direction::Read), DirGen::unused(Direction::Write), DirGen::unused(Direction::Trim)];
        for d in Direction::ALL {
            let (mix, name) = (mixes[d.index()], d.name());
            fraction(&format!("{name}.random_fraction"), mix.random_fraction)?;
            if !(mix.rate_iops == 0.0 || (mix.rate_iops >= MIN_RATE_IOPS && mix.rate_iops.is_finite())) {
                return Err(err(format!("{name}.rate_iops"), format!("{} must be 0 (no cap) or a finite number >= {MIN_RATE_IOPS}", mix.rate_iops)));
            }
            if shares[d.index()] == 0.0 {
                continue;
            }
            if mix.bssplit.is_empty() || mix.bssplit.len() > MAX_BSSPLIT {
                return Err(err(format!("{name}.bssplit"), format!("{} block sizes; give 1 to {MAX_BSSPLIT}", mix.bssplit.len())));
            }
            let mut sizes = Vec::new();
            let mut cum_weights = Vec::new();
            let total: f64 = mix.bssplit.iter().map(|b| b.weight as f64).sum();
            if total == 0.0 {
                return Err(err(format!("{name}.bssplit"), "the weights add up to 0"));
            }
            let mut acc = 0.0;
            for (i, b) in mix.bssplit.iter().enumerate() {
                let field = format!("{name}.bssplit[{i}].bs_bytes");
                if b.bs_bytes == 0 {
                    return Err(err(field, "0 is not a block size"));
                }
                let units = aligned(&field, b.bs_bytes)?;
                if units > span_units {
                    return Err(err(field, format!("{} bytes is larger than the span ({} bytes)", b.bs_bytes, span_units * grain)));
                }
                acc += b.weight as f64;
                sizes.push(units);
                cum_weights.push(acc / total);
            }
            *cum_weights.last_mut().expect("one entry at least") = 1.0;
            let smallest = *sizes.iter().min().expect("one entry at least");
            let ba = match mix.ba_bytes {
                None => smallest,
                Some(0) => return Err(err(format!("{name}.ba_bytes"), "must be positive")),
                Some(b) => aligned(&format!("{name}.ba_bytes"), b)?.min(span_units),
            };
            // Random offsets leave room for the smallest size (with the default alignment:
            // span / smallest blocks).
            let blocks = (span_units - smallest) / ba + 1;
            let dist = match (w.random_map, sizes.len() > 1) {
                (true, true) => Dist::Free(FreeMap::new(blocks)),
                (true, false) => Dist::Map(RandomMap::new(blocks)),
                (false, _) => Dist::new(&w.distribution, blocks, rng)?,
            };
            let single_size = if sizes.len() == 1 { sizes[0] } else { 0 };
            dirs[d.index()] = DirGen { kind: d.kind(), single_size, sizes, cum_weights, smallest, ba, blocks, random_fraction: mix.random_fraction, dist, cursor: 0, seq_started: false };
        }
        let io_units = match w.io_bytes {
            Some(0) => return Err(err("io_bytes", "must be positive")),
            Some(b) => Some(aligned("io_bytes", b)?),
            None => None,
        };
        if w.number_ios == Some(0) {
            return Err(err("number_ios", "must be positive"));
        }
        if w.duration_ns == Some(0) {
            return Err(err("duration_ns", "must be positive"));
        }
        let limit_units = match (w.duration_ns, io_units, w.number_ios) {
            (None, None, None) => span_units,
            (_, Some(u), _) => u,
            _ => u64::MAX,
        };
        let singles: Vec<usize> = (0..3).filter(|&i| shares[i] > 0.0).collect();
        let single = (singles.len() == 1).then(|| singles[0] as u8);
        // fio's random map is one per file: directions that both keep one share the first's
        // (when they count blocks alike).
        let free: Vec<usize> = (0..3).filter(|&i| matches!(dirs[i].dist, Dist::Free(_))).collect();
        if let [owner, rest @ ..] = free.as_slice() {
            for &i in rest {
                if (dirs[i].blocks, dirs[i].ba) == (dirs[*owner].blocks, dirs[*owner].ba) {
                    dirs[i].dist = Dist::Shared(*owner as u8);
                }
            }
        }
        let largest = dirs.iter().zip(shares).filter(|(_, s)| *s > 0.0).flat_map(|(g, _)| g.sizes.iter().copied()).max().unwrap_or(1);
        let stride = w.seq_stride_bytes;
        let stride_units = aligned("seq_stride_bytes", stride.unsigned_abs())? as i64 * stride.signum();
        if stride < 0 && (stride_units >= -(largest as i64) || stride_units < -(span_units as i64)) {
            return Err(err(
                "seq_stride_bytes",
                format!("{stride}: a backward stride must step back more than the largest block size ({} bytes) and at most the span ({} bytes)", largest * grain, span_units * grain),
            ));
        }
        let seq = Sequence { random_every_ios: w.random_every_ios.max(1), stride_units, ios: 0 };
        let write_smallest = dirs[Direction::Write.index()].smallest.max(1);
        let gen = Generator::new(start_unit, span_units, single, [read, read + write], dirs, sectors, seq);
        let pacing = Pacing::new(w, rng)?;
        // Only a random choice draws its seed (the others leave the job's numbers alone).
        let placer = match &w.placement {
            None => None,
            Some(p) => {
                let seed = if p.select == PlacementSelect::Random { rng.next_u64() } else { 0 };
                Some(Placer::new(p, geo.fdp_handles, grain, seed)?)
            }
        };
        let zbd = match &w.zbd {
            None => None,
            Some(_) if sectors => return Err(err("zbd", "zonemode=zbd runs in 4 KiB units: make every size and offset a multiple of 4096 bytes")),
            Some(z) => Some(ZbdJob::new(z, geo.zones.as_ref(), start_unit, span_units, write_smallest, w.write.random_fraction > 0.0)?),
        };
        Ok(Plan {
            zbd,
            sectors,
            qd: w.qd,
            duration_ns: w.duration_ns,
            limit_units,
            limit_ios: w.number_ios.unwrap_or(u64::MAX),
            interval_ns: w.interval_ns,
            gen,
            pacing,
            slots_per_unit,
            placer,
        })
    }
}

/// NAND slots a 4 KiB unit of data `buffer_compress_pct` % compressible fills on the drive
/// (see [`Workload::buffer_compress_pct`]; None: 1, the profile's ratio holds). Refuses a
/// percentage above 100, or data the drive's NAND could not hold at its user capacity.
pub(crate) fn slots_per_unit(buffer_compress_pct: Option<u32>, geo: &Geometry) -> Result<f64, WorkloadError> {
    let user_units = geo.user_units;
    Ok(match buffer_compress_pct {
        None => 1.0,
        Some(pct) if pct > 100 => return Err(err("buffer_compress_pct", format!("{pct} is not a percentage (0..100)"))),
        Some(pct) => {
            let slots = ((100 - pct) as f64 / 100.0 * geo.compression_ratio()).max(1.0);
            // Each unit may hold up to ceil(slots) slots: the user capacity must fit.
            let need = user_units.saturating_mul(slots.ceil() as u64);
            if need > geo.max_user_units || need >= u32::MAX as u64 {
                return Err(err(
                    "buffer_compress_pct",
                    format!(
                        "data {pct} % compressible fills {slots:.2} NAND slots of {:.0} bytes per 4 KiB unit: the drive's {user_units} user units \
                         would need {need} slots, more than its NAND keeps ({} at most); use more compressible data or a profile with more spare area",
                        geo.nand_bytes_per_unit, geo.max_user_units
                    ),
                ));
            }
            slots
        }
    })
}

/// Most commands a job (or a replay) keeps outstanding (NVMe's largest queue) [commands].
pub const MAX_QD: u32 = 65_536;
/// Most block sizes of a direction's mix (fio's `BSSPLIT_MAX`).
pub const MAX_BSSPLIT: usize = 64;
/// Most jobs of a phase ([`crate::Simulation::start_jobs`]) [jobs].
pub const MAX_JOBS: usize = 4096;
/// Most commands the jobs of a phase keep outstanding together (the sum of their `qd`) [commands].
pub const MAX_OUTSTANDING: u64 = 1 << 18;

/// Slowest rate cap [IOs per second]: one IO per 1000 s of simulated time.
const MIN_RATE_IOPS: f64 = 1e-3;
/// Longest thinktime or thinktime period [ns]: one simulated day.
pub(crate) const MAX_THINKTIME_NS: Ns = 86_400 * NS_PER_S;

/// Idle gaps and rate caps of a running workload ([`crate::sim`] applies them).
pub(crate) struct Pacing {
    pub thinktime_ns: Ns,
    /// A gap after this many IOs (0: no such trigger).
    pub thinktime_blocks: u64,
    pub count_issued: bool,
    /// A gap once this much time passed since the last gap started (0: no such trigger):
    /// `thinktime_iotime_ns` of IO plus the gap.
    pub thinktime_period_ns: Ns,
    /// `thinktime_iotime_ns` (0: no time trigger): the first period, which no gap precedes,
    /// runs this long from the job's start.
    pub thinktime_iotime_ns: Ns,
    /// Simulated time between IOs of each direction / of all IOs at the cap [ns] (0: no cap).
    pub rate_ns_per_io: [f64; 3],
    pub rate_total_ns_per_io: f64,
    /// With fio's `rate_process=poisson`: the random numbers of the gaps, and when the next
    /// IO of each direction is due, from the job's start [ns].
    pub poisson: Option<Box<(Rng, [f64; 3])>>,
    /// IOs issued per direction and in all.
    pub issued: [u64; 3],
    pub issued_total: u64,
    /// Count at the last gap.
    pub last_gap_count: u64,
    /// When the next gap by time is due [ns]: `thinktime_iotime_ns` after the job's start
    /// ([`Pacing::start`]), then `thinktime_period_ns` after the last gap started.
    pub time_gap_due_ns: Ns,
}

impl Pacing {
    fn new(w: &Workload, rng: &mut Rng) -> Result<Option<Pacing>, WorkloadError> {
        if !(w.rate_iops_total == 0.0 || (w.rate_iops_total >= MIN_RATE_IOPS && w.rate_iops_total.is_finite())) {
            return Err(WorkloadError::new("rate_iops_total", format!("{} must be 0 (no cap) or a finite number >= {MIN_RATE_IOPS}", w.rate_iops_total)));
        }
        if w.thinktime_ns > MAX_THINKTIME_NS || w.thinktime_iotime_ns > MAX_THINKTIME_NS {
            let field = if w.thinktime_ns > MAX_THINKTIME_NS { "thinktime_ns" } else { "thinktime_iotime_ns" };
            return Err(WorkloadError::new(field, format!("more than {MAX_THINKTIME_NS} ns (one simulated day)")));
        }
        let per = |r: f64| if r > 0.0 { NS_PER_S as f64 / r } else { 0.0 };
        let rates = [per(w.read.rate_iops), per(w.write.rate_iops), per(w.trim.rate_iops)];
        let total = per(w.rate_iops_total);
        if w.thinktime_ns == 0 && rates.iter().all(|&r| r == 0.0) && total == 0.0 {
            return Ok(None);
        }
        let (blocks, period) = if w.thinktime_ns == 0 {
            (0, 0)
        } else if w.thinktime_blocks == 0 && w.thinktime_iotime_ns != 0 {
            (0, w.thinktime_iotime_ns + w.thinktime_ns)
        } else {
            (w.thinktime_blocks.max(1), if w.thinktime_iotime_ns != 0 { w.thinktime_iotime_ns + w.thinktime_ns } else { 0 })
        };
        Ok(Some(Pacing {
            thinktime_ns: w.thinktime_ns,
            thinktime_blocks: blocks,
            count_issued: w.thinktime_blocks_issued,
            thinktime_period_ns: period,
            thinktime_iotime_ns: if period != 0 { w.thinktime_iotime_ns } else { 0 },
            rate_ns_per_io: rates,
            rate_total_ns_per_io: total,
            // The gaps' own stream, so that they leave the offsets' draws as they are.
            poisson: w.rate_poisson.then(|| Box::new((Rng::new(rng.next_u64()), [0.0; 3]))),
            issued: [0; 3],
            issued_total: 0,
            last_gap_count: 0,
            time_gap_due_ns: 0,
        }))
    }

    /// The job starts at `start_ns`: its first period of IO, which no gap precedes, runs
    /// `thinktime_iotime_ns` from there (as fio's, timed from the job's start); each later one
    /// `thinktime_period_ns` from the start of the gap before it.
    pub fn start(&mut self, start_ns: Ns) {
        self.time_gap_due_ns = start_ns.saturating_add(self.thinktime_iotime_ns);
    }

    /// Earliest submission the rate caps allow for the next IO of direction `d` [ns].
    #[inline]
    pub fn allowed_ns(&self, start_ns: Ns, d: usize) -> Ns {
        let at = |n: u64, per: f64| if per > 0.0 { start_ns.saturating_add((n as f64 * per) as Ns) } else { 0 };
        let by_dir = match &self.poisson {
            Some(p) if self.rate_ns_per_io[d] > 0.0 => start_ns.saturating_add(p.1[d] as Ns),
            _ => at(self.issued[d], self.rate_ns_per_io[d]),
        };
        by_dir.max(at(self.issued_total, self.rate_total_ns_per_io))
    }

    /// Counts an IO of direction `d` issued; under `rate_process=poisson` the direction's
    /// next IO is due an exponential gap later (fio's `usec_for_io`).
    #[inline]
    pub fn count(&mut self, d: usize) {
        self.issued[d] += 1;
        self.issued_total += 1;
        if let Some(p) = self.poisson.as_deref_mut() {
            let mean = self.rate_ns_per_io[d];
            p.1[d] += mean * -(1.0 - p.0.unit_f64()).ln();
        }
    }
}

/// Generates a workload's commands, one at a time, in the order the host submits them.
pub(crate) struct Generator {
    start_unit: u64,
    span_units: u64,
    /// The direction of every IO when only one has a share.
    single: Option<u8>,
    /// Draws below `cut[0]` read, below `cut[1]` write, else TRIM.
    cut: [f64; 2],
    dirs: [DirGen; 3],
    /// fio's plain `rw=randwrite`-like case (one direction, one size, all random, uniform,
    /// whole units): its kind, block count and size, generated without the general path's
    /// checks.
    uniform: Option<(CmdKind, u64, u64)>,
    /// Addresses and sizes are 512-byte sectors, not 4 KiB units.
    sectors: bool,
    seq: Sequence,
}

/// How a job's IOs follow each other: which may be random, and the stride of sequential ones.
#[derive(Clone, Copy, Debug)]
struct Sequence {
    /// Only IOs 1, N + 1, 2N + 1... may be random (1: every IO).
    random_every_ios: u64,
    /// [`Workload::seq_stride_bytes`] in the generator's grain.
    stride_units: i64,
    /// IOs generated so far.
    ios: u64,
}

impl Default for Sequence {
    fn default() -> Self {
        Sequence { random_every_ios: 1, stride_units: 0, ios: 0 }
    }
}

impl Generator {
    fn new(start_unit: u64, span_units: u64, single: Option<u8>, cut: [f64; 2], dirs: [DirGen; 3], sectors: bool, seq: Sequence) -> Self {
        let plain = seq.random_every_ios == 1 && seq.stride_units == 0;
        let uniform = single.map(|d| &dirs[d as usize]).and_then(|g| {
            (plain && !sectors && g.single_size != 0 && g.ba == g.single_size && g.random_fraction >= 1.0 && matches!(g.dist, Dist::Uniform))
                .then_some((g.kind, g.blocks, g.ba))
        });
        Generator { start_unit, span_units, single, cut, dirs, uniform, sectors, seq }
    }

    /// log2 of the generator's addresses per 4 KiB unit: 3 for sectors, 0 for units.
    pub fn unit_shift(&self) -> u32 {
        if self.sectors { SECTORS_PER_UNIT.trailing_zeros() } else { 0 }
    }

    /// fio's plain random pattern: (kind, first unit, blocks, block size [units]); the
    /// commands are then `first + below(blocks) × size`, one draw each, as [`Generator::next`]
    /// would make them.
    pub fn uniform(&self) -> Option<(CmdKind, u64, u64, u64)> {
        self.uniform.map(|(kind, blocks, ba)| (kind, self.start_unit, blocks, ba))
    }

    #[inline(always)]
    pub fn next(&mut self, rng: &mut Rng) -> Command {
        let d = match self.single {
            Some(d) => d as usize,
            None => {
                let u = rng.unit_f64();
                if u < self.cut[0] {
                    0
                } else if u < self.cut[1] {
                    1
                } else {
                    2
                }
            }
        };
        let span = self.span_units;
        let g = &self.dirs[d];
        let may_be_random = self.seq.random_every_ios == 1 || {
            let hit = self.seq.ios.is_multiple_of(self.seq.random_every_ios);
            self.seq.ios += 1;
            hit
        };
        let random = if !may_be_random {
            false
        } else if g.random_fraction >= 1.0 {
            true
        } else if g.random_fraction <= 0.0 {
            false
        } else {
            rng.unit_f64() < g.random_fraction
        };
        let (offset, units) = if random {
            let (blocks, ba) = (g.blocks, g.ba);
            // the direction's own distribution, or the random map it shares with another
            let owner = match g.dist {
                Dist::Shared(o) => o as usize,
                _ => d,
            };
            let b = match &mut self.dirs[owner].dist {
                Dist::Uniform => rng.below(blocks),
                dist => dist.draw_skewed(rng, blocks),
            };
            let offset = b * ba;
            let units = self.dirs[d].size_fitting(rng, span - offset);
            match &mut self.dirs[owner].dist {
                Dist::Free(m) => (offset, units.min(m.take(b, units.div_ceil(ba)) * ba)),
                _ => (offset, units),
            }
        } else {
            let g = &mut self.dirs[d];
            let units = g.size(rng);
            let stride = self.seq.stride_units;
            if stride == 0 {
                if g.cursor + units > span {
                    g.cursor = 0;
                }
                (g.cursor, units)
            } else {
                (g.strided(stride, self.start_unit, span, units), units)
            }
        };
        let g = &mut self.dirs[d];
        g.seq_started = true;
        g.cursor = offset + units;
        Command { kind: g.kind, unit: self.start_unit + offset, units }
    }
}

/// One direction's generator state.
struct DirGen {
    kind: CmdKind,
    /// The block size when there is one [units], else 0.
    single_size: u64,
    /// Block sizes [units] and cumulative weights (last = 1.0).
    sizes: Vec<u64>,
    cum_weights: Vec<f64>,
    /// The smallest size [units]: it always fits after a random offset.
    smallest: u64,
    /// Alignment of random offsets [units] (fio's `ba`; by default the smallest size).
    ba: u64,
    /// Random offsets are `0..blocks` × `ba`.
    blocks: u64,
    random_fraction: f64,
    dist: Dist,
    /// End of this direction's last IO, from the span start [units].
    cursor: u64,
    /// The direction has issued an IO (its `cursor` is that IO's end).
    seq_started: bool,
}

impl DirGen {
    fn unused(d: Direction) -> DirGen {
        DirGen { kind: d.kind(), single_size: 1, sizes: vec![1], cum_weights: vec![1.0], smallest: 1, ba: 1, blocks: 1, random_fraction: 0.0, dist: Dist::Uniform, cursor: 0, seq_started: false }
    }

    /// The offset of a sequential IO of `units` with a stride (fio's `get_next_seq_offset`
    /// with `ddir_seq_add` = `stride`), from the span's start; `start` is the span's start on
    /// the drive, which fio's first backward IO depends on.
    fn strided(&self, stride: i64, start: u64, span: u64, units: u64) -> u64 {
        // fio's last_pos relative to the span: a fresh backward sequence starts from the
        // span's length taken as a drive address (fio's rewind), when the span has an offset.
        let last = match self.seq_started {
            true => self.cursor as i64,
            false if stride < 0 && start != 0 => span as i64 - start as i64,
            false => 0,
        };
        if last == 0 {
            return 0;
        }
        let mut pos = last + stride;
        if stride < 0 && pos < 0 {
            pos = span as i64 + stride;
        }
        if pos < 0 || pos as u64 + units > span {
            0 // forward: the pass is over, the next starts at the span's start
        } else {
            pos as u64
        }
    }

    #[inline(always)]
    fn size(&self, rng: &mut Rng) -> u64 {
        if self.single_size != 0 {
            return self.single_size;
        }
        self.size_of_mix(rng)
    }

    #[inline(never)]
    fn size_of_mix(&self, rng: &mut Rng) -> u64 {
        let u = rng.unit_f64();
        let i = self.cum_weights.iter().position(|&c| u < c).unwrap_or(self.sizes.len() - 1);
        self.sizes[i]
    }

    /// A size that fits in `room` units: drawn again when it does not (as fio does), the
    /// smallest (which always fits after a random offset) after 16 tries.
    #[inline(always)]
    fn size_fitting(&self, rng: &mut Rng, room: u64) -> u64 {
        if self.single_size != 0 {
            // Random offsets leave room for the smallest size: it fits.
            return self.single_size;
        }
        for _ in 0..16 {
            let s = self.size(rng);
            if s <= room {
                return s;
            }
        }
        self.smallest
    }
}

/// fio's multiplicative hash (`__hash_u64`): scatters the hot blocks of a skewed
/// distribution over the span.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// zipf's normalisation sums at most this many terms (fio's `ZIPF_MAX_GEN`).
const ZIPF_MAX_GEN: u64 = 10_000_000;

/// A random-offset distribution over `blocks` block indices.
enum Dist {
    Uniform,
    Zipf { theta: f64, zetan: f64, alpha: f64, eta: f64, off: u64 },
    Pareto { pow: f64, off: u64 },
    Normal { stddev: i64, off: u64 },
    /// `index[v]`: the zone of access percentile v + 1; zones as (first block, blocks).
    Zoned { index: Box<[u16; 100]>, zones: Vec<(u64, u64)> },
    /// Uniform without replacement within a pass (fio's random map).
    Map(RandomMap),
    /// fio's random map with several block sizes: a bitmap of the blocks done this pass.
    Free(FreeMap),
    /// The [`Dist::Free`] map of another direction (its index): fio keeps one random map per
    /// file, which the job's reads and writes share.
    Shared(u8),
}

/// fio's axmap for a pass with several block sizes: one bit per block (in units of `ba`,
/// the smallest size), set once an IO covered it. A draw is uniform over `0..n`, moved to
/// the next free block (wrapping) when the drawn one is done; [`FreeMap::take`] marks an
/// IO's blocks up to the first done one. A new pass starts once every block is done.
/// Memory: `n` / 8 bytes.
pub(crate) struct FreeMap {
    n: u64,
    done: Vec<u64>,
    left: u64,
}

impl FreeMap {
    fn new(n: u64) -> Self {
        FreeMap { n, done: vec![0; n.div_ceil(64) as usize], left: n }
    }

    #[inline]
    fn is_done(&self, b: u64) -> bool {
        self.done[(b / 64) as usize] >> (b % 64) & 1 == 1
    }

    /// A free block: uniform, or the next free one after a done block (wrapping).
    fn draw(&mut self, rng: &mut Rng) -> u64 {
        if self.left == 0 {
            self.done.iter_mut().for_each(|w| *w = 0);
            self.left = self.n;
        }
        let b = rng.below(self.n);
        if !self.is_done(b) {
            return b;
        }
        let words = self.done.len();
        let first = (b / 64) as usize;
        for k in 0..=words {
            let i = (first + k) % words;
            let mut free = !self.done[i];
            if k == 0 {
                free &= !0u64 << (b % 64); // at or after b in its own word
            }
            if i == words - 1 && self.n % 64 != 0 {
                free &= (1u64 << (self.n % 64)) - 1;
            }
            if free != 0 {
                return i as u64 * 64 + free.trailing_zeros() as u64;
            }
        }
        unreachable!("a pass with blocks left has a free block")
    }

    /// Marks up to `nr` blocks from `b` (a free block) as done, stopping at the first done
    /// one or the end; returns how many were marked (at least 1).
    fn take(&mut self, b: u64, nr: u64) -> u64 {
        let mut k = 0;
        while k < nr && b + k < self.n && !self.is_done(b + k) {
            self.done[((b + k) / 64) as usize] |= 1 << ((b + k) % 64);
            k += 1;
        }
        self.left -= k;
        k.max(1)
    }
}

/// fio's random map without its bitmap: the block indices `0..n` in a pseudo-random order,
/// each exactly once per pass, a new order (new keys from the generator's random numbers)
/// each pass. The order is a 4-round Feistel network over the smallest even number of bits
/// that holds `n` (a permutation of `0..2^bits`), cycle-walked into `0..n` (applied again
/// while the result is `n` or more), which keeps it a permutation of `0..n` in O(1) memory;
/// at most 4 × `n` values are tried per pass on average.
pub(crate) struct RandomMap {
    n: u64,
    /// Bits of each half of the network's input, and their mask.
    half_bits: u32,
    half_mask: u64,
    /// Round keys of the current pass.
    keys: [u64; 4],
    /// Position in the current pass (`n`: the pass is over, the next draw starts another).
    next: u64,
}

impl RandomMap {
    fn new(n: u64) -> Self {
        let bits = (u64::BITS - n.saturating_sub(1).leading_zeros()).max(2);
        let half_bits = bits.div_ceil(2);
        RandomMap { n, half_bits, half_mask: (1u64 << half_bits) - 1, keys: [0; 4], next: n }
    }

    /// The network: a permutation of `0..2^(2 × half_bits)`.
    #[inline]
    fn permute(&self, x: u64) -> u64 {
        let (mut l, mut r) = (x >> self.half_bits, x & self.half_mask);
        for k in self.keys {
            let f = mix64(r ^ k) & self.half_mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// The next block index of the pass (starting a new pass, with new keys, after `n`).
    fn draw(&mut self, rng: &mut Rng) -> u64 {
        if self.next >= self.n {
            self.keys = std::array::from_fn(|_| rng.next_u64());
            self.next = 0;
        }
        let mut x = self.permute(self.next);
        while x >= self.n {
            x = self.permute(x);
        }
        self.next += 1;
        x
    }
}

/// splitmix64's finaliser: the round function of [`RandomMap`]'s network.
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Dist {
    fn new(d: &Distribution, n: u64, rng: &mut Rng) -> Result<Dist, WorkloadError> {
        let err = |field: &str, m: String| Err(WorkloadError::new(format!("distribution.{field}"), m));
        let center = |c: Option<f64>| -> Result<Option<f64>, WorkloadError> {
            match c {
                Some(v) if !(0.0..=1.0).contains(&v) => Err(WorkloadError::new("distribution.center_fraction", format!("{v} is not between 0 and 1"))),
                _ => Ok(c),
            }
        };
        // zipf and pareto: a random shift unless a centre is given (fio's `rand_off`).
        let shift = |c: Option<f64>, rng: &mut Rng| match c {
            Some(c) => ((n as f64 * c) as u64).min(n.saturating_sub(1)),
            None => rng.below(n),
        };
        Ok(match d {
            Distribution::Uniform => Dist::Uniform,
            &Distribution::Zipf { theta, center_fraction } => {
                if !(theta > 0.0 && theta.is_finite()) || theta == 1.0 {
                    return err("theta", format!("{theta}: zipf needs a theta > 0 other than 1"));
                }
                let c = center(center_fraction)?;
                let zetan: f64 = (1..=n.min(ZIPF_MAX_GEN)).map(|i| (1.0 / i as f64).powf(theta)).sum();
                let zeta2 = 1.0 + 0.5f64.powf(theta);
                let alpha = 1.0 / (1.0 - theta);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                Dist::Zipf { theta, zetan, alpha, eta, off: shift(c, rng) }
            }
            &Distribution::Pareto { h, center_fraction } => {
                if !(h > 0.0 && h < 1.0) {
                    return err("h", format!("{h}: pareto needs 0 < h < 1"));
                }
                let c = center(center_fraction)?;
                Dist::Pareto { pow: h.ln() / (1.0 - h).ln(), off: shift(c, rng) }
            }
            &Distribution::Normal { dev_pct, center_fraction } => {
                if !(0.0..=100.0).contains(&dev_pct) {
                    return err("dev_pct", format!("{dev_pct} is not a percentage (0..100)"));
                }
                let c = center(center_fraction)?.unwrap_or(0.5);
                let stddev = if dev_pct != 0.0 { ((n as f64 * dev_pct / 100.0).ceil() as u64).min(n / 2) } else { 0 };
                let off = ((n as f64 * (c - 0.5)).round() as i128).rem_euclid(n as i128) as u64;
                Dist::Normal { stddev: stddev.min(i64::MAX as u64) as i64, off }
            }
            Distribution::Zoned { zones } => {
                if zones.is_empty() || zones.len() > 256 {
                    return err("zones", format!("{} zones; give 1 to 256", zones.len()));
                }
                let access: u32 = zones.iter().map(|z| z.access_pct).sum();
                if access != 100 {
                    return err("zones", format!("the access_pct add up to {access}, not 100"));
                }
                if zones.iter().any(|z| !(z.span_pct >= 0.0 && z.span_pct.is_finite())) {
                    return err("zones", "a span_pct is negative or not a number".into());
                }
                let span: f64 = zones.iter().map(|z| z.span_pct).sum();
                if (span - 100.0).abs() > 1e-6 {
                    return err("zones", format!("the span_pct add up to {span}, not 100"));
                }
                let mut index = Box::new([0u16; 100]);
                let mut out = Vec::with_capacity(zones.len());
                let (mut a, mut s) = (0usize, 0.0f64);
                for (i, z) in zones.iter().enumerate() {
                    index[a..a + z.access_pct as usize].fill(i as u16);
                    a += z.access_pct as usize;
                    let first = ((s * n as f64 / 100.0) as u64).min(n - 1);
                    s += z.span_pct;
                    let end = ((s * n as f64 / 100.0) as u64).min(n);
                    out.push((first, end.saturating_sub(first).max(1)));
                }
                Dist::Zoned { index, zones: out }
            }
        })
    }

    /// A block index in `0..n` (the uniform case is inlined by the caller).
    #[inline(never)]
    fn draw_skewed(&mut self, rng: &mut Rng, n: u64) -> u64 {
        match self {
            Dist::Uniform => rng.below(n),
            Dist::Map(m) => m.draw(rng),
            Dist::Free(m) => m.draw(rng),
            Dist::Shared(_) => unreachable!("a shared map is drawn through its owner"),
            &mut Dist::Zipf { theta, zetan, alpha, eta, off } => {
                let u = rng.unit_f64();
                let z = u * zetan;
                let val = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(theta) {
                    2
                } else {
                    1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                (val - 1).wrapping_mul(GOLDEN_RATIO_64).wrapping_add(off) % n
            }
            &mut Dist::Pareto { pow, off } => {
                let v = ((n - 1) as f64 * rng.unit_f64().powf(pow)) as u64;
                v.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(off) % n
            }
            &mut Dist::Normal { stddev, off } => {
                let mut sum = 0u64;
                for _ in 0..12 {
                    sum += rng.below(n + 1);
                }
                // fio's (sum + 11) / 12.
                let mut sum = sum.div_ceil(12) as i128;
                if stddev != 0 {
                    let mut dev = (stddev as f64 * rng.unit_f64()) as i64 - stddev / 2;
                    while dev != 0 && !(0..n as i128).contains(&(sum + dev as i128)) {
                        dev /= 2;
                    }
                    sum += dev as i128;
                }
                (sum as u64).wrapping_mul(GOLDEN_RATIO_64).wrapping_add(off) % n
            }
            Dist::Zoned { index, zones } => {
                let (first, len) = zones[index[rng.below(100) as usize] as usize];
                (first + rng.below(len)).min(n - 1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drive of 2^20 user units (4 GiB).
    fn geo() -> Geometry {
        let mut c = crate::Config::default();
        c.set("blocks_per_plane", "128").unwrap();
        c.set("user_capacity_bytes", &(4096u64 << 20).to_string()).unwrap();
        c.validate().unwrap()
    }

    fn plan(w: &Workload) -> Result<Plan, WorkloadError> {
        Plan::of_workload(w, &geo(), &mut Rng::new(1))
    }

    #[test]
    fn bad_fields_are_named() {
        let mut w = Workload::default();
        w.write.bssplit[0].bs_bytes = 700;
        let e = plan(&w).err().unwrap();
        assert_eq!(e.field, "write.bssplit[0].bs_bytes");
        assert!(e.message.contains("multiple of 512"), "{e}");
        w.write.bssplit[0].bs_bytes = 512;
        assert!(plan(&w).unwrap().sectors, "sizes below 4 KiB count in sectors");
        let w = Workload { read_fraction: 0.7, trim_fraction: 0.5, ..Workload::default() };
        assert_eq!(plan(&w).err().unwrap().field, "trim_fraction");
        let w = Workload { distribution: Distribution::Zipf { theta: 1.0, center_fraction: None }, ..Workload::default() };
        assert_eq!(plan(&w).err().unwrap().field, "distribution.theta");
        let w = Workload { distribution: Distribution::Zoned { zones: vec![Zone { access_pct: 80, span_pct: 20.0 }] }, ..Workload::default() };
        assert_eq!(plan(&w).err().unwrap().field, "distribution.zones");
        let w = Workload { span_bytes: Some(u64::MAX - 4095), ..Workload::default() };
        assert_eq!(plan(&w).err().unwrap().field, "span_bytes");
        let w = Workload { offset_bytes: 4096 << 20, ..Workload::default() };
        assert_eq!(plan(&w).err().unwrap().field, "offset_bytes");
        let mut w = Workload::default();
        w.write.rate_iops = f64::NAN;
        assert_eq!(plan(&w).err().unwrap().field, "write.rate_iops");
        w.write.rate_iops = 1e-9;
        assert_eq!(plan(&w).err().unwrap().field, "write.rate_iops");
        // What would not fit in memory or in a lifetime is refused up front.
        let w = Workload { interval_ns: 10, ..Workload::default() };
        assert_eq!(plan(&w).err().unwrap().field, "interval_ns");
        let w = Workload { qd: MAX_QD + 1, ..Workload::default() };
        assert_eq!(plan(&w).err().unwrap().field, "qd");
        let mut w = Workload::default();
        w.write.bssplit = vec![BlockSize { bs_bytes: 4096, weight: 1 }; MAX_BSSPLIT + 1];
        assert_eq!(plan(&w).err().unwrap().field, "write.bssplit");
        let w = Workload { thinktime_ns: u64::MAX, ..Workload::default() };
        assert_eq!(plan(&w).err().unwrap().field, "thinktime_ns");
    }

    /// fio's `percentage_random`: a sequential IO starts where the last IO of its direction
    /// ended (random ones included), so with random share p an IO continues the last one
    /// with probability 1 − p (plus the rare random hit).
    #[test]
    fn sequential_ios_continue_from_the_last_io_of_their_direction() {
        let mut w = Workload { read_fraction: 0.4, ..Workload::default() };
        w.write.random_fraction = 0.3;
        w.read.random_fraction = 0.8;
        w.read.bssplit = vec![BlockSize { bs_bytes: 8192, weight: 1 }, BlockSize { bs_bytes: 16384, weight: 1 }];
        let mut rng = Rng::new(5);
        let mut p = Plan::of_workload(&w, &geo(), &mut rng).unwrap();
        let (mut end, mut cont, mut n) = ([u64::MAX; 2], [0u64; 2], [0u64; 2]);
        for _ in 0..100_000 {
            let c = p.gen.next(&mut rng);
            let d = c.kind.code() as usize;
            n[d] += 1;
            cont[d] += (c.unit == end[d]) as u64;
            end[d] = c.unit + c.units;
        }
        let share = |d: usize| cont[d] as f64 / n[d] as f64;
        assert!((share(1) - 0.7).abs() < 0.01, "writes continuing: {}", share(1));
        assert!((share(0) - 0.2).abs() < 0.01, "reads continuing: {}", share(0));
        assert!((n[0] as f64 / 100_000.0 - 0.4).abs() < 0.01);
    }

    /// The first `n` offsets [units from the span's start] of a sequential read of 4 KiB IOs
    /// over 16 units from `offset_units`, with a stride.
    fn strided_offsets(offset_units: u64, stride_units: i64, n: usize) -> Result<Vec<i64>, WorkloadError> {
        let mut w = Workload { read_fraction: 1.0, offset_bytes: offset_units * 4096, span_bytes: Some(16 * 4096), seq_stride_bytes: stride_units * 4096, ..Workload::default() };
        w.read.random_fraction = 0.0;
        let mut rng = Rng::new(1);
        let mut p = Plan::of_workload(&w, &geo(), &mut rng)?;
        Ok((0..n).map(|_| p.gen.next(&mut rng).unit as i64 - offset_units as i64).collect())
    }

    /// The offsets fio 3.33 issues (its write_iolog of `rw=read:±N bs=4k size=64k` on a
    /// file), with its wrap-arounds and its first backward IO after an `offset`.
    #[test]
    fn strides_follow_fio() {
        let back: Vec<i64> = [0].into_iter().chain((0..=14).rev()).chain((0..=14).rev()).collect();
        assert_eq!(strided_offsets(0, -2, 31).unwrap(), back); // rw=read:-8k
        let at_32: Vec<i64> = (0..=14).rev().cycle().take(31).collect();
        assert_eq!(strided_offsets(32, -2, 31).unwrap(), at_32); // offset=128k
        let at_8: Vec<i64> = (0..=6).rev().chain((0..=14).rev()).collect();
        assert_eq!(strided_offsets(8, -2, 22).unwrap(), at_8); // offset=32k
        assert_eq!(strided_offsets(16, -2, 3).unwrap(), [0, 14, 13]); // offset=64k: the span's length
        assert_eq!(strided_offsets(0, -3, 9).unwrap(), [0, 13, 11, 9, 7, 5, 3, 1, 13]); // rw=read:-12k
        assert_eq!(strided_offsets(0, 2, 8).unwrap(), [0, 3, 6, 9, 12, 15, 0, 3]); // rw=read:8k, a new pass
        for bad in [-1, -17] {
            assert_eq!(strided_offsets(0, bad, 1).err().unwrap().field, "seq_stride_bytes", "{bad}");
        }
    }

    /// fio's `rw=randread:N`: IO 1, N + 1, 2N + 1... at a random offset, the others after it.
    #[test]
    fn random_every_n_ios_continues_sequentially_in_between() {
        let w = Workload { read_fraction: 1.0, random_every_ios: 4, ..Workload::default() };
        let mut rng = Rng::new(3);
        let mut p = Plan::of_workload(&w, &geo(), &mut rng).unwrap();
        let (mut end, mut jumps) = (u64::MAX, Vec::new());
        for i in 0..4000 {
            let c = p.gen.next(&mut rng);
            if c.unit != end {
                jumps.push(i);
            }
            end = c.unit + c.units;
        }
        // A random offset lands on the last one's end with probability 1 / 2^20 per draw.
        assert_eq!(jumps, (0..4000).step_by(4).collect::<Vec<_>>());
    }

    /// fio's `rate_process=poisson`: gaps between a direction's IOs are exponential with
    /// the cap's mean (mean = standard deviation), a schedule of its own seed.
    #[test]
    fn poisson_gaps_are_exponential_with_the_caps_mean() {
        let mut w = Workload { rate_poisson: true, ..Workload::default() };
        w.write.rate_iops = 1000.0;
        let pacing = |w: &Workload| Plan::of_workload(w, &geo(), &mut Rng::new(7)).unwrap().pacing.unwrap();
        let mut p = pacing(&w);
        let mut gaps = Vec::new();
        let mut last = p.allowed_ns(0, 1);
        assert_eq!(last, 0, "the first IO goes at once");
        for _ in 0..20_000 {
            p.count(1);
            let t = p.allowed_ns(0, 1);
            gaps.push((t - last) as f64);
            last = t;
        }
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((mean / 1e6 - 1.0).abs() < 0.03, "mean gap {mean} ns");
        assert!((sd / mean - 1.0).abs() < 0.05, "sd / mean {}", sd / mean);
        w.rate_poisson = false;
        let mut linear = pacing(&w);
        linear.count(1);
        assert_eq!(linear.allowed_ns(0, 1), 1_000_000);
    }

    /// Every pass of the random map is a permutation of the blocks, a new one each pass.
    #[test]
    fn the_random_map_visits_each_block_once_per_pass_in_a_new_order() {
        let mut rng = Rng::new(7);
        for n in [1u64, 2, 3, 5, 17, 1000, 4097, 65_536] {
            let mut m = RandomMap::new(n);
            let mut passes = Vec::new();
            for _ in 0..3 {
                let order: Vec<u64> = (0..n).map(|_| m.draw(&mut rng)).collect();
                let mut sorted = order.clone();
                sorted.sort_unstable();
                assert!(sorted.iter().copied().eq(0..n), "n = {n}: not a permutation");
                passes.push(order);
            }
            if n >= 5 {
                assert!(passes[0] != passes[1] && passes[1] != passes[2], "n = {n}: the same order twice");
            }
        }
        // Not the identity or a shift: neighbours in the pass land far apart on average.
        let mut m = RandomMap::new(1 << 20);
        let order: Vec<u64> = (0..1000).map(|_| m.draw(&mut rng)).collect();
        let mean_gap = order.windows(2).map(|w| w[0].abs_diff(w[1])).sum::<u64>() as f64 / 999.0;
        assert!((mean_gap / (1 << 20) as f64 - 1.0 / 3.0).abs() < 0.05, "mean gap {mean_gap}");
    }

    /// fio's random map with several sizes: a pass covers every block exactly once, IOs cut
    /// short at blocks already done (so the pass moves exactly the span), reads and writes
    /// sharing the map; IOs shrink as the pass fills.
    #[test]
    fn a_pass_with_several_sizes_covers_each_block_once_cutting_ios_short() {
        let span = 4096u64;
        let mut w = Workload { read_fraction: 0.5, random_map: true, span_bytes: Some(4096 * span), ..Workload::default() };
        for mix in [&mut w.read, &mut w.write] {
            mix.bssplit = vec![BlockSize { bs_bytes: 4096, weight: 30 }, BlockSize { bs_bytes: 65536, weight: 70 }];
        }
        let mut rng = Rng::new(11);
        let mut p = Plan::of_workload(&w, &geo(), &mut rng).unwrap();
        for pass in 0..2 {
            let mut seen = vec![false; span as usize];
            let (mut units, mut first_half, mut n_first, mut second_half, mut n_second) = (0u64, 0u64, 0u64, 0u64, 0u64);
            while units < span {
                let c = p.gen.next(&mut rng);
                for u in c.unit..c.unit + c.units {
                    assert!(!std::mem::replace(&mut seen[u as usize], true), "pass {pass}: unit {u} twice");
                }
                if units < span / 2 {
                    (first_half, n_first) = (first_half + c.units, n_first + 1);
                } else {
                    (second_half, n_second) = (second_half + c.units, n_second + 1);
                }
                units += c.units;
            }
            assert_eq!(units, span, "the pass moves exactly the span");
            assert!(seen.iter().all(|&s| s));
            let (early, late) = (first_half as f64 / n_first as f64, second_half as f64 / n_second as f64);
            assert!(early > 1.5 * late, "pass {pass}: IOs do not shrink as the map fills ({early:.2} -> {late:.2})");
        }
    }

    #[test]
    fn offsets_stay_in_the_span_for_every_distribution() {
        let dists = [
            Distribution::Uniform,
            Distribution::Zipf { theta: 1.2, center_fraction: None },
            Distribution::Zipf { theta: 0.8, center_fraction: Some(0.25) },
            Distribution::Pareto { h: 0.2, center_fraction: None },
            Distribution::Normal { dev_pct: 10.0, center_fraction: Some(0.9) },
            Distribution::Zoned { zones: vec![Zone { access_pct: 80, span_pct: 20.0 }, Zone { access_pct: 20, span_pct: 80.0 }] },
        ];
        for dist in dists {
            let mut w = Workload { distribution: dist.clone(), read_fraction: 0.3, offset_bytes: 4096 * 1000, span_bytes: Some(4096 * 5000), ..Workload::default() };
            w.write.bssplit = vec![BlockSize { bs_bytes: 4096, weight: 50 }, BlockSize { bs_bytes: 65536, weight: 50 }];
            w.write.random_fraction = 0.6;
            let mut rng = Rng::new(3);
            let mut p = Plan::of_workload(&w, &geo(), &mut rng).unwrap();
            for _ in 0..20_000 {
                let c = p.gen.next(&mut rng);
                assert!(c.unit >= 1000 && c.unit + c.units <= 6000, "{dist:?}: {c:?}");
            }
        }
    }
}
