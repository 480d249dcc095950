//! How much of a mixed workload's time is the FTL's own work — mapping lookups and updates,
//! invalidation, GC relocation and erases, without the timing model — on one core: the part
//! a second thread could take over from the timing model.
//!
//!     cargo run --release -p ssdsim --example ftl_share -- [blocks_per_plane] [user_bytes] [warm] [ios]
//!
//! (default: the built-in default profile's 256 GB drive, 1 warm-up, 10 M IOs). After a
//! sequential fill and `warm` capacities written by 4 KiB random read/write 70/30 at QD32, it
//! times `ios` IOs of that workload through the whole simulator, then `ios` more of the same
//! mix straight on the FTL: each read a map lookup, each write an FTL write to the plane the
//! striped die allocation gives it, with the GC work that write triggers; the next 32
//! addresses' map entries prefetched, as the simulator's generator does. It prints both rates
//! [M IO per CPU second] and the relocations per host unit of each part: equal relocations
//! mean the FTL did the same work per IO in both.

use ssdsim::ftl::{Ftl, FtlCounters};
use ssdsim::time::thread_cpu_s;
use ssdsim::config::Geometry;

#[path = "../tests/common/mod.rs"]
mod common;

/// Addresses drawn ahead, their map entries prefetched [IOs].
const LOOKAHEAD: usize = 32;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let ios: u64 = a.get(3).map_or("10000000", |s| s.as_str()).parse().expect("timed IOs");
    let mut sim = common::randrw_warmed(&a);
    let geo = sim.geometry().clone();

    let f0 = sim.ftl_counters();
    let c0 = thread_cpu_s();
    sim.run_workload(&common::randrw(ios)).unwrap();
    let whole_s = thread_cpu_s() - c0;
    let f1 = sim.ftl_counters();

    let c0 = thread_cpu_s();
    let check = ftl_alone(sim.ftl_mut(), &geo, ios);
    let ftl_s = thread_cpu_s() - c0;
    let f2 = sim.ftl_counters();

    let per_unit = |a: FtlCounters, b: FtlCounters| (b.gc_units - a.gc_units) as f64 / (b.host_units - a.host_units) as f64;
    println!("whole simulator: {:.2} M IO/CPU-s, {:.3} relocations per host unit", ios as f64 / whole_s / 1e6, per_unit(f0, f1));
    println!("FTL alone:       {:.2} M IO/CPU-s, {:.3} relocations per host unit", ios as f64 / ftl_s / 1e6, per_unit(f1, f2));
    println!("the FTL's share of the whole's time: {:.0} % (check {check})", ftl_s / whole_s * 100.0);
}

/// `ios` IOs of the 70/30 mix on the FTL alone; returns a sum of what they returned (so that
/// nothing is optimised away).
#[inline(never)]
fn ftl_alone(ftl: &mut Ftl, geo: &Geometry, ios: u64) -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut draw = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut ring = [0u64; LOOKAHEAD];
    for r in ring.iter_mut() {
        *r = draw();
    }
    let (ppd, upp, upprog) = (geo.planes_per_die, geo.units_per_page, geo.units_per_program);
    let (mut check, mut pos, mut unit, mut payload) = (0u64, 0, 0usize, 1u64 << 40);
    for _ in 0..ios {
        let r = ring[pos];
        ring[pos] = draw();
        ftl.prefetch((ring[pos] >> 8) % geo.user_units);
        pos = (pos + 1) % LOOKAHEAD;
        let lpn = (r >> 8) % geo.user_units;
        // 179/256 = 70 % reads.
        if r & 0xff < 179 {
            check = check.wrapping_add(ftl.lookup(lpn).unwrap_or(0) as u64);
        } else {
            // Striped: each program to the next die, its pages over the die's planes in turn.
            let die = (unit / upprog) % geo.dies;
            let pool = die * ppd + (unit % upprog) / upp % ppd;
            unit += 1;
            payload += 1;
            check = check.wrapping_add(ftl.write_and_take_gc_work(lpn, pool, payload).units_copied);
        }
    }
    check
}
