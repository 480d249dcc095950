//! Golden fingerprints: performance work must not change a single simulated number.
//!
//! Each scenario runs a small drive through a consistency-style sequence (sequential fill,
//! random writes in steady state with GC running, a timed random-write phase, an idle
//! period, reads, TRIMs, a seeded trace replay with writes/TRIMs/reads/flushes, and a last
//! random-write phase) and folds everything observable into one u64: per-interval IOs and
//! bytes, every counter snapshot, latency quantiles (a fine grid, so effectively the whole
//! histogram), progress reports, replay windows and counts, FTL and timing counters, the
//! final L2P mapping of every logical unit and the erase count of every block.
//!
//! The expected hashes below were recorded from the simulator *before* the speed work of
//! issue 7 and pin its behaviour: an optimisation is only acceptable if it is exact (same
//! seed → bit-identical series, counters, latencies and GC decisions). If a hash changes,
//! the change altered simulated results; that is a model change, not an optimisation, and
//! must be made (and the constants re-recorded) deliberately. `GOLDEN_PRINT=1 cargo test
//! --release -p ssdsim --test golden -- --nocapture` prints the current hashes.
//!
//! Scenarios cover every GC policy and trigger used by the built-in profiles (`default`:
//! active GC with reclaim ratio + idle GC; `active-gc`: fixed-rate active GC, 8 channels;
//! `cleanup-later`: drive-scope foreground stalls; `stalling`: 400 copies per write;
//! `recovery`: foreground + idle GC only; idle targets scaled to the small drive; and
//! `recovery-sorted`, the same with idle GC sorting by LBA region, recorded when that was
//! added), the plain
//! foreground-greedy configuration of the steady-state benchmark, foreground batching
//! (`gc_fg_target_free_blocks`), compression, the other victim policies (fifo, cost-benefit,
//! d-choices), and active GC held back by the foreground reserve (`active-gc-reserve`).
//! Blocks are 16 pages here (64 slots); the same scenarios with the profiles' 256-page
//! blocks were also checked identical before/after when the fingerprints were recorded.

use ssdsim::rng::Rng;
use ssdsim::time::{NS_PER_MS, NS_PER_S};
use ssdsim::{CmdKind, Command, Config, Job, Pattern, PhaseReport, Simulation, Snapshot};

mod common;

/// FNV-1a over u64 words, with a final avalanche (splitmix64 finaliser).
struct Hasher(u64);

