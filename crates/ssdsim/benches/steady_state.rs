//! Steady-state simulation speed: simulated host I/Os per wall-clock second for 4 KiB
//! random writes at QD32 with garbage collection running, on the full timed model.
//!
//! For each drive: purge, sequential fill, random writes until GC has been running for a
//! while (warm-up), then `RUNS` timed windows of `WINDOW_IOS` I/Os each. Prints the median
//! and the spread, and the write amplification during the windows (to show GC was active).
//!
//! `cargo bench -p ssdsim --bench steady_state [-- DRIVE...]` with DRIVE in 32G, 256G, 1T, 4T
//! (greedy foreground GC only), or one of those with `-active`: the GC keys of the built-in
//! `default` profile (active GC with reclaim ratio 1.2, idle GC), so `256G-active` is exactly
//! that profile (default: 32G 256G 256G-active).
//!
//! `IO/CPU-s` is the median over the windows of I/Os per second of this process's CPU time,
//! a steadier figure than wall time on a shared machine. `--threads=2`: the windows may run
//! on two threads ([`Simulation::set_threads`]); CPU time is then both threads'.
//!
//! The `check` column is a hash of the drive's counters and clock after the windows: it must
//! not change when the simulator is only made faster (see `tests/golden.rs`).

use std::time::Instant;

use ssdsim::time::process_cpu_s;
use ssdsim::{Config, Job, Pattern, Simulation};

#[path = "../tests/common/mod.rs"]
mod common;

const RUNS: usize = 5;
const WINDOW_IOS: u64 = 4_000_000;

fn profile(drive: &str) -> Config {
    let mut cfg = Config::default();
    let (size, active) = match drive.strip_suffix("-active") {
        Some(size) => (size, true),
        None => (drive, false),
    };
    let (blocks, user) = match size {
        "32G" => ("256", "32000000000"),
        "256G" => ("2048", "256000000000"),
        "1T" => ("8192", "1024000000000"),
        "4T" => ("32768", "4096000000000"),
        other => panic!("unknown drive {other}: use 32G, 256G, 1T or 4T, optionally with -active"),
    };
    cfg.set("blocks_per_plane", blocks).unwrap();
    cfg.set("user_capacity_bytes", user).unwrap();
    if active {
        common::set(&mut cfg, common::DEFAULT_PROFILE_GC);
    }
    cfg
}

/// FNV-1a of the drive's counters and clock (identical before and after exact speed-ups).
fn check(sim: &Simulation) -> u64 {
    let s = sim.snapshot();
    let c = sim.ftl_counters();
    let t = sim.timing_counters();
    let words = [
        sim.now_ns(), s.host_units, s.nand_units, s.gc_units, s.erases, s.free_blocks, s.gc_die_ns,
        c.gc_runs, c.trimmed_units, t.gc_die_ns, t.host_prog_die_ns, t.host_programs,
    ];
    words.iter().flat_map(|w| w.to_le_bytes()).fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let threads = std::env::args().find_map(|a| a.strip_prefix("--threads=").map(|n| n.parse::<usize>().expect("--threads=N"))).unwrap_or(1);
    let drives = if args.is_empty() { ["32G", "256G", "256G-active"].map(String::from).to_vec() } else { args };
    println!("steady-state 4 KiB random write QD32, GC running; {RUNS} windows of {WINDOW_IOS} IOs each");
    println!("{:<12} {:>14} {:>14} {:>14} {:>14} {:>8} {:>10} {:>18}", "drive", "median IO/s", "min IO/s", "max IO/s", "IO/CPU-s", "WA", "setup s", "check");
    for drive in &drives {
        let cfg = profile(drive);
        let t_setup = Instant::now();
        let mut sim = Simulation::new(&cfg, 1).unwrap();
        let user = sim.geometry().user_units;
        sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
        let mut job = Job::new(Pattern::RandWrite, 1, 32, 0, user);
        job.io_units = Some(u64::MAX);
        sim.start_phase(job).unwrap();
        // Warm-up: until GC has run, then as much again so it is in full swing.
        while sim.ftl_counters().gc_runs == 0 {
            sim.advance(100_000);
        }
        let warm = sim.ftl_counters().host_units;
        while sim.ftl_counters().host_units < 2 * warm.max(1) && sim.ftl_counters().host_units - warm < 20_000_000 {
            sim.advance(1_000_000);
        }
        let setup_s = t_setup.elapsed().as_secs_f64();
        sim.set_threads(threads);
        let before = sim.snapshot();
        let mut rates = Vec::new();
        let mut cpu_rates = Vec::new();
        for _ in 0..RUNS {
            let (t, c) = (Instant::now(), process_cpu_s());
            sim.advance(WINDOW_IOS);
            rates.push(WINDOW_IOS as f64 / t.elapsed().as_secs_f64());
            cpu_rates.push(WINDOW_IOS as f64 / (process_cpu_s() - c));
        }
        let after = sim.snapshot();
        let wa = (after.nand_units - before.nand_units) as f64 / (after.host_units - before.host_units) as f64;
        let (lo, hi) = (rates.iter().cloned().fold(f64::MAX, f64::min), rates.iter().cloned().fold(0.0, f64::max));
        println!(
            "{:<12} {:>14.0} {:>14.0} {:>14.0} {:>14.0} {:>8.2} {:>10.1} {:>18}",
            drive,
            common::median(&mut rates),
            lo,
            hi,
            common::median(&mut cpu_rates),
            wa,
            setup_s,
            format!("{:016x}", check(&sim))
        );
    }
}
