//! Workload dicts (`Simulator.start_workload`'s keys, declared and checked in
//! `ssdsim::workload::keys`) turned into `ssdsim::workload`'s [`Workload`] and
//! [`WorkloadJob`]s; errors name the key.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use ssdsim::time::{s_to_ns, NS_PER_S};
use ssdsim::workload::keys::key_message;
use ssdsim::workload::{BlockSize, Direction, DirectionMix, Distribution, KeyScope, Placement, PlacementSelect, SchemeEntry, Workload, WorkloadJob, Zbd, Zone};

pub(crate) fn key_err(key: &str, msg: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(key_message(key, msg))
}

/// A workload dict's values, taken key by key; errors name the key.
pub(crate) struct WorkloadDict<'a, 'py>(pub(crate) &'a Bound<'py, PyDict>);

impl WorkloadDict<'_, '_> {
    pub(crate) fn get<T: for<'a, 'py> FromPyObject<'py>>(&self, key: &str, what: &str) -> PyResult<Option<T>> {
        match self.0.get_item(key)? {
            None => Ok(None),
            Some(v) if v.is_none() => Ok(None),
            Some(v) => v.extract::<T>().map(Some).map_err(|_| key_err(key, format!("expected {what}, got {}", v.repr().map(|r| r.to_string()).unwrap_or_default()))),
        }
    }

    fn f64(&self, key: &str) -> PyResult<Option<f64>> {
        self.get::<f64>(key, "a number")
    }

    fn u64(&self, key: &str) -> PyResult<Option<u64>> {
        self.get::<u64>(key, "a whole number >= 0")
    }

    /// Seconds as ns (a finite number >= 0).
    fn seconds(&self, key: &str) -> PyResult<Option<u64>> {
        match self.f64(key)? {
            None => Ok(None),
            Some(s) if s.is_finite() && s >= 0.0 && s < 1.8e10 => Ok(Some(s_to_ns(s))),
            Some(s) => Err(key_err(key, format!("{s} is not a time in seconds >= 0"))),
        }
    }
}

/// Refuses a key of `d` that `scope` does not take (the message names the keys it takes).
pub(crate) fn check_keys(d: &Bound<'_, PyDict>, scope: KeyScope) -> PyResult<()> {
    for k in d.keys() {
        let k: String = k.extract().map_err(|_| PyValueError::new_err("workload keys must be strings"))?;
        scope.check(&k).map_err(PyValueError::new_err)?;
    }
    Ok(())
}

/// The jobs of `{"jobs": [job dict, ...], "interval_s": S}` and the series interval [ns];
/// errors name the job (`jobs[i]`) and key.
pub(crate) fn jobs_from_dict(d: &Bound<'_, PyDict>) -> PyResult<(Vec<WorkloadJob>, u64)> {
    check_keys(d, KeyScope::JobsPhase)?;
    let w = WorkloadDict(d);
    let interval_ns = w.seconds("interval_s")?.unwrap_or(NS_PER_S);
    let list = d.get_item("jobs")?.ok_or_else(|| key_err("jobs", "missing"))?;
    let list = list.downcast::<pyo3::types::PyList>().map_err(|_| key_err("jobs", "expected a list of job dicts"))?;
    let mut jobs = Vec::with_capacity(list.len());
    for (i, jd) in list.iter().enumerate() {
        let jd = jd.downcast_into::<PyDict>().map_err(|_| key_err(&format!("jobs[{i}]"), "expected a dict of workload keys"))?;
        let jd = &jd;
        let in_job = |e: PyErr| PyValueError::new_err(format!("jobs[{i}]: {}", e.value(d.py())));
        // Refused before any other key: the message says where it belongs.
        if jd.contains("interval_s")? {
            KeyScope::Job.check("interval_s").map_err(|m| in_job(PyValueError::new_err(m)))?;
        }
        check_keys(jd, KeyScope::Job).map_err(in_job)?;
        let workload = workload_from_dict(jd).map_err(in_job)?;
        let jw = WorkloadDict(jd);
        let name = jw.get::<String>("name", "a string").map_err(in_job)?.unwrap_or_else(|| format!("job{i}"));
        let startdelay_ns = jw.seconds("startdelay_s").map_err(in_job)?.unwrap_or(0);
        let exit_stops = jw.get::<Vec<usize>>("exit_stops", "a list of job indices").map_err(in_job)?.unwrap_or_default();
        jobs.push(WorkloadJob { exit_stops, name, startdelay_ns, workload, flow: None });
    }
    Ok((jobs, interval_ns))
}

