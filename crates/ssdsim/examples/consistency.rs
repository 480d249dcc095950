//! Runs the performance-consistency test (fill, then 4 KiB random writes at QD32) on the
//! default 256 GB profile and prints the IOPS every 50 s plus the wall time.
//! `cargo run --release -p ssdsim --example consistency [duration_s] [KEY=VALUE...]`
use ssdsim::{time::NS_PER_S, Config, Job, Pattern, Simulation};
use std::time::Instant;

fn main() {
    let duration_s: u64 = std::env::args().nth(1).map_or(2000, |a| a.parse().expect("duration in seconds"));
    let mut cfg = Config::default();
    for kv in std::env::args().skip(2) {
        let (k, v) = kv.split_once('=').expect("KEY=VALUE");
        cfg.set(k, v).unwrap();
    }
    let t0 = Instant::now();
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    let user = sim.geometry().user_units;
    let fill = sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    let t_fill = t0.elapsed();
    let mut rw = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    rw.duration_ns = Some(duration_s * NS_PER_S);
    let t1 = Instant::now();
    let r = sim.run(rw).unwrap();
    let t_rand = t1.elapsed();
    for (i, chunk) in r.ios.chunks(50).enumerate() {
        let min = chunk.iter().min().unwrap();
        let max = chunk.iter().max().unwrap();
        let mean = chunk.iter().sum::<u64>() as f64 / chunk.len() as f64;
        println!("t={:5}s iops mean {mean:8.0} min {min:7} max {max:7}", i * 50);
    }
    let s0 = r.snapshots.first().unwrap();
    let s1 = r.snapshots.last().unwrap();
    println!(
        "fill: {:.1} s simulated ({:.0} MB/s) in {:.2} s wall; random: {} IOs in {:.2} s wall = {:.2} M IO/s; WA {:.3}",
        fill.duration_ns as f64 / 1e9,
        fill.host_write_bytes as f64 / (fill.duration_ns as f64 / 1e9) / 1e6,
        t_fill.as_secs_f64(),
        r.total_ios,
        t_rand.as_secs_f64(),
        r.total_ios as f64 / t_rand.as_secs_f64() / 1e6,
        (s1.nand_units - s0.nand_units) as f64 / (s1.host_units - s0.host_units) as f64
    );
    println!("latency p50 {:?} p99 {:?} max {:?} ns", r.latency.quantile_ns(0.5), r.latency.quantile_ns(0.99), r.latency.quantile_ns(1.0));
}
