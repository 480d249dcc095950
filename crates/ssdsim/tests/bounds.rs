//! Every profile and workload the simulator accepts runs in bounded memory and its clock
//! advances: random profiles drawn from each key's declared range (its ends included:
//! timings of 0.01 µs and of 1 s, links of 1 MB/s and of 1 TB/s, 32 × 32 dies of 16 planes,
//! blocks of 16,384 pages, d-choices sampling every block of a plane...) under random
//! workloads, several jobs at once and idle time, each for a bounded number of commands.
//!
//! - `accepted_inputs_run_in_bounded_memory_and_time_advances`: for every case, memory
//!   allocated while a phase runs stays below the bound its series limit, queue depths and
//!   dies allow (measured by a counting allocator, per thread); the series never holds more
//!   intervals than its limit (a timed phase exactly its duration's); a timed phase with more
//!   intervals than the limit is refused naming `interval_ns`, one a byte or IO count ends
//!   stops at the limit with an error saying to use a longer interval; and the clock moves
//!   at least `controller_cmd_us` per command: `total_ios <= duration / controller time +
//!   commands outstanding`.
//! - `profiles_that_crashed_or_hung_are_refused`: the profiles that once aborted on a
//!   terabyte allocation or never advanced the clock, each refused naming its key.
//! - `the_bound_catches_what_it_is_for`: the checks above fail on a series the limit does not
//!   cap (the limit raised past a slow drive's run) and on a clock that stands still.
//!
//! Budget: a few seconds in `cargo test --release`. `SSDSIM_BOUNDS_CASES=N` runs N cases
//! (default 300); `SSDSIM_BOUNDS_SEED=S` starts at case seed S (a failure prints its seed).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ssdsim::config::{Bounds, MAX_RATE_MBPS, MAX_TIME_US, MIN_RATE_MBPS, MIN_TIME_US};
use ssdsim::rng::Rng;
use ssdsim::time::{Ns, NS_PER_MS, NS_PER_S, NS_PER_US};
use ssdsim::workload::MAX_QD;
use ssdsim::{BlockSize, Config, DirectionMix, Distribution, PhaseReport, Simulation, Workload, WorkloadJob, Zone, KEYS, UNIT_BYTES};

/// Counts the bytes each thread has allocated and not freed, and the most since a reset.
struct Counting;

thread_local! {
    static NOW: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    NOW.with(|n| {
        n.set(n.get() + delta);
        PEAK.with(|p| p.set(p.get().max(n.get())));
    });
}

// SAFETY: every call is passed on to the system allocator unchanged; the counters are
// thread-local `Cell`s, which neither allocate nor lock.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count(l.size() as isize);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        count(-(l.size() as isize));
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        count(new as isize - l.size() as isize);
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Starts measuring: the peak is now what the thread holds.
fn reset_peak() {
    PEAK.with(|p| p.set(NOW.with(Cell::get)));
}

/// Bytes allocated above what the thread held at the last `reset_peak`, at most.
fn peak_since(held: isize) -> u64 {
    (PEAK.with(Cell::get) - held).max(0) as u64
}

