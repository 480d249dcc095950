//! A JEDEC-client-like workload generator, since the JESD219A client master trace is not
//! public. It reproduces what the Tom's Hardware JEDEC 218A TRIM test describes of the
//! trace with reads removed: writes that are **75 % random / 25 % sequential by bytes
//! written**, a realistic request-size mix, flushes, and TRIMs that free about **13 % of the
//! span**, scaled to any drive size and total bytes written. Seeded and deterministic: the
//! same [`GenParams`] give the same records on every platform.
//!
//! # The workload
//!
//! * **Span**: `[0, capacity_bytes)`, rounded down to `align_bytes`. Every request is
//!   aligned to `align_bytes` (default 4 KiB) in offset and length and lies inside the span
//!   (with a larger alignment the sizes below are rounded up to it).
//! * **Random writes** (fraction `random_fraction` of the bytes written, default 0.75):
//!   sizes from [`RANDOM_SIZES`] (4 KiB 60 %, 8 KiB 12 %, 16 KiB 10 %, 32 KiB 8 %, 64 KiB
//!   6 %, 128 KiB 4 % of random writes; mean 16.5 KiB), offsets uniform over the span, or
//!   with [`Skew::Jedec`] 50 % in the first 5 % of the span, 30 % in the next 15 %, 20 % in
//!   the remaining 80 % (the JESD219 enterprise LBA distribution).
//! * **Sequential writes** (the rest): runs of consecutive writes, like file copies. A run
//!   starts at a random offset; its length is log-uniform in 1–64 MiB (at most a quarter of
//!   the span); its writes have sizes from [`SEQUENTIAL_SIZES`] (64 KiB 20 %, 128 KiB 40 %,
//!   256 KiB 20 %, 512 KiB 10 %, 1 MiB 10 %; mean 269 KiB), each starting where the
//!   previous one ended. Random writes and runs alternate: the next run (its length drawn
//!   in advance) starts when the sequential share of the bytes written so far, counted to
//!   the middle of that run, is at most `1 − random_fraction`; so the share oscillates
//!   around the target by less than half a run.
//!   With the defaults the mean write is ≈ 21.5 KiB (≈ 22 KB), the ratio the Tom's Hardware
//!   description gives for the real trace (~800 GB in ~37 M writes per pass on 256 GB).
//! * **Flushes**: after each write, a flush with probability `1 / flush_every_writes`
//!   (default one per 32 writes on average; 0 = none).
//! * **TRIMs**: the span is cut into equal slots of at most 16 MiB (at least 64 slots when
//!   the span allows); `trim_fraction × span` bytes worth of slots (default 13 %) are
//!   picked at random without replacement, the last one possibly partial. Each picked slot
//!   is trimmed once, as a burst of TRIMs (pieces from [`TRIM_PIECE_SIZES`]: 64 KiB–4 MiB)
//!   like a file deletion, the bursts spread evenly over the bytes written. Slots never
//!   overlap, so the TRIMs free exactly the distinct bytes they cover:
//!   `trim_bytes = trim_fraction × span` (± one alignment unit).
//! * **Time**: record `i` has time `i × interarrival_ns` (default 0: no timing; replay it
//!   closed-loop at a queue depth, as the reviewers did).
//! * **Total**: writes stop at exactly `write_bytes` (the last write is shortened if needed).
//!
//! No reads are generated (the Tom's Hardware test removed them).

use std::collections::VecDeque;

use crate::record::{Op, Record};
use crate::rng::Rng;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// Random-write sizes [bytes] and their weights (share of random writes, %).
pub const RANDOM_SIZES: [(u64, f64); 6] = [(4 * KIB, 60.0), (8 * KIB, 12.0), (16 * KIB, 10.0), (32 * KIB, 8.0), (64 * KIB, 6.0), (128 * KIB, 4.0)];
/// Sizes of the writes inside a sequential run [bytes] and their weights (%).
pub const SEQUENTIAL_SIZES: [(u64, f64); 5] = [(64 * KIB, 20.0), (128 * KIB, 40.0), (256 * KIB, 20.0), (512 * KIB, 10.0), (MIB, 10.0)];
/// Sizes of the TRIM commands of a deletion burst [bytes] and their weights (%).
pub const TRIM_PIECE_SIZES: [(u64, f64); 4] = [(64 * KIB, 20.0), (256 * KIB, 30.0), (MIB, 30.0), (4 * MIB, 20.0)];
/// Length of a sequential run: log-uniform between these [bytes] (the maximum is also capped
/// at a quarter of the span).
pub const RUN_MIN_BYTES: u64 = MIB;
pub const RUN_MAX_BYTES: u64 = 64 * MIB;
/// Largest TRIM slot [bytes].
pub const TRIM_SLOT_MAX_BYTES: u64 = 16 * MIB;
/// Most TRIM slots (bounds the generator's memory: 4 bytes per slot).
const MAX_SLOTS: u64 = 1 << 22;

