//! The per-interval series of a running phase or replay ([`Series`]: IOs, bytes and latency
//! per direction, counter snapshots, live figures), how many intervals it may hold
//! ([`SeriesLimit`]), and a replay's windows of N completions ([`Windows`]).

use crate::stats::{IntervalBatch, IntervalLatency, LatencyHistogram, Snapshot};
use crate::time::Ns;

use super::Simulation;

/// IOs and bytes completed in one interval, per direction (read, write, TRIM).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Bin {
    pub(crate) ios: [u64; 3],
    pub(crate) bytes: [u64; 3],
}

impl Bin {
    pub(crate) fn ios(&self) -> u64 {
        self.ios.iter().sum()
    }

    /// Bytes read and written (TRIMs move no data).
    pub(crate) fn data_bytes(&self) -> u64 {
        self.bytes[0] + self.bytes[1]
    }

    /// Adds `other`'s IOs and bytes, direction by direction.
    pub(crate) fn add(&mut self, other: &Bin) {
        for d in 0..3 {
            self.ios[d] += other.ios[d];
            self.bytes[d] += other.bytes[d];
        }
    }
}

/// Latency histograms of one interval, per direction.
pub(crate) type Hists = [LatencyHistogram; 3];

/// The latencies of an open interval: the first [`FEW_LATENCIES`] as they are (direction,
/// latency [ns]), then a histogram per direction. An interval a drive stall leaves with a
/// completion or two, far ahead of the submissions, costs a few bytes rather than three
/// histograms of 15 KiB: the open intervals after the current one hold at most the commands
/// outstanding, so the histograms in use are at most 2 + outstanding / FEW_LATENCIES.
#[derive(Default)]
pub(crate) struct OpenLatency {
    pub(crate) few: Vec<(u8, Ns)>,
    pub(crate) hists: Option<Box<Hists>>,
}

/// Latencies an open interval keeps as they are before it takes histograms.
pub(crate) const FEW_LATENCIES: usize = 64;

/// Most intervals a phase's or a replay's series holds, whatever its inputs [count]: a phase
/// whose series would hold more is refused or stopped with an error
/// ([`Simulation::check_series`]). The simulator keeps about 300 bytes per interval not
/// yet taken ([`Simulation::take_final_intervals`]), up to twice that while its vectors
/// grow: at most about 3 GB.
pub const MAX_SERIES_INTERVALS: u64 = 5_000_000;