fn held() -> isize {
    NOW.with(Cell::get)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// `lo..=hi`.
fn pick(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    assert!(lo <= hi, "{lo}..={hi}");
    lo + rng.below(hi - lo + 1)
}

fn chance(rng: &mut Rng, per_mille: u64) -> bool {
    rng.below(1000) < per_mille
}

/// One end of `lo..=hi` or a value between, spread evenly on a log scale.
fn end_or_between(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    match rng.below(4) {
        0 => lo,
        1 => hi,
        _ => (lo.ln() + rng.unit_f64() * (hi.ln() - lo.ln())).exp().clamp(lo, hi),
    }
}

fn set(cfg: &mut Config, key: &str, value: impl ToString) {
    cfg.set(key, &value.to_string()).unwrap_or_else(|e| panic!("{e}"));
}

/// The keys that differ from the default profile, for failure messages.
fn describe(cfg: &Config) -> String {
    let base = Config::default();
    cfg.to_pairs().into_iter().filter(|(k, v)| base.get(k).as_ref() != Some(v)).map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// The declared range of a float key.
fn float_range(key: &str) -> (f64, f64) {
    match KEYS.iter().find(|k| k.name == key).unwrap().range.bounds {
        Bounds::Float { lo, hi } => (lo, hi),
        other => panic!("{key}: {other:?}"),
    }
}

/// A random profile validation accepts, small enough to simulate at once: a few planes of
/// small blocks; or every die and plane the ranges allow with the fewest, smallest blocks;
/// or one plane of blocks of the most pages. Timings, rates and policies anywhere in their
/// ranges, often at an end.
fn random_profile(rng: &mut Rng) -> Config {
    let mut cfg = Config::default();
    let (channels, dies, planes, blocks, pages, page_units) = match rng.below(10) {
        0 => (32, 32, 16, 5, 1, 1),
        1 => (1, 1, 1, pick(rng, 5, 6), 16_384, 1),
        _ => (pick(rng, 1, 2), pick(rng, 1, 2), pick(rng, 1, 2), pick(rng, 5, 24), pick(rng, 1, 16), pick(rng, 1, 4)),
    };
    for (k, v) in [("channels", channels), ("dies_per_channel", dies), ("planes_per_die", planes), ("blocks_per_plane", blocks), ("pages_per_block", pages), ("page_size_bytes", page_units * UNIT_BYTES)] {
        set(&mut cfg, k, v);
    }
    let ratio = [1.0, 1.0, 1.5, 16.0][rng.below(4) as usize];
    set(&mut cfg, "compression_ratio", ratio);
    let policy = ["greedy", "fifo", "cost-benefit", "d-choices"][rng.below(4) as usize];
    set(&mut cfg, "gc_policy", policy);
    set(&mut cfg, "gc_d_choices", if chance(rng, 500) { blocks } else { pick(rng, 1, blocks) });
    set(&mut cfg, "gc_fg_stall", if chance(rng, 500) { "die" } else { "drive" });
    set(&mut cfg, "die_allocation", if chance(rng, 500) { "striped" } else { "earliest" });
    let most = blocks - 3;
    let fg = pick(rng, 1, blocks - 4);
    set(&mut cfg, "gc_fg_free_blocks", fg);
    set(&mut cfg, "gc_fg_target_free_blocks", if chance(rng, 500) { 0 } else { pick(rng, fg, most) });
    if fg < most && chance(rng, 400) {
        let start = pick(rng, fg + 1, most);
        set(&mut cfg, "gc_bg_start_free_blocks", start);
        set(&mut cfg, "gc_bg_stop_free_blocks", pick(rng, start, most));
        set(&mut cfg, "gc_bg_copies_per_write", end_or_between(rng, 0.01, 1024.0));
        set(&mut cfg, "gc_bg_reclaim_ratio", if chance(rng, 300) { 0.0 } else { end_or_between(rng, 0.01, 100.0) });
    }
    if chance(rng, 500) {
        set(&mut cfg, "gc_idle_free_blocks", pick(rng, 1, most));
        set(&mut cfg, "gc_idle_delay_ms", if chance(rng, 300) { 0.0 } else { end_or_between(rng, 0.001, 86_400_000.0) });
    }
    for key in ["t_read_us", "t_prog_us", "t_erase_us", "controller_cmd_us", "slc_t_prog_us", "slc_t_read_us"] {
        set(&mut cfg, key, end_or_between(rng, MIN_TIME_US, MAX_TIME_US));
    }
    for key in ["trim_cmd_us", "trim_us_per_gib", "map_miss_us", "slc_dynamic_t_prog_us"] {
        let (lo, hi) = float_range(key);
        set(&mut cfg, key, if chance(rng, 300) { lo } else { end_or_between(rng, MIN_TIME_US, hi) });
    }
    for key in ["channel_mbps", "host_link_mbps"] {
        set(&mut cfg, key, end_or_between(rng, MIN_RATE_MBPS, MAX_RATE_MBPS));
    }
    if chance(rng, 200) {
        set(&mut cfg, "pcie_gen", pick(rng, 1, 5));
        set(&mut cfg, "pcie_lanes", [1, 2, 4, 8, 16][rng.below(5) as usize]);
    }
    let program = planes * ((page_units as f64 * ratio).round() as u64) * UNIT_BYTES;
    let buffer = match rng.below(3) {
        0 => program,
        1 => 16 << 30,
        _ => program * pick(rng, 1, 64),
    };
    set(&mut cfg, "write_buffer_bytes", buffer);
    set(&mut cfg, "user_capacity_bytes", UNIT_BYTES);
    let max_user = cfg.validate().unwrap_or_else(|e| panic!("{e}: {}", describe(&cfg))).max_user_units;
    let user = if chance(rng, 500) { max_user } else { pick(rng, 1, max_user) };
    set(&mut cfg, "user_capacity_bytes", user * UNIT_BYTES);
    let most_regions = (channels * dies * planes * blocks / 8).min(user).min(64);
    if cfg.gc_idle_free_blocks != 0 && most_regions > 0 && chance(rng, 300) {
        set(&mut cfg, "gc_idle_sort_regions", pick(rng, 1, most_regions));
    }
    if chance(rng, 300) {
        set(&mut cfg, "cell_bits", pick(rng, 2, 4));
        // At most the static part the NAND holds beside the user capacity.
        let most_static = cfg.validate().unwrap_or_else(|e| panic!("{e}: {}", describe(&cfg))).slc_static_max_units;
        set(&mut cfg, "slc_static_bytes", rng.below((user / 4).min(most_static) + 1) * UNIT_BYTES);
        set(&mut cfg, "slc_dynamic_max_bytes", if chance(rng, 300) { 16u64 << 40 } else { rng.below(user + 1) * UNIT_BYTES });
        set(&mut cfg, "slc_when_full", if chance(rng, 500) { "direct" } else { "fold" });
        set(&mut cfg, "slc_fold_start_pct", rng.unit_f64() * 100.0);
        set(&mut cfg, "slc_fold_units_per_write", if chance(rng, 300) { 64.0 } else { rng.unit_f64() * 3.0 });
    }
    if chance(rng, 300) {
        let page = 4 * pick(rng, 16, 1 << 18); // 64 bytes to 1 MiB
        set(&mut cfg, "map_page_bytes", page);
        set(&mut cfg, "map_cache_bytes", if chance(rng, 300) { 1u64 << 40 } else { page * pick(rng, 1, 8) });
        if chance(rng, 500) {
            set(&mut cfg, "map_bypass_hit_pct", rng.unit_f64() * 100.0);
            set(&mut cfg, "map_sram_bytes", page * pick(rng, 1, 4));
        }
    }
    cfg.validate().unwrap_or_else(|e| panic!("the generator made an invalid profile: {e}: {}", describe(&cfg)));
    cfg
}

/// A random direction mix of sizes up to `max_bs` bytes (some below 4 KiB or unaligned:
/// read-modify-write).
fn random_mix(rng: &mut Rng, max_bs: u64) -> DirectionMix {
    let size = |rng: &mut Rng| match rng.below(3) {
        0 => UNIT_BYTES,
        1 => UNIT_BYTES * pick(rng, 1, 16),
        _ => 512 * pick(rng, 1, 40),
    }
    .min(max_bs);
    let bssplit = (0..pick(rng, 1, 3)).map(|_| BlockSize { bs_bytes: size(rng), weight: pick(rng, 1, 10) as u32 }).collect();
    let rate_iops = match rng.below(8) {
        0 => 1e-3,
        1 => end_or_between(rng, 1e-3, 1e7),
        _ => 0.0,
    };
    DirectionMix { bssplit, random_fraction: [0.0, 1.0, rng.unit_f64()][rng.below(3) as usize], rate_iops, ba_bytes: None }
}

/// A random workload over the drive's user space: ended by time (`duration_ns`, in
/// `interval_ns` intervals), by an IO count, or by the first of the two.
fn random_workload(rng: &mut Rng, user_bytes: u64, duration_ns: Option<Ns>, interval_ns: Ns) -> Workload {
    let read = if chance(rng, 400) { 0.0 } else { rng.unit_f64() };
    let trim = if chance(rng, 600) { 0.0 } else { rng.unit_f64() * (1.0 - read) };
    let distribution = match rng.below(6) {
        0 => Distribution::Zipf { theta: 0.2 + rng.unit_f64() * 1.5, center_fraction: None },
        1 => Distribution::Pareto { h: 0.1 + rng.unit_f64() * 0.8, center_fraction: Some(rng.unit_f64()) },
        2 => Distribution::Normal { dev_pct: rng.unit_f64() * 100.0, center_fraction: None },
        3 => Distribution::Zoned { zones: vec![Zone { access_pct: 80, span_pct: 20.0 }, Zone { access_pct: 20, span_pct: 80.0 }] },
        _ => Distribution::Uniform,
    };
    let thinktime_ns = if chance(rng, 150) { [1, NS_PER_MS, 86_400 * NS_PER_S][rng.below(3) as usize] } else { 0 };
    Workload {
        read_fraction: read,
        trim_fraction: trim,
        read: random_mix(rng, user_bytes),
        write: random_mix(rng, user_bytes),
        trim: random_mix(rng, user_bytes),
        random_map: distribution == Distribution::Uniform && chance(rng, 300),
        distribution,
        qd: match rng.below(8) {
            0 => MAX_QD,
            1 => 1,
            _ => pick(rng, 1, 64) as u32,
        },
        duration_ns,
        // A count ends it, or its time; sometimes either, whichever comes first.
        number_ios: if duration_ns.is_none() || chance(rng, 200) { Some(pick(rng, 1, 20_000)) } else { None },
        interval_ns,
        thinktime_ns,
        thinktime_blocks: pick(rng, 0, 100),
        thinktime_iotime_ns: if thinktime_ns > 0 && chance(rng, 300) { pick(rng, 1, NS_PER_S) } else { 0 },
        rate_iops_total: if chance(rng, 100) { 1e-3 } else { 0.0 },
        ..Workload::default()
    }
}

/// Commands a case runs at most before it interrupts its phase.
const COMMANDS_PER_CASE: u64 = 40_000;
/// Series limit of the cases [intervals]: small, so that the cases reach it.
const CASE_SERIES_LIMIT: u64 = 3_000;

/// What a phase may allocate while it runs [bytes]: its series (at most `limit` intervals
/// of about 300 bytes, twice that while vectors grow, and the report); per command
/// outstanding (`qd` in all) 32 bytes of queue and the latencies of an open interval (a
/// list of up to 64 of 16 bytes, and a 46 KiB set of histograms per 64 commands); each
/// die's read calendar (at most 2^14 operations of 16 bytes, `device::CALENDAR_PIECES`);
/// the write buffer's bookkeeping (32 bytes per buffered program at most); a job's state
/// (zoned distributions, block-size mixes, a latency histogram per direction: 64 KiB); and
/// 1 MiB for the rest (the current intervals' histograms, the FTL's GC bookings).
fn memory_bound(limit: u64, qd: u64, jobs: u64, dies: u64, buffer_programs: u64) -> u64 {
    limit * 1024 + qd * (32 + 1024 + (46 << 10) / 64) + dies * ((1 << 14) * 16 + 1024) + buffer_programs * 32 + jobs * (64 << 10) + (1 << 20)
}

/// The clock moved at least `ctrl_ns` (the controller's time) per command of the phase `r`,
/// less the `qd` commands outstanding at its end: a command is submitted only once all but
/// `qd` of those before it have completed, each after the controller took it.
fn clock_moved(r: &PhaseReport, ctrl_ns: Ns, qd: u64) -> bool {
    r.total_ios <= r.duration_ns / ctrl_ns + qd
}

/// The outcome of one started phase, checked by `run_case`.
struct Ran {
    report: PhaseReport,
    /// The series error that stopped it, if it reached its limit.
    series_error: Option<String>,
    peak_bytes: u64,
}

/// Runs the started phase for at most COMMANDS_PER_CASE commands (then interrupts it),
/// sometimes taking the final intervals as it goes; returns its report.
fn run_phase(sim: &mut Simulation, rng: &mut Rng, held: isize) -> Ran {
    let mut left = COMMANDS_PER_CASE;
    let mut taken = 0;
    let mut series_error = None;
    while left > 0 {
        let chunk = pick(rng, 1, 8192).min(left);
        let p = sim.advance(chunk);
        left -= chunk;
        if let Err(e) = sim.check_series() {
            assert!(p.done, "the series went past its limit but the phase goes on: {e}");
            series_error = Some(e.to_string());
            break;
        }
        if p.done {
            break;
        }
        if chance(rng, 100) {
            let b = sim.take_final_intervals().expect("a phase runs");
            assert_eq!(b.first_interval, taken, "batches follow each other");
            assert_eq!(b.snapshots.len(), b.ios.len() + 1);
            taken += b.ios.len();
        }
    }
    let report = sim.finish_phase();
    assert_eq!(report.first_interval, taken);
    Ran { report, series_error, peak_bytes: peak_since(held) }
}

/// A case: a random profile, then phases (one workload, several jobs, or both) and idle time.
/// Returns (phases run, phases refused, phases stopped at the series limit).
fn run_case(seed: u64) -> (u64, u64, u64) {
    let mut rng = Rng::new(seed ^ 0x626f756e6473);
    let cfg = random_profile(&mut rng);
    let what = format!("case seed {seed} (profile: {})", describe(&cfg));
    let mut sim = Simulation::new(&cfg, seed).unwrap_or_else(|e| panic!("{what}: validate accepted a profile Simulation::new refuses: {e}"));
    sim.set_series_limit(CASE_SERIES_LIMIT);
    let geo = sim.geometry().clone();
    let user_bytes = geo.user_units * UNIT_BYTES;
    let ctrl_ns = ssdsim::time::us_to_ns(cfg.controller_cmd_us);
    assert!(ctrl_ns >= 10, "{what}: a command costs the controller {ctrl_ns} ns");
    let (mut ran, mut refused, mut stopped) = (0, 0, 0);
    for phase in 0..pick(&mut rng, 1, 3) {
        // Timed (sometimes with more intervals than the limit) or ended by an IO count.
        let interval_ns = match rng.below(4) {
            0 => NS_PER_US,
            1 => NS_PER_S,
            _ => pick(&mut rng, NS_PER_US, 10 * NS_PER_MS),
        };
        let duration_ns = if chance(&mut rng, 700) { Some(pick(&mut rng, 1, interval_ns * (CASE_SERIES_LIMIT + 100))) } else { None };
        let several = chance(&mut rng, 250);
        let jobs: Vec<WorkloadJob> = (0..if several { pick(&mut rng, 2, 3) } else { 1 })
            .map(|i| WorkloadJob {
                flow: None,
                exit_stops: Vec::new(),
                name: format!("job{i}"),
                startdelay_ns: if several && chance(&mut rng, 300) { pick(&mut rng, 0, 10 * NS_PER_MS) } else { 0 },
                workload: random_workload(&mut rng, user_bytes, duration_ns, interval_ns),
            })
            .collect();
        let qd: u64 = jobs.iter().map(|j| j.workload.qd as u64).sum();
        let phase_ns = duration_ns.map(|d| jobs.iter().map(|j| j.startdelay_ns + d).max().unwrap());
        let what = format!("{what}, phase {phase} ({} jobs, interval {interval_ns} ns, duration {duration_ns:?}, qd {qd})", jobs.len());
        let before_ns = sim.now_ns();
        let held = held();
        reset_peak();
        match sim.start_jobs(&jobs, interval_ns) {
            Err(e) => {
                let e = e.workload().expect("a workload field refused");
                let over = phase_ns.is_some_and(|d| d.div_ceil(interval_ns) > CASE_SERIES_LIMIT);
                assert!(over && e.field.ends_with("interval_ns") && e.message.contains("use an interval of at least"), "{what}: refused: {e}");
                refused += 1;
                continue;
            }
            Ok(()) => assert!(phase_ns.is_none_or(|d| d.div_ceil(interval_ns) <= CASE_SERIES_LIMIT), "{what}: started with too many intervals"),
        }
        let Ran { report: r, series_error, peak_bytes } = run_phase(&mut sim, &mut rng, held);
        ran += 1;
        // The series: never past its limit; a timed phase that ran to its end holds exactly its duration.
        let intervals = (r.first_interval + r.ios.len()) as u64;
        assert!(intervals <= CASE_SERIES_LIMIT, "{what}: {intervals} intervals");
        assert_eq!(r.snapshots.len(), r.ios.len() + 1, "{what}");
        let timed_only = duration_ns.is_some() && jobs.iter().all(|j| j.workload.number_ios.is_none());
        if r.complete && timed_only {
            assert_eq!(intervals, r.duration_ns.div_ceil(interval_ns), "{what}");
        }
        if let Some(e) = &series_error {
            assert!(!timed_only, "{what}: a timed phase stopped at its series limit: {e}");
            assert!(e.contains("--interval"), "{what}: {e}");
            assert_eq!(intervals, CASE_SERIES_LIMIT, "{what}: stopped at the limit: {e}");
            stopped += 1;
        }
        assert!(clock_moved(&r, ctrl_ns, qd), "{what}: {} commands in {} ns at {ctrl_ns} ns each", r.total_ios, r.duration_ns);
        assert!(r.total_ios == 0 || sim.now_ns() > before_ns, "{what}: {} commands and the clock stood still", r.total_ios);
        if let Some(d) = phase_ns.filter(|_| r.complete && timed_only) {
            assert!(sim.now_ns() >= before_ns + d, "{what}: a timed phase ended early");
        }
        // Memory.
        let buffer_programs = geo.buffer_units as u64 / geo.units_per_program as u64;
        let bound = memory_bound(CASE_SERIES_LIMIT, qd, jobs.len() as u64, geo.dies as u64, buffer_programs);
        assert!(peak_bytes <= bound, "{what}: the phase allocated {peak_bytes} bytes, above the bound {bound}");
        drop(r);
        if sim.check_space().is_err() {
            break;
        }
        if chance(&mut rng, 300) {
            let before = sim.now_ns();
            let idle_ns = [1, NS_PER_S, 86_400 * NS_PER_S][rng.below(3) as usize];
            sim.idle(idle_ns).unwrap();
            assert_eq!(sim.now_ns(), before + idle_ns, "{what}: idle time");
        }
    }
    (ran, refused, stopped)
}

#[test]
fn accepted_inputs_run_in_bounded_memory_and_time_advances() {
    let first = env_u64("SSDSIM_BOUNDS_SEED", 1);
    let (mut ran, mut refused, mut stopped) = (0, 0, 0);
    for seed in first..first + env_u64("SSDSIM_BOUNDS_CASES", 300) {
        let (r, f, s) = run_case(seed);
        (ran, refused, stopped) = (ran + r, refused + f, stopped + s);
    }
    eprintln!("{ran} phases ran ({stopped} stopped at their series limit), {refused} refused (more intervals than the limit)");
    // The cases reach each outcome.
    assert!(ran > 0 && refused > 0 && stopped > 0, "ran {ran}, refused {refused}, stopped {stopped}");
}

#[test]
fn profiles_that_crashed_or_hung_are_refused() {
    let small = [("blocks_per_plane", "64"), ("user_capacity_bytes", "7GiB")];
    let zero_times: Vec<(&str, &str)> = ["t_read_us", "t_prog_us", "t_erase_us", "controller_cmd_us", "slc_t_prog_us", "slc_t_read_us"].iter().map(|k| (*k, "0")).collect();
    let fast_links = vec![("channel_mbps", "1e308"), ("host_link_mbps", "1e308")];
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (vec![("controller_cmd_us", "1e308")], "controller_cmd_us"),
        (vec![("t_prog_us", "1e15")], "t_prog_us"),
        (vec![("host_link_mbps", "1e-12")], "host_link_mbps"),
        (vec![("t_read_us", "1e12")], "t_read_us"),
        (zero_times.clone(), "t_read_us"),
        (fast_links.clone(), "channel_mbps"),
        ([zero_times, fast_links].concat(), "t_read_us"),
        (vec![("gc_policy", "d-choices"), ("gc_d_choices", "1000000000")], "gc_d_choices"),
    ];
    for (pairs, key) in cases {
        let mut cfg = Config::default();
        for (k, v) in small.iter().chain(&pairs) {
            cfg.set(k, v).unwrap();
        }
        let e = cfg.validate().unwrap_err();
        assert_eq!(e.key, key, "{pairs:?}: {e}");
        assert!(e.message.contains(" to ") && e.message.contains("expected") || key == "gc_d_choices", "{pairs:?}: {e}");
        assert!(Simulation::new(&cfg, 1).is_err());
    }
}

/// A slow drive (1 s programs, one die) whose writes complete seconds apart.
fn slow_drive() -> Config {
    let mut cfg = Config::default();
    for (k, v) in [("channels", "1"), ("dies_per_channel", "1"), ("planes_per_die", "1"), ("blocks_per_plane", "16"), ("pages_per_block", "4"), ("page_size_bytes", "4096"), ("user_capacity_bytes", "16KiB"), ("write_buffer_bytes", "4096"), ("t_prog_us", "1e6")] {
        cfg.set(k, v).unwrap();
    }
    cfg
}

#[test]
fn the_bound_catches_what_it_is_for() {
    // 200 writes of a second each, in 1 ms intervals: 200,000 intervals. With the default
    // limit the series holds them all, far beyond the memory the case bound allows for a
    // limit of CASE_SERIES_LIMIT...
    let w = Workload { number_ios: Some(200), interval_ns: NS_PER_MS, qd: 1, ..Workload::default() };
    let mut sim = Simulation::new(&slow_drive(), 1).unwrap();
    let held = held();
    reset_peak();
    let r = sim.run_workload(&w).unwrap();
    let peak = peak_since(held);
    assert!(r.ios.len() > 190_000, "{} intervals", r.ios.len());
    assert!(peak > memory_bound(CASE_SERIES_LIMIT, 1, 1, 1, 1), "{peak} bytes");
    // ...and with that limit it stops there, saying what to change.
    let mut sim = Simulation::new(&slow_drive(), 1).unwrap();
    sim.set_series_limit(CASE_SERIES_LIMIT);
    let e = sim.run_workload(&w).unwrap_err().workload().cloned().unwrap();
    assert_eq!(e.field, "interval_ns");
    assert!(e.message.contains("3000 intervals of 0.001 s") && e.message.contains("--interval"), "{e}");
    // A timed phase of more intervals than the limit is refused before it starts.
    let timed = Workload { duration_ns: Some(4 * NS_PER_S), number_ios: None, ..w };
    let e = sim.start_workload(&timed).unwrap_err().workload().cloned().unwrap();
    assert_eq!(e.field, "interval_ns");
    assert!(e.message.contains("4000 intervals") && e.message.contains("interval of at least 0.0013333"), "{e}");
    // A timed phase keeps its duration however late its writes complete.
    sim.start_workload(&Workload { duration_ns: Some(2 * NS_PER_S), qd: 64, ..timed }).unwrap();
    sim.run_to_end();
    assert!(sim.check_series().is_ok());
    let r = sim.finish_phase();
    assert_eq!((r.ios.len(), r.snapshots.len()), (2000, 2001));
    // The clock check holds for the run (commands of 11 µs of controller time) and fails
    // for the same commands in a phase whose clock stood still.
    let ctrl_ns = ssdsim::time::us_to_ns(slow_drive().controller_cmd_us);
    assert!(clock_moved(&r, ctrl_ns, 64) && r.total_ios > 64);
    assert!(!clock_moved(&PhaseReport { duration_ns: 0, ..r }, ctrl_ns, 64));
}
