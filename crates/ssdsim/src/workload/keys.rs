//! The keys a workload is written in (`Simulator.start_workload`'s dict, sizes in bytes,
//! times in seconds), declared once: which keys each place takes ([`KeyScope`]), the refusal
//! of any other, the error naming a key ([`KeyError`]; [`super::from_keys`] reads the
//! values) and the key a refused [`Workload`](super::Workload) field is written as
//! ([`field_key`]).

use super::WorkloadError;

/// The keys of one workload.
pub const WORKLOAD_KEYS: &[&str] = &[
    "read_fraction", "trim_fraction",
    "read_bs_bytes", "read_bssplit", "read_random_fraction", "read_rate_iops", "read_ba_bytes",
    "write_bs_bytes", "write_bssplit", "write_random_fraction", "write_rate_iops", "write_ba_bytes",
    "trim_bs_bytes", "trim_bssplit", "trim_random_fraction", "trim_rate_iops", "trim_ba_bytes",
    "distribution", "zipf_theta", "pareto_h", "normal_dev_pct", "center_fraction", "zones", "random_map",
    "random_every_ios", "seq_stride_bytes", "rate_poisson",
    "qd", "offset_bytes", "span_bytes", "duration_s", "io_bytes", "number_ios", "interval_s",
    "thinktime_s", "thinktime_blocks", "thinktime_blocks_issued", "thinktime_iotime_s",
    "rate_iops_total", "buffer_compress_pct", "placement_ids", "placement_select", "placement_scheme",
    "zonemode", "zbd_max_open_zones", "zbd_job_max_open_zones", "zbd_reset_threshold", "zbd_reset_frequency",
    "zbd_read_beyond_wp", "zbd_zone_size_bytes", "zbd_ignore_zone_limits", "name",
];

/// The keys a job of a phase of several takes besides a workload's.
pub const JOB_ONLY_KEYS: &[&str] = &["startdelay_s", "exit_stops", "flow", "flow_id", "flow_sleep_s"];

/// The keys of a phase of several jobs (`{"jobs": [...], "interval_s": S}`).
pub const JOBS_PHASE_KEYS: &[&str] = &["jobs", "interval_s", "name"];

/// Where a key is written: the keys each place takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyScope {
    /// A workload on its own.
    Workload,
    /// A job of a phase of several: a workload's keys but `interval_s` (the phase has one
    /// series interval), and [`JOB_ONLY_KEYS`].
    Job,
    /// A phase of several jobs.
    JobsPhase,
}

impl KeyScope {
    /// Whether this place takes `key`.
    pub fn allows(self, key: &str) -> bool {
        match self {
            KeyScope::Workload => WORKLOAD_KEYS.contains(&key),
            KeyScope::Job => JOB_ONLY_KEYS.contains(&key) || (key != "interval_s" && WORKLOAD_KEYS.contains(&key)),
            KeyScope::JobsPhase => JOBS_PHASE_KEYS.contains(&key),
        }
    }

    /// The keys this place takes, in declaration order.
    pub fn keys(self) -> Vec<&'static str> {
        let declared: &[&[&'static str]] = match self {
            KeyScope::Workload => &[WORKLOAD_KEYS],
            KeyScope::Job => &[WORKLOAD_KEYS, JOB_ONLY_KEYS],
            KeyScope::JobsPhase => &[JOBS_PHASE_KEYS],
        };
        declared.iter().flat_map(|k| k.iter().copied()).filter(|k| self.allows(k)).collect()
    }

    /// Ok if this place takes `key`; else the error for the user, naming the key, the keys
    /// it resembles and the keys taken.
    pub fn check(self, key: &str) -> Result<(), KeyError> {
        if self == KeyScope::Job && key == "interval_s" {
            return Err(KeyError::new(key, "the phase has one series interval: give it beside \"jobs\""));
        }
        if self.allows(key) {
            return Ok(());
        }
        let known = self.keys();
        let close: Vec<&str> = known.iter().filter(|c| c.contains(key) || key.contains(**c)).copied().collect();
        let hint = if close.is_empty() { String::new() } else { format!(" (did you mean {}?)", close.join(", ")) };
        Err(KeyError::new(key, format!("unknown{hint}; keys: {}", known.join(", "))))
    }
}

/// The message about workload key `key` (`jobs[1].qd` within a job).
pub fn key_message(key: &str, message: impl std::fmt::Display) -> String {
    format!("workload key {key:?}: {message}")
}