/// Builds a [`Workload`] from a workload dict (its keys already checked for a job's).
pub(crate) fn workload_from_dict(d: &Bound<'_, PyDict>) -> PyResult<Workload> {
    let w = WorkloadDict(d);
    let mut out = Workload::default();
    if let Some(v) = w.f64("read_fraction")? {
        out.read_fraction = v;
    }
    if let Some(v) = w.f64("trim_fraction")? {
        out.trim_fraction = v;
    }
    for dir in Direction::ALL {
        let name = dir.name();
        let mut mix = DirectionMix::default();
        let single = w.u64(&format!("{name}_bs_bytes"))?;
        let split = w.get::<Vec<(u64, u32)>>(&format!("{name}_bssplit"), "a list of (bs_bytes, weight) pairs")?;
        match (single, split) {
            (Some(_), Some(_)) => return Err(key_err(&format!("{name}_bssplit"), format!("give {name}_bs_bytes or {name}_bssplit, not both"))),
            (Some(bs), None) => mix.bssplit = vec![BlockSize { bs_bytes: bs, weight: 1 }],
            (None, Some(split)) => mix.bssplit = split.into_iter().map(|(bs_bytes, weight)| BlockSize { bs_bytes, weight }).collect(),
            (None, None) => {}
        }
        if let Some(v) = w.f64(&format!("{name}_random_fraction"))? {
            mix.random_fraction = v;
        }
        if let Some(v) = w.f64(&format!("{name}_rate_iops"))? {
            mix.rate_iops = v;
        }
        mix.ba_bytes = w.u64(&format!("{name}_ba_bytes"))?;
        match dir {
            Direction::Read => out.read = mix,
            Direction::Write => out.write = mix,
            Direction::Trim => out.trim = mix,
        }
    }
    let center_fraction = w.f64("center_fraction")?;
    let dist = w.get::<String>("distribution", "a name")?.unwrap_or_else(|| "uniform".into());
    let (theta, h, dev) = (w.f64("zipf_theta")?, w.f64("pareto_h")?, w.f64("normal_dev_pct")?);
    let zones = w.get::<Vec<(u32, f64)>>("zones", "a list of (access_pct, span_pct) pairs")?;
    // A parameter of another distribution than the one chosen is a mistake, not a no-op.
    let uses: &[&str] = match dist.as_str() {
        "zipf" => &["zipf_theta", "center_fraction"],
        "pareto" => &["pareto_h", "center_fraction"],
        "normal" => &["normal_dev_pct", "center_fraction"],
        "zoned" => &["zones"],
        _ => &[],
    };
    for (key, given) in [("zipf_theta", theta.is_some()), ("pareto_h", h.is_some()), ("normal_dev_pct", dev.is_some()), ("zones", zones.is_some()), ("center_fraction", center_fraction.is_some())] {
        if given && !uses.contains(&key) {
            return Err(key_err(key, format!("does not apply to distribution {dist:?}")));
        }
    }
    let need = |key: &str, v: Option<f64>| v.ok_or_else(|| key_err(key, format!("needed by distribution {dist:?}")));
    out.distribution = match dist.as_str() {
        "uniform" | "random" => Distribution::Uniform,
        "zipf" => Distribution::Zipf { theta: need("zipf_theta", theta)?, center_fraction },
        "pareto" => Distribution::Pareto { h: need("pareto_h", h)?, center_fraction },
        "normal" => Distribution::Normal { dev_pct: need("normal_dev_pct", dev)?, center_fraction },
        "zoned" => {
            let zones = zones.ok_or_else(|| key_err("zones", "needed by distribution \"zoned\""))?;
            Distribution::Zoned { zones: zones.into_iter().map(|(access_pct, span_pct)| Zone { access_pct, span_pct }).collect() }
        }
        other => return Err(key_err("distribution", format!("{other:?} is not one of uniform, zipf, pareto, normal, zoned"))),
    };
    out.random_map = w.get::<bool>("random_map", "True or False")?.unwrap_or(false);
    out.random_every_ios = w.u64("random_every_ios")?.unwrap_or(0);
    out.seq_stride_bytes = w.get::<i64>("seq_stride_bytes", "a whole number of bytes (negative: backwards)")?.unwrap_or(0);
    out.rate_poisson = w.get::<bool>("rate_poisson", "True or False")?.unwrap_or(false);
    if let Some(v) = w.get::<u32>("qd", "a whole number >= 1")? {
        out.qd = v;
    }
    if let Some(v) = w.u64("offset_bytes")? {
        out.offset_bytes = v;
    }
    out.span_bytes = w.u64("span_bytes")?;
    out.duration_ns = w.seconds("duration_s")?;
    out.io_bytes = w.u64("io_bytes")?;
    out.number_ios = w.u64("number_ios")?;
    if let Some(v) = w.seconds("interval_s")? {
        out.interval_ns = v;
    }
    out.thinktime_ns = w.seconds("thinktime_s")?.unwrap_or(0);
    out.thinktime_blocks = w.u64("thinktime_blocks")?.unwrap_or(0);
    out.thinktime_blocks_issued = w.get::<bool>("thinktime_blocks_issued", "True or False")?.unwrap_or(false);
    out.thinktime_iotime_ns = w.seconds("thinktime_iotime_s")?.unwrap_or(0);
    out.rate_iops_total = w.f64("rate_iops_total")?.unwrap_or(0.0);
    out.buffer_compress_pct = w.get::<u32>("buffer_compress_pct", "a whole percentage 0..100")?;
    out.placement = placement(&w)?;
    out.zbd = zbd(&w)?;
    Ok(out)
}

