//! Memory per physical page: the simulator's state must stay near 8 bytes per 4 KiB
//! physical page (4-byte L2P entry per logical page, 4-byte P2L entry per physical page,
//! small per-block records), so a 4 TB drive fits in well under 20 GiB. Checked on a
//! mid-size drive by counting allocated bytes, not by timing.

use ssdsim::{Config, Job, Pattern, Simulation};

#[test]
fn state_is_at_most_ten_bytes_per_physical_page_after_a_workload() {
    let mut cfg = Config::default();
    cfg.set("blocks_per_plane", "256").unwrap(); // 32 GiB of NAND
    cfg.set("user_capacity_bytes", "32000000000").unwrap();
    for (k, v) in [("gc_bg_start_free_blocks", "4"), ("gc_bg_stop_free_blocks", "6"), ("gc_bg_reclaim_ratio", "1.2")] {
        cfg.set(k, v).unwrap();
    }
    let mut sim = Simulation::new(&cfg, 1).unwrap();
    let user = sim.geometry().user_units;
    sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
    let mut rw = Job::new(Pattern::RandWrite, 1, 32, 0, user);
    rw.io_units = Some(user / 2);
    sim.run(rw).unwrap();
    let pages = sim.geometry().physical_units as f64;
    let per_page = sim.device().state_bytes() as f64 / pages;
    assert!(per_page <= 10.0, "{per_page:.2} bytes of state per physical page");
    // And it is not trivially small: the maps are really there.
    assert!(per_page >= 7.0, "{per_page:.2} bytes per page is less than the maps themselves");
}