impl Hasher {
    fn new() -> Self {
        Hasher(0xcbf2_9ce4_8422_2325)
    }
    fn u(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn f(&mut self, v: f64) {
        self.u(v.to_bits());
    }
    fn snap(&mut self, s: &Snapshot) {
        for v in [s.host_units, s.nand_units, s.gc_units, s.erases, s.free_blocks, s.gc_die_ns] {
            self.u(v);
        }
    }
    fn latency(&mut self, l: &ssdsim::stats::LatencyHistogram) {
        self.u(l.count());
        self.u(l.max_ns());
        for i in 0..=1000 {
            self.u(l.quantile_ns(i as f64 / 1000.0).unwrap_or(u64::MAX));
        }
        for q in [0.9999, 0.99999, 0.999999] {
            self.u(l.quantile_ns(q).unwrap_or(u64::MAX));
        }
    }
    fn report(&mut self, r: &PhaseReport) {
        for v in [r.start_ns, r.duration_ns, r.interval_ns, r.total_ios, r.host_write_bytes, r.host_read_bytes, r.complete as u64] {
            self.u(v);
        }
        self.u(r.ios.len() as u64);
        r.ios.iter().for_each(|&v| self.u(v));
        self.u(r.bytes.len() as u64);
        r.bytes.iter().for_each(|&v| self.u(v));
        self.u(r.snapshots.len() as u64);
        r.snapshots.iter().for_each(|s| self.snap(s));
        self.latency(&r.latency);
    }
    fn sim(&mut self, sim: &Simulation) {
        self.u(sim.now_ns());
        self.snap(&sim.snapshot());
        let c = sim.ftl_counters();
        for v in [c.host_units, c.gc_units, c.erases, c.trimmed_units, c.gc_runs] {
            self.u(v);
        }
        let t = sim.timing_counters();
        for v in [t.gc_die_ns, t.host_prog_die_ns, t.host_programs] {
            self.u(v);
        }
    }
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A small drive: the profile's keys, with few blocks per plane and short blocks so a run
/// takes well under a second, and ~7 % spare area like the real profiles.
fn drive(keys: &[(&str, &str)]) -> Config {
    let mut cfg = Config::default();
    cfg.set("blocks_per_plane", "128").unwrap();
    cfg.set("pages_per_block", "16").unwrap();
    for (k, v) in keys {
        cfg.set(k, v).unwrap();
    }
    // User capacity: 93 % of the NAND, 4 KiB aligned.
    let geo = {
        let mut c = cfg.clone();
        c.set("user_capacity_bytes", "4096").unwrap();
        c.set("gc_idle_sort_regions", "0").unwrap();
        c.validate().unwrap()
    };
    let user_units = geo.physical_units * 93 / 100;
    cfg.set("user_capacity_bytes", &(user_units * 4096).to_string()).unwrap();
    cfg
}

/// Runs the whole sequence on `cfg` with `seed` and returns its fingerprint and a one-line
/// summary (to check that the scenario really exercises GC: WA, idle-GC victims...).
fn fingerprint(cfg: &Config, seed: u64) -> (u64, String) {
    let mut h = Hasher::new();
    let mut summary = String::new();
    let mut sim = Simulation::new(cfg, seed).unwrap();
    let user = sim.geometry().user_units;

    // Fill, sequential 128 KiB at QD32.
    let fill = sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    h.report(&fill);
    h.sim(&sim);

    // Random 4 KiB writes, twice the user capacity (steady state, GC running), advanced in
    // odd-sized chunks with their progress reports, 100 ms intervals.
    let mut rw = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    rw.io_units = Some(2 * user);
    rw.interval_ns = 100 * NS_PER_MS;
    sim.start_phase(rw).unwrap();
    loop {
        let p = sim.advance(7777);
        h.u(p.done as u64);
        h.u(p.elapsed_ns);
        h.u(p.units);
        h.f(p.fraction);
        if p.done {
            break;
        }
    }
    let r = sim.finish_phase();
    h.report(&r);
    h.sim(&sim);
    let (a, b) = (r.snapshots[0], *r.snapshots.last().unwrap());
    let zero = r.ios.iter().filter(|&&n| n == 0).count();
    summary += &format!(
        "rand WA {:.2}, {} GC runs, {} of {} intervals at 0 IOPS",
        (b.nand_units - a.nand_units) as f64 / (b.host_units - a.host_units) as f64,
        sim.ftl_counters().gc_runs,
        zero,
        r.ios.len()
    );

    // A timed phase: 8 KiB random writes over half the drive for 3 s.
    let mut tw = Job::new(Pattern::RandWrite, 2, 32, user / 4, user / 2);
    tw.duration_ns = Some(3 * NS_PER_S);
    h.report(&sim.run(tw).unwrap());
    h.sim(&sim);

    // Idle (idle GC where the profile has it).
    let idle = sim.idle(5 * NS_PER_S).unwrap();
    h.u(idle);
    h.sim(&sim);
    summary += &format!("; idle GC {idle} victims");

    // Reads: random 4 KiB at QD32 for 0.5 s, then a sequential pass over a tenth.
    let mut rr = Job::new(Pattern::RandRead, 1, 32, 0, user);
    rr.duration_ns = Some(NS_PER_S / 2);
    h.report(&sim.run(rr).unwrap());
    h.report(&sim.run(Job::new(Pattern::SeqRead, 16, 8, 0, user / 10)).unwrap());

    // TRIM of a tenth of the drive, then a short burst of writes and an idle gap.
    h.report(&sim.run(Job::new(Pattern::Trim, 64, 4, user / 2, user / 10)).unwrap());
    let mut bw = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    bw.io_units = Some(user / 4);
    h.report(&sim.run(bw).unwrap());
    let idle = sim.idle(1500 * NS_PER_MS).unwrap();
    h.u(idle);
    h.sim(&sim);
    summary += &format!(" + {idle}");

    // Trace replay: a seeded mix of writes, TRIMs, reads and flushes at QD16, in chunks.
    let mut rng = Rng::new(seed ^ 0x7265_706c_6179);
    let cmds: Vec<Command> = (0..user)
        .map(|_| {
            let units = 1 + rng.below(8);
            let unit = rng.below(user - units);
            match rng.below(100) {
                0..=74 => Command { kind: CmdKind::Write, unit, units },
                75..=84 => Command { kind: CmdKind::Trim, unit, units },
                85..=97 => Command { kind: CmdKind::Read, unit, units },
                _ => Command { kind: CmdKind::Flush, unit: 0, units: 0 },
            }
        })
        .collect();
    sim.start_replay(16, 4096).unwrap();
    for chunk in cmds.chunks(3001) {
        sim.replay(chunk).unwrap();
        let (done, t) = sim.replay_progress();
        h.u(done);
        h.u(t);
    }
    let rep = sim.finish_replay();
    for v in [rep.start_ns, rep.duration_ns, rep.window_commands, rep.windows.len() as u64] {
        h.u(v);
    }
    for w in &rep.windows {
        h.u(w.commands);
        h.u(w.end_ns);
        h.u(w.data_bytes);
        h.snap(&w.snapshot);
    }
    h.snap(&rep.start_snapshot);
    let c = rep.counts;
    for v in [c.reads, c.writes, c.trims, c.flushes, c.read_bytes, c.write_bytes, c.trim_bytes] {
        h.u(v);
    }
    h.latency(&rep.latency);
    h.sim(&sim);
    let (a, b) = (rep.start_snapshot, sim.snapshot());
    summary += &format!("; replay {} windows, {} GC units", rep.windows.len(), b.gc_units - a.gc_units);

    // Steady-state random writes again, 1 s intervals, after the replay.
    let mut rw2 = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    rw2.duration_ns = Some(4 * NS_PER_S);
    h.report(&sim.run(rw2).unwrap());
    h.sim(&sim);

    // Where everything is: every logical unit's slot and every block's erase count.
    let ftl = sim.device().ftl();
    ftl.check_invariants().unwrap();
    for u in 0..user {
        h.u(ftl.lookup(u).map_or(u64::MAX, u64::from));
    }
    ftl.erase_counts().for_each(|e| h.u(e as u64));
    (h.finish(), summary)
}

/// The die allocation of the profiles modelled on drives of the seeds' generation.
const STRIPED: &[(&str, &str)] = &[("die_allocation", "striped")];

/// (name, profile keys on top of the simulator's defaults, seed).
type Scenario = (&'static str, Vec<(&'static str, &'static str)>, u64);

fn scenarios() -> Vec<Scenario> {
    let default = [common::DEFAULT_PROFILE_GC, &[("write_buffer_bytes", "16777216")]].concat();
    let recovery = vec![
        ("die_allocation", "striped"),
        ("gc_policy", "greedy"),
        ("gc_fg_free_blocks", "2"),
        ("gc_idle_delay_ms", "1000.0"),
        ("gc_idle_free_blocks", "24"),
        ("t_prog_us", "1500.0"),
    ];
    vec![
        // The steady-state benchmark's configuration: greedy, foreground GC only.
        ("bench-foreground-greedy", vec![], 1),
        ("default", [default.as_slice(), STRIPED].concat(), 2),
        (
            "active-gc",
            vec![
                ("die_allocation", "earliest"),
                ("channels", "8"),
                ("dies_per_channel", "4"),
                ("planes_per_die", "2"),
                ("gc_policy", "greedy"),
                ("gc_fg_free_blocks", "2"),
                ("gc_bg_start_free_blocks", "4"),
                ("gc_bg_stop_free_blocks", "5"),
                ("gc_bg_copies_per_write", "5.0"),
                ("gc_idle_free_blocks", "16"),
                ("gc_idle_delay_ms", "500.0"),
                ("t_prog_us", "900.0"),
            ],
            3,
        ),
        (
            "cleanup-later",
            vec![
                ("die_allocation", "striped"),
                ("gc_policy", "greedy"),
                ("gc_fg_free_blocks", "2"),
                ("gc_fg_stall", "drive"),
                ("gc_bg_start_free_blocks", "4"),
                ("gc_bg_stop_free_blocks", "5"),
                ("gc_bg_reclaim_ratio", "1.5"),
                ("gc_bg_copies_per_write", "5.5"),
                ("gc_idle_free_blocks", "32"),
            ],
            4,
        ),
        (
            "stalling",
            vec![
                ("die_allocation", "striped"),
                ("gc_policy", "greedy"),
                ("gc_fg_free_blocks", "2"),
                ("gc_bg_start_free_blocks", "3"),
                ("gc_bg_stop_free_blocks", "4"),
                ("gc_bg_copies_per_write", "400.0"),
                ("t_prog_us", "900.0"),
            ],
            5,
        ),
        ("recovery", recovery.clone(), 6),
        // The recovery profile with idle GC sorting by LBA region (added with that feature,
        // after the issue-7 recording: pins its behaviour from then on).
        ("recovery-sorted", [recovery.as_slice(), &[("gc_idle_sort_regions", "16")]].concat(), 16),
        // Foreground batching to a higher target, drive-scope stall, small buffer.
        ("fg-batch-drive-stall", vec![("gc_fg_target_free_blocks", "6"), ("gc_fg_stall", "drive"), ("write_buffer_bytes", "1MiB")], 7),
        ("compression", vec![("compression_ratio", "1.5"), ("gc_idle_free_blocks", "8")], 8),
        ("fifo-active", [default.as_slice(), &[("gc_policy", "fifo")]].concat(), 9),
        ("cost-benefit-active", [default.as_slice(), &[("gc_policy", "cost-benefit")]].concat(), 10),
        ("d-choices-active", [default.as_slice(), &[("gc_policy", "d-choices"), ("gc_d_choices", "4")]].concat(), 11),
        ("fifo-foreground", vec![("gc_policy", "fifo"), ("gc_idle_free_blocks", "8")], 12),
        ("cost-benefit-foreground", vec![("gc_policy", "cost-benefit")], 13),
        ("d-choices-foreground", vec![("gc_policy", "d-choices")], 14),
        // Active GC that falls behind down to the last free block (which it must leave to
        // foreground GC), with a single-block foreground reserve.
        (
            "active-gc-reserve",
            vec![("gc_fg_free_blocks", "1"), ("gc_bg_start_free_blocks", "2"), ("gc_bg_stop_free_blocks", "3"), ("gc_bg_copies_per_write", "2.5")],
            15,
        ),
    ]
}

/// Recorded from the code before the issue-7 speed work (see the module doc), `recovery-sorted`
/// when idle sorting was added; all re-recorded since for the model changes noted below.
const EXPECTED: &[(&str, u64)] = &[
    // All re-recorded when a program's data began to cross its channel once its die is free,
    // in the earliest idle stretch, instead of after every transfer booked before it (a die's
    // GC no longer idles the other dies of its channel), cost-benefit's age began to count
    // its plane's host writes, the first read began to go before work a phase of writes had
    // booked, and host data went to the dies in turn (`die_allocation = "striped"`, the new
    // default) but in `active-gc` (`earliest`, as its profile). Re-recorded again when the
    // snapshots' host, NAND, GC-copy and erase counts began to count work when the host's
    // writes complete and the dies carry it out: with those four left out of the hash, every
    // scenario hashed the same before and after.
    ("bench-foreground-greedy", 0xaf9048707831700d),
    ("default", 0xca5f49535936e8ac),
    ("active-gc", 0xa45c71fa9cc8427e),
    ("cleanup-later", 0xd5c0a87cc294960a),
    ("stalling", 0x85c00118cac55116),
    ("recovery", 0xc5d2ab83c2d9e10e),
    ("recovery-sorted", 0x21ebaa6ba3598ee8),
    ("fg-batch-drive-stall", 0x27baa2778cf34d2d),
    ("compression", 0x4133fd4d90a13845),
    ("fifo-active", 0xdfaa99abf3c48f33),
    ("cost-benefit-active", 0x3bd0ff977dda4a98),
    ("d-choices-active", 0x5970bacacaedd390),
    ("fifo-foreground", 0x19f4ae3790de506d),
    ("cost-benefit-foreground", 0xfc665726510aa255),
    ("d-choices-foreground", 0x943b7decf7c3d1d3),
    ("active-gc-reserve", 0xade080269d80721c),
];

#[test]
fn simulated_results_are_bit_identical_to_the_recorded_fingerprints() {
    let print = std::env::var_os("GOLDEN_PRINT").is_some();
    let mut got = Vec::new();
    for (name, keys, seed) in scenarios() {
        let (h, summary) = fingerprint(&drive(&keys), seed);
        if print {
            println!("{name}: {summary}");
        }
        got.push((name, h));
    }
    if print {
        for (name, h) in &got {
            println!("    ({name:?}, 0x{h:016x}),");
        }
    }
    let mut bad = Vec::new();
    for (name, h) in &got {
        match EXPECTED.iter().find(|(n, _)| n == name) {
            Some((_, e)) if e == h => {}
            Some((_, e)) => bad.push(format!("{name}: got 0x{h:016x}, expected 0x{e:016x}")),
            None => bad.push(format!("{name}: got 0x{h:016x}, no recorded value")),
        }
    }
    assert!(bad.is_empty(), "simulated results changed:\n{}", bad.join("\n"));
}

/// The fingerprint is sensitive: another seed gives another hash.
#[test]
fn fingerprint_depends_on_the_seed() {
    let cfg = drive(&[]);
    assert_ne!(fingerprint(&cfg, 1).0, fingerprint(&cfg, 2).0);
}
