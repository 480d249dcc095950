//! Trace replay against oracles: the closed-loop host of a phase, a reference map of what
//! is stored, and the flush barrier.

use std::collections::BTreeSet;

use ssdsim::rng::Rng;
use ssdsim::{CmdKind, Command, Config, Job, Pattern, Simulation};

fn small() -> Config {
    let mut cfg = Config::default();
    for (k, v) in [("channels", "2"), ("dies_per_channel", "2"), ("blocks_per_plane", "128"), ("pages_per_block", "32"), ("user_capacity_bytes", "240MiB")] {
        cfg.set(k, v).unwrap();
    }
    cfg
}

fn write(unit: u64, units: u64) -> Command {
    Command { kind: CmdKind::Write, unit, units }
}

/// Replaying the commands a sequential phase would issue gives the phase's exact timing:
/// the replay host and the phase host are the same closed loop.
#[test]
fn replay_of_a_sequential_job_matches_the_phase() {
    for qd in [1u32, 4, 32] {
        let mut a = Simulation::new(&small(), 5).unwrap();
        let user = a.geometry().user_units;
        let n = user / 8;
        let mut job = Job::new(Pattern::SeqWrite, 8, qd, 0, user);
        job.io_units = Some(n * 8);
        let phase = a.run(job).unwrap();

        let mut b = Simulation::new(&small(), 5).unwrap();
        b.start_replay(qd, 1000).unwrap();
        let cmds: Vec<Command> = (0..n).map(|i| write(i * 8, 8)).collect();
        for chunk in cmds.chunks(777) {
            b.replay(chunk).unwrap();
        }
        let rep = b.finish_replay();
        assert_eq!(rep.counts.writes, n);
        assert_eq!(rep.duration_ns, phase.duration_ns, "qd {qd}");
        assert_eq!(a.now_ns(), b.now_ns(), "qd {qd}");
        assert_eq!(a.snapshot(), b.snapshot(), "qd {qd}");
    }
}

/// Windows hold `window_commands` completions each (the last one the rest), their times rise,
/// and IOPS over the windows adds up to the whole replay.
#[test]
fn windows_partition_the_completions() {
    let mut sim = Simulation::new(&small(), 9).unwrap();
    let user = sim.geometry().user_units;
    let mut rng = Rng::new(3);
    let cmds: Vec<Command> = (0..25_500).map(|_| write(rng.below(user - 4), 1 + rng.below(4))).collect();
    sim.start_replay(32, 1000).unwrap();
    sim.replay(&cmds).unwrap();
    let rep = sim.finish_replay();
    assert_eq!(rep.windows.len(), 26);
    let mut prev = 0;
    for (i, w) in rep.windows.iter().enumerate() {
        assert_eq!(w.commands, ((i as u64 + 1) * 1000).min(25_500));
        assert!(w.end_ns > prev, "window {i} ends at {} after {prev}", w.end_ns);
        prev = w.end_ns;
    }
    assert_eq!(rep.windows.last().unwrap().end_ns, rep.duration_ns);
    let bytes: u64 = rep.windows.iter().map(|w| w.data_bytes).sum();
    assert_eq!(bytes, rep.counts.write_bytes);
    assert_eq!(rep.windows.last().unwrap().snapshot.host_units * 4096, rep.counts.write_bytes);
}

/// After a random mix of writes, TRIMs, reads and flushes, exactly the units the reference set
/// says are written are mapped, and the FTL's invariants hold.
#[test]
fn replay_matches_a_reference_map() {
    let mut sim = Simulation::new(&small(), 11).unwrap();
    let user = sim.geometry().user_units;
    let mut rng = Rng::new(17);
    let mut model = BTreeSet::new();
    let mut cmds = Vec::new();
    for _ in 0..200_000 {
        let units = 1 + rng.below(16);
        let unit = rng.below(user - units);
        let kind = match rng.below(100) {
            0..=69 => CmdKind::Write,
            70..=84 => CmdKind::Trim,
            85..=94 => CmdKind::Read,
            _ => CmdKind::Flush,
        };
        match kind {
            CmdKind::Write => model.extend(unit..unit + units),
            CmdKind::Trim => (unit..unit + units).for_each(|u| {
                model.remove(&u);
            }),
            _ => {}
        }
        cmds.push(if kind == CmdKind::Flush { Command { kind, unit: 0, units: 0 } } else { Command { kind, unit, units } });
    }
    sim.start_replay(8, 10_000).unwrap();
    sim.replay(&cmds).unwrap();
    let rep = sim.finish_replay();
    assert_eq!(rep.counts.commands(), cmds.len() as u64);
    assert!(sim.snapshot().gc_units > 0, "the replay must reach GC to be a meaningful check");
    let ftl = sim.device().ftl();
    ftl.check_invariants().unwrap();
    for u in 0..user {
        assert_eq!(ftl.lookup(u).is_some(), model.contains(&u), "unit {u}");
    }
}