/// Where random writes land.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skew {
    /// Uniform over the span.
    Uniform,
    /// 50 % in the first 5 % of the span, 30 % in the next 15 %, 20 % in the last 80 %.
    Jedec,
}

impl Skew {
    pub fn from_name(name: &str) -> Option<Skew> {
        match name.to_ascii_lowercase().as_str() {
            "uniform" => Some(Skew::Uniform),
            "jedec" => Some(Skew::Jedec),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Skew::Uniform => "uniform",
            Skew::Jedec => "jedec",
        }
    }
}

/// Generator parameters; [`GenParams::new`] gives the defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct GenParams {
    /// Drive capacity = the span written and trimmed [bytes].
    pub capacity_bytes: u64,
    /// Total bytes written [bytes]; a multiple of `align_bytes`.
    pub write_bytes: u64,
    pub seed: u64,
    /// Share of the bytes written by random (not sequential) writes, 0–1 (default 0.75).
    pub random_fraction: f64,
    /// Distinct bytes trimmed as a share of the span, 0–1 (default 0.13).
    pub trim_fraction: f64,
    /// Mean writes per flush; 0 = no flushes (default 32).
    pub flush_every_writes: f64,
    /// Alignment of offsets and sizes [bytes], a power of two >= 512 (default 4096).
    pub align_bytes: u64,
    /// Random-write placement (default uniform).
    pub skew: Skew,
    /// Time between consecutive records [ns] (default 0).
    pub interarrival_ns: u64,
}

impl GenParams {
    /// Defaults for a drive of `capacity_bytes` and `write_bytes` written.
    pub fn new(capacity_bytes: u64, write_bytes: u64) -> GenParams {
        GenParams {
            capacity_bytes,
            write_bytes,
            seed: 1,
            random_fraction: 0.75,
            trim_fraction: 0.13,
            flush_every_writes: 32.0,
            align_bytes: 4096,
            skew: Skew::Uniform,
            interarrival_ns: 0,
        }
    }

    /// Checks the parameters; the message names the bad one and says what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        let a = self.align_bytes;
        if a < 512 || !a.is_power_of_two() {
            return Err(format!("align_bytes: must be a power of two >= 512, got {a}"));
        }
        if self.capacity_bytes < 64 * a {
            return Err(format!("capacity_bytes: must be at least 64 x align_bytes = {} bytes, got {}", 64 * a, self.capacity_bytes));
        }
        if self.capacity_bytes > crate::formats::bin::MAX_OFFSET_BYTES {
            return Err(format!("capacity_bytes: must be below 2^56 bytes (64 PiB), got {}", self.capacity_bytes));
        }
        if self.write_bytes == 0 || !self.write_bytes.is_multiple_of(a) {
            return Err(format!("write_bytes: must be a positive multiple of align_bytes ({a}), got {}", self.write_bytes));
        }
        for (name, v) in [("random_fraction", self.random_fraction), ("trim_fraction", self.trim_fraction)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("{name}: must be between 0 and 1, got {v}"));
            }
        }
        let f = self.flush_every_writes;
        if !(f == 0.0 || (f >= 1.0 && f.is_finite())) {
            return Err(format!("flush_every_writes: must be 0 (no flushes) or >= 1 writes, got {f}"));
        }
        Ok(())
    }
}

/// What the generator emitted so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GenSummary {
    /// The span used [bytes] (capacity rounded down to the alignment).
    pub span_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub random_writes: u64,
    pub random_write_bytes: u64,
    pub sequential_writes: u64,
    pub sequential_write_bytes: u64,
    pub sequential_runs: u64,
    pub trims: u64,
    /// Bytes trimmed; TRIMs never overlap, so these are distinct bytes [bytes].
    pub trim_bytes: u64,
    pub flushes: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Random,
    Sequential,
    Other,
}

