//! Workload dicts (`Simulator.start_workload`'s keys) turned into `ssdsim::workload`'s
//! [`Workload`] and [`WorkloadJob`]s; errors name the key.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use ssdsim::time::{s_to_ns, NS_PER_S};
use ssdsim::workload::{BlockSize, Direction, DirectionMix, Distribution, Workload, WorkloadJob, Zone};

/// The keys `Simulator.start_workload` takes (see its docstring), for unknown-key messages.
pub(crate) const WORKLOAD_KEYS: &[&str] = &[
    "read_fraction", "trim_fraction",
    "read_bs_bytes", "read_bssplit", "read_random_fraction", "read_rate_iops", "read_ba_bytes",
    "write_bs_bytes", "write_bssplit", "write_random_fraction", "write_rate_iops", "write_ba_bytes",
    "trim_bs_bytes", "trim_bssplit", "trim_random_fraction", "trim_rate_iops", "trim_ba_bytes",
    "distribution", "zipf_theta", "pareto_h", "normal_dev_pct", "center_fraction", "zones", "random_map",
    "random_every_ios", "seq_stride_bytes", "rate_poisson",
    "qd", "offset_bytes", "span_bytes", "duration_s", "io_bytes", "number_ios", "interval_s",
    "thinktime_s", "thinktime_blocks", "thinktime_blocks_issued", "thinktime_iotime_s",
    "rate_iops_total", "buffer_compress_pct", "name",
];

/// Keys of a job of `{"jobs": [...]}`: a workload's, but the phase has the one series
/// interval, and each job may start late.
pub(crate) fn job_key_allowed(key: &str) -> bool {
    key == "startdelay_s" || key == "exit_stops" || (key != "interval_s" && WORKLOAD_KEYS.contains(&key))
}

/// Keys of a phase of several jobs besides `jobs`.
pub(crate) const JOBS_PHASE_KEYS: &[&str] = &["jobs", "interval_s", "name"];

pub(crate) fn key_err(key: &str, msg: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("workload key {key:?}: {msg}"))
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

/// Refuses a key of `d` that `allowed` does not take, naming the known ones (`known`).
pub(crate) fn check_keys(d: &Bound<'_, PyDict>, allowed: impl Fn(&str) -> bool, known: &[&str]) -> PyResult<()> {
    for k in d.keys() {
        let k: String = k.extract().map_err(|_| PyValueError::new_err("workload keys must be strings"))?;
        if !allowed(&k) {
            let known: Vec<&str> = known.iter().copied().filter(|c| allowed(c)).collect();
            let close = known.iter().filter(|c| c.contains(k.as_str()) || k.contains(**c)).copied().collect::<Vec<_>>();
            let hint = if close.is_empty() { String::new() } else { format!(" (did you mean {}?)", close.join(", ")) };
            return Err(PyValueError::new_err(format!("workload key {k:?}: unknown{hint}; keys: {}", known.join(", "))));
        }
    }
    Ok(())
}

/// The jobs of `{"jobs": [job dict, ...], "interval_s": S}` and the series interval [ns];
/// errors name the job (`jobs[i]`) and key.
pub(crate) fn jobs_from_dict(d: &Bound<'_, PyDict>) -> PyResult<(Vec<WorkloadJob>, u64)> {
    check_keys(d, |k| JOBS_PHASE_KEYS.contains(&k), JOBS_PHASE_KEYS)?;
    let w = WorkloadDict(d);
    let interval_ns = w.seconds("interval_s")?.unwrap_or(NS_PER_S);
    let list = d.get_item("jobs")?.ok_or_else(|| key_err("jobs", "missing"))?;
    let list = list.downcast::<pyo3::types::PyList>().map_err(|_| key_err("jobs", "expected a list of job dicts"))?;
    let mut jobs = Vec::with_capacity(list.len());
    for (i, jd) in list.iter().enumerate() {
        let jd = jd.downcast_into::<PyDict>().map_err(|_| key_err(&format!("jobs[{i}]"), "expected a dict of workload keys"))?;
        let jd = &jd;
        let in_job = |e: PyErr| PyValueError::new_err(format!("jobs[{i}]: {}", e.value(d.py())));
        if jd.contains("interval_s")? {
            return Err(in_job(key_err("interval_s", "the phase has one series interval: give it beside \"jobs\"")));
        }
        check_keys(jd, job_key_allowed, &[WORKLOAD_KEYS, &["startdelay_s", "exit_stops"]].concat()).map_err(in_job)?;
        let workload = workload_from_dict(jd).map_err(in_job)?;
        let jw = WorkloadDict(jd);
        let name = jw.get::<String>("name", "a string").map_err(in_job)?.unwrap_or_else(|| format!("job{i}"));
        let startdelay_ns = jw.seconds("startdelay_s").map_err(in_job)?.unwrap_or(0);
        let exit_stops = jw.get::<Vec<usize>>("exit_stops", "a list of job indices").map_err(in_job)?.unwrap_or_default();
        jobs.push(WorkloadJob { exit_stops, name, startdelay_ns, workload });
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
    Ok(out)
}
