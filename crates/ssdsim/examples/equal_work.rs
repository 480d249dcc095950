//! Profiling driver of `benches/bench_mqsim_equal_work.py`'s ssdlab arm in Rust alone: the
//! default profile's FTL on the 2 GiB drive, a fresh drive, 4 KiB random writes at QD32;
//! `start` writes, then the timed window of `end - start` writes in [`timed`].
//!
//!     cargo run --release -p ssdsim --example equal_work -- [start] [end] [seed] [reps]
//!
//! (default 500000 700000 1 1; `reps` fresh drives in turn). Prints host writes and page
//! programs per CPU second of the window and a check of the drive's counters, which a
//! change that only makes the simulator faster leaves as they are. Instruction counts:
//!
//!     valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*equal_work::timed*' \
//!         target/release/examples/equal_work
//!
//! With `PERF_CTL=FIFO` it writes `enable` to that FIFO before each timed window and `disable`
//! after it, so that `perf record --control fifo:FIFO -D -1` samples the windows alone.

use ssdsim::time::thread_cpu_s;
use ssdsim::{Config, PhaseReport, Simulation, Workload};

#[path = "../tests/common/mod.rs"]
mod common;

/// The timed writes (a function of its own, for callgrind's `--toggle-collect`).
#[inline(never)]
fn timed(sim: &mut Simulation, w: &Workload) -> PhaseReport {
    sim.run_workload(w).unwrap()
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: &str| -> u64 { a.get(i).map_or(d, |s| s.as_str()).parse().expect("a whole number") };
    let (start, end, seed, reps) = (arg(0, "500000"), arg(1, "700000"), arg(2, "1"), arg(3, "1"));
    let mut cfg = Config::default();
    // The default profile's GC keys, then the bench's drive.
    common::set(&mut cfg, common::DEFAULT_PROFILE_GC);
    for (k, v) in [
        ("channels", "8"),
        ("dies_per_channel", "2"),
        ("blocks_per_plane", "64"),
        ("page_size_bytes", "4096"),
        ("user_capacity_bytes", "1979711488"),
        ("t_read_us", "75"),
        ("t_prog_us", "750"),
        ("t_erase_us", "3800"),
    ] {
        cfg.set(k, v).unwrap();
    }
    let w = |n: u64| Workload { read_fraction: 0.0, number_ios: Some(n), qd: 32, ..Workload::default() };
    let mut rates = Vec::new();
    for rep in 0..reps {
        let mut sim = Simulation::new(&cfg, seed + rep).unwrap();
        sim.run_workload(&w(start)).unwrap();
        let ctl = std::env::var("PERF_CTL").ok();
        if let Some(ctl) = &ctl {
            std::fs::write(ctl, "enable\n").unwrap();
        }
        let before = sim.snapshot();
        let c0 = thread_cpu_s();
        let r = timed(&mut sim, &w(end - start));
        let cpu_s = thread_cpu_s() - c0;
        if let Some(ctl) = &ctl {
            std::fs::write(ctl, "disable\n").unwrap();
        }
        let s = sim.snapshot();
        let programs = s.nand_units - before.nand_units;
        rates.push(((end - start) as f64 / cpu_s, programs as f64 / cpu_s));
        println!(
            "seed {}: {:.2} M host writes/s, {:.2} M programs/s; programs {programs}, now {} ns, host {} nand {} GC {} erases {} gc_die_ns {}, phase {} ns",
            seed + rep,
            (end - start) as f64 / cpu_s / 1e6,
            programs as f64 / cpu_s / 1e6,
            sim.now_ns(),
            s.host_units,
            s.nand_units,
            s.gc_units,
            s.erases,
            s.gc_die_ns,
            r.duration_ns
        );
    }
    rates.sort_by(|a, b| a.0.total_cmp(&b.0));
    let m = rates[rates.len() / 2];
    println!("median of {reps}: {:.2} M host writes and {:.2} M programs per CPU second", m.0 / 1e6, m.1 / 1e6);
}
