//! Trace replay: a stream of host commands issued closed-loop at a queue depth.
//!
//! The `003_*` trace test replays a recorded workload "as fast as the drive goes": trace
//! timestamps are ignored, the host keeps `qd` commands outstanding and submits the next one
//! the moment the earliest outstanding one completes. A **flush** is a barrier: it waits for
//! every earlier command, then the drive programs what its write buffer holds (a drive
//! without power-loss protection must), and only then does the next command start.
//!
//! Two steps, kept apart so a real drive (fio) replays exactly what the simulator replays:
//!
//! 1. [`Mapper::map`] turns a trace record (bytes, any alignment) into a [`Command`] in
//!    4 KiB units inside the target span: the start is rounded down and the end up to 4 KiB
//!    (a 512 B write becomes a 4 KiB write, as the drive's mapping unit would make it);
//!    reads and TRIMs are dropped unless kept; offsets beyond the span are an error unless
//!    a [`Remap`] is chosen.
//! 2. [`Simulation::start_replay`] / [`Simulation::replay`] / [`Simulation::finish_replay`]
//!    run commands in chunks and average IOPS over every `window_commands` completions
//!    (completion order), with the drive's write amplification per window.

use crate::config::UNIT_BYTES;
use crate::error::SimError;
use crate::sim::{ChunkSource, Simulation, Sources, Windows};
use crate::stats::{LatencyHistogram, PhaseReport, Snapshot};
use crate::time::{Ns, NS_PER_S};

pub use crate::command::{CmdKind, Command};
pub use crate::sim::Window;

/// What to do with a record that ends beyond the target span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remap {
    /// Refuse it (the default: a silently folded trace is a different workload).
    Error,
    /// Start modulo the span (shifted back if the command would cross the end).
    Wrap,
    /// Scale offsets by span / trace span, keeping lengths.
    Scale,
}

impl Remap {
    pub fn from_name(name: &str) -> Option<Remap> {
        Some(match name {
            "error" | "none" => Remap::Error,
            "wrap" => Remap::Wrap,
            "scale" => Remap::Scale,
            _ => return None,
        })
    }
}

/// Turns trace records into commands for one target span.
#[derive(Clone, Debug)]
pub struct Mapper {
    /// First unit of the target span and its length [4 KiB units].
    pub span_start_unit: u64,
    pub span_units: u64,
    pub remap: Remap,
    /// End of the trace's address range [bytes] (used by [`Remap::Scale`]).
    pub trace_span_bytes: u64,
    pub keep_reads: bool,
    pub keep_trims: bool,
}

/// Why a record cannot be replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapError(pub String);

impl Mapper {
    /// The command for one record, `None` when it is dropped (a read or TRIM not kept, or a
    /// zero-length data command).
    pub fn map(&self, op: u8, offset_bytes: u64, len_bytes: u64) -> Result<Option<Command>, MapError> {
        let kind = CmdKind::from_code(op).ok_or_else(|| MapError(format!("unknown op code {op}")))?;
        match kind {
            CmdKind::Flush => return Ok(Some(Command { kind, unit: 0, units: 0 })),
            CmdKind::Read if !self.keep_reads => return Ok(None),
            CmdKind::Trim if !self.keep_trims => return Ok(None),
            _ if len_bytes == 0 => return Ok(None),
            _ => {}
        }
        let end_bytes = offset_bytes.checked_add(len_bytes).ok_or_else(|| MapError(format!("offset {offset_bytes} + length {len_bytes} overflows")))?;
        let mut start = offset_bytes / UNIT_BYTES;
        let units = end_bytes.div_ceil(UNIT_BYTES) - start;
        let span = self.span_units;
        if units > span {
            return Err(MapError(format!(
                "a {} of {len_bytes} bytes is longer than the target span of {} bytes",
                kind_name(kind),
                span * UNIT_BYTES
            )));
        }
        if start + units > span {
            match self.remap {
                Remap::Error => {
                    return Err(MapError(format!(
                        "{} at offset {offset_bytes} + {len_bytes} bytes ends beyond the target span of {} bytes; \
                         use --remap wrap or --remap scale, or a larger span",
                        kind_name(kind),
                        span * UNIT_BYTES
                    )))
                }
                Remap::Wrap => start %= span,
                Remap::Scale => {}
            }
        }
        if self.remap == Remap::Scale {
            let trace_units = self.trace_span_bytes.div_ceil(UNIT_BYTES).max(span);
            start = (start as u128 * span as u128 / trace_units as u128) as u64;
        }
        if start + units > span {
            start = span - units;
        }
        Ok(Some(Command { kind, unit: self.span_start_unit + start, units }))
    }
}

