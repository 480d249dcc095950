//! A phase on two threads (the FTL's on one, the timing model's on the other) gives exactly
//! what it gives on one: every phase's report (series, latencies, totals), the drive's
//! counters and clock, for drives whose FTL decides by command order, over reads, writes,
//! TRIMs, sequential and random patterns, IO and byte limits, and trace replays (windows,
//! flushes, a chunk's refused command). A drive or phase that cannot be split runs on one
//! thread, with the same figures too.

mod common;

use ssdsim::time::NS_PER_S;
use ssdsim::{BlockSize, CmdKind, Command, Config, DirectionMix, Job, Pattern, Simulation, Workload, UNIT_BYTES};

/// Block sizes [KiB] and weights, a share of them random.
fn mix(sizes: &[(u64, u32)], random_fraction: f64) -> DirectionMix {
    let bssplit = sizes.iter().map(|&(kib, weight)| BlockSize { bs_bytes: kib << 10, weight }).collect();
    DirectionMix { bssplit, random_fraction, ..DirectionMix::default() }
}

/// The phases each drive runs, in turn, on one thread and on two.
fn phases(user_units: u64) -> Vec<Workload> {
    let cap = user_units * UNIT_BYTES;
    let w = Workload::default();
    vec![
        // 70/30 4 KiB random at QD32 by IO count (active GC starts on the filled drive).
        Workload { read_fraction: 0.7, number_ios: Some(60_000), ..w.clone() },
        // Random writes with 10 % TRIMs, twice the capacity by bytes.
        Workload { read_fraction: 0.0, trim_fraction: 0.1, io_bytes: Some(2 * cap), ..w.clone() },
        // Mixed block sizes (whole pages and single units): runs of a page's units at once.
        Workload {
            read_fraction: 0.5,
            read: mix(&[(4, 50), (64, 50)], 1.0),
            // Partly sequential: runs of whole pages go to the FTL at once.
            write: mix(&[(4, 30), (16, 40), (128, 30)], 0.5),
            number_ios: Some(40_000),
            qd: 8,
            ..w.clone()
        },
        // Plain random writes by bytes at QD1.
        Workload { read_fraction: 0.0, qd: 1, io_bytes: Some(cap / 2), ..w.clone() },
        // Timed: the FTL's thread makes only the commands the host is sure to submit.
        Workload { read_fraction: 0.3, duration_ns: Some(4 * NS_PER_S), ..w.clone() },
        Workload { read_fraction: 0.0, qd: 4, duration_ns: Some(3 * NS_PER_S), ..w.clone() },
        // Timed with a byte limit that ends it first.
        Workload { read_fraction: 0.5, duration_ns: Some(60 * NS_PER_S), io_bytes: Some(cap / 4), ..w },
    ]
}

/// Runs the fill and `phases` on `cfg` with `threads`; returns every report and the drive's
/// state after each phase, as text, and the commands run on two threads.
fn run(cfg: &Config, threads: usize) -> (Vec<String>, u64) {
    let mut sim = Simulation::new(cfg, 7).unwrap();
    sim.set_threads(threads);
    let user = sim.geometry().user_units;
    let mut out = Vec::new();
    let fill = sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    out.push(format!("{fill:?}"));
    for w in phases(user) {
        let r = sim.run_workload(&w).unwrap();
        out.push(format!("{r:?}"));
        out.push(format!("{:?} {:?} {}", sim.snapshot(), sim.ftl_counters(), sim.now_ns()));
    }
    (out, sim.piped_commands())
}

fn same_on_one_and_two_threads(cfg: &Config, split: bool) {
    let (one, none) = run(cfg, 1);
    let (two, piped) = run(cfg, 2);
    assert_eq!(none, 0, "one thread runs nothing on two");
    if split {
        assert!(piped > 100_000, "the phases ran on two threads: {piped} commands");
    } else {
        assert_eq!(piped, 0, "a drive that cannot be split runs on one thread");
    }
    assert_eq!(one.len(), two.len());
    for (i, (a, b)) in one.iter().zip(&two).enumerate() {
        assert!(a == b, "phase output {i} differs on two threads:\none: {a}\ntwo: {b}");
    }
}

