//! A replay shared by drives in the same state (one FTL run on a thread of its own, the
//! drives' timing models in turn on another: `Simulation::replay_shared`) gives each drive
//! exactly what its own replay gives: every chunk's outcome and progress, the windows and
//! report, and, once it has caught up, the drive's counters, FTL and clock, over two replays
//! of writes, TRIMs, reads and flushes, with a refused command and commands longer than a
//! ring. And a drive that cannot follow is refused.

mod common;

use ssdsim::{CmdKind, Command, Config, Job, Pattern, Simulation};

/// The queue depths of the drives: the first leads.
const QDS: [u32; 3] = [32, 1, 4];

fn filled(cfg: &Config) -> Simulation {
    let mut sim = Simulation::new(cfg, 11).unwrap();
    let user = sim.geometry().user_units;
    sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    sim
}

/// The chunks of one replay: a first with a command outside the drive half way, a second
/// with a write and a read each more words of FTL results than a ring holds, a third with
/// reads of about half a ring's words, then `cmds`.
fn chunks(cmds: &[Command], user: u64) -> Vec<Vec<Command>> {
    let mut bad = cmds[..40_000].to_vec();
    bad[20_000] = Command { kind: CmdKind::Write, unit: user - 1, units: 2 };
    let mut big = cmds[..30_000].to_vec();
    big[10_000] = Command { kind: CmdKind::Write, unit: 1_000, units: 20_000 };
    big[20_000] = Command { kind: CmdKind::Read, unit: 0, units: 100_000 };
    let mut edge = cmds[30_000..60_000].to_vec();
    for k in (1_000..30_000).step_by(3_000) {
        edge[k] = Command { kind: CmdKind::Read, unit: 7 * k as u64, units: 32_764 };
    }
    [bad, big, edge].into_iter().chain(cmds.chunks(60_000).map(<[Command]>::to_vec)).collect()
}

/// What a drive shows after a replay: its report, then its counters, FTL and clock.
fn after(sim: &mut Simulation) -> Vec<String> {
    vec![format!("{:?}", sim.finish_replay()), format!("{:?} {:?} {}", sim.snapshot(), sim.ftl_counters(), sim.now_ns())]
}

/// Two replays of `cmds` on one drive per queue depth, each on its own: per drive, every
/// chunk's outcome and progress and what it shows after each replay.
fn alone(cfg: &Config, cmds: &[Command]) -> Vec<Vec<String>> {
    QDS.iter()
        .map(|&qd| {
            let mut sim = filled(cfg);
            let user = sim.geometry().user_units;
            let mut out = Vec::new();
            for _ in 0..2 {
                sim.start_replay(qd, 5_000).unwrap();
                for c in chunks(cmds, user) {
                    out.push(format!("{:?} {:?}", sim.replay(&c), sim.replay_progress()));
                }
                out.extend(after(&mut sim));
            }
            out
        })
        .collect()
}

/// The same two replays shared: the first drive leads, the others follow and catch up after
/// each replay.
fn shared(cfg: &Config, cmds: &[Command]) -> Vec<Vec<String>> {
    let mut sims: Vec<Simulation> = QDS.iter().map(|_| filled(cfg)).collect();
    let user = sims[0].geometry().user_units;
    let mut out = vec![Vec::new(); QDS.len()];
    for _ in 0..2 {
        for (sim, &qd) in sims.iter_mut().zip(&QDS) {
            sim.start_replay(qd, 5_000).unwrap();
        }
        for c in chunks(cmds, user) {
            let (leader, followers) = sims.split_first_mut().unwrap();
            let mut followers: Vec<&mut Simulation> = followers.iter_mut().collect();
            let r = leader.replay_shared(&mut followers, &c);
            for (o, sim) in out.iter_mut().zip(&sims) {
                o.push(format!("{r:?} {:?}", sim.replay_progress()));
            }
        }
        let (leader, followers) = sims.split_first_mut().unwrap();
        for f in followers.iter_mut() {
            assert!(f.following());
            f.catch_up(leader).unwrap();
            assert!(!f.following());
        }
        for (o, sim) in out.iter_mut().zip(sims.iter_mut()) {
            o.extend(after(sim));
        }
    }
    out
}

#[test]
fn a_shared_replay_gives_each_drive_its_own_figures() {
    let cfg = common::small(common::DEFAULT_PROFILE_GC, 1.12);
    let user = Simulation::new(&cfg, 1).unwrap().geometry().user_units;
    let cmds = common::trace(user, 300_000, 5);
    let (one, many) = (alone(&cfg, &cmds), shared(&cfg, &cmds));
    assert!(one[0].iter().any(|o| o.contains("do not fit")), "the bad chunk is refused: {:?}", one[0]);
    assert_ne!(one[0], one[1], "the queue depths give different figures");
    for (qd, (a, b)) in QDS.iter().zip(one.iter().zip(&many)) {
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(x == y, "QD{qd} output {i} differs when shared:\nalone:  {x}\nshared: {y}");
        }
    }
}

#[test]
fn a_drive_that_cannot_follow_is_refused() {
    let cfg = common::small(common::DEFAULT_PROFILE_GC, 1.12);
    let (mut leader, mut follower) = (filled(&cfg), filled(&cfg));
    let user = leader.geometry().user_units;
    let cmds = common::trace(user, 30_000, 7);
    leader.start_replay(32, 5_000).unwrap();
    // No replay on the follower.
    let e = leader.replay_shared(&mut [&mut follower], &cmds).unwrap_err().to_string();
    assert!(e.contains("drive 0 runs no plain replay"), "{e}");
    // A follower whose FTL holds other data.
    follower.run(Job::new(Pattern::RandWrite, 1, 1, 0, 8)).unwrap();
    follower.start_replay(1, 5_000).unwrap();
    let e = leader.replay_shared(&mut [&mut follower], &cmds).unwrap_err().to_string();
    assert!(e.contains("not in this drive's state") || e.contains("holds its data elsewhere"), "{e}");

    let (mut leader, mut follower, mut other) = (filled(&cfg), filled(&cfg), filled(&cfg));
    for s in [&mut leader, &mut follower, &mut other] {
        s.start_replay(8, 5_000).unwrap();
    }
    leader.replay_shared(&mut [&mut follower], &cmds).unwrap();
    // While behind, the follower takes no command of its own, leads no one, and catches up
    // with its own leader only, before that leader moves on.
    assert!(follower.replay(&cmds[..10]).unwrap_err().to_string().contains("catch_up first"));
    assert!(follower.replay_shared(&mut [&mut other], &cmds).unwrap_err().to_string().contains("cannot lead"));
    assert!(follower.catch_up(&other).is_err());
    other.replay(&cmds).unwrap();
    let e = other.replay_shared(&mut [&mut follower], &cmds).unwrap_err().to_string();
    assert!(e.contains("follows another drive's FTL"), "{e}");
    leader.replay(&cmds[..100]).unwrap();
    assert!(follower.catch_up(&leader).is_err(), "the leader moved on");
}

#[test]
fn a_drive_whose_ftl_follows_time_does_not_share() {
    let mut cfg = common::small(common::DEFAULT_PROFILE_GC, 1.12);
    common::set(&mut cfg, &[("die_allocation", "earliest")]);
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    assert!(!sim.shares_replays());
    let mut other = Simulation::new(&cfg, 1).unwrap();
    sim.start_replay(1, 100).unwrap();
    other.start_replay(1, 100).unwrap();
    let e = sim.replay_shared(&mut [&mut other], &[]).unwrap_err().to_string();
    assert!(e.contains("depend on time"), "{e}");
}
