//! The online drive against the trace replay: the same commands at the same submission
//! times complete at the same times, with the same drive state; idle gaps run idle GC as
//! idle time between replays does.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use ssdsim::rng::Rng;
use ssdsim::time::{Ns, NS_PER_MS, NS_PER_S};
use ssdsim::{CmdKind, Command, Config, Simulation};

fn small(extra: &[(&str, &str)]) -> Config {
    let mut cfg = Config::default();
    for (k, v) in [("channels", "2"), ("dies_per_channel", "2"), ("blocks_per_plane", "128"), ("pages_per_block", "32"), ("user_capacity_bytes", "240MiB")] {
        cfg.set(k, v).unwrap();
    }
    for (k, v) in extra {
        cfg.set(k, v).unwrap();
    }
    cfg
}

/// A random mix of writes, TRIMs, reads and flushes, several times the drive's capacity
/// written (so GC runs).
fn mix(user: u64, n: usize, seed: u64) -> Vec<Command> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let units = 1 + rng.below(16);
            let unit = rng.below(user - units);
            match rng.below(200) {
                0..=139 => Command { kind: CmdKind::Write, unit, units },
                140..=164 => Command { kind: CmdKind::Trim, unit, units },
                165..=198 => Command { kind: CmdKind::Read, unit, units },
                _ => Command { kind: CmdKind::Flush, unit: 0, units: 0 },
            }
        })
        .collect()
}

/// Submits `cmds` to an online drive as a closed loop at `qd` would (the next command when
/// fewer than `qd` are outstanding, else when the earliest completes; a flush at the latest
/// submission, the next command at its completion), from the latest submission on, with the
/// commands completing at `outstanding` already in flight. Returns every completion time.
fn closed_loop_online(sim: &mut Simulation, cmds: &[Command], qd: usize, outstanding: &[Ns]) -> Vec<Ns> {
    let mut outstanding: BinaryHeap<_> = outstanding.iter().map(|&t| Reverse(t)).collect();
    let mut last = sim.online_state().last_submit_ns;
    let mut done = Vec::with_capacity(cmds.len());
    for &c in cmds {
        let at = if c.kind == CmdKind::Flush {
            outstanding.clear();
            last
        } else if outstanding.len() >= qd {
            let Reverse(t) = outstanding.pop().unwrap();
            last.max(t)
        } else {
            last
        };
        let s = sim.online_submit(c, at).unwrap();
        assert!(s.submit_ns >= at && s.done_ns >= s.submit_ns, "{s:?} asked at {at}");
        if c.kind == CmdKind::Flush {
            last = s.done_ns;
        } else {
            assert_eq!(s.submit_ns, at, "a closed loop's submissions are taken at their time");
            outstanding.push(Reverse(s.done_ns));
            last = at;
        }
        done.push(s.done_ns);
    }
    done
}

/// The replay's completion times, sorted: one window per completion.
fn replay_completions(sim: &mut Simulation, cmds: &[Command], qd: u32) -> (Vec<Ns>, ssdsim::ReplayReport) {
    sim.start_replay(qd, 1).unwrap();
    for chunk in cmds.chunks(10_000) {
        sim.replay(chunk).unwrap();
    }
    let rep = sim.finish_replay();
    (rep.windows.iter().map(|w| rep.start_ns + w.end_ns).collect(), rep)
}

#[test]
fn online_submissions_at_the_replay_times_complete_at_the_replay_times() {
    for qd in [1u32, 8, 32] {
        let cfg = small(&[]);
        let mut a = Simulation::new(&cfg, 3).unwrap();
        let cmds = mix(a.geometry().user_units, 60_000, 40 + qd as u64);
        let (replayed, rep) = replay_completions(&mut a, &cmds, qd);

        let mut b = Simulation::new(&cfg, 3).unwrap();
        b.start_online(qd, NS_PER_S).unwrap();
        let mut online = closed_loop_online(&mut b, &cmds, qd as usize, &[]);
        online.sort_unstable();
        let state = b.online_state();
        assert_eq!(state.idle_gaps, 0, "qd {qd}: a closed loop leaves the drive no idle gap");
        let report = b.finish_online();

        assert_eq!(online.len(), replayed.len(), "qd {qd}");
        assert_eq!(online, replayed, "qd {qd}: completion times");
        assert!(a.snapshot().gc_units > 0, "qd {qd}: the commands must reach GC to be a meaningful check");
        assert_eq!(a.now_ns(), b.now_ns(), "qd {qd}");
        assert_eq!(a.snapshot(), b.snapshot(), "qd {qd}");
        assert_eq!(a.timing_counters(), b.timing_counters(), "qd {qd}");
        let s = &rep.series;
        assert_eq!((report.ios, report.bytes, report.snapshots.clone()), (s.ios.clone(), s.bytes.clone(), s.snapshots.clone()), "qd {qd}: series");
        assert_eq!(report.latency.count(), rep.latency.count(), "qd {qd}");
        assert_eq!(report.latency.quantiles_ns([0.5, 0.99, 1.0]), rep.latency.quantiles_ns([0.5, 0.99, 1.0]), "qd {qd}");
    }
}

