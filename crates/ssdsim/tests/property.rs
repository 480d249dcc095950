//! Property tests: random VALID profiles (geometry, spare area, compression, GC watermarks
//! and policies, active and idle GC, idle sorting by LBA region, write buffer) under random
//! operations never panic, keep the FTL's invariants after every step and return the last
//! data written, and never run out of room (a plane given more than its share of the data
//! spills blocks to another).
//!
//! - `ftl_matches_the_model_on_random_profiles`: the FTL alone against the reference model
//!   (`common/model.rs`): writes to random planes or in programs over the dies in turn, hot
//!   and cold or sequential addresses, TRIMs of runs, idle periods (idle GC, idle sorting),
//!   compressed data's companion slots; model and invariants checked after every step.
//! - `simulation_survives_random_profiles_and_workloads`: the whole simulator: workloads
//!   (read/write/TRIM mixes, block-size splits with sub-4 KiB sizes (read-modify-write),
//!   sequential and random, spans, thinktime gaps long enough for idle GC, compressible
//!   data), several jobs at once, trace replay (against a model of what each LPN holds),
//!   idle time; invariants checked every few dozen commands.
//! - `validation_rejects_drives_that_would_run_out_of_blocks`.
//!
//! Budget: a few seconds in `cargo test --release`. `SSDSIM_PROPERTY_CASES=N` runs N cases
//! per test (defaults 40 and 12); `SSDSIM_PROPERTY_SEED=S` starts at case seed S (a failure
//! prints its case seed: rerun it with that seed and N=1).

#[path = "common/model.rs"]
mod model;

use model::{run_ftl_against_model, Mix};
use ssdsim::ftl::OutOfSpace;
use ssdsim::rng::Rng;
use ssdsim::time::NS_PER_MS;
use ssdsim::{BlockSize, CmdKind, Command, Config, ConfigError, DirectionMix, Distribution, Geometry, SimError, Simulation, Workload, WorkloadJob, UNIT_BYTES};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

fn case_seeds(default_cases: u64) -> std::ops::Range<u64> {
    let first = env_u64("SSDSIM_PROPERTY_SEED", 1);
    first..first + env_u64("SSDSIM_PROPERTY_CASES", default_cases)
}

/// `lo..=hi`.
fn pick(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    assert!(lo <= hi, "{lo}..={hi}");
    lo + rng.below(hi - lo + 1)
}

fn chance(rng: &mut Rng, per_mille: u64) -> bool {
    rng.below(1000) < per_mille
}

fn set(cfg: &mut Config, key: &str, value: impl ToString) {
    cfg.set(key, &value.to_string()).unwrap_or_else(|e| panic!("{e}"));
}