/// The per-interval series of a running phase or replay.
#[derive(Default)]
pub(crate) struct Series {
    pub(crate) start_ns: Ns,
    pub(crate) interval_ns: Ns,
    /// Submission time at which the next snapshot is due (start + snapshots × interval).
    pub(crate) next_snapshot_ns: Ns,
    /// Series interval of the latest completion: its index and start time (`Ns::MAX` before
    /// the first completion and after intervals close, so the next completion looks its
    /// interval and `slot` up again).
    pub(crate) bin: usize,
    pub(crate) bin_start_ns: Ns,
    /// First interval `bins`, `snapshots` and the latency figures hold (earlier ones were
    /// taken, [`Series::take_final`]): they hold interval `base + i` at `i`. `bin` above is
    /// such a position too.
    pub(crate) base: usize,
    /// IOs and bytes of the intervals taken.
    pub(crate) taken: Bin,
    /// Counters when the phase started.
    pub(crate) start: Snapshot,
    pub(crate) bins: Vec<Bin>,
    /// Counters at the start of interval `base + i`.
    pub(crate) snapshots: Vec<Snapshot>,
    /// Latencies of the open intervals (completions may still land there: the submission
    /// clock has not passed their end), as (interval index, latencies) by index; usually one
    /// or two, more when a drive stall pushes completions several intervals ahead of the
    /// submissions (at most one per command outstanding).
    pub(crate) open: Vec<(usize, OpenLatency)>,
    /// Position in `open` of interval `bin`'s histograms.
    pub(crate) slot: usize,
    /// Emptied latency lists and histograms, reused for the next open intervals (boxed as
    /// an open interval holds them: a sparse one costs a pointer, not 150 bytes).
    pub(crate) spare_few: Vec<Vec<(u8, Ns)>>,
    #[allow(clippy::vec_box)]
    pub(crate) spare_hists: Vec<Box<Hists>>,
    /// Every closed interval's histograms merged, per direction: the whole phase once all
    /// are closed.
    pub(crate) latency: [LatencyHistogram; 3],
    /// Closed intervals' latency figures, all directions together and per direction.
    pub(crate) interval_latency: Vec<Option<IntervalLatency>>,
    pub(crate) dir_interval_latency: [Vec<Option<IntervalLatency>>; 3],
    /// Scratch histogram for an interval's directions together.
    pub(crate) scratch: LatencyHistogram,
    /// Intervals `0..final_bins` are final (the submission clock is past their end).
    pub(crate) final_bins: usize,
    /// Over the final intervals: IOs and bytes of the last one, fewest IOs (`u64::MAX`
    /// before the first), intervals with no completion.
    pub(crate) last_final_ios: u64,
    pub(crate) last_final_bytes: u64,
    pub(crate) min_final_ios: u64,
    pub(crate) zero_final: u64,
    /// Intervals the series may hold (counted from the phase's start): a completion or
    /// submission after them goes to interval `limit`, which no report shows.
    pub(crate) limit: usize,
    /// The series ends at `limit`, the end of a phase that only time ends: completions after
    /// it are counted in the totals only. Otherwise reaching it is an error (`overflow`).
    pub(crate) ends_at_limit: bool,
    /// Something happened after interval `limit` in a series that does not end there.
    pub(crate) overflow: bool,
}

impl Series {
    pub(crate) fn new(start_ns: Ns, interval_ns: Ns, first: Snapshot, limit: usize, ends_at_limit: bool) -> Self {
        Series {
            start_ns,
            interval_ns,
            next_snapshot_ns: start_ns.saturating_add(interval_ns),
            bin: 0,
            // No interval yet: the first completion takes the slow path.
            bin_start_ns: Ns::MAX,
            base: 0,
            taken: Bin::default(),
            start: first,
            bins: Vec::new(),
            snapshots: vec![first],
            open: Vec::new(),
            slot: 0,
            spare_few: Vec::new(),
            spare_hists: Vec::new(),
            latency: Default::default(),
            interval_latency: Vec::new(),
            dir_interval_latency: Default::default(),
            scratch: LatencyHistogram::default(),
            final_bins: 0,
            last_final_ios: 0,
            last_final_bytes: 0,
            min_final_ios: u64::MAX,
            zero_final: 0,
            limit,
            ends_at_limit,
            overflow: false,
        }
    }

    /// Counts an IO of direction `d` (0 read, 1 write, 2 TRIM) of `bytes`, submitted at
    /// `submit` and completing at `done`, in its interval.
    #[inline(always)]
    pub(crate) fn record(&mut self, d: usize, submit: Ns, done: Ns, bytes: u64) {
        // Completions mostly fall in the interval of the previous one, which saves a
        // division per command.
        if done < self.bin_start_ns || done - self.bin_start_ns >= self.interval_ns {
            self.rebin(done);
        }
        let b = &mut self.bins[self.bin];
        b.ios[d] += 1;
        b.bytes[d] += bytes;
        let latency = done - submit;
        if let Some(h) = self.open[self.slot].1.hists.as_deref_mut() {
            h[d].record(latency);
        } else {
            self.record_few(d, latency);
        }
    }

    /// Keeps a latency of the interval `slot` as it is; its histograms once it has many.
    #[cold]
    #[inline(never)]
    pub(crate) fn record_few(&mut self, d: usize, latency: Ns) {
        let o = &mut self.open[self.slot].1;
        o.few.push((d as u8, latency));
        if o.few.len() >= FEW_LATENCIES {
            let h = Self::histograms_of(&mut self.spare_hists, &o.few);
            o.few.clear();
            o.hists = Some(h);
        }
    }

