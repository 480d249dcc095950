//! Profiling driver of `benches/bench_randrw.py`'s workload in Rust alone: 4 KiB random
//! read/write 70/30 at QD32 on the built-in default profile's drive (active and idle GC) at a
//! given size: sequential fill, a warm-up writing the capacity `warm` times over, then `ios`
//! timed IOs in [`timed`]. Prints IOs per wall and per CPU second and the drive's counters,
//! which a change that only makes the simulator faster leaves as they are.
//!
//!     cargo run --release -p ssdsim --example randrw -- [blocks_per_plane] [user_bytes] [warm] [ios]
//!
//! (default: the 256 GB drive, 1 warm-up, 3 M IOs). Instruction counts of the timed IOs on
//! an 8 GB drive, independent of the machine's load:
//!
//!     valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*randrw::timed*' \
//!         target/release/examples/randrw 64 7499997184 1 300000
//!
//! With `STREAM_ABBA=N` the timed IOs run in N chunks, active GC's L2P updates streamed or
//! prefetched ([`Simulation::set_map_streamed`]) in the order ABBA ABBA ..., and it prints
//! the median IO/CPU-s of each way and their ratio: a pairing within one process, on the same
//! drive, that the machine's drift cannot bias.
//!
//! With `THREADS=2` the timed IOs may run on two threads ([`Simulation::set_threads`]); CPU
//! time is the whole process's. With `SIM_S=S` they are a phase of `S` simulated seconds
//! (ended by time, as most of a test's phases are) instead of `ios` IOs; with `READS=F`,
//! their read share is `F` instead of 0.7.
//!
//! With `PERF_CTL=FIFO` it writes `enable` to that FIFO before the timed IOs, so that
//! `perf record --control fifo:FIFO -D -1` samples them alone.

use std::time::Instant;

use ssdsim::time::{process_cpu_s, thread_cpu_s};
use ssdsim::{PhaseReport, Simulation, Workload};

#[path = "../tests/common/mod.rs"]
mod common;

/// The timed IOs (a function of its own, for callgrind's `--toggle-collect`).
#[inline(never)]
fn timed(sim: &mut Simulation, w: &Workload) -> PhaseReport {
    sim.run_workload(w).unwrap()
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let ios: u64 = a.get(3).map_or("3000000", |s| s.as_str()).parse().expect("timed IOs");
    let mut sim = common::randrw_warmed(&a);
    let w = common::randrw;
    if let Ok(ctl) = std::env::var("PERF_CTL") {
        std::fs::write(ctl, "enable\n").unwrap();
    }
    if let Some(n) = std::env::var("STREAM_ABBA").ok().and_then(|v| v.parse::<u64>().ok()) {
        return stream_abba(&mut sim, &w(ios / n.max(1)), n.max(1));
    }
    sim.set_threads(std::env::var("THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(1));
    let c0 = process_cpu_s();
    let t = Instant::now();
    // SIM_S=S: a phase of S simulated seconds instead of `ios` IOs (a timed phase).
    let phase = match std::env::var("SIM_S").ok().and_then(|v| v.parse::<f64>().ok()) {
        Some(s) => Workload { number_ios: None, duration_ns: Some((s * 1e9) as u64), ..w(0) },
        None => w(ios),
    };
    // READS=F: the timed IOs' read share (default 0.7).
    let reads = std::env::var("READS").ok().and_then(|v| v.parse::<f64>().ok());
    let phase = Workload { read_fraction: reads.unwrap_or(phase.read_fraction), ..phase };
    let r = timed(&mut sim, &phase);
    let ios = r.total_ios;
    let wall_s = t.elapsed().as_secs_f64();
    let cpu = process_cpu_s() - c0;
    let s = sim.snapshot();
    println!(
        "{:.2} M IO/s wall, {:.2} M IO/CPU-s; now {} ns, host {} nand {} GC {} units, {} erases, phase {} ns",
        ios as f64 / wall_s / 1e6,
        ios as f64 / cpu / 1e6,
        sim.now_ns(),
        s.host_units,
        s.nand_units,
        s.gc_units,
        s.erases,
        r.duration_ns
    );
}

/// `n` chunks of `w`, active GC's L2P updates prefetched (A) or streamed (B) in ABBA order;
/// prints the median IO/CPU-s of each way and B/A.
fn stream_abba(sim: &mut Simulation, w: &Workload, n: u64) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..n {
        let streamed = matches!(i % 4, 1 | 2);
        sim.set_map_streamed(streamed);
        let c0 = thread_cpu_s();
        sim.run_workload(w).unwrap();
        let rate = w.number_ios.unwrap() as f64 / (thread_cpu_s() - c0) / 1e6;
        if streamed { b.push(rate) } else { a.push(rate) }
    }
    let (ma, mb) = (common::median(&mut a), common::median(&mut b));
    println!("prefetched {ma:.2} M IO/CPU-s, streamed {mb:.2} M IO/CPU-s ({} chunks each): streamed/prefetched {:.3}", a.len(), mb / ma);
}