/// The generator: an iterator of records (see the module docs).
pub struct Generator {
    p: GenParams,
    span: u64,
    rng: Rng,
    queue: VecDeque<(Record, Kind)>,
    /// Bytes of writes queued so far.
    queued_write_bytes: u64,
    queued_seq_bytes: u64,
    /// Current sequential run: next offset, bytes left.
    run: Option<(u64, u64)>,
    /// Length of the next sequential run, drawn ahead so the decision to start it can aim
    /// at the target share with the run's midpoint [bytes].
    next_run_bytes: u64,
    run_min_bytes: u64,
    run_max_bytes: u64,
    random_weights: Vec<f64>,
    seq_weights: Vec<f64>,
    trim_weights: Vec<f64>,
    /// Slots to trim, in deletion order.
    slots: Vec<u32>,
    slot_bytes: u64,
    /// Length of the last slot in `slots` (the partial one) [bytes].
    last_slot_bytes: u64,
    next_slot: usize,
    emitted: u64,
    summary: GenSummary,
}

fn weights<const N: usize>(mix: &[(u64, f64); N]) -> Vec<f64> {
    mix.iter().map(|&(_, w)| w).collect()
}

impl Generator {
    /// A generator for `params` (validated).
    pub fn new(params: GenParams) -> Result<Generator, String> {
        params.validate()?;
        let a = params.align_bytes;
        let span = params.capacity_bytes / a * a;
        let mut rng = Rng::new(params.seed);

        // TRIM slots: equal slices of the span; pick trim_fraction of the span's bytes.
        let mut slot_bytes = TRIM_SLOT_MAX_BYTES.min(span / 64).max(span.div_ceil(MAX_SLOTS));
        slot_bytes = slot_bytes.div_ceil(a).max(1) * a;
        let n_slots = span / slot_bytes;
        let target = ((params.trim_fraction * span as f64) / a as f64).round() as u64 * a;
        let (mut full, mut partial) = (target / slot_bytes, target % slot_bytes);
        if full >= n_slots {
            full = n_slots;
            partial = 0;
        }
        let picks = (full + u64::from(partial > 0)) as usize;
        let mut all: Vec<u32> = (0..n_slots as u32).collect();
        for i in 0..picks {
            let j = i + rng.below((all.len() - i) as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(picks);
        let last_slot_bytes = if partial > 0 { partial } else { slot_bytes };

        let run_max_bytes = (RUN_MAX_BYTES.min(span / 4) / a * a).max(a);
        let run_min_bytes = RUN_MIN_BYTES.min(run_max_bytes);
        Ok(Generator {
            span,
            rng,
            queue: VecDeque::new(),
            queued_write_bytes: 0,
            queued_seq_bytes: 0,
            run: None,
            next_run_bytes: 0,
            run_min_bytes,
            run_max_bytes,
            random_weights: weights(&RANDOM_SIZES),
            seq_weights: weights(&SEQUENTIAL_SIZES),
            trim_weights: weights(&TRIM_PIECE_SIZES),
            slots: all,
            slot_bytes,
            last_slot_bytes,
            next_slot: 0,
            emitted: 0,
            summary: GenSummary { span_bytes: span, ..Default::default() },
            p: params,
        })
    }

    pub fn params(&self) -> &GenParams {
        &self.p
    }

    /// Counts of what has been emitted so far (complete once the iterator is exhausted).
    pub fn summary(&self) -> &GenSummary {
        &self.summary
    }

    /// A random aligned offset for `len` bytes inside `[start, start + region)` (falls back
    /// to the whole span when the region is too small).
    fn offset_in(&mut self, start: u64, region: u64, len: u64) -> u64 {
        let a = self.p.align_bytes;
        let (start, region) = if region >= len { (start, region) } else { (0, self.span) };
        let slots = (region - len) / a + 1;
        start + self.rng.below(slots) * a
    }

    fn random_write(&mut self) {
        let a = self.p.align_bytes;
        let size = RANDOM_SIZES[self.rng.weighted(&self.random_weights)].0.div_ceil(a) * a;
        let off = match self.p.skew {
            Skew::Uniform => self.offset_in(0, self.span, size),
            Skew::Jedec => {
                let b1 = self.span / 20 / a * a;
                let b2 = self.span / 5 / a * a;
                match self.rng.weighted(&[50.0, 30.0, 20.0]) {
                    0 => self.offset_in(0, b1, size),
                    1 => self.offset_in(b1, b2 - b1, size),
                    _ => self.offset_in(b2, self.span - b2, size),
                }
            }
        };
        self.push_write(off, size, Kind::Random);
    }

    /// A run length: log-uniform between the run bounds, aligned.
    fn draw_run_bytes(&mut self) -> u64 {
        let a = self.p.align_bytes;
        let (lo, hi) = (self.run_min_bytes as f64, self.run_max_bytes as f64);
        let len = (lo * (hi / lo).powf(self.rng.unit_f64())) as u64 / a * a;
        len.clamp(a, self.run_max_bytes)
    }

    fn sequential_write(&mut self) {
        let (off, left) = match self.run {
            Some(r) => r,
            None => {
                let len = self.next_run_bytes;
                self.next_run_bytes = self.draw_run_bytes();
                let start = self.offset_in(0, self.span, len);
                self.summary.sequential_runs += 1;
                (start, len)
            }
        };
        let a = self.p.align_bytes;
        let size = (SEQUENTIAL_SIZES[self.rng.weighted(&self.seq_weights)].0.div_ceil(a) * a).min(left);
        let size = size.min(self.p.write_bytes - self.queued_write_bytes);
        self.run = if left > size { Some((off + size, left - size)) } else { None };
        self.push_write(off, size, Kind::Sequential);
    }

    fn push_write(&mut self, off: u64, size: u64, kind: Kind) {
        let size = size.min(self.p.write_bytes - self.queued_write_bytes);
        self.queued_write_bytes += size;
        if kind == Kind::Sequential {
            self.queued_seq_bytes += size;
        }
        self.queue.push_back((Record::new(0, Op::Write, off, size), kind));
        if self.p.flush_every_writes > 0.0 && self.rng.unit_f64() * self.p.flush_every_writes < 1.0 {
            self.queue.push_back((Record::flush(0), Kind::Other));
        }
    }

    fn delete_slot(&mut self) {
        let i = self.next_slot;
        self.next_slot += 1;
        let start = self.slots[i] as u64 * self.slot_bytes;
        let len = if i + 1 == self.slots.len() { self.last_slot_bytes } else { self.slot_bytes };
        let mut off = start;
        while off < start + len {
            let a = self.p.align_bytes;
            let piece = (TRIM_PIECE_SIZES[self.rng.weighted(&self.trim_weights)].0.div_ceil(a) * a).min(start + len - off);
            self.queue.push_back((Record::new(0, Op::Trim, off, piece), Kind::Other));
            off += piece;
        }
    }

    /// Write bytes after which slot `i` is deleted: deletions spread evenly over the run.
    fn deletion_threshold(&self, i: usize) -> u64 {
        ((i as u128 + 1) * self.p.write_bytes as u128 / (self.slots.len() as u128 + 1)) as u64
    }
}

impl Iterator for Generator {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        loop {
            if let Some((mut r, kind)) = self.queue.pop_front() {
                r.time_ns = self.emitted.saturating_mul(self.p.interarrival_ns);
                self.emitted += 1;
                let s = &mut self.summary;
                match (r.op, kind) {
                    (Op::Write, k) => {
                        s.writes += 1;
                        s.write_bytes += r.len_bytes;
                        if k == Kind::Sequential {
                            s.sequential_writes += 1;
                            s.sequential_write_bytes += r.len_bytes;
                        } else {
                            s.random_writes += 1;
                            s.random_write_bytes += r.len_bytes;
                        }
                    }
                    (Op::Trim, _) => {
                        s.trims += 1;
                        s.trim_bytes += r.len_bytes;
                    }
                    (Op::Flush, _) => s.flushes += 1,
                    (Op::Read, _) => {}
                }
                return Some(r);
            }
            let done = self.queued_write_bytes >= self.p.write_bytes;
            if self.next_slot < self.slots.len() && (done || self.queued_write_bytes >= self.deletion_threshold(self.next_slot)) {
                self.delete_slot();
                continue;
            }
            if done {
                return None;
            }
            if self.next_run_bytes == 0 {
                self.next_run_bytes = self.draw_run_bytes();
            }
            // Start the next run when the sequential share, counted to the middle of that run,
            // would still be below target: the share then oscillates around the target.
            let seq_target = (1.0 - self.p.random_fraction) * self.queued_write_bytes as f64;
            let start_run = self.p.random_fraction == 0.0
                || (self.p.random_fraction < 1.0 && self.queued_seq_bytes as f64 + self.next_run_bytes as f64 / 2.0 <= seq_target);
            if self.run.is_some() || start_run {
                self.sequential_write();
            } else {
                self.random_write();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::info::Info;

    fn run(p: GenParams) -> (Vec<Record>, GenSummary) {
        let mut g = Generator::new(p).unwrap();
        let v: Vec<Record> = g.by_ref().collect();
        (v, g.summary().clone())
    }

    #[test]
    fn defaults_match_the_jedec_description() {
        let cap = 4u64 << 30;
        let (recs, s) = run(GenParams::new(cap, 3 * cap));
        assert_eq!(s.write_bytes, 3 * cap);
        let rf = s.random_write_bytes as f64 / s.write_bytes as f64;
        assert!((rf - 0.75).abs() < 0.01, "random fraction {rf}");
        let tf = s.trim_bytes as f64 / s.span_bytes as f64;
        assert!((tf - 0.13).abs() < 0.001, "trim fraction {tf}");
        let mean_write = s.write_bytes as f64 / s.writes as f64;
        assert!((19_000.0..25_000.0).contains(&mean_write), "mean write {mean_write}");
        let fl = s.writes as f64 / s.flushes as f64;
        assert!((28.0..36.0).contains(&fl), "writes per flush {fl}");
        // every request aligned and inside the span; trims disjoint
        let mut trims: Vec<(u64, u64)> = Vec::new();
        for r in &recs {
            if r.op.has_range() {
                assert!(r.offset_bytes % 4096 == 0 && r.len_bytes % 4096 == 0 && r.len_bytes > 0, "{r:?}");
                assert!(r.end_bytes() <= cap, "{r:?}");
            }
            if r.op == Op::Trim {
                trims.push((r.offset_bytes, r.end_bytes()));
            }
        }
        trims.sort();
        assert!(trims.windows(2).all(|w| w[0].1 <= w[1].0), "overlapping trims");
        // the independent measure: writes that continue the previous write
        let mut info = Info::new();
        recs.iter().for_each(|r| info.add(r));
        let seq = info.sequential_write_bytes as f64 / info.op(Op::Write).bytes as f64;
        assert!((0.22..0.26).contains(&seq), "measured sequential fraction {seq}");
    }

    #[test]
    fn deterministic_per_seed() {
        let p = GenParams::new(1 << 30, 1 << 30);
        let a: Vec<Record> = Generator::new(p.clone()).unwrap().collect();
        let b: Vec<Record> = Generator::new(p.clone()).unwrap().collect();
        let c: Vec<Record> = Generator::new(GenParams { seed: 2, ..p }).unwrap().collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn extremes_and_skew() {
        let (_, s) = run(GenParams { random_fraction: 1.0, trim_fraction: 0.0, flush_every_writes: 0.0, ..GenParams::new(1 << 30, 256 << 20) });
        assert_eq!((s.sequential_writes, s.trims, s.flushes), (0, 0, 0));
        let (_, s) = run(GenParams { random_fraction: 0.0, trim_fraction: 1.0, ..GenParams::new(1 << 30, 256 << 20) });
        assert_eq!(s.random_writes, 0);
        assert_eq!(s.trim_bytes, 1 << 30);
        let (recs, _) = run(GenParams { random_fraction: 1.0, skew: Skew::Jedec, ..GenParams::new(1 << 30, 256 << 20) });
        let w: Vec<&Record> = recs.iter().filter(|r| r.op == Op::Write).collect();
        let hot = w.iter().filter(|r| r.offset_bytes < (1 << 30) / 20).count() as f64 / w.len() as f64;
        assert!((0.45..0.55).contains(&hot), "share in the first 5 %: {hot}");
    }

    #[test]
    fn large_alignment_rounds_sizes_up() {
        let (recs, _) = run(GenParams { align_bytes: 64 * 1024, ..GenParams::new(1 << 30, 256 << 20) });
        assert!(recs.iter().filter(|r| r.op.has_range()).all(|r| r.offset_bytes % 65536 == 0 && r.len_bytes % 65536 == 0 && r.len_bytes > 0));
    }

    #[test]
    fn tiny_and_odd_sizes() {
        let (recs, s) = run(GenParams::new(64 * 4096 + 100, 4096));
        assert_eq!(s.span_bytes, 64 * 4096);
        assert_eq!(s.write_bytes, 4096);
        assert!(recs.iter().all(|r| r.end_bytes() <= s.span_bytes));
        assert!(GenParams::new(1000, 4096).validate().unwrap_err().starts_with("capacity_bytes"));
        assert!(GenParams::new(1 << 30, 100).validate().unwrap_err().starts_with("write_bytes"));
        assert!(GenParams { trim_fraction: 1.5, ..GenParams::new(1 << 30, 4096) }.validate().unwrap_err().starts_with("trim_fraction"));
        assert!(GenParams { flush_every_writes: 0.5, ..GenParams::new(1 << 30, 4096) }.validate().unwrap_err().starts_with("flush_every_writes"));
    }
}