    /// Histograms (reused from `spare`) holding the latencies `few`.
    #[allow(clippy::vec_box)]
    pub(crate) fn histograms_of(spare: &mut Vec<Box<Hists>>, few: &[(u8, Ns)]) -> Box<Hists> {
        let mut h = spare.pop().unwrap_or_default();
        for &(d, latency) in few {
            h[d as usize].record(latency);
        }
        h
    }

    /// Looks up the interval of a completion at `done` and its histograms.
    pub(crate) fn rebin(&mut self, done: Ns) {
        let mut interval = ((done - self.start_ns) / self.interval_ns) as usize;
        self.bin_start_ns = self.start_ns + interval as u64 * self.interval_ns;
        if interval >= self.limit {
            // After the series' last interval: all such completions share interval `limit`
            // (looked up again each time).
            self.past_limit();
            interval = self.limit;
            self.bin_start_ns = Ns::MAX;
        }
        // Completions land in open intervals only, never in one taken (they are final).
        self.bin = interval - self.base;
        if self.bin >= self.bins.len() {
            self.bins.resize(self.bin + 1, Bin::default());
        }
        self.slot = self.open_slot(interval);
    }

    /// Something happened after the series' last interval.
    #[cold]
    pub(crate) fn past_limit(&mut self) {
        self.overflow |= !self.ends_at_limit;
    }

    /// Position in `open` of interval `bin`'s histograms, opening them if needed.
    pub(crate) fn open_slot(&mut self, bin: usize) -> usize {
        debug_assert!(bin >= self.final_bins, "completion in final interval {bin}");
        match self.open.binary_search_by_key(&bin, |(b, _)| *b) {
            Ok(i) => i,
            Err(i) => {
                let few = self.spare_few.pop().unwrap_or_default();
                self.open.insert(i, (bin, OpenLatency { few, hists: None }));
                i
            }
        }
    }