/// A command submitted after the drive has been idle for a while finds it as idle time
/// between two replays leaves it: idle GC has run in the gap.
#[test]
fn an_idle_gap_runs_idle_gc_as_idle_time_between_replays() {
    let cfg = small(&[("gc_idle_free_blocks", "40"), ("gc_idle_delay_ms", "100")]);
    let user = Simulation::new(&cfg, 1).unwrap().geometry().user_units;
    let first: Vec<Command> = mix(user, 80_000, 7).into_iter().filter(|c| c.kind == CmdKind::Write).collect();
    let second = mix(user, 5_000, 8);
    let gap_ns = 30 * NS_PER_S;

    let mut a = Simulation::new(&cfg, 1).unwrap();
    let (mut replayed, _) = replay_completions(&mut a, &first, 4);
    let before = a.snapshot();
    let collected = a.idle(gap_ns).unwrap();
    assert!(collected > 0, "the gap must run idle GC to be a meaningful check");
    let (second_replayed, _) = replay_completions(&mut a, &second, 4);
    replayed.extend(second_replayed);

    let mut b = Simulation::new(&cfg, 1).unwrap();
    b.start_online(4, NS_PER_S).unwrap();
    let mut online = closed_loop_online(&mut b, &first, 4, &[]);
    let resume = b.online_state().busy_until_ns + gap_ns;
    // The first command after the gap, then the rest as a closed loop from there.
    let s = b.online_submit(second[0], resume).unwrap();
    assert_eq!((s.submit_ns, s.idle_ns), (resume, gap_ns));
    let state = b.online_state();
    assert_eq!((state.idle_gaps, state.idle_ns), (1, gap_ns));
    online.push(s.done_ns);
    online.extend(closed_loop_online(&mut b, &second[1..], 4, &[s.done_ns]));
    online.sort_unstable();
    b.finish_online();
    assert_eq!(online, replayed);
    assert_eq!(a.snapshot(), b.snapshot());
    assert!(b.snapshot().erases > before.erases);
}

/// Submission times never go back; commands after a flush wait for it; a command outside
/// the drive or beyond the outstanding limit is refused with nothing submitted.
#[test]
fn submissions_are_ordered_and_checked() {
    let mut sim = Simulation::new(&small(&[]), 1).unwrap();
    let user = sim.geometry().user_units;
    sim.start_online(2, NS_PER_S).unwrap();
    let w = |unit| Command { kind: CmdKind::Write, unit, units: 1 };
    let a = sim.online_submit(w(0), 5 * NS_PER_MS).unwrap();
    assert_eq!(a.submit_ns, 5 * NS_PER_MS);
    let b = sim.online_submit(w(1), NS_PER_MS).unwrap();
    assert_eq!(b.submit_ns, a.submit_ns, "an earlier time is taken at the previous submission");
    let e = sim.online_submit(w(2), a.submit_ns).unwrap_err();
    assert!(e.to_string().contains("more than 2 commands in flight"), "{e}");
    assert!(sim.online_submit(Command { kind: CmdKind::Read, unit: user - 1, units: 2 }, 0).unwrap_err().to_string().contains("do not fit"));
    assert!(sim.online_submit(Command { kind: CmdKind::Trim, unit: 0, units: 0 }, 0).is_err());
    let f = sim.online_submit(Command { kind: CmdKind::Flush, unit: 0, units: 0 }, a.submit_ns).unwrap();
    assert!(f.submit_ns >= a.done_ns.max(b.done_ns), "a flush starts after every earlier command");
    let c = sim.online_submit(w(3), a.submit_ns).unwrap();
    assert_eq!(c.submit_ns, f.done_ns, "a command after a flush starts at its completion");
    let report = sim.finish_online();
    assert_eq!(report.total_ios, 3);
    assert_eq!(sim.now_ns(), c.done_ns.max(f.done_ns));
    assert!(sim.start_online(1, NS_PER_S).is_ok());
}

/// The work decided by an online drive's last submission is what its report counts when it
/// ends (GC still queued on the dies included), while the work carried out by then lags by
/// that backlog: an emulated drive's counters (decided) give a phase the simulator's figure.
#[test]
fn work_decided_is_what_the_report_counts_at_its_end() {
    // GC that copies hundreds of units per host write keeps the dies busy long after the host.
    let mut sim = Simulation::new(&small(&[("gc_bg_start_free_blocks", "3"), ("gc_bg_stop_free_blocks", "3"), ("gc_bg_copies_per_write", "400")]), 3).unwrap();
    let user = sim.geometry().user_units;
    sim.start_online(32, NS_PER_S).unwrap();
    let mut rng = Rng::new(11);
    // One write past a whole number of programs: a program is being filled at the end.
    let writes: Vec<Command> = (0..3 * user + 1).map(|_| Command { kind: CmdKind::Write, unit: rng.below(user), units: 1 }).collect();
    let done = closed_loop_online(&mut sim, &writes, 32, &[]);
    let last_completion = *done.iter().max().unwrap();
    let decided = sim.device().media_decided();
    let carried_out = sim.snapshot_at(last_completion);
    let report = sim.finish_online();
    let end = report.snapshots.last().unwrap();
    assert!(carried_out.nand_units < decided.nand_units, "a backlog at the end: {} vs {}", carried_out.nand_units, decided.nand_units);
    assert_eq!((decided.nand_units, decided.gc_units, decided.erases, decided.host_units),
               (end.nand_units, end.gc_units, end.erases, end.host_units));
}
