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
    /// Smallest and largest latency recorded [ns] (`min_ns` = `Ns::MAX` while empty): they
    /// bound the buckets in use, so quantiles, merging and clearing scan only those.
    min_ns: Ns,
    max_ns: Ns,
}

const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram { counts: vec![0; (64 - SUB_BITS as usize + 1) * SUB as usize], total: 0, min_ns: Ns::MAX, max_ns: 0 }
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
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
    }

    /// Buckets that may hold counts (empty range when nothing was recorded).
    fn used(&self) -> std::ops::Range<usize> {
        if self.total == 0 {
            return 0..0;
        }
        Self::index(self.min_ns)..Self::index(self.max_ns) + 1
    }

    /// Adds every latency recorded in `other` (scans only `other`'s buckets in use).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        let used = other.used();
        for (a, b) in self.counts[used.clone()].iter_mut().zip(&other.counts[used]) {
            *a += b;
        }
        self.total += other.total;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Empties the histogram, keeping its buffer (zeroes only the buckets in use).
    pub fn clear(&mut self) {
        let used = self.used();
        self.counts[used].fill(0);
        self.total = 0;
        self.min_ns = Ns::MAX;
        self.max_ns = 0;
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
        self.quantiles_ns([q]).map(|[v]| v)
    }

    /// Several quantiles in one pass over the buckets in use; `qs` must be nondecreasing.
    /// Each value is exactly what [`LatencyHistogram::quantile_ns`] gives [ns]. None if empty.
    pub fn quantiles_ns<const N: usize>(&self, qs: [f64; N]) -> Option<[Ns; N]> {
        if self.total == 0 {
            return None;
        }
        debug_assert!(qs.windows(2).all(|w| w[0] <= w[1]), "quantiles must be nondecreasing");
        let mut out = [self.max_ns; N];
        let used = self.used();
        let mut i = used.start;
        let mut seen = 0;
        for (k, &q) in qs.iter().enumerate() {
            if q >= 1.0 {
                break; // this and every later one: the exact maximum
            }
            let rank = ((q * self.total as f64).ceil() as u64).max(1);
            // Buckets before `i` hold `seen` < rank values; move on to the one holding `rank`.
            while i < used.end {
                if seen + self.counts[i] >= rank {
                    let lo = Self::lower_bound(i);
                    let hi = Self::lower_bound(i + 1);
                    out[k] = ((lo + hi) / 2).min(self.max_ns);
                    break;
                }
                seen += self.counts[i];
                i += 1;
            }
        }
        Some(out)
    }
}

/// Latency of the IOs that completed in one series interval [ns].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntervalLatency {
    /// IOs that completed in the interval (= the interval's entry in `PhaseReport::ios`).
    pub ios: u64,
    /// Median, 99th and 99.9th percentile (bucket middles, within 1/32) and the exact
    /// maximum, of completion − submission [ns].
    pub p50_ns: Ns,
    pub p99_ns: Ns,
    pub p999_ns: Ns,
    pub max_ns: Ns,
}

impl IntervalLatency {
    /// The interval's figures from its histogram; None if nothing completed.
    pub fn of(h: &LatencyHistogram) -> Option<Self> {
        let [p50_ns, p99_ns, p999_ns] = h.quantiles_ns([0.5, 0.99, 0.999])?;
        Some(IntervalLatency { ios: h.count(), p50_ns, p99_ns, p999_ns, max_ns: h.max_ns() })
    }
}