    /// The submission clock has reached interval `k`: intervals before it are final. Closes
    /// their histograms and updates the live figures.
    pub(crate) fn finalize_until(&mut self, k: usize) {
        while self.final_bins < k {
            let b = self.bins.get(self.final_bins - self.base).copied().unwrap_or_default();
            let ios = b.ios();
            self.last_final_ios = ios;
            self.last_final_bytes = b.data_bytes();
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
    pub(crate) fn close_first(&mut self, n: usize) {
        for (interval, open) in self.open.drain(..n) {
            let OpenLatency { mut few, hists } = open;
            let mut h = hists.unwrap_or_else(|| Self::histograms_of(&mut self.spare_hists, &few));
            few.clear();
            self.spare_few.push(few);
            let b = interval - self.base;
            if self.interval_latency.len() <= b {
                self.interval_latency.resize(b + 1, None);
                for l in &mut self.dir_interval_latency {
                    l.resize(b + 1, None);
                }
            }
            let used: Vec<usize> = (0..3).filter(|&d| h[d].count() > 0).collect();
            self.interval_latency[b] = match used[..] {
                [] => None,
                [d] => IntervalLatency::of(&h[d]),
                _ => {
                    self.scratch.clear();
                    for &d in &used {
                        self.scratch.merge(&h[d]);
                    }
                    IntervalLatency::of(&self.scratch)
                }
            };
            for d in used {
                self.dir_interval_latency[d][b] = IntervalLatency::of(&h[d]);
                self.latency[d].merge(&h[d]);
                h[d].clear();
            }
            self.spare_hists.push(h);
        }
    }

    /// Takes the final intervals not taken before (see [`IntervalBatch`]); the series then
    /// holds only the later ones.
    pub(crate) fn take_final(&mut self) -> IntervalBatch {
        let first_interval = self.base;
        let n = self.final_bins - self.base;
        // Final intervals are closed, but the vectors end at the last one that saw a completion.
        let take = |v: &mut Vec<Option<IntervalLatency>>| {
            let mut out: Vec<_> = v.drain(..n.min(v.len())).collect();
            out.resize(n, None);
            out
        };
        let interval_latency = take(&mut self.interval_latency);
        let dir_latency: [_; 3] = std::array::from_fn(|d| take(&mut self.dir_interval_latency[d]));
        let mut bins: Vec<Bin> = self.bins.drain(..n.min(self.bins.len())).collect();
        bins.resize(n, Bin::default());
        // The snapshot at the end of the last final interval was taken when it became final.
        let snapshots = self.snapshots[..=n].to_vec();
        self.snapshots.drain(..n);
        for b in &bins {
            self.taken.add(b);
        }
        self.base = self.final_bins;
        // `bin` is a position in `bins`, which moved: the next completion looks it up again.
        self.bin_start_ns = Ns::MAX;
        let [l0, l1, l2] = dir_latency;
        let dir = |d: usize, l: Vec<Option<IntervalLatency>>| (bins.iter().map(|b| b.ios[d]).collect(), bins.iter().map(|b| b.bytes[d]).collect(), l);
        IntervalBatch {
            first_interval,
            ios: bins.iter().map(Bin::ios).collect(),
            bytes: bins.iter().map(Bin::data_bytes).collect(),
            snapshots,
            interval_latency,
            directions: [dir(0, l0), dir(1, l1), dir(2, l2)],
        }
    }
}

/// How many intervals a series may hold: a phase that only time ends (no byte or IO count)
/// keeps its duration's; any other up to the simulation's limit ([`MAX_SERIES_INTERVALS`]).
#[derive(Clone, Copy)]
pub(crate) struct SeriesLimit {
    pub(crate) intervals: usize,
    /// The phase ends at the last interval (completions after it count in the totals only);
    /// otherwise a series going past it is an error.
    pub(crate) ends_phase: bool,
}

impl SeriesLimit {
    pub(crate) fn new(limit: u64, duration_ns: Option<Ns>, interval_ns: Ns, timed_only: bool) -> Self {
        match duration_ns.filter(|_| timed_only).map(|d| d.div_ceil(interval_ns)) {
            Some(n) if n <= limit => SeriesLimit { intervals: n as usize, ends_phase: true },
            _ => SeriesLimit { intervals: limit as usize, ends_phase: false },
        }
    }
}

/// One window of `window_commands` completions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Completed commands at the window's end (cumulative).
    pub commands: u64,
    /// Time of the window's last completion, from replay start [ns].
    pub end_ns: Ns,
    /// Data bytes (written + read) of the window's commands.
    pub data_bytes: u64,
    /// Drive counters at the window's end.
    pub snapshot: Snapshot,
}

/// A replay's windows of `window_commands` completions, counted in completion order.
pub(crate) struct Windows {
    pub(crate) window_commands: u64,
    pub(crate) start_ns: Ns,
    /// Completions so far (flushes included) and until the current window closes.
    pub(crate) completed: u64,
    pub(crate) until_close: u64,
    pub(crate) window_bytes: u64,
    /// Time of the latest completion.
    pub(crate) last_completion: Ns,
    pub(crate) windows: Vec<Window>,
    pub(crate) flushes: u64,
    pub(crate) start_snapshot: Snapshot,
}

impl Windows {
    /// Counts one completion (they arrive in time order) at `t` moving `bytes` of data;
    /// true when it fills the window: the caller then closes it with the drive's counters.
    #[inline]
    pub(crate) fn complete(&mut self, t: Ns, bytes: u64) -> bool {
        self.completed += 1;
        self.window_bytes += bytes;
        self.last_completion = self.last_completion.max(t);
        self.until_close -= 1;
        self.until_close == 0
    }

    /// Ends the current window with `sim`'s counters, GC die time as carried out by the
    /// window's last completion.
    pub(crate) fn close(&mut self, sim: &Simulation) {
        let snapshot = sim.snapshot_at(self.last_completion);
        self.windows.push(Window { commands: self.completed, end_ns: self.last_completion - self.start_ns, data_bytes: self.window_bytes, snapshot });
        self.window_bytes = 0;
        self.until_close = self.window_commands;
    }
}
