//! Trace-replay speed: commands per wall-clock (and CPU) second for the JEDEC-client-like
//! TRIM trace test (`ssdlab trace run jedec-like`) on the built-in default 256 GB drive,
//! the Rust part only (no Python, no chunk conversion).
//!
//! Purge, sequential fill (128 KiB, QD32, as the test does), then one pass of the
//! generated trace (75 % random / 25 % sequential writes, flushes, TRIMs freeing 13 % of the
//! span), mapped as `ssdlab trace run` maps it, in chunks of 2^20 records, replayed at the
//! queue depth with IOPS windows of 100,000 commands.
//!
//! `cargo bench -p ssdsim --bench replay [-- --write-gb 200 --qd 32 --no-trim --threads 2]`
//! (defaults: 200 GB written, a quarter of the test's 800 GB pass; QD32; with TRIM; one
//! thread). `--threads 2`: the replay may run on two threads ([`Simulation::set_threads`]);
//! CPU time is then both threads'.
//!
//! `--shared QD2`: a second drive, filled alike, replays the same chunks at QD2 beside the
//! first, sharing its FTL's work ([`Simulation::replay_shared`]: two threads); its check
//! is printed too, and equals that of its own replay (`--qd QD2`).
//!
//! `check` hashes the replay's windows, counts and the drive's counters: identical before
//! and after a change that only makes the simulator faster.

use std::time::Instant;

use ssdsim::time::{process_cpu_s, thread_cpu_s};
use ssdsim::{Command, Config, Job, Mapper, Pattern, Remap, Simulation};
use ssdtrace::{GenParams, Generator};

#[path = "../tests/common/mod.rs"]
mod common;

/// python/ssdlab/profiles/default.toml (the other keys are the simulator's defaults).
fn default_profile() -> Config {
    let mut cfg = Config::default();
    common::set(&mut cfg, common::DEFAULT_PROFILE_GC);
    cfg
}

fn fnv(words: &[u64]) -> u64 {
    words.iter().flat_map(|w| w.to_le_bytes()).fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let write_gb: f64 = arg("--write-gb").map_or(200.0, |v| v.parse().expect("--write-gb GB"));
    let qd: u32 = arg("--qd").map_or(32, |v| v.parse().expect("--qd N"));
    let trim = !args.iter().any(|a| a == "--no-trim");
    let threads: usize = arg("--threads").map_or(1, |v| v.parse().expect("--threads N"));
    let shared: Option<u32> = arg("--shared").map(|v| v.parse().expect("--shared QD"));
    // CPU time of the replay's threads: this one's, or the process's with more.
    let cpu_s: fn() -> f64 = if threads > 1 || shared.is_some() { process_cpu_s } else { thread_cpu_s };

    let cfg = default_profile();
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    sim.set_threads(threads);
    let user = sim.geometry().user_units;
    let span_bytes = user * 4096;
    let t_fill = Instant::now();
    sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    let fill_s = t_fill.elapsed().as_secs_f64();
    let mut follower = shared.map(|_| {
        let mut f = Simulation::new(&cfg, 1).unwrap();
        f.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
        f
    });

    let write_bytes = (write_gb * 1e9) as u64 / 4096 * 4096;
    let mut gen = Generator::new(GenParams::new(span_bytes, write_bytes)).unwrap();
    let mapper = Mapper { span_start_unit: 0, span_units: user, remap: Remap::Error, trace_span_bytes: 0, keep_reads: false, keep_trims: trim };
    sim.start_replay(qd, 100_000).unwrap();
    if let (Some(f), Some(q)) = (follower.as_mut(), shared) {
        f.start_replay(q, 100_000).unwrap();
    }
    let (mut wall, mut cpu) = (0.0, 0.0);
    let mut chunk: Vec<Command> = Vec::with_capacity(1 << 20);
    loop {
        chunk.clear();
        for r in gen.by_ref().take(1 << 20) {
            if let Some(c) = mapper.map(r.op.code(), r.offset_bytes, r.len_bytes).unwrap() {
                chunk.push(c);
            }
        }
        if chunk.is_empty() {
            break;
        }
        let (t, c) = (Instant::now(), cpu_s());
        match follower.as_mut() {
            Some(f) => sim.replay_shared(&mut [f], &chunk).unwrap(),
            None => sim.replay(&chunk).unwrap(),
        }
        wall += t.elapsed().as_secs_f64();
        cpu += cpu_s() - c;
    }
    let (t, c) = (Instant::now(), cpu_s());
    let followed = follower.as_mut().map(|f| {
        f.catch_up(&sim).unwrap();
        let rep = f.finish_replay();
        check(f, rep)
    });
    let rep = sim.finish_replay();
    wall += t.elapsed().as_secs_f64();
    cpu += cpu_s() - c;
    let n = rep.counts.commands();
    let (wa, hash) = check(&sim, rep);
    println!("JEDEC-like replay, default 256 GB drive, QD{qd}, TRIM {}, {write_gb} GB written (fill {fill_s:.1} s), {threads} thread(s), {} commands on two", if trim { "on" } else { "off" }, sim.piped_commands());
    println!("{:>12} {:>9} {:>9} {:>12} {:>12} {:>6} {:>18}", "commands", "wall s", "CPU s", "cmd/s", "cmd/CPU-s", "WA", "check");
    println!("{n:>12} {wall:>9.2} {cpu:>9.2} {:>12.0} {:>12.0} {wa:>6.2} {hash:>18}", n as f64 / wall, n as f64 / cpu);
    if let (Some((wa, hash)), Some(q)) = (followed, shared) {
        println!("shared with a drive at QD{q} (times above are both drives'): WA {wa:.2}, check {hash}");
    }
}

/// A replay's write amplification and check hash: its report's counts and windows, the
/// drive's clock and counters after it.
fn check(sim: &Simulation, rep: ssdsim::ReplayReport) -> (f64, String) {
    let n = rep.counts.commands();
    let mut words = vec![rep.duration_ns, n, rep.counts.write_bytes, rep.counts.trim_bytes, rep.counts.flushes];
    for w in &rep.windows {
        words.extend([w.commands, w.end_ns, w.data_bytes, w.snapshot.nand_units, w.snapshot.free_blocks]);
    }
    let s = sim.snapshot();
    words.extend([sim.now_ns(), s.host_units, s.nand_units, s.gc_units, s.erases, s.gc_die_ns]);
    let wa = (s.nand_units - rep.start_snapshot.nand_units) as f64 / (s.host_units - rep.start_snapshot.host_units) as f64;
    (wa, format!("{:016x}", fnv(&words)))
}