/// Internal counters at one instant (cumulative since the drive was created).
///
/// The host, NAND, GC-copy, erase and folding counts count work when it is carried out
/// ([`crate::media`]): a host write when it completes, a program's units when the die ends
/// it, GC copies and erases spread evenly over the die time of the GC work that does them
/// (rounded down), so an interval's counts and its GC die time describe the same work. The
/// snapshot at a phase's end counts all the work the phase decided: what its dies still had
/// to do then is counted in its last interval (the next phase starts from there), while its
/// GC die time (`gc_die_done_ns`) carries over into the next phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Host 4 KiB units written, by the completion of their write.
    pub host_units: u64,
    /// Host data written [bytes], by the completion of its write: what the host sent; less
    /// than `host_units` × 4096 when writes covered units only partly (the drive programmed
    /// them whole).
    pub host_bytes: u64,
    /// 4 KiB units programmed to NAND (host + GC copies + pseudo-SLC folding + map pages
    /// written back), as the dies carry out the programs.
    pub nand_units: u64,
    /// Units relocated by GC, as the dies carry out the GC work.
    pub gc_units: u64,
    /// Blocks erased, as the dies carry out the GC work.
    pub erases: u64,
    /// Free blocks in the drive (a level, not cumulative).
    pub free_blocks: u64,
    /// Die time of the GC work decided so far, summed over dies [ns] (the dies may still
    /// be carrying out the latest of it).
    pub gc_die_ns: Ns,
    /// Die time of that work the dies have carried out by the snapshot's time, summed over
    /// dies [ns]; between two snapshots it grows by at most the dies times the time between.
    pub gc_die_done_ns: Ns,
    /// Units in the pseudo-SLC cache, not yet folded (a level, as decided; 0 without a cache).
    pub slc_units: u64,
    /// Units folded from the pseudo-SLC cache into the native mode (part of `nand_units`),
    /// when the die ends the folding program.
    pub fold_units: u64,
    /// Map-cache misses of a DRAM-less drive (0 with the whole map in DRAM).
    pub map_misses: u64,
    /// Map lookups served from the controller's SRAM cache while the map cache was bypassed
    /// (0 without the bypass policy).
    pub map_bypassed: u64,
    /// 4 KiB units of dirty map pages written back to NAND on map-cache misses, as decided
    /// (0 with the whole map in DRAM); the dies program them as part of `nand_units`.
    pub map_writeback_units: u64,
    /// 4 KiB units of the blocks erased, as the dies carry out the GC work (`erases` ×
    /// slots per block): `nvme fdp stats`' media bytes erased (MBE) in NAND units.
    pub erased_units: u64,
    /// FDP reclaim units (erase blocks) filled by host writes, every handle, as decided (0
    /// without FDP).
    pub ru_filled: u64,
    /// Zoned namespace: zone resets of zones holding data, and zones made full by Zone
    /// Finish [zones] (0 on a conventional namespace).
    pub zone_resets: u64,
    pub zone_finishes: u64,
    /// Zoned namespace: commands the drive refused, by error ([`crate::zns::ZoneError`]):
    /// a write not at the write pointer (Zone Invalid Write), to a full zone (Zone Is
    /// Full), past the open or active zone limit (Too Many Open / Active Zones), across a
    /// zone's end or its capacity (Zone Boundary Error) [commands].
    pub zone_invalid_writes: u64,
    pub zone_full_writes: u64,
    pub zone_too_many_open: u64,
    pub zone_too_many_active: u64,
    pub zone_boundary_errors: u64,
}

/// What one data direction (read, write or TRIM) of a phase produced.
#[derive(Clone, Debug, Default)]
pub struct DirectionReport {
    /// IOs of this direction completed in each interval (len = `PhaseReport::ios.len()`).
    pub ios: Vec<u64>,
    /// Bytes of those IOs [bytes] (for TRIMs: the bytes deallocated).
    pub bytes: Vec<u64>,
    /// Per-IO latency of this direction, every IO of the phase (as `PhaseReport::latency`).
    pub latency: LatencyHistogram,
    /// Latency per interval, by completion time (None where none of this direction completed).
    pub interval_latency: Vec<Option<IntervalLatency>>,
    /// IOs and bytes of this direction submitted and completed in the phase.
    pub total_ios: u64,
    pub total_bytes: u64,
}

/// What one job of a phase did in one data direction.
#[derive(Clone, Debug, Default)]
pub struct JobDirection {
    /// IOs of this direction the job submitted (all complete by the phase's end).
    pub total_ios: u64,
    /// Their bytes [bytes] (for TRIMs: the bytes deallocated).
    pub total_bytes: u64,
    /// Their latency (completion − submission) [ns].
    pub latency: LatencyHistogram,
}

