//! Taking a running phase's final intervals (`Simulation::take_final_intervals`) as it goes.
//!
//! Oracle: the same drive, seed and phase run without taking anything. Taken batches followed
//! by the final report's intervals must be exactly that run's series (IOs, bytes, counter
//! snapshots, latency per interval, all directions), and its totals must be the same, for
//! phases that stall (completions pushed several intervals ahead), timed and byte-limited
//! phases, mixed read/write/TRIM workloads with idle gaps, and several jobs at once; taking
//! in the middle must not change the simulation itself.

use ssdsim::stats::IntervalLatency;
use ssdsim::time::NS_PER_MS;
use ssdsim::stats::DirectionIntervals;
use ssdsim::{Config, IntervalBatch, Job, Pattern, PhaseReport, Simulation, Snapshot, Workload, WorkloadJob};

/// One direction's columns, borrowed.
type DirectionSlices<'a> = (&'a [u64], &'a [u64], &'a [Option<IntervalLatency>]);
use ssdsim::rng::Rng;

mod common;
use common::filled;

/// A phase's per-interval record, however it was obtained.
#[derive(Debug, Default, PartialEq)]
struct Columns {
    ios: Vec<u64>,
    bytes: Vec<u64>,
    snapshots: Vec<Snapshot>,
    latency: Vec<Option<IntervalLatency>>,
    dirs: [DirectionIntervals; 3],
}

