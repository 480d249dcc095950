//! The FTL against a reference model: a `BTreeMap` from LPN to the last version written.
//! Shared by `reference_model.rs` (fixed drives, a million operations) and `property.rs`
//! (random valid profiles and operation mixes). Include it with
//! `#[path = "common/model.rs"] mod model;`.
#![allow(dead_code)] // each test file uses some of these

use std::collections::BTreeMap;

use ssdsim::ftl::{Ftl, OutOfSpace, NONE};
use ssdsim::rng::Rng;
use ssdsim::Config;

/// The operations of a run, as shares out of 1000 (the rest of the draws read) and their
/// addresses. `Mix::default()` is the reference-model test's mix.
#[derive(Clone, Debug)]
pub struct Mix {
    /// Shares out of 1000 of writes, idle periods and TRIMs; reads take the rest.
    pub write: u64,
    pub idle: u64,
    pub trim: u64,
    /// Out of 1000 draws, those whose address falls in the hot `hot_fraction` of the span.
    pub hot_draws: u64,
    pub hot_fraction: f64,
    /// Out of 1000 writes, those that continue a sequential run (the unit after the last
    /// one written) instead of drawing an address.
    pub sequential: u64,
    /// Writes go to planes in turn, a program of `units_per_program` units per die (as the
    /// timing model fills programs), instead of to a random plane.
    pub round_robin: bool,
    /// Units a TRIM deallocates at most (a random length 1..=this from its address).
    pub trim_units: u64,
    /// Idle GC: free blocks per plane to collect to (`gc_idle_free_blocks` of an idle
    /// period), victims per idle period at most, and out of 1000 idle periods those after
    /// which idle sorting's region blocks close (the host writes again).
    pub idle_target: usize,
    pub idle_victims: usize,
    pub close_streams: u64,
    /// Compressed data: companion slots per unit (0: none), and out of 1000 writes, those
    /// that fill every companion slot (the others fill none and free their companions).
    pub companions: u64,
    pub companion_writes: u64,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            write: 700,
            idle: 10,
            trim: 90,
            hot_draws: 500,
            hot_fraction: 0.1,
            sequential: 0,
            round_robin: false,
            trim_units: 1,
            idle_target: 6,
            idle_victims: 40,
            close_streams: 500,
            companions: 0,
            companion_writes: 0,
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct ModelRun {
    pub steps: u64,
    pub writes: u64,
    pub trims: u64,
    pub reads: u64,
    pub idle_periods: u64,
    pub gc_runs: u64,
    /// The drive ran out of room (`Ftl::check_space`'s error, its details); the run
    /// stopped there.
    pub out_of_space: Option<(ssdsim::ConfigError, OutOfSpace)>,
}

/// One version per write, for the model and the FTL's payload.
pub struct Model {
    pub map: BTreeMap<u64, u64>,
    pub version: u64,
}

/// Every read of `lpns` returns the model's version (None: unmapped).
pub fn check_reads(ftl: &Ftl, model: &BTreeMap<u64, u64>, lpns: impl Iterator<Item = u64>) -> Result<(), String> {
    for lpn in lpns {
        let (got, want) = (ftl.read_payload(lpn), model.get(&lpn).copied());
        if got != want {
            return Err(format!("read({lpn}) returned version {got:?}, the last written is {want:?}"));
        }
    }
    Ok(())
}

/// Runs `steps` seeded random operations of `mix` on a fresh FTL of `cfg`. After every
/// step: the operation's reads agree with the model, and `Ftl::check_invariants` holds; at
/// the end every LPN (companions too) reads as the model says. Err names the step and what
/// is wrong. A drive that runs out of room stops the run (Ok, with `out_of_space`) after
/// the same checks.
pub fn run_ftl_against_model(cfg: &Config, steps: u64, seed: u64, mix: &Mix) -> Result<ModelRun, String> {
    let geo = cfg.validate().map_err(|e| e.to_string())?;
    let user = geo.user_units;
    let mut ftl = Ftl::with_seed(&geo, true, seed);
    if mix.companions > 0 {
        ftl.enable_companions(mix.companions);
    }
    let mut model: BTreeMap<u64, u64> = BTreeMap::new();
    let mut rng = Rng::new(seed);
    let mut version = 0u64;
    let mut run = ModelRun::default();
    let (mut last_lpn, mut placed) = (0u64, 0u64);
    let hot = ((user as f64 * mix.hot_fraction) as u64).max(1);
    let upp = geo.units_per_program as u64;
    for step in 0..steps {
        run.steps = step + 1;
        let lpn = if rng.below(1000) < mix.hot_draws { rng.below(hot) } else { rng.below(user) };
        let op = rng.below(1000);
        let mut touched: Vec<u64> = Vec::new();
        if op < mix.write {
            let lpn = if rng.below(1000) < mix.sequential { (last_lpn + 1) % user } else { lpn };
            last_lpn = lpn;
            let mut units = vec![lpn];
            if mix.companions > 0 {
                let fill = rng.below(1000) < mix.companion_writes;
                for j in 0..mix.companions {
                    let c = ftl.companion_lpn(lpn, j);
                    if fill {
                        units.push(c);
                    } else if ftl.lookup(c).is_some() {
                        ftl.trim(c);
                        model.remove(&c);
                        touched.push(c);
                    }
                }
            }
            for u in units {
                let pool = if mix.round_robin {
                    // Programs of `upp` units go to the dies in turn; a die's planes share each.
                    let (program, k) = (placed / upp, placed % upp);
                    let die = (program % geo.dies as u64) as usize;
                    die * geo.planes_per_die + (k * geo.planes_per_die as u64 / upp) as usize
                } else {
                    rng.below(geo.pools as u64) as usize
                };
                placed += 1;
                version += 1;
                let slot = ftl.write(u, pool, version);
                if slot == NONE {
                    // Out of room: the write was dropped (the LPN unmapped).
                    model.remove(&u);
                    touched.push(u);
                    let e = ftl.check_space().err().ok_or_else(|| format!("step {step}: write({u}) dropped, yet check_space is Ok"))?;
                    run.out_of_space = Some((e, ftl.out_of_space().cloned().ok_or("check_space failed without details")?));
                    break;
                }
                if ftl.check_space().is_err() {
                    return Err(format!("step {step}: write({u}) stored after the drive ran out of room"));
                }
                model.insert(u, version);
                touched.push(u);
                run.writes += 1;
            }
        } else if op < mix.write + mix.idle {
            // An idle period: victims in the planes in turn, sorting by LBA region if
            // configured; the region blocks stay open across later host writes unless closed.
            let pool = rng.below(geo.pools as u64) as usize;
            for i in 0..mix.idle_victims {
                let p = (pool + i) % geo.pools;
                let did = if geo.gc_idle_sort_regions != 0 { ftl.sort_for_idle(p, mix.idle_target) } else { ftl.collect_for_idle(p, mix.idle_target) };
                if !did && i >= geo.pools {
                    break;
                }
            }
            if geo.gc_idle_sort_regions != 0 && rng.below(1000) < mix.close_streams {
                ftl.close_sort_streams();
            }
            for p in 0..geo.pools {
                let _ = ftl.take_gc_work(p);
            }
            run.idle_periods += 1;
        } else if op < mix.write + mix.idle + mix.trim {
            let n = 1 + rng.below(mix.trim_units.max(1));
            for u in lpn..(lpn + n).min(user) {
                let was_mapped = ftl.trim(u);
                if was_mapped != model.remove(&u).is_some() {
                    return Err(format!("step {step}: trim({u}) found it {}mapped, the model not", if was_mapped { "" } else { "un" }));
                }
                touched.push(u);
                for j in 0..ftl.companions_per_unit() {
                    let c = ftl.companion_lpn(u, j);
                    ftl.trim(c);
                    model.remove(&c);
                }
            }
            run.trims += 1;
        } else {
            touched.push(lpn);
            run.reads += 1;
        }
        check_reads(&ftl, &model, touched.into_iter()).map_err(|e| format!("step {step}: {e}"))?;
        ftl.check_invariants().map_err(|e| format!("step {step}: invariant broken: {e}"))?;
        if run.out_of_space.is_some() {
            break;
        }
    }
    // Every LPN, at the end, holds exactly the model's version.
    let hidden = user * ftl.companions_per_unit();
    check_reads(&ftl, &model, 0..user + hidden).map_err(|e| format!("at the end: {e}"))?;
    let c = ftl.counters();
    if run.out_of_space.is_none() && c.host_units != run.writes {
        return Err(format!("{} host units counted, {} written", c.host_units, run.writes));
    }
    run.gc_runs = c.gc_runs;
    Ok(run)
}
