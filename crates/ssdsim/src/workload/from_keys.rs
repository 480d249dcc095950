//! Workload dicts (`Simulator.start_workload`'s keys: sizes in bytes, times in seconds,
//! [`keys`](super::keys) declares them) read into [`Workload`]s and [`WorkloadJob`]s: each
//! value's type and range, seconds to ns, the keys that go together. Errors name the key
//! ([`KeyError`]; within a job of a phase of several, the job too). The values the simulator
//! cannot run are refused later, by [`crate::Simulation::start_jobs`], naming the field.

use super::key_value::KeyValue;
use super::keys::{KeyError, KeyScope};
use super::{BlockSize, Direction, DirectionMix, Distribution, Flow, Placement, PlacementSelect, SchemeEntry, Workload, WorkloadJob, Zbd, Zone};
use crate::time::{checked_s_to_ns, Ns, NS_PER_S};

/// The keys of a dict, read value by value; errors name the key.
struct Keys<'a>(&'a [(String, KeyValue)]);

impl Keys<'_> {
    /// Whether the dict holds `key` (even as None).
    fn contains(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }

    /// The value of `key`; None when absent or None.
    fn value(&self, key: &str) -> Option<&KeyValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v).filter(|v| **v != KeyValue::Null)
    }

    /// The value of `key` converted by `conv`; an error saying it expected `what` when it
    /// does not convert.
    fn get<T>(&self, key: &str, what: &str, conv: impl Fn(&KeyValue) -> Option<T>) -> Result<Option<T>, KeyError> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => conv(v).map(Some).ok_or_else(|| KeyError::new(key, format!("expected {what}, got {v}"))),
        }
    }

    fn f64(&self, key: &str) -> Result<Option<f64>, KeyError> {
        self.get(key, "a number", KeyValue::to_f64)
    }

    fn u64(&self, key: &str) -> Result<Option<u64>, KeyError> {
        self.get(key, "a whole number >= 0", KeyValue::to_int)
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, KeyError> {
        self.get(key, "True or False", KeyValue::to_bool)
    }

    fn string(&self, key: &str, what: &str) -> Result<Option<String>, KeyError> {
        self.get(key, what, |v| v.to_str().map(String::from))
    }

    /// Seconds as ns ([`checked_s_to_ns`]).
    fn seconds(&self, key: &str) -> Result<Option<Ns>, KeyError> {
        self.f64(key)?.map(|s| checked_s_to_ns(s).ok_or_else(|| KeyError::new(key, format!("{s} is not a time in seconds >= 0")))).transpose()
    }
}

/// Refuses a key that `scope` does not take (the first, in the dict's order).
fn check_keys(keys: &[(String, KeyValue)], scope: KeyScope) -> Result<(), KeyError> {
    keys.iter().try_for_each(|(k, _)| scope.check(k))
}

/// The jobs of a phase and its series interval [ns] from a workload dict: one workload's
/// keys (a job named by `name`, default "workload"), or `{"jobs": [job dict, ...],
/// "interval_s": S}` (job `i` named by its `name`, default "job{i}"; with `startdelay_s` and
/// `exit_stops`). Errors name the key, within a job its index.
pub fn jobs_from_keys(keys: &[(String, KeyValue)]) -> Result<(Vec<WorkloadJob>, Ns), KeyError> {
    let d = Keys(keys);
    if !d.contains("jobs") {
        let workload = Workload::from_keys(keys)?;
        let name = d.string("name", "a string")?.unwrap_or_else(|| "workload".into());
        let interval_ns = workload.interval_ns;
        return Ok((vec![WorkloadJob { exit_stops: Vec::new(), name, startdelay_ns: 0, workload, flow: None }], interval_ns));
    }
    check_keys(keys, KeyScope::JobsPhase)?;
    let interval_ns = d.seconds("interval_s")?.unwrap_or(NS_PER_S);
    let Some(list) = keys.iter().find(|(k, _)| k == "jobs").and_then(|(_, v)| v.items()) else {
        return Err(KeyError::new("jobs", "expected a list of job dicts"));
    };
    let jobs = list.iter().enumerate().map(|(i, job)| match job {
        KeyValue::Map(job) => job_from_keys(i, job).map_err(|e| e.in_job(i)),
        _ => Err(KeyError::new(format!("jobs[{i}]"), "expected a dict of workload keys")),
    });
    Ok((jobs.collect::<Result<_, _>>()?, interval_ns))
}