impl Columns {
    fn add(&mut self, first: usize, ios: &[u64], bytes: &[u64], snapshots: &[Snapshot], latency: &[Option<IntervalLatency>],
           dirs: [DirectionSlices<'_>; 3]) {
        assert_eq!(first, self.ios.len(), "batches come back to back");
        assert_eq!(snapshots.len(), ios.len() + 1, "one snapshot more than intervals");
        if let Some(last) = self.snapshots.pop() {
            assert_eq!(last, snapshots[0], "a batch starts with the snapshot the previous one ended with");
        }
        self.ios.extend_from_slice(ios);
        self.bytes.extend_from_slice(bytes);
        self.snapshots.extend_from_slice(snapshots);
        self.latency.extend_from_slice(latency);
        for (mine, (i, b, l)) in self.dirs.iter_mut().zip(dirs) {
            mine.0.extend_from_slice(i);
            mine.1.extend_from_slice(b);
            mine.2.extend_from_slice(l);
        }
    }

    fn batch(&mut self, b: &IntervalBatch) {
        let dirs = std::array::from_fn(|d| (&b.directions[d].0[..], &b.directions[d].1[..], &b.directions[d].2[..]));
        self.add(b.first_interval, &b.ios, &b.bytes, &b.snapshots, &b.interval_latency, dirs);
    }

    fn report(&mut self, r: &PhaseReport) {
        let dirs = std::array::from_fn(|d| {
            let x = &r.directions[d];
            (&x.ios[..], &x.bytes[..], &x.interval_latency[..])
        });
        self.add(r.first_interval, &r.ios, &r.bytes, &r.snapshots, &r.interval_latency, dirs);
    }
}

/// The phase's totals and whole-phase latency, which taking must not change.
fn totals(r: &PhaseReport) -> Vec<u64> {
    let mut v = vec![r.duration_ns, r.total_ios, r.host_write_bytes, r.host_read_bytes, r.idle_gaps, r.idle_ns, r.complete as u64];
    for d in &r.directions {
        v.extend([d.total_ios, d.total_bytes, d.latency.count(), d.latency.quantile_ns(0.99).unwrap_or(0)]);
    }
    v.extend([r.latency.count(), r.latency.quantile_ns(0.5).unwrap_or(0), r.latency.max_ns()]);
    v.extend([r.start.host_units, r.start.nand_units, r.start.erases]);
    v
}

/// Runs a started phase to its end, taking the final intervals after chunks of random size
/// (when `take`); returns the whole series and the final report's totals.
fn run(sim: &mut Simulation, take: bool, seed: u64) -> (Columns, Vec<u64>, usize) {
    let mut rng = Rng::new(seed);
    let mut cols = Columns::default();
    let mut batches = 0;
    loop {
        let p = sim.advance(1 + rng.below(3_000));
        if take {
            let b = sim.take_final_intervals().expect("a phase is running");
            batches += !b.ios.is_empty() as usize;
            cols.batch(&b);
        }
        if p.done {
            break;
        }
    }
    let r = sim.finish_phase();
    cols.report(&r);
    let t = totals(&r);
    (cols, t, batches)
}

/// Starts the same phase on two identical drives, runs one taking intervals and one not, and
/// checks they agree, then that the drives went on identically.
fn check(make: impl Fn() -> Simulation, start: impl Fn(&mut Simulation), seed: u64) {
    let (mut plain, mut taking) = (make(), make());
    start(&mut plain);
    start(&mut taking);
    let (want, want_totals, _) = run(&mut plain, false, seed);
    let (got, got_totals, batches) = run(&mut taking, true, seed);
    assert!(batches >= 3, "the phase ran long enough to take several batches ({batches})");
    assert!(want.ios.len() >= 20, "{} intervals", want.ios.len());
    assert_eq!(got.ios, want.ios);
    assert_eq!(got.snapshots, want.snapshots);
    assert_eq!(got.latency, want.latency);
    assert_eq!(got, want);
    assert_eq!(got_totals, want_totals);
    assert_eq!((plain.snapshot(), plain.now_ns()), (taking.snapshot(), taking.now_ns()), "taking intervals leaves the simulation as it was");
}

fn stalling() -> Config {
    common::small(&[("gc_policy", "greedy"), ("gc_fg_free_blocks", "2"), ("gc_fg_stall", "drive"),
                    ("gc_bg_start_free_blocks", "4"), ("gc_bg_stop_free_blocks", "5"),
                    ("gc_bg_reclaim_ratio", "1.5"), ("gc_bg_copies_per_write", "5.5")], 1.07)
}

#[test]
fn timed_random_writes_through_drive_stalls() {
    let cfg = stalling();
    check(|| filled(&cfg, 3), |s| {
        let user = s.geometry().user_units;
        let mut job = Job::new(Pattern::RandWrite, 1, 32, 0, user);
        job.duration_ns = Some(3_000 * NS_PER_MS);
        job.interval_ns = 20 * NS_PER_MS;
        s.start_phase(job).unwrap();
    }, 11);
}

#[test]
fn byte_limited_sequential_writes() {
    let cfg = common::small(&[], 1.07);
    check(|| Simulation::new(&cfg, 5).unwrap(), |s| {
        let user = s.geometry().user_units;
        let mut job = Job::new(Pattern::SeqWrite, 8, 4, 0, user);
        job.interval_ns = 5 * NS_PER_MS;
        s.start_phase(job).unwrap();
    }, 12);
}

fn mixed(qd: u32) -> Workload {
    Workload {
        read_fraction: 0.4, trim_fraction: 0.1, qd, duration_ns: Some(1_500 * NS_PER_MS), interval_ns: 25 * NS_PER_MS,
        thinktime_ns: 2 * NS_PER_MS, thinktime_blocks: 500, ..Workload::default()
    }
}

#[test]
fn mixed_workload_with_trims_and_idle_gaps() {
    let cfg = common::small(common::DEFAULT_PROFILE_GC, 1.07);
    check(|| filled(&cfg, 7), |s| s.start_workload(&mixed(16)).unwrap(), 13);
}

#[test]
fn several_jobs_at_once() {
    let cfg = common::small(common::DEFAULT_PROFILE_GC, 1.07);
    let jobs = [
        WorkloadJob { flow: None, exit_stops: Vec::new(), name: "mix".into(), startdelay_ns: 0, workload: mixed(8) },
        WorkloadJob { flow: None, exit_stops: Vec::new(), name: "writer".into(), startdelay_ns: 100 * NS_PER_MS,
                      workload: Workload { qd: 32, duration_ns: Some(1_000 * NS_PER_MS), ..Workload::default() } },
    ];
    check(|| filled(&cfg, 9), |s| s.start_jobs(&jobs, 25 * NS_PER_MS).unwrap(), 14);
}

#[test]
fn nothing_to_take_without_a_phase_or_in_a_replay() {
    let cfg = common::small(&[], 1.07);
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    assert!(sim.take_final_intervals().is_none());
    sim.start_replay(4, 100).unwrap();
    assert!(sim.take_final_intervals().is_none(), "a replay's series is its windows");
}