/// A key of a workload dict that cannot be read: a key the place does not take, a value of
/// the wrong type or out of range, a key missing or one that does not go with another
/// ([`super::from_keys`]).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyError {
    /// The job of a phase of several whose dict holds the key (None: the dict itself).
    pub job: Option<usize>,
    /// The key as written, e.g. `write_bssplit` or `jobs[0]`.
    pub key: String,
    pub message: String,
}

impl KeyError {
    pub fn new(key: impl Into<String>, message: impl std::fmt::Display) -> Self {
        KeyError { job: None, key: key.into(), message: message.to_string() }
    }

    /// The same error for the dict of job `i` of a phase of several.
    pub fn in_job(self, i: usize) -> Self {
        KeyError { job: Some(i), ..self }
    }
}

impl std::fmt::Display for KeyError {
    /// `workload key "qd": ...`, after `jobs[i]: ` within a job's dict.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(i) = self.job {
            write!(f, "jobs[{i}]: ")?;
        }
        f.write_str(&key_message(&self.key, &self.message))
    }
}

impl std::error::Error for KeyError {}

/// The key a [`Workload`](super::Workload) field is written as (`write.bssplit[0].bs_bytes`
/// is `write_bssplit`, `jobs[1].duration_ns` is `jobs[1].duration_s`).
pub fn field_key(field: &str) -> String {
    if let Some((job, rest)) = field.strip_prefix("jobs[").and_then(|r| r.split_once("].")) {
        return format!("jobs[{job}].{}", field_key(rest));
    }
    match field.split_once('.') {
        Some((dir, rest)) if ["read", "write", "trim"].contains(&dir) => format!("{dir}_{}", rest.split('[').next().unwrap_or(rest)),
        Some(("zbd", rest)) => format!("zbd_{rest}"),
        None if field == "zbd" => "zonemode".into(),
        Some(("placement", rest)) => format!("placement_{}", rest.split(['[', '.']).next().unwrap_or(rest)),
        Some(("distribution", rest)) => match rest {
            "theta" => "zipf_theta".into(),
            "h" => "pareto_h".into(),
            "dev_pct" => "normal_dev_pct".into(),
            other => other.to_string(),
        },
        _ => field.replace("_ns", "_s"),
    }
}

impl WorkloadError {
    /// The message naming the key the field is written as, and the field.
    pub fn key_message(&self) -> String {
        key_message(&field_key(&self.field), format!("{} ({})", self.message, self.field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_place_takes_its_keys_and_names_them_when_refusing() {
        assert!(KeyScope::Workload.allows("interval_s") && !KeyScope::Job.allows("interval_s"));
        assert!(KeyScope::Job.allows("startdelay_s") && !KeyScope::Workload.allows("startdelay_s"));
        assert_eq!(KeyScope::Job.keys().len(), WORKLOAD_KEYS.len() - 1 + JOB_ONLY_KEYS.len());
        let e = KeyScope::Workload.check("bs_bytes").unwrap_err().to_string();
        assert!(e.starts_with("workload key \"bs_bytes\": unknown (did you mean read_bs_bytes, write_bs_bytes, trim_bs_bytes?); keys: read_fraction,"), "{e}");
        assert!(KeyScope::Job.check("interval_s").unwrap_err().message.contains("one series interval"));
        assert_eq!(KeyScope::JobsPhase.check("qd").unwrap_err().to_string(), "workload key \"qd\": unknown; keys: jobs, interval_s, name");
    }

    #[test]
    fn a_field_is_named_by_its_key() {
        let e = WorkloadError { field: "jobs[1].write.bssplit[0].bs_bytes".into(), message: "not a multiple of 512".into() };
        assert_eq!(e.key_message(), "workload key \"jobs[1].write_bssplit\": not a multiple of 512 (jobs[1].write.bssplit[0].bs_bytes)");
        assert_eq!(field_key("distribution.theta"), "zipf_theta");
        assert_eq!(field_key("duration_ns"), "duration_s");
        assert_eq!(field_key("jobs[0].placement.scheme[2].id"), "jobs[0].placement_scheme");
        assert_eq!(field_key("placement.ids[1]"), "placement_ids");
        assert_eq!(field_key("jobs[2].zbd.max_open_zones"), "jobs[2].zbd_max_open_zones");
        assert_eq!(field_key("zbd"), "zonemode");
    }
}