/// Job `i` of a phase of several.
fn job_from_keys(i: usize, keys: &[(String, KeyValue)]) -> Result<WorkloadJob, KeyError> {
    let d = Keys(keys);
    // Refused before any other key: the message says where it belongs.
    if d.contains("interval_s") {
        KeyScope::Job.check("interval_s")?;
    }
    check_keys(keys, KeyScope::Job)?;
    let workload = workload_of(&d)?;
    let name = d.string("name", "a string")?.unwrap_or_else(|| format!("job{i}"));
    let startdelay_ns = d.seconds("startdelay_s")?.unwrap_or(0);
    let exit_stops = d.get("exit_stops", "a list of job indices", |v| v.to_list(KeyValue::to_int))?.unwrap_or_default();
    Ok(WorkloadJob { exit_stops, name, startdelay_ns, flow: flow(&d, workload.zbd.is_some())?, workload })
}

/// fio's flow control of a job (`flow`: its weight, 0 = none; `flow_id`; `flow_sleep_s`).
fn flow(d: &Keys<'_>, zbd: bool) -> Result<Option<Flow>, KeyError> {
    let weight = d.get("flow", "a whole number from 0 to 2^32 - 1", KeyValue::to_int::<u32>)?.unwrap_or(0);
    if weight == 0 {
        return match ["flow_id", "flow_sleep_s"].into_iter().find(|k| d.contains(k)) {
            Some(k) => Err(KeyError::new(k, "applies only with a flow weight (flow >= 1)")),
            None => Ok(None),
        };
    }
    let id = d.get("flow_id", "a whole number from 0 to 2^32 - 1", KeyValue::to_int::<u32>)?.unwrap_or(0);
    let sleep_ns = d.seconds("flow_sleep_s")?.unwrap_or(0);
    Ok(Some(Flow { id, weight, sleep_ns, quiesce: sleep_ns > 0 || zbd }))
}

impl Workload {
    /// The workload of a dict of its keys (every key optional; the defaults are
    /// [`Workload::default`]'s). Errors name the key.
    pub fn from_keys(keys: &[(String, KeyValue)]) -> Result<Workload, KeyError> {
        check_keys(keys, KeyScope::Workload)?;
        workload_of(&Keys(keys))
    }
}