impl JobDirection {
    /// Counts one IO of `bytes` that took `latency_ns`.
    #[inline]
    pub(crate) fn record(&mut self, bytes: u64, latency_ns: Ns) {
        self.total_ios += 1;
        self.total_bytes += bytes;
        self.latency.record(latency_ns);
    }
}

/// What one job of a phase did (a phase of one job has one, equal to its directions' totals).
#[derive(Clone, Debug, Default)]
pub struct JobReport {
    /// The job's name as it was given (fio's job section name).
    pub name: String,
    /// Per data direction, in fio's order: read, write, TRIM.
    pub directions: [JobDirection; 3],
    /// Idle gaps the job made (thinktime) and their simulated time [ns].
    pub idle_gaps: u64,
    pub idle_ns: Ns,
}

/// Final intervals of a running phase taken before it ends
/// ([`crate::Simulation::take_final_intervals`]): exactly the entries its [`PhaseReport`]
/// would have held for them, which the report then leaves out (it starts at the first
/// interval not taken). Taking them as the phase goes keeps the simulator's memory flat
/// however long the phase runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IntervalBatch {
    /// Index of the first interval in the phase's series.
    pub first_interval: usize,
    /// IOs completed in each interval, and their bytes [bytes].
    pub ios: Vec<u64>,
    pub bytes: Vec<u64>,
    /// Counters at the start of each interval, plus one at the end of the last (len = intervals + 1).
    pub snapshots: Vec<Snapshot>,
    /// Latency per interval (None where nothing completed).
    pub interval_latency: Vec<Option<IntervalLatency>>,
    /// Per data direction (read, write, TRIM).
    pub directions: [DirectionIntervals; 3],
}

/// One direction's IOs, bytes [bytes] and latency per interval, in an [`IntervalBatch`].
pub type DirectionIntervals = (Vec<u64>, Vec<u64>, Vec<Option<IntervalLatency>>);

/// What one phase produced.
#[derive(Clone, Debug, Default)]
pub struct PhaseReport {
    /// Simulation time at which the phase started [ns].
    pub start_ns: Ns,
    /// Index of the first interval the per-interval vectors hold: intervals before it were
    /// taken while the phase ran ([`IntervalBatch`]); 0 when none were.
    pub first_interval: usize,
    /// Counters when the phase started (the phase's totals are measured from them).
    pub start: Snapshot,
    /// Length of the phase [ns]: the requested duration, or until the last completion.
    pub duration_ns: Ns,
    /// Series interval [ns].
    pub interval_ns: Ns,
    /// IOs completed in each interval.
    pub ios: Vec<u64>,
    /// Bytes transferred by the IOs completed in each interval.
    pub bytes: Vec<u64>,
    /// Counters at the start of each interval from `first_interval`, plus one at the end
    /// (len = intervals + 1).
    pub snapshots: Vec<Snapshot>,
    /// Per-IO latency (completion − submission), every IO of the phase (including those a
    /// timed phase completed after its end, which `ios` leaves out).
    pub latency: LatencyHistogram,
    /// Latency per interval, by completion time (len = `ios.len()`; None where nothing
    /// completed).
    pub interval_latency: Vec<Option<IntervalLatency>>,
    /// IOs submitted and completed in the phase.
    pub total_ios: u64,
    /// Host bytes written / read in the phase.
    pub host_write_bytes: u64,
    pub host_read_bytes: u64,
    /// False if the phase was ended early (interrupted) before its natural end.
    pub complete: bool,
    /// The same series per data direction, in fio's order: read, write, TRIM
    /// ([`crate::workload::Direction::index`]). `ios` is their sum; `bytes` the sum of the
    /// read and write bytes (TRIMs move no data).
    pub directions: [DirectionReport; 3],
    /// Idle gaps the host made (thinktime) and the simulated time they took [ns]; with
    /// several jobs, summed over the jobs (each job's gap leaves the drive to the others).
    pub idle_gaps: u64,
    pub idle_ns: Ns,
    /// Per job ([`crate::Simulation::start_jobs`]), in the order given; one entry for a
    /// phase of one job. Their totals add up to `directions`' totals.
    pub jobs: Vec<JobReport>,
}