/// The zone keys (`zonemode` "zbd", `zbd_max_open_zones`, `zbd_job_max_open_zones`,
/// `zbd_reset_threshold`, `zbd_reset_frequency`, `zbd_read_beyond_wp`, `zbd_zone_size_bytes`, `zbd_ignore_zone_limits`): None without
/// `zonemode`; the others need it.
fn zbd(w: &WorkloadDict<'_, '_>) -> PyResult<Option<Zbd>> {
    const OPTIONS: [&str; 7] = ["zbd_ignore_zone_limits", "zbd_max_open_zones", "zbd_job_max_open_zones", "zbd_reset_threshold", "zbd_reset_frequency", "zbd_read_beyond_wp", "zbd_zone_size_bytes"];
    match w.get::<String>("zonemode", "a name")?.as_deref() {
        None | Some("none") => {
            if let Some(k) = OPTIONS.into_iter().find(|k| w.0.get_item(k).ok().flatten().is_some()) {
                return Err(key_err(k, "applies only with zonemode \"zbd\""));
            }
            Ok(None)
        }
        Some("zbd") => Ok(Some(Zbd {
            max_open_zones: w.get::<u32>("zbd_max_open_zones", "a whole number of zones >= 0")?.unwrap_or(0),
            job_max_open_zones: w.get::<u32>("zbd_job_max_open_zones", "a whole number of zones >= 0")?.unwrap_or(0),
            reset_threshold: w.f64("zbd_reset_threshold")?.unwrap_or(0.0),
            reset_frequency: w.f64("zbd_reset_frequency")?.unwrap_or(0.0),
            read_beyond_wp: w.get::<bool>("zbd_read_beyond_wp", "True or False")?.unwrap_or(false),
            zone_size_bytes: w.u64("zbd_zone_size_bytes")?.unwrap_or(0),
            ignore_zone_limits: w.get::<bool>("zbd_ignore_zone_limits", "True or False")?.unwrap_or(false),
        })),
        Some(other) => Err(key_err("zonemode", format!("{other:?} is not one of none, zbd"))),
    }
}

/// The placement keys (`placement_ids`, `placement_select`, `placement_scheme`): None when
/// none is given.
fn placement(w: &WorkloadDict<'_, '_>) -> PyResult<Option<Placement>> {
    let ids = w.get::<Vec<u32>>("placement_ids", "a list of placement ids (whole numbers >= 0)")?;
    let select = w.get::<String>("placement_select", "a name")?;
    let scheme = w.get::<Vec<(u64, u64, u32)>>("placement_scheme", "a list of (start_bytes, end_bytes, placement id) triples")?;
    if ids.is_none() && select.is_none() && scheme.is_none() {
        return Ok(None);
    }
    let select = match (select.as_deref().unwrap_or(if scheme.is_some() { "scheme" } else { "roundrobin" }), scheme) {
        ("roundrobin", None) => PlacementSelect::RoundRobin,
        ("random", None) => PlacementSelect::Random,
        ("scheme", Some(entries)) => PlacementSelect::Scheme(entries.into_iter().map(|(start_bytes, end_bytes, id)| SchemeEntry { start_bytes, end_bytes, id }).collect()),
        ("scheme", None) => return Err(key_err("placement_scheme", "needed by placement_select \"scheme\"")),
        ("roundrobin" | "random", Some(_)) => return Err(key_err("placement_scheme", "applies only to placement_select \"scheme\"")),
        (other, _) => return Err(key_err("placement_select", format!("{other:?} is not one of roundrobin, random, scheme"))),
    };
    Ok(Some(Placement { ids: ids.unwrap_or_default(), select }))
}