/// The workload of a dict whose keys were checked for its place.
fn workload_of(w: &Keys<'_>) -> Result<Workload, KeyError> {
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
        let split = w.get(&format!("{name}_bssplit"), "a list of (bs_bytes, weight) pairs", |v| {
            v.to_list(|pair| {
                let [bs_bytes, weight] = pair.to_array()?;
                Some(BlockSize { bs_bytes: bs_bytes.to_int()?, weight: weight.to_int()? })
            })
        })?;
        match (single, split) {
            (Some(_), Some(_)) => return Err(KeyError::new(format!("{name}_bssplit"), format!("give {name}_bs_bytes or {name}_bssplit, not both"))),
            (Some(bs), None) => mix.bssplit = vec![BlockSize { bs_bytes: bs, weight: 1 }],
            (None, Some(split)) => mix.bssplit = split,
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
    out.distribution = distribution(w)?;
    out.random_map = w.bool("random_map")?.unwrap_or(false);
    out.random_every_ios = w.u64("random_every_ios")?.unwrap_or(0);
    out.seq_stride_bytes = w.get("seq_stride_bytes", "a whole number of bytes (negative: backwards)", KeyValue::to_int)?.unwrap_or(0);
    out.rate_poisson = w.bool("rate_poisson")?.unwrap_or(false);
    if let Some(v) = w.get("qd", "a whole number >= 1", KeyValue::to_int)? {
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
    out.thinktime_blocks_issued = w.bool("thinktime_blocks_issued")?.unwrap_or(false);
    out.thinktime_iotime_ns = w.seconds("thinktime_iotime_s")?.unwrap_or(0);
    out.rate_iops_total = w.f64("rate_iops_total")?.unwrap_or(0.0);
    out.buffer_compress_pct = w.get("buffer_compress_pct", "a whole percentage 0..100", KeyValue::to_int)?;
    out.placement = placement(w)?;
    out.zbd = zbd(w)?;
    Ok(out)
}

/// `distribution` and its parameters (`zipf_theta`, `pareto_h`, `normal_dev_pct`,
/// `center_fraction`, `zones`): a parameter of another distribution than the one chosen is
/// refused, not ignored.
fn distribution(w: &Keys<'_>) -> Result<Distribution, KeyError> {
    let center_fraction = w.f64("center_fraction")?;
    let dist = w.string("distribution", "a name")?.unwrap_or_else(|| "uniform".into());
    let (theta, h, dev) = (w.f64("zipf_theta")?, w.f64("pareto_h")?, w.f64("normal_dev_pct")?);
    let zones = w.get("zones", "a list of (access_pct, span_pct) pairs", |v| {
        v.to_list(|pair| {
            let [access_pct, span_pct] = pair.to_array()?;
            Some(Zone { access_pct: access_pct.to_int()?, span_pct: span_pct.to_f64()? })
        })
    })?;
    let uses: &[&str] = match dist.as_str() {
        "zipf" => &["zipf_theta", "center_fraction"],
        "pareto" => &["pareto_h", "center_fraction"],
        "normal" => &["normal_dev_pct", "center_fraction"],
        "zoned" => &["zones"],
        _ => &[],
    };
    for (key, given) in [("zipf_theta", theta.is_some()), ("pareto_h", h.is_some()), ("normal_dev_pct", dev.is_some()), ("zones", zones.is_some()), ("center_fraction", center_fraction.is_some())] {
        if given && !uses.contains(&key) {
            return Err(KeyError::new(key, format!("does not apply to distribution {dist:?}")));
        }
    }
    let need = |key: &str, v: Option<f64>| v.ok_or_else(|| KeyError::new(key, format!("needed by distribution {dist:?}")));
    Ok(match dist.as_str() {
        "uniform" | "random" => Distribution::Uniform,
        "zipf" => Distribution::Zipf { theta: need("zipf_theta", theta)?, center_fraction },
        "pareto" => Distribution::Pareto { h: need("pareto_h", h)?, center_fraction },
        "normal" => Distribution::Normal { dev_pct: need("normal_dev_pct", dev)?, center_fraction },
        "zoned" => Distribution::Zoned { zones: zones.ok_or_else(|| KeyError::new("zones", "needed by distribution \"zoned\""))? },
        other => return Err(KeyError::new("distribution", format!("{other:?} is not one of uniform, zipf, pareto, normal, zoned"))),
    })
}

/// The zone keys (`zonemode` "zbd", `zbd_max_open_zones`, `zbd_job_max_open_zones`,
/// `zbd_reset_threshold`, `zbd_reset_frequency`, `zbd_read_beyond_wp`, `zbd_zone_size_bytes`,
/// `zbd_ignore_zone_limits`): None without `zonemode`; the others need it.
fn zbd(w: &Keys<'_>) -> Result<Option<Zbd>, KeyError> {
    const OPTIONS: [&str; 7] = ["zbd_ignore_zone_limits", "zbd_max_open_zones", "zbd_job_max_open_zones", "zbd_reset_threshold", "zbd_reset_frequency", "zbd_read_beyond_wp", "zbd_zone_size_bytes"];
    let zones = |key: &str| w.get(key, "a whole number of zones >= 0", KeyValue::to_int);
    match w.string("zonemode", "a name")?.as_deref() {
        None | Some("none") => match OPTIONS.into_iter().find(|k| w.contains(k)) {
            Some(k) => Err(KeyError::new(k, "applies only with zonemode \"zbd\"")),
            None => Ok(None),
        },
        Some("zbd") => Ok(Some(Zbd {
            max_open_zones: zones("zbd_max_open_zones")?.unwrap_or(0),
            job_max_open_zones: zones("zbd_job_max_open_zones")?.unwrap_or(0),
            reset_threshold: w.f64("zbd_reset_threshold")?.unwrap_or(0.0),
            reset_frequency: w.f64("zbd_reset_frequency")?.unwrap_or(0.0),
            read_beyond_wp: w.bool("zbd_read_beyond_wp")?.unwrap_or(false),
            zone_size_bytes: w.u64("zbd_zone_size_bytes")?.unwrap_or(0),
            ignore_zone_limits: w.bool("zbd_ignore_zone_limits")?.unwrap_or(false),
        })),
        Some(other) => Err(KeyError::new("zonemode", format!("{other:?} is not one of none, zbd"))),
    }
}

/// The placement keys (`placement_ids`, `placement_select`, `placement_scheme`): None when
/// none is given.
fn placement(w: &Keys<'_>) -> Result<Option<Placement>, KeyError> {
    let ids = w.get("placement_ids", "a list of placement ids (whole numbers >= 0)", |v| v.to_list(KeyValue::to_int))?;
    let select = w.string("placement_select", "a name")?;
    let scheme = w.get("placement_scheme", "a list of (start_bytes, end_bytes, placement id) triples", |v| {
        v.to_list(|entry| {
            let [start_bytes, end_bytes, id] = entry.to_array()?;
            Some(SchemeEntry { start_bytes: start_bytes.to_int()?, end_bytes: end_bytes.to_int()?, id: id.to_int()? })
        })
    })?;
    if ids.is_none() && select.is_none() && scheme.is_none() {
        return Ok(None);
    }
    let select = match (select.as_deref().unwrap_or(if scheme.is_some() { "scheme" } else { "roundrobin" }), scheme) {
        ("roundrobin", None) => PlacementSelect::RoundRobin,
        ("random", None) => PlacementSelect::Random,
        ("scheme", Some(entries)) => PlacementSelect::Scheme(entries),
        ("scheme", None) => return Err(KeyError::new("placement_scheme", "needed by placement_select \"scheme\"")),
        ("roundrobin" | "random", Some(_)) => return Err(KeyError::new("placement_scheme", "applies only to placement_select \"scheme\"")),
        (other, _) => return Err(KeyError::new("placement_select", format!("{other:?} is not one of roundrobin, random, scheme"))),
    };
    Ok(Some(Placement { ids: ids.unwrap_or_default(), select }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(i: i128) -> KeyValue {
        KeyValue::Int(i)
    }

    fn dict(entries: &[(&str, KeyValue)]) -> Vec<(String, KeyValue)> {
        entries.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    /// The message `jobs_from_keys` refuses `entries` with.
    fn refused(entries: &[(&str, KeyValue)]) -> String {
        jobs_from_keys(&dict(entries)).expect_err("refused").to_string()
    }

    #[test]
    fn values_are_read_with_their_units() {
        let pair = |bs, weight| KeyValue::Tuple(vec![int(bs), int(weight)]);
        let keys = dict(&[
            ("read_fraction", KeyValue::Float(0.25)),
            ("write_bssplit", KeyValue::List(vec![pair(4096, 3), pair(65536, 1)])),
            ("duration_s", int(2)),
            ("qd", KeyValue::Bool(true)),
            ("distribution", KeyValue::Str("zoned".into())),
            ("zones", KeyValue::List(vec![KeyValue::List(vec![int(100), int(100)])])),
            ("span_bytes", KeyValue::Null),
        ]);
        let w = Workload::from_keys(&keys).unwrap();
        assert_eq!(w.read_fraction, 0.25);
        assert_eq!(w.write.bssplit, [BlockSize { bs_bytes: 4096, weight: 3 }, BlockSize { bs_bytes: 65536, weight: 1 }]);
        assert_eq!((w.duration_ns, w.qd, w.span_bytes), (Some(2 * NS_PER_S), 1, None));
        assert_eq!(w.distribution, Distribution::Zoned { zones: vec![Zone { access_pct: 100, span_pct: 100.0 }] });
        let (jobs, interval_ns) = jobs_from_keys(&keys).unwrap();
        assert_eq!((jobs.len(), jobs[0].name.as_str(), interval_ns), (1, "workload", NS_PER_S));
        assert_eq!(jobs[0].workload, w);
    }

    #[test]
    fn a_value_of_the_wrong_type_is_refused_naming_the_key_and_the_value() {
        assert_eq!(refused(&[("read_fraction", KeyValue::Str("x".into()))]), "workload key \"read_fraction\": expected a number, got 'x'");
        assert_eq!(refused(&[("write_bs_bytes", KeyValue::Float(4096.0))]), "workload key \"write_bs_bytes\": expected a whole number >= 0, got 4096.0");
        assert_eq!(refused(&[("random_map", int(1))]), "workload key \"random_map\": expected True or False, got 1");
        let triple = KeyValue::List(vec![KeyValue::Tuple(vec![int(4096), int(1), int(2)])]);
        assert_eq!(refused(&[("write_bssplit", triple)]), "workload key \"write_bssplit\": expected a list of (bs_bytes, weight) pairs, got [(4096, 1, 2)]");
        assert_eq!(refused(&[("jobs", KeyValue::Str("job".into()))]), "workload key \"jobs\": expected a list of job dicts");
    }

    #[test]
    fn a_value_out_of_range_is_refused_naming_the_key() {
        assert_eq!(refused(&[("qd", int(1 << 32))]), "workload key \"qd\": expected a whole number >= 1, got 4294967296");
        assert_eq!(refused(&[("offset_bytes", int(-1))]), "workload key \"offset_bytes\": expected a whole number >= 0, got -1");
        assert_eq!(refused(&[("duration_s", KeyValue::Float(f64::NAN))]), "workload key \"duration_s\": NaN is not a time in seconds >= 0");
        assert_eq!(refused(&[("thinktime_s", KeyValue::Float(2e10))]), "workload key \"thinktime_s\": 20000000000 is not a time in seconds >= 0");
        assert_eq!(refused(&[("distribution", KeyValue::Str("gauss".into()))]), "workload key \"distribution\": \"gauss\" is not one of uniform, zipf, pareto, normal, zoned");
    }

    #[test]
    fn keys_that_do_not_go_together_are_refused() {
        assert_eq!(refused(&[("zipf_theta", KeyValue::Float(1.2))]), "workload key \"zipf_theta\": does not apply to distribution \"uniform\"");
        assert_eq!(refused(&[("distribution", KeyValue::Str("zipf".into()))]), "workload key \"zipf_theta\": needed by distribution \"zipf\"");
        assert_eq!(refused(&[("write_bs_bytes", int(4096)), ("write_bssplit", KeyValue::List(vec![]))]), "workload key \"write_bssplit\": give write_bs_bytes or write_bssplit, not both");
        assert_eq!(refused(&[("zbd_max_open_zones", KeyValue::Null)]), "workload key \"zbd_max_open_zones\": applies only with zonemode \"zbd\"");
        assert_eq!(refused(&[("placement_select", KeyValue::Str("scheme".into()))]), "workload key \"placement_scheme\": needed by placement_select \"scheme\"");
    }

    #[test]
    fn an_unknown_key_is_refused_before_any_value_is_read() {
        let e = refused(&[("read_fraction", KeyValue::Str("x".into())), ("rwmixread", int(70))]);
        assert!(e.starts_with("workload key \"rwmixread\": unknown; keys: read_fraction, "), "{e}");
        assert!(Workload::from_keys(&dict(&[("startdelay_s", int(1))])).is_err(), "a job's key is not a workload's");
        assert_eq!(refused(&[("jobs", KeyValue::List(vec![])), ("qd", int(4))]), "workload key \"qd\": unknown; keys: jobs, interval_s, name");
    }

    #[test]
    fn a_jobs_flow_keys_become_its_flow_and_zbd_quiesces() {
        let job = |entries: &[(&str, KeyValue)]| KeyValue::Map(dict(entries));
        let keys = dict(&[("jobs", KeyValue::List(vec![
            job(&[("flow", int(128)), ("flow_id", int(3)), ("flow_sleep_s", KeyValue::Float(1e-4))]),
            job(&[("flow", int(1)), ("zonemode", KeyValue::Str("zbd".into()))]),
            job(&[]),
        ]))]);
        let (jobs, _) = jobs_from_keys(&keys).unwrap();
        assert_eq!(jobs.iter().map(|j| j.flow).collect::<Vec<_>>(), [
            Some(Flow { id: 3, weight: 128, sleep_ns: 100_000, quiesce: true }),
            Some(Flow { id: 0, weight: 1, sleep_ns: 0, quiesce: true }),
            None,
        ]);
    }

    #[test]
    fn a_key_of_a_job_is_named_with_its_job() {
        let jobs = |job: KeyValue| refused(&[("jobs", KeyValue::List(vec![KeyValue::Map(vec![]), job]))]);
        let job = |entries: &[(&str, KeyValue)]| KeyValue::Map(dict(entries));
        assert_eq!(jobs(job(&[("qd", KeyValue::Str("x".into()))])), "jobs[1]: workload key \"qd\": expected a whole number >= 1, got 'x'");
        assert_eq!(jobs(job(&[("qdd", int(1)), ("interval_s", int(1))])), "jobs[1]: workload key \"interval_s\": the phase has one series interval: give it beside \"jobs\"");
        assert!(jobs(job(&[("qdd", int(1))])).starts_with("jobs[1]: workload key \"qdd\": unknown (did you mean qd?); keys: "));
        assert_eq!(jobs(job(&[("exit_stops", KeyValue::List(vec![int(-1)]))])), "jobs[1]: workload key \"exit_stops\": expected a list of job indices, got [-1]");
        assert_eq!(jobs(job(&[("startdelay_s", int(-1))])), "jobs[1]: workload key \"startdelay_s\": -1 is not a time in seconds >= 0");
        assert_eq!(jobs(job(&[("flow_id", int(2))])), "jobs[1]: workload key \"flow_id\": applies only with a flow weight (flow >= 1)");
        assert!(jobs(job(&[("flow", int(-1))])).starts_with("jobs[1]: workload key \"flow\": expected a whole number"));
        assert_eq!(jobs(int(3)), "workload key \"jobs[1]\": expected a dict of workload keys");
        let two = [("jobs", KeyValue::Tuple(vec![job(&[("name", KeyValue::Str("a".into()))]), job(&[("startdelay_s", KeyValue::Float(0.5))])])), ("interval_s", KeyValue::Float(0.1))];
        let (jobs, interval_ns) = jobs_from_keys(&dict(&two)).unwrap();
        assert_eq!((jobs[0].name.as_str(), jobs[1].name.as_str(), jobs[1].startdelay_ns, interval_ns), ("a", "job1", NS_PER_S / 2, NS_PER_S / 10));
    }
}
