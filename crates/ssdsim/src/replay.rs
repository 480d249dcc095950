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

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::config::UNIT_BYTES;
use crate::sim::Simulation;
use crate::stats::{LatencyHistogram, Snapshot};
use crate::time::Ns;

/// What a replayed command does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmdKind {
    Read,
    Write,
    Trim,
    Flush,
}

impl CmdKind {
    /// The trace op code (0 read, 1 write, 2 trim, 3 flush; as `ssdtrace::Op::code`).
    pub fn from_code(code: u8) -> Option<CmdKind> {
        Some(match code {
            0 => CmdKind::Read,
            1 => CmdKind::Write,
            2 => CmdKind::Trim,
            3 => CmdKind::Flush,
            _ => return None,
        })
    }

    pub fn code(self) -> u8 {
        match self {
            CmdKind::Read => 0,
            CmdKind::Write => 1,
            CmdKind::Trim => 2,
            CmdKind::Flush => 3,
        }
    }
}

/// One host command in 4 KiB units (`units` = 0 for a flush).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    pub kind: CmdKind,
    pub unit: u64,
    pub units: u64,
}

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

/// One window of `window_commands` completions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Completed commands at the window's end (cumulative).
    pub commands: u64,
    /// Time of the window's last completion, from replay start [ns].
    pub end_ns: Ns,
    /// Data bytes (written + read) of the window's commands.
    pub data_bytes: u64,
    /// Drive counters at the window's end.
    pub snapshot: Snapshot,
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
}

pub(crate) struct ReplayState {
    qd: usize,
    window_commands: u64,
    start_ns: Ns,
    /// Outstanding commands: (completion time, data bytes), earliest first.
    outstanding: BinaryHeap<Reverse<(Ns, u64)>>,
    /// Submission time of the next command when the queue has room.
    next_submit: Ns,
    completed: u64,
    window_bytes: u64,
    last_completion: Ns,
    windows: Vec<Window>,
    start_snapshot: Snapshot,
    counts: ReplayCounts,
    latency: LatencyHistogram,
}

impl Simulation {
    /// Starts a replay at the current time: `qd` commands outstanding, IOPS averaged over
    /// every `window_commands` completions.
    pub fn start_replay(&mut self, qd: u32, window_commands: u64) -> Result<(), String> {
        if self.phase_running() {
            return Err("a phase or replay is already running; finish it first".into());
        }
        if qd == 0 || window_commands == 0 {
            return Err("queue depth and window_commands must be positive".into());
        }
        let now = self.now_ns();
        self.replay = Some(Box::new(ReplayState {
            qd: qd as usize,
            window_commands,
            start_ns: now,
            outstanding: BinaryHeap::with_capacity(qd as usize + 1),
            next_submit: now,
            completed: 0,
            window_bytes: 0,
            last_completion: now,
            windows: Vec::new(),
            start_snapshot: self.snapshot(),
            counts: ReplayCounts::default(),
            latency: LatencyHistogram::default(),
        }));
        Ok(())
    }

    /// Issues `cmds` in order. Errors name the first command outside the drive (index in
    /// `cmds`); commands before it have run.
    pub fn replay(&mut self, cmds: &[Command]) -> Result<(), String> {
        let mut r = self.replay.take().expect("replay() without start_replay()");
        let user = self.geometry().user_units;
        let mut result = Ok(());
        for (i, c) in cmds.iter().enumerate() {
            if c.kind != CmdKind::Flush && (c.units == 0 || c.unit + c.units > user) {
                result = Err(format!("command {i}: {} units at unit {} do not fit the drive's {user} units", c.units, c.unit));
                break;
            }
            if c.kind == CmdKind::Flush {
                self.replay_drain(&mut r);
                let done = self.dev.flush(r.next_submit);
                r.counts.flushes += 1;
                r.next_submit = done;
                self.replay_complete(&mut r, done, 0);
                continue;
            }
            let submit = if r.outstanding.len() < r.qd {
                r.next_submit
            } else {
                let Reverse((t, bytes)) = r.outstanding.pop().unwrap();
                self.replay_complete(&mut r, t, bytes);
                t.max(r.next_submit)
            };
            let bytes = c.units * UNIT_BYTES;
            let (done, data) = match c.kind {
                CmdKind::Write => {
                    r.counts.writes += 1;
                    r.counts.write_bytes += bytes;
                    (self.dev.write(c.unit, c.units, submit), bytes)
                }
                CmdKind::Read => {
                    r.counts.reads += 1;
                    r.counts.read_bytes += bytes;
                    (self.dev.read(c.unit, c.units, submit), bytes)
                }
                CmdKind::Trim => {
                    r.counts.trims += 1;
                    r.counts.trim_bytes += bytes;
                    (self.dev.trim(c.unit, c.units, submit), 0)
                }
                CmdKind::Flush => unreachable!(),
            };
            r.latency.record(done - submit);
            r.next_submit = submit;
            r.outstanding.push(Reverse((done, data)));
        }
        self.replay = Some(r);
        result
    }

    /// Completed commands so far and the simulated time of the latest submission [ns from
    /// replay start].
    pub fn replay_progress(&self) -> (u64, Ns) {
        let r = self.replay.as_ref().expect("replay_progress() without start_replay()");
        (r.completed, r.next_submit - r.start_ns)
    }

    /// Waits for every outstanding command, closes the last (partial) window and returns
    /// the report. The drive's clock moves to the last completion.
    pub fn finish_replay(&mut self) -> ReplayReport {
        let mut r = self.replay.take().expect("finish_replay() without start_replay()");
        self.replay_drain(&mut r);
        if r.completed % r.window_commands != 0 {
            let snap = self.snapshot();
            r.windows.push(Window { commands: r.completed, end_ns: r.last_completion - r.start_ns, data_bytes: r.window_bytes, snapshot: snap });
        }
        self.set_now(r.last_completion.max(r.next_submit));
        ReplayReport {
            start_ns: r.start_ns,
            duration_ns: r.last_completion - r.start_ns,
            window_commands: r.window_commands,
            windows: r.windows,
            start_snapshot: r.start_snapshot,
            counts: r.counts,
            latency: r.latency,
        }
    }

    fn replay_drain(&mut self, r: &mut ReplayState) {
        while let Some(Reverse((t, bytes))) = r.outstanding.pop() {
            self.replay_complete(r, t, bytes);
            r.next_submit = r.next_submit.max(t);
        }
    }

    /// Counts one completion (they arrive in time order) and closes a full window.
    fn replay_complete(&self, r: &mut ReplayState, t: Ns, bytes: u64) {
        r.completed += 1;
        r.window_bytes += bytes;
        r.last_completion = r.last_completion.max(t);
        if r.completed % r.window_commands == 0 {
            r.windows.push(Window { commands: r.completed, end_ns: r.last_completion - r.start_ns, data_bytes: r.window_bytes, snapshot: self.snapshot() });
            r.window_bytes = 0;
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
