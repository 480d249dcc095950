//! Observation: per-interval completion counts, a latency histogram, and snapshots of the
//! drive's internal counters at interval boundaries. The simulator only emits into these
//! sinks; callers read them after (or during) a phase.

use crate::time::Ns;

/// Log-linear latency histogram over [ns]: 32 sub-buckets per power of two, so any
/// reported percentile is within 1/32 (3.1%) of the true value.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    counts: Vec<u64>,
    total: u64,
    max_ns: Ns,
}

const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram { counts: vec![0; (64 - SUB_BITS as usize + 1) * SUB as usize], total: 0, max_ns: 0 }
    }
}

impl LatencyHistogram {
    #[inline]
    fn index(v: Ns) -> usize {
        if v < SUB {
            return v as usize;
        }
        let e = 63 - v.leading_zeros();
        let m = (v >> (e - SUB_BITS)) & (SUB - 1);
        ((e - SUB_BITS + 1) as u64 * SUB + m) as usize
    }

    /// Smallest value that falls into bucket `i`.
    fn lower_bound(i: usize) -> Ns {
        let i = i as u64;
        if i < SUB {
            return i;
        }
        let e = i / SUB + SUB_BITS as u64 - 1;
        let m = i % SUB;
        (1u64 << e) | (m << (e - SUB_BITS as u64))
    }

    #[inline]
    pub fn record(&mut self, latency_ns: Ns) {
        self.counts[Self::index(latency_ns)] += 1;
        self.total += 1;
        self.max_ns = self.max_ns.max(latency_ns);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    pub fn max_ns(&self) -> Ns {
        self.max_ns
    }

    /// The `q`-quantile (0 ≤ q ≤ 1) [ns]: the middle of the bucket holding it (the exact
    /// maximum for q = 1). None if empty.
    pub fn quantile_ns(&self, q: f64) -> Option<Ns> {
        if self.total == 0 {
            return None;
        }
        if q >= 1.0 {
            return Some(self.max_ns);
        }
        let rank = ((q * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let lo = Self::lower_bound(i);
                let hi = Self::lower_bound(i + 1);
                return Some(((lo + hi) / 2).min(self.max_ns));
            }
        }
        Some(self.max_ns)
    }
}

/// Internal counters at one instant (cumulative since the drive was created).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Host 4 KiB units written to the FTL.
    pub host_units: u64,
    /// 4 KiB units programmed to NAND (host + GC copies).
    pub nand_units: u64,
    /// Units relocated by GC.
    pub gc_units: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Free blocks in the drive (a level, not cumulative).
    pub free_blocks: u64,
    /// Die time spent on GC, summed over dies [ns].
    pub gc_die_ns: Ns,
}

/// What one phase produced.
#[derive(Clone, Debug, Default)]
pub struct PhaseReport {
    /// Simulation time at which the phase started [ns].
    pub start_ns: Ns,
    /// Length of the phase [ns]: the requested duration, or until the last completion.
    pub duration_ns: Ns,
    /// Series interval [ns].
    pub interval_ns: Ns,
    /// IOs completed in each interval.
    pub ios: Vec<u64>,
    /// Bytes transferred by the IOs completed in each interval.
    pub bytes: Vec<u64>,
    /// Counters at the start of each interval, plus one at the end (len = intervals + 1).
    pub snapshots: Vec<Snapshot>,
    /// Per-IO latency (completion − submission).
    pub latency: LatencyHistogram,
    /// IOs submitted and completed in the phase.
    pub total_ios: u64,
    /// Host bytes written / read in the phase.
    pub host_write_bytes: u64,
    pub host_read_bytes: u64,
    /// False if the phase was ended early (interrupted) before its natural end.
    pub complete: bool,
}