fn kind_name(kind: CmdKind) -> &'static str {
    match kind {
        CmdKind::Read => "read",
        CmdKind::Write => "write",
        CmdKind::Trim => "trim",
        CmdKind::Flush => "flush",
    }
}

/// Counts by command kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayCounts {
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub trim_bytes: u64,
}

impl ReplayCounts {
    pub fn commands(&self) -> u64 {
        self.reads + self.writes + self.trims + self.flushes
    }
}

/// The outcome of a replay.
#[derive(Clone, Debug)]
pub struct ReplayReport {
    pub start_ns: Ns,
    /// Replay start to the last completion [ns].
    pub duration_ns: Ns,
    pub window_commands: u64,
    pub windows: Vec<Window>,
    /// Drive counters when the replay started.
    pub start_snapshot: Snapshot,
    pub counts: ReplayCounts,
    /// Latency of data commands and TRIMs (submission to completion).
    pub latency: LatencyHistogram,
    /// The replay as a phase's series: per-interval IOs, bytes and latency per direction
    /// (flushes are not IOs there), counter snapshots; its `duration_ns` runs to the last
    /// completion.
    pub series: PhaseReport,
}

impl Simulation {
    /// Starts a replay at the current time: `qd` commands outstanding, IOPS averaged over
    /// every `window_commands` completions (and a per-second series, as a phase has).
    pub fn start_replay(&mut self, qd: u32, window_commands: u64) -> Result<(), SimError> {
        self.start_replay_with_interval(qd, window_commands, NS_PER_S)
    }

    /// [`Simulation::start_replay`] with the series interval [ns] of the report's `series`.
    pub fn start_replay_with_interval(&mut self, qd: u32, window_commands: u64, interval_ns: Ns) -> Result<(), SimError> {
        self.start_replay_compressed(qd, window_commands, interval_ns, None)
    }

    /// [`Simulation::start_replay_with_interval`] of writes whose data is
    /// `buffer_compress_pct` % compressible (as a workload's
    /// [`crate::Workload::buffer_compress_pct`]: on a profile with `compression_ratio` r > 1
    /// a unit fills (100 − pct) % × r NAND slots, at least one); None: the profile's ratio
    /// holds for every unit.
    pub fn start_replay_compressed(&mut self, qd: u32, window_commands: u64, interval_ns: Ns, buffer_compress_pct: Option<u32>) -> Result<(), SimError> {
        self.check_idle()?;
        let max_qd = crate::workload::MAX_QD;
        if !(1..=max_qd).contains(&qd) {
            return Err(SimError::Invalid(format!("qd {qd}: the queue depth must be 1 to {max_qd} commands")));
        }
        if window_commands == 0 || interval_ns == 0 {
            let arg = if window_commands == 0 { "window_commands" } else { "the series interval" };
            return Err(SimError::Invalid(format!("{arg} 0: must be positive")));
        }
        let slots = crate::workload::slots_per_unit(buffer_compress_pct, self.geometry()).map_err(|e| SimError::Invalid(e.to_string()))?;
        let now = self.now_ns();
        let windows = Windows {
            window_commands,
            start_ns: now,
            completed: 0,
            until_close: window_commands,
            window_bytes: 0,
            last_completion: now,
            windows: Vec::new(),
            flushes: 0,
            start_snapshot: self.snapshot(),
        };
        self.start_replay_host(qd, interval_ns, windows, slots);
        Ok(())
    }

    /// Issues `cmds` in order. Errors name the first command outside the drive (index in
    /// `cmds`); commands before it have run. Also an error once the drive has run out of room
    /// ([`Simulation::check_space`]) or the replay has gone past the last interval of its
    /// series ([`Simulation::check_series`]).
    pub fn replay(&mut self, cmds: &[Command]) -> Result<(), SimError> {
        self.check_not_following()?;
        self.check_space()?;
        let mut h = self.host.take().expect("replay() without start_replay()");
        assert!(h.windows.is_some(), "replay() during a phase");
        let mut src = ChunkSource { cmds, pos: 0, user_units: self.geometry().user_units, error: None };
        if !self.run_host_piped(&mut h, &mut src, cmds.len() as u64) {
            self.run_host(&mut h, &mut Sources::Chunk(&mut src), u64::MAX);
        }
        self.host = Some(h);
        match src.error {
            Some(e) => Err(SimError::Invalid(e)),
            None => self.check_space().and_then(|_| self.check_series()),
        }
    }