/// A flush is a barrier: with a flush after every write, QD 32 is no faster than QD 1, and
/// both are slower than writes without flushes.
#[test]
fn flush_is_a_barrier() {
    let run = |qd: u32, flush: bool| {
        let mut sim = Simulation::new(&small(), 1).unwrap();
        let mut cmds = Vec::new();
        for i in 0..4000u64 {
            cmds.push(write(i * 7 % 50_000, 1));
            if flush {
                cmds.push(Command { kind: CmdKind::Flush, unit: 0, units: 0 });
            }
        }
        sim.start_replay(qd, 1 << 20).unwrap();
        sim.replay(&cmds).unwrap();
        sim.finish_replay().duration_ns
    };
    let (q1f, q32f, q32) = (run(1, true), run(32, true), run(32, false));
    assert_eq!(q1f, q32f, "flush after every write leaves nothing to queue");
    assert!(q32f > 3 * q32, "flushes force programs: {q32f} vs {q32} ns");
}

#[test]
fn replay_is_deterministic_and_rejects_commands_beyond_the_drive() {
    let run = || {
        let mut sim = Simulation::new(&small(), 2).unwrap();
        let user = sim.geometry().user_units;
        let mut rng = Rng::new(4);
        let cmds: Vec<Command> = (0..80_000).map(|_| write(rng.below(user - 2), 2)).collect();
        sim.start_replay(32, 5000).unwrap();
        sim.replay(&cmds).unwrap();
        let rep = sim.finish_replay();
        (rep.windows, rep.duration_ns, rep.latency.quantile_ns(0.99))
    };
    assert_eq!(run(), run());
    let mut sim = Simulation::new(&small(), 2).unwrap();
    let user = sim.geometry().user_units;
    sim.start_replay(1, 10).unwrap();
    let err = sim.replay(&[write(0, 1), write(user, 1)]).unwrap_err();
    assert!(err.to_string().starts_with("command 1:"), "{err}");
    assert_eq!(sim.finish_replay().counts.writes, 1);
}

/// Compressible data in a replay: on a 2:1 compressing drive (2 KiB slots) a sequential pass
/// writes exactly (100 − pct) % × 2 NAND slots per unit (at least one), as a workload's
/// `buffer_compress_pct` does; without a percentage the profile's ratio holds (one slot).
#[test]
fn compressible_replay_writes_fewer_nand_slots_than_incompressible() {
    let mut cfg = small();
    cfg.set("compression_ratio", "2").unwrap();
    cfg.set("user_capacity_bytes", "120MiB").unwrap();
    let mut slots = Vec::new();
    for pct in [None, Some(0), Some(50), Some(75)] {
        let mut sim = Simulation::new(&cfg, 3).unwrap();
        let user = sim.geometry().user_units;
        sim.start_replay_compressed(8, 1000, ssdsim::time::NS_PER_S, pct).unwrap();
        let cmds: Vec<Command> = (0..user / 16).map(|i| write(i * 16, 16)).collect();
        sim.replay(&cmds).unwrap();
        let r = sim.finish_replay();
        let (a, b) = (r.start_snapshot, r.windows.last().unwrap().snapshot);
        assert_eq!(b.host_units - a.host_units, user / 16 * 16, "host units are the data's, companions aside");
        slots.push((b.nand_units - a.nand_units) as f64 / (b.host_units - a.host_units) as f64);
        sim.device().ftl().check_invariants().unwrap();
    }
    assert_eq!(slots, [1.0, 2.0, 1.0, 1.0], "NAND slots per unit for None, 0 %, 50 %, 75 % compressible");
    let mut sim = Simulation::new(&cfg, 3).unwrap();
    assert!(sim.start_replay_compressed(8, 1000, ssdsim::time::NS_PER_S, Some(101)).unwrap_err().to_string().contains("buffer_compress_pct"));
    assert!(!sim.phase_running());
}