/// The keys that differ from the default profile, for failure messages.
fn describe(cfg: &Config) -> String {
    let base = Config::default();
    cfg.to_pairs().into_iter().filter(|(k, v)| base.get(k).as_ref() != Some(v)).map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// A random profile that validation accepts: a small drive (at most ~12,000 slots) of one to
/// eight planes, any GC policy and watermarks, with 0..1/3 more user capacity taken off the
/// most that validation allows.
fn random_profile(rng: &mut Rng) -> Config {
    let mut cfg = Config::default();
    let (channels, dies, planes) = (pick(rng, 1, 2), pick(rng, 1, 2), pick(rng, 1, 2));
    let pools = channels * dies * planes;
    let page_units = pick(rng, 1, 4);
    let ratio = [1.0, 1.0, 1.0, 1.5, 2.0, 4.0][rng.below(6) as usize];
    let upp = ((page_units as f64) * ratio).round() as u64;
    let pages = pick(rng, 2, (64 / upp).max(2));
    let spb = pages * upp;
    let blocks = pick(rng, 6, (12_000 / (pools * spb)).clamp(6, 40));
    for (k, v) in [("channels", channels), ("dies_per_channel", dies), ("planes_per_die", planes), ("blocks_per_plane", blocks), ("pages_per_block", pages), ("page_size_bytes", page_units * UNIT_BYTES)] {
        set(&mut cfg, k, v);
    }
    set(&mut cfg, "compression_ratio", ratio);
    let policy = ["greedy", "fifo", "cost-benefit", "d-choices"][rng.below(4) as usize];
    set(&mut cfg, "gc_policy", policy);
    set(&mut cfg, "gc_d_choices", pick(rng, 1, 8.min(blocks)));
    set(&mut cfg, "gc_fg_stall", if chance(rng, 500) { "die" } else { "drive" });
    let most = blocks - 3; // a watermark + 3 <= blocks_per_plane
    let fg = pick(rng, 1, (blocks - 5).clamp(1, 4)); // at least two blocks of user data per plane
    set(&mut cfg, "gc_fg_free_blocks", fg);
    set(&mut cfg, "gc_fg_target_free_blocks", if chance(rng, 500) { 0 } else { pick(rng, fg, most) });
    if fg < most && chance(rng, 500) {
        let start = pick(rng, fg + 1, most);
        set(&mut cfg, "gc_bg_start_free_blocks", start);
        set(&mut cfg, "gc_bg_stop_free_blocks", if chance(rng, 300) { 0 } else { pick(rng, start, most) });
        set(&mut cfg, "gc_bg_copies_per_write", 0.1 + rng.unit_f64() * 10.0);
        set(&mut cfg, "gc_bg_reclaim_ratio", if chance(rng, 500) { 0.0 } else { 0.2 + rng.unit_f64() * 2.0 });
    }
    if chance(rng, 700) {
        set(&mut cfg, "gc_idle_free_blocks", pick(rng, 1, most));
        set(&mut cfg, "gc_idle_delay_ms", rng.unit_f64() * 3.0);
    }
    set(&mut cfg, "write_buffer_bytes", planes * upp * UNIT_BYTES * pick(rng, 1, 6));
    set(&mut cfg, "trim_cmd_us", rng.unit_f64() * 20.0);
    // Most of the time close to the largest user capacity validation allows.
    set(&mut cfg, "user_capacity_bytes", UNIT_BYTES);
    let max_user = cfg.validate().unwrap_or_else(|e| panic!("{e}: {}", describe(&cfg))).max_user_units;
    let user = match rng.below(4) {
        0 => max_user,
        1 => max_user / 2 + rng.below(max_user / 2),
        _ => max_user - rng.below(max_user / 8 + 1),
    }
    .max(1);
    set(&mut cfg, "user_capacity_bytes", user * UNIT_BYTES);
    let most_regions = (pools * blocks / 8).min(16);
    if cfg.gc_idle_free_blocks != 0 && most_regions >= 1 && chance(rng, 500) {
        set(&mut cfg, "gc_idle_sort_regions", pick(rng, 1, most_regions));
    }
    if chance(rng, 400) {
        // A pseudo-SLC cache: folding moves no mapped data, but changes what every program costs.
        set(&mut cfg, "cell_bits", pick(rng, 2, 4));
        // At most the static part the NAND holds beside the user capacity.
        let most_static = cfg.validate().unwrap_or_else(|e| panic!("{e}: {}", describe(&cfg))).slc_static_max_units;
        set(&mut cfg, "slc_static_bytes", rng.below((user / 4).min(most_static) + 1) * UNIT_BYTES);
        set(&mut cfg, "slc_dynamic_max_bytes", rng.below(user / 2 + 1) * UNIT_BYTES);
        set(&mut cfg, "slc_when_full", if chance(rng, 500) { "direct" } else { "fold" });
        set(&mut cfg, "slc_fold_start_pct", rng.unit_f64() * 100.0);
        set(&mut cfg, "slc_fold_units_per_write", if chance(rng, 500) { 0.0 } else { rng.unit_f64() * 3.0 });
        set(&mut cfg, "slc_idle_fold", rng.below(2));
        set(&mut cfg, "slc_dynamic_t_prog_us", rng.unit_f64() * 500.0);
    }
    // A pseudo-SLC cache's static blocks leave fewer blocks for idle sorting's regions.
    if cfg.validate().is_err_and(|e| e.key == "gc_idle_sort_regions") {
        set(&mut cfg, "gc_idle_sort_regions", 0);
    }
    cfg.validate().unwrap_or_else(|e| panic!("the generator made an invalid profile: {e}: {}", describe(&cfg)));
    cfg
}

/// A valid profile never runs out of room: every plane holding no more than its share of
/// the user capacity leaves GC a block with invalid data, and a plane holding more moves a
/// block to the plane holding the least (`Ftl::spill`), which then holds less than its share.
fn out_of_space_is_a_bug(e: &ConfigError, oos: &OutOfSpace, what: &str) -> ! {
    panic!("{what}: a valid profile ran out of room in plane {} holding {} units (bound {}): {e}", oos.plane, oos.valid_units, oos.plane_limit_units)
}

fn random_mix(rng: &mut Rng, geo: &Geometry) -> Mix {
    let companions = if geo.compression_ratio() > 1.0 && chance(rng, 500) { pick(rng, 1, 2) } else { 0 };
    // Compressed data must fit (as the workloads' buffer_compress_pct check asks).
    let companions = if geo.user_units * (1 + companions) <= geo.max_user_units { companions } else { 0 };
    Mix {
        write: pick(rng, 400, 900),
        idle: if chance(rng, 300) { 0 } else { pick(rng, 1, 40) },
        trim: if chance(rng, 300) { 0 } else { pick(rng, 1, 200) },
        hot_draws: rng.below(1001),
        hot_fraction: 0.02 + rng.unit_f64() * 0.5,
        sequential: if chance(rng, 500) { 0 } else { rng.below(1001) },
        round_robin: chance(rng, 500),
        trim_units: pick(rng, 1, 64),
        idle_target: pick(rng, 1, geo.blocks_per_pool as u64 - 3) as usize,
        idle_victims: pick(rng, 1, 40) as usize,
        close_streams: rng.below(1001),
        companions,
        companion_writes: rng.below(1001),
    }
}

#[test]
fn ftl_matches_the_model_on_random_profiles() {
    let (mut cases, mut gc_runs) = (0, 0);
    for seed in case_seeds(40) {
        let mut rng = Rng::new(seed ^ 0x70726f70);
        let cfg = random_profile(&mut rng);
        let geo = cfg.validate().unwrap();
        let mix = random_mix(&mut rng, &geo);
        let steps = pick(&mut rng, 1_000, 6_000);
        let what = format!("case seed {seed} (profile: {}; {mix:?})", describe(&cfg));
        let run = run_ftl_against_model(&cfg, steps, seed, &mix).unwrap_or_else(|e| panic!("{what}: {e}"));
        if let Some((e, oos)) = &run.out_of_space {
            out_of_space_is_a_bug(e, oos, &what);
        }
        cases += 1;
        gc_runs += run.gc_runs;
    }
    eprintln!("{cases} cases, {gc_runs} GC victims");
    assert!(gc_runs > cases * 20, "the cases must exercise GC: {gc_runs} victims in {cases} cases");
}

fn random_mix_of(rng: &mut Rng, max_bs: u64) -> DirectionMix {
    let size = |rng: &mut Rng| match rng.below(4) {
        0 => UNIT_BYTES,
        1 => UNIT_BYTES * pick(rng, 2, 16),
        2 => 512 * pick(rng, 1, 40), // sub-4 KiB or unaligned: read-modify-write
        _ => UNIT_BYTES * pick(rng, 1, 4),
    }
    .min(max_bs);
    let bssplit = (0..pick(rng, 1, 3)).map(|_| BlockSize { bs_bytes: size(rng), weight: pick(rng, 1, 10) as u32 }).collect();
    DirectionMix { bssplit, random_fraction: [0.0, 1.0, rng.unit_f64()][rng.below(3) as usize], rate_iops: 0.0, ba_bytes: None }
}

fn random_workload(rng: &mut Rng, geo: &Geometry) -> Workload {
    let user_bytes = geo.user_units * UNIT_BYTES;
    let offset_bytes = if chance(rng, 600) { 0 } else { rng.below(geo.user_units / 2) * UNIT_BYTES };
    let span = if chance(rng, 500) { None } else { Some(pick(rng, 1, geo.user_units - offset_bytes / UNIT_BYTES) * UNIT_BYTES) };
    let max_bs = span.unwrap_or(user_bytes - offset_bytes).min(64 * UNIT_BYTES);
    let read_fraction = if chance(rng, 400) { 0.0 } else { rng.unit_f64() * 0.6 };
    let trim_fraction = if chance(rng, 500) { 0.0 } else { rng.unit_f64() * 0.3 };
    let thinking = chance(rng, 400);
    Workload {
        read_fraction,
        trim_fraction,
        read: random_mix_of(rng, max_bs),
        write: random_mix_of(rng, max_bs),
        trim: random_mix_of(rng, max_bs),
        distribution: if chance(rng, 300) { Distribution::Zipf { theta: 1.2, center_fraction: None } } else { Distribution::Uniform },
        qd: pick(rng, 1, 32) as u32,
        offset_bytes,
        span_bytes: span,
        number_ios: Some(pick(rng, 100, 3_000)),
        thinktime_ns: if thinking { pick(rng, 1, 8) * NS_PER_MS } else { 0 },
        thinktime_blocks: if thinking { pick(rng, 1, 200) } else { 0 },
        buffer_compress_pct: if geo.compression_ratio() > 1.0 && chance(rng, 500) { Some(rng.below(101) as u32) } else { None },
        ..Workload::default()
    }
}

/// Checks the drive after a step; Err(()) once it has run out of room (checked: the run
/// should stop).
fn check_sim(sim: &Simulation, what: &str) -> Result<(), ()> {
    let ftl = sim.device().ftl();
    ftl.check_invariants().unwrap_or_else(|e| panic!("{what}: invariant broken: {e}"));
    match sim.check_space() {
        Ok(()) => Ok(()),
        Err(SimError::DriveFull(e)) => out_of_space_is_a_bug(&e, ftl.out_of_space().expect("details of the failure"), what),
        Err(e) => panic!("{what}: check_space: {e}"),
    }
}

/// Runs the started phase in steps of a few dozen commands, checking the drive after each.
fn run_phase_checked(sim: &mut Simulation, rng: &mut Rng, what: &str) -> Result<(), ()> {
    loop {
        let p = sim.advance(pick(rng, 1, 64));
        if check_sim(sim, what).is_err() {
            sim.finish_phase();
            return Err(());
        }
        if p.done {
            sim.finish_phase();
            return check_sim(sim, what);
        }
    }
}

/// A replay of random commands in chunks, against a model of each LPN: after each chunk
/// an LPN last written in it holds newer data than before, one last trimmed in it is
/// unmapped, and the others hold what they held.
fn replay_checked(sim: &mut Simulation, rng: &mut Rng, geo: &Geometry, what: &str) -> Result<(), ()> {
    let pct = if geo.compression_ratio() > 1.0 && chance(rng, 500) { Some(rng.below(101) as u32) } else { None };
    let pct = if sim.start_replay_compressed(pick(rng, 1, 32) as u32, pick(rng, 1, 100), NS_PER_MS * 10, pct).is_ok() { pct } else { None };
    if pct.is_none() && !sim.replay_running() {
        sim.start_replay(pick(rng, 1, 32) as u32, pick(rng, 1, 100)).unwrap();
    }
    let user = geo.user_units;
    let (hot, seq_share) = (pick(rng, 1, user), rng.below(1001));
    let mut next = 0;
    let payloads = |sim: &Simulation| (0..user).map(|l| sim.device().ftl().read_payload(l)).collect::<Vec<_>>();
    let mut before = payloads(sim);
    let mut result = Ok(());
    for _ in 0..pick(rng, 1, 6) {
        let mut cmds = Vec::new();
        let mut last: Vec<Option<CmdKind>> = vec![None; user as usize];
        for _ in 0..pick(rng, 20, 400) {
            let units = pick(rng, 1, 16.min(user));
            let unit = if chance(rng, seq_share) { next } else { rng.below(hot) }.min(user - units);
            next = (unit + units) % (user - units + 1);
            let kind = [CmdKind::Write, CmdKind::Write, CmdKind::Write, CmdKind::Trim, CmdKind::Read, CmdKind::Flush][rng.below(6) as usize];
            let (unit, units) = if kind == CmdKind::Flush { (0, 0) } else { (unit, units) };
            if matches!(kind, CmdKind::Write | CmdKind::Trim) {
                last[unit as usize..(unit + units) as usize].iter_mut().for_each(|k| *k = Some(kind));
            }
            cmds.push(Command { kind, unit, units });
        }
        let replayed = sim.replay(&cmds);
        if check_sim(sim, what).is_err() {
            assert!(replayed.unwrap_err().to_string().contains("user_capacity_bytes"), "{what}");
            result = Err(());
            break;
        }
        replayed.unwrap_or_else(|e| panic!("{what}: {e}"));
        let after = payloads(sim);
        for lpn in 0..user as usize {
            let ok = match last[lpn] {
                Some(CmdKind::Write) => after[lpn].is_some() && after[lpn] > before[lpn],
                Some(_) => after[lpn].is_none(),
                None => after[lpn] == before[lpn],
            };
            assert!(ok, "{what}: replay: LPN {lpn} held {:?}, holds {:?} after a chunk whose last command on it was {:?}", before[lpn], after[lpn], last[lpn]);
        }
        before = after;
    }
    sim.finish_replay();
    result.and_then(|()| check_sim(sim, what))
}

#[test]
fn simulation_survives_random_profiles_and_workloads() {
    let (mut cases, mut phases, mut out_of_space) = (0, 0, 0);
    for seed in case_seeds(12) {
        let mut rng = Rng::new(seed ^ 0x73696d);
        let cfg = random_profile(&mut rng);
        let geo = cfg.validate().unwrap();
        let mut sim = Simulation::with_payload_tracking(&cfg, seed, true).unwrap();
        cases += 1;
        for phase in 0..pick(&mut rng, 2, 6) {
            let what = format!("case seed {seed}, phase {phase} (profile: {})", describe(&cfg));
            let outcome = match rng.below(6) {
                0 | 1 => {
                    let w = random_workload(&mut rng, &geo);
                    match sim.start_workload(&w) {
                        Ok(()) => run_phase_checked(&mut sim, &mut rng, &format!("{what}, workload {w:?}")),
                        Err(e) => {
                            // Only data too incompressible for the drive's spare area is refused.
                            assert_eq!(e.workload().map(|w| &w.field[..]), Some("buffer_compress_pct"), "{what}: {e}");
                            Ok(())
                        }
                    }
                }
                2 => {
                    let jobs: Vec<WorkloadJob> = (0..pick(&mut rng, 2, 3))
                        .map(|i| WorkloadJob { flow: None, exit_stops: Vec::new(), name: format!("job{i}"), startdelay_ns: rng.below(3) * NS_PER_MS, workload: random_workload(&mut rng, &geo) })
                        .collect();
                    match sim.start_jobs(&jobs, NS_PER_MS * 10) {
                        Ok(()) => run_phase_checked(&mut sim, &mut rng, &format!("{what}, jobs {jobs:?}")),
                        Err(e) => {
                            assert!(e.workload().is_some_and(|w| w.field.ends_with("buffer_compress_pct")), "{what}: {e}");
                            Ok(())
                        }
                    }
                }
                3 => replay_checked(&mut sim, &mut rng, &geo, &format!("{what}, replay")),
                4 => {
                    sim.idle(rng.below(60) * NS_PER_MS).unwrap();
                    check_sim(&sim, &format!("{what}, idle"))
                }
                _ => {
                    // A full sequential pass then random overwrites: the steady state.
                    let fill = Workload { write: DirectionMix { random_fraction: 0.0, ..DirectionMix::default() }, number_ios: Some(geo.user_units), ..Workload::default() };
                    sim.start_workload(&fill).unwrap();
                    run_phase_checked(&mut sim, &mut rng, &format!("{what}, fill"))
                }
            };
            phases += 1;
            if outcome.is_err() {
                out_of_space += 1;
                // The simulator API reports it from then on.
                assert!(sim.run_workload(&Workload::default()).unwrap_err().to_string().contains("user_capacity_bytes"));
                break;
            }
        }
    }
    eprintln!("{cases} cases, {phases} phases, {out_of_space} ran out of room (data piled up in one plane)");
}

/// Validation refuses what would leave a plane without the blocks GC relies on, naming the
/// key to change.
#[test]
fn validation_rejects_drives_that_would_run_out_of_blocks() {
    let reject = |pairs: &[(&str, &str)]| {
        let mut cfg = Config::default();
        for (k, v) in [("blocks_per_plane", "16"), ("pages_per_block", "8"), ("user_capacity_bytes", "4096")] {
            set(&mut cfg, k, v);
        }
        for (k, v) in pairs {
            set(&mut cfg, k, v);
        }
        cfg.validate().expect_err(&format!("{pairs:?} accepted"))
    };
    let geo = {
        let mut cfg = Config::default();
        for (k, v) in [("blocks_per_plane", "16"), ("pages_per_block", "8"), ("user_capacity_bytes", "4096")] {
            set(&mut cfg, k, v);
        }
        cfg.validate().unwrap()
    };
    // User capacity beyond (blocks_per_plane − gc_fg_free_blocks − 3) blocks per plane.
    let most = geo.max_user_units;
    assert_eq!(most, (geo.pools * (16 - 2 - 3) * geo.slots_per_block) as u64);
    let e = reject(&[("user_capacity_bytes", &((most + 1) * UNIT_BYTES).to_string())]);
    assert_eq!(e.key, "user_capacity_bytes");
    assert!(e.to_string().contains("profile key `user_capacity_bytes`") && e.to_string().contains("spare"), "{e}");
    // A larger foreground reserve leaves less room for user data.
    let e = reject(&[("gc_fg_free_blocks", "5"), ("user_capacity_bytes", &(most * UNIT_BYTES).to_string())]);
    assert_eq!(e.key, "user_capacity_bytes", "{e}");
    // Reserves that leave a plane no block for the host, GC and an active-GC victim.
    assert_eq!(reject(&[("gc_fg_free_blocks", "14")]).key, "gc_fg_free_blocks");
    assert_eq!(reject(&[("gc_fg_free_blocks", "0")]).key, "gc_fg_free_blocks");
    assert_eq!(reject(&[("gc_fg_target_free_blocks", "14")]).key, "gc_fg_target_free_blocks");
    assert_eq!(reject(&[("gc_bg_start_free_blocks", "5"), ("gc_bg_stop_free_blocks", "14")]).key, "gc_bg_stop_free_blocks");
    assert_eq!(reject(&[("gc_idle_free_blocks", "14")]).key, "gc_idle_free_blocks");
    // Active GC starting at or below the foreground reserve would take its blocks.
    assert_eq!(reject(&[("gc_bg_start_free_blocks", "2")]).key, "gc_bg_start_free_blocks");
    // Too many sorting regions, each holding an open block.
    assert_eq!(reject(&[("gc_idle_free_blocks", "4"), ("gc_idle_sort_regions", "100")]).key, "gc_idle_sort_regions");
    // Data less compressible than the profile's ratio must fit too (a workload key).
    let mut cfg = Config::default();
    for (k, v) in [("blocks_per_plane", "16"), ("pages_per_block", "8"), ("compression_ratio", "2")] {
        set(&mut cfg, k, v);
    }
    set(&mut cfg, "user_capacity_bytes", UNIT_BYTES);
    let most = cfg.validate().unwrap().max_user_units;
    set(&mut cfg, "user_capacity_bytes", (most * UNIT_BYTES * 2 / 3) / UNIT_BYTES * UNIT_BYTES);
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    let e = sim.start_workload(&Workload { buffer_compress_pct: Some(0), ..Workload::default() }).unwrap_err();
    assert_eq!(e.workload().unwrap().field, "buffer_compress_pct");
}

/// Writes that pile every LPN's data into one plane (plane 0 takes each LPN once, plane 1
/// the rewrites of one LPN) on a drive at its largest user capacity: plane 0 cannot hold
/// them, so GC moves its blocks to plane 1 (`Ftl::spill`); the drive takes every write and
/// every LPN reads back its data, whatever the victim policy.
#[test]
fn a_plane_given_more_than_its_share_spills_to_another() {
    for policy in ["greedy", "fifo", "cost-benefit", "d-choices"] {
        let mut cfg = Config::default();
        for (k, v) in [("channels", "1"), ("dies_per_channel", "1"), ("planes_per_die", "2"), ("blocks_per_plane", "16"), ("pages_per_block", "8"), ("page_size_bytes", "8192"), ("gc_policy", policy)] {
            set(&mut cfg, k, v);
        }
        set(&mut cfg, "user_capacity_bytes", UNIT_BYTES);
        let most = cfg.validate().unwrap().max_user_units;
        set(&mut cfg, "user_capacity_bytes", most * UNIT_BYTES);
        let geo = cfg.validate().unwrap();
        let mut ftl = ssdsim::ftl::Ftl::new(&geo, true);
        let last = geo.user_units - 1;
        for lpn in 0..last {
            assert_ne!(ftl.write(lpn, 0, lpn + 1), ssdsim::ftl::NONE, "{policy}: write of LPN {lpn} dropped");
            for k in 0..3 {
                assert_ne!(ftl.write(last, 1, 1_000_000 + lpn * 3 + k), ssdsim::ftl::NONE, "{policy}: rewrite dropped");
            }
            ftl.check_invariants().unwrap_or_else(|e| panic!("{policy}: after LPN {lpn}: {e}"));
        }
        ftl.check_space().unwrap_or_else(|e| panic!("{policy}: {e}"));
        assert!(ftl.counters().spilled_blocks > 0, "{policy}: plane 0 held every LPN without spilling");
        for lpn in 0..last {
            assert_eq!(ftl.read_payload(lpn), Some(lpn + 1), "{policy}: LPN {lpn}");
        }
        assert_eq!(ftl.read_payload(last), Some(1_000_000 + (last - 1) * 3 + 2), "{policy}: the rewritten LPN");
    }
}