    /// Completed commands so far and the simulated time of the latest submission [ns from
    /// replay start].
    pub fn replay_progress(&self) -> (u64, Ns) {
        let h = self.host.as_ref().expect("replay_progress() without start_replay()");
        let w = h.windows.as_ref().expect("replay_progress() during a phase");
        (w.completed, h.last_submit - h.start_ns)
    }

    /// Waits for every outstanding command, closes the last (partial) window and returns
    /// the report. The drive's clock moves to the last completion.
    pub fn finish_replay(&mut self) -> ReplayReport {
        assert!(!self.following(), "finish_replay() of a drive behind a shared replay's leader: catch_up first");
        let mut h = self.host.take().expect("finish_replay() without start_replay()");
        assert!(h.windows.is_some(), "finish_replay() during a phase");
        // The last completions are counted in the windows as the queue drains.
        self.drain(&mut h);
        let mut w = h.windows.take().expect("a replay host has windows");
        if w.until_close != w.window_commands {
            w.close(self);
        }
        let series = self.close_host(*h);
        // The last window ends with the replay: it counts all the work the replay decided, as
        // the series' last interval does.
        if let (Some(last), Some(end)) = (w.windows.last_mut(), series.snapshots.last()) {
            last.snapshot = *end;
        }
        let [r, wr, t] = &series.directions;
        let counts = ReplayCounts {
            reads: r.total_ios,
            writes: wr.total_ios,
            trims: t.total_ios,
            flushes: w.flushes,
            read_bytes: r.total_bytes,
            write_bytes: wr.total_bytes,
            trim_bytes: t.total_bytes,
        };
        ReplayReport {
            start_ns: w.start_ns,
            duration_ns: w.last_completion - w.start_ns,
            window_commands: w.window_commands,
            windows: w.windows,
            start_snapshot: w.start_snapshot,
            counts,
            latency: series.latency.clone(),
            series,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapper(span_units: u64, remap: Remap) -> Mapper {
        Mapper { span_start_unit: 0, span_units, remap, trace_span_bytes: 0, keep_reads: false, keep_trims: true }
    }

    #[test]
    fn rounds_to_4k_units() {
        let m = mapper(100, Remap::Error);
        assert_eq!(m.map(1, 512, 512).unwrap(), Some(Command { kind: CmdKind::Write, unit: 0, units: 1 }));
        assert_eq!(m.map(1, 4096 - 512, 1024).unwrap(), Some(Command { kind: CmdKind::Write, unit: 0, units: 2 }));
        assert_eq!(m.map(1, 8192, 8192).unwrap(), Some(Command { kind: CmdKind::Write, unit: 2, units: 2 }));
    }

    #[test]
    fn drops_reads_and_trims_unless_kept() {
        let mut m = mapper(100, Remap::Error);
        assert_eq!(m.map(0, 0, 4096).unwrap(), None);
        m.keep_trims = false;
        assert_eq!(m.map(2, 0, 4096).unwrap(), None);
        m.keep_reads = true;
        assert_eq!(m.map(0, 0, 4096).unwrap().unwrap().kind, CmdKind::Read);
        assert_eq!(m.map(3, 123, 456).unwrap(), Some(Command { kind: CmdKind::Flush, unit: 0, units: 0 }));
        assert!(m.map(9, 0, 4096).is_err());
    }

    #[test]
    fn beyond_span_is_an_error_unless_remapped() {
        let m = mapper(100, Remap::Error);
        let e = m.map(1, 99 * 4096, 8192).unwrap_err();
        assert!(e.0.contains("--remap"), "{}", e.0);
        let w = mapper(100, Remap::Wrap);
        assert_eq!(w.map(1, 250 * 4096, 4096).unwrap().unwrap().unit, 50);
        assert_eq!(w.map(1, 99 * 4096, 8192).unwrap().unwrap().unit, 98); // shifted back inside
        let mut s = mapper(100, Remap::Scale);
        s.trace_span_bytes = 1000 * 4096;
        assert_eq!(s.map(1, 500 * 4096, 4096).unwrap().unwrap().unit, 50);
        assert_eq!(s.map(1, 999 * 4096, 4096).unwrap().unwrap().unit, 99);
        assert!(s.map(1, 0, 101 * 4096).is_err());
    }

    #[test]
    fn span_offset_is_added() {
        let mut m = mapper(100, Remap::Error);
        m.span_start_unit = 1000;
        assert_eq!(m.map(1, 4096, 4096).unwrap().unwrap().unit, 1001);
    }
}