#[test]
fn active_and_idle_gc_give_the_same_figures_on_two_threads() {
    same_on_one_and_two_threads(&common::small(common::DEFAULT_PROFILE_GC, 1.12), true);
}

#[test]
fn greedy_foreground_gc_gives_the_same_figures_on_two_threads() {
    same_on_one_and_two_threads(&common::small(&[], 1.08), true);
}

#[test]
fn cost_benefit_gc_gives_the_same_figures_on_two_threads() {
    same_on_one_and_two_threads(&common::small(&[("gc_policy", "cost-benefit")], 1.15), true);
}

#[test]
fn a_drive_whose_ftl_follows_die_times_runs_on_one_thread() {
    // The die free first takes the next program: the FTL's placement follows the timing.
    same_on_one_and_two_threads(&common::small(&[("die_allocation", "earliest")], 1.12), false);
}

#[test]
fn a_phase_with_idle_time_runs_on_one_thread() {
    // Think time leaves the drive idle between commands: idle GC runs by the clock.
    let cfg = common::small(common::DEFAULT_PROFILE_GC, 1.12);
    let mut sim = common::filled(&cfg, 3);
    sim.set_threads(2);
    let w = Workload { thinktime_ns: 50_000, number_ios: Some(50_000), ..Workload::default() };
    sim.run_workload(&w).unwrap();
    assert_eq!(sim.piped_commands(), 0);
}

/// Fills the drive, replays `cmds` at QD32 and at QD1 in chunks, each replay's first chunk
/// (its first call: on two threads) with a command outside the drive half way; returns every
/// chunk's outcome and progress, each replay's report, the drive's state after it, and the
/// commands run on two threads.
fn replays(cfg: &Config, threads: usize, cmds: &[Command]) -> (Vec<String>, u64) {
    let mut sim = Simulation::new(cfg, 11).unwrap();
    sim.set_threads(threads);
    let user = sim.geometry().user_units;
    sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    let mut bad = cmds[..60_000].to_vec();
    bad[30_000] = Command { kind: CmdKind::Write, unit: user - 1, units: 2 };
    let mut out = Vec::new();
    for qd in [32, 1] {
        sim.start_replay(qd, 5_000).unwrap();
        for chunk in [&bad[..]].into_iter().chain(cmds.chunks(70_000)) {
            out.push(format!("{:?} {:?}", sim.replay(chunk), sim.replay_progress()));
        }
        out.push(format!("{:?}", sim.finish_replay()));
        out.push(format!("{:?} {:?} {}", sim.snapshot(), sim.ftl_counters(), sim.now_ns()));
    }
    (out, sim.piped_commands())
}

#[test]
fn a_trace_replay_gives_the_same_figures_on_two_threads() {
    let cfg = common::small(common::DEFAULT_PROFILE_GC, 1.12);
    let user = Simulation::new(&cfg, 1).unwrap().geometry().user_units;
    let cmds = common::trace(user, 350_000, 5);
    let (one, none) = replays(&cfg, 1, &cmds);
    let (two, piped) = replays(&cfg, 2, &cmds);
    assert_eq!(none, 0);
    // Each replay's first chunk runs on two threads, up to its refused command; the others
    // each the way that was faster.
    assert!(piped >= 60_000, "the replays ran on two threads: {piped} commands");
    assert!(one.iter().any(|o| o.contains("do not fit")), "the bad chunk is refused: {one:?}");
    assert_eq!(one.len(), two.len());
    for (i, (a, b)) in one.iter().zip(&two).enumerate() {
        assert!(a == b, "replay output {i} differs on two threads:\none: {a}\ntwo: {b}");
    }
}
