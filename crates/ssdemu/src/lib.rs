//! # ssdemu — a simulated drive as a real block device
//!
//! A FUSE filesystem holding one file, the drive, of the simulated drive's capacity. Every
//! read, write, fsync (a flush) and hole punch (a TRIM: a loop device's discard) of that file
//! goes through an online [`ssdsim::Simulation`] ([`ssdsim::online`]) and is answered when
//! the wall clock reaches the command's simulated completion time; a loop device with direct
//! I/O over the file (set up by the caller) makes it a block device whose queue depth is
//! what the host has in flight, and whose idle time is the drive's idle time.
//!
//! Time: simulated time runs with the wall clock from the mount, `slowdown` times slower
//! ([`Clock`]: wall = start + slowdown × simulated time since the start). A request is
//! submitted at the simulated time its arrival maps to; its reply is sent at its completion's
//! wall time (late by the thread's wake-up, never early: [`Sent`] counts how late). Data is
//! kept per [`DataMode`].
//!
//! Counters: the file [`COUNTERS_NAME`] beside the drive's file reads as a JSON object of the
//! drive's internal counters at the moment it is opened ([`Emulator::counters_json`]), so a
//! program reads them from the device's filesystem as it reads a real drive's log pages.
//!
//! Sizes are bytes; the simulator's unit is 4 KiB ([`ssdsim::UNIT_BYTES`]): a read or write
//! covers the units it touches, a TRIM the units it covers whole.

mod completer;
mod fs;
pub mod store;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ssdsim::time::Ns;
use ssdsim::replay::ReplayCounts;
use ssdsim::Simulation;

pub use completer::Sent;
use store::Store;

/// Name of the drive's file in the mounted filesystem.
pub const IMAGE_NAME: &str = "drive.img";
/// Name of the drive's counters file (JSON) in the mounted filesystem.
pub const COUNTERS_NAME: &str = "counters.json";
/// Version of the counters file's layout.
pub const COUNTERS_FORMAT: u32 = 3;

/// Where the drive's data is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataMode {
    /// Nowhere: reads return zeros (timing only; a filesystem on it will not work).
    None,
    /// In memory, allocated as written.
    Memory,
    /// In a new sparse file at this path (removed when the emulator stops).
    File(PathBuf),
}

/// Wall time ↔ simulated time: from `start`, simulated time runs `slowdown` times slower than
/// the wall clock (1: at its rate).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// Wall time of `sim_start_ns`.
    start: Instant,
    /// Simulated time at `start` [ns].
    sim_start_ns: Ns,
    /// Wall seconds per simulated second (≥ 1).
    slowdown: f64,
}

impl Clock {
    /// Simulated time at wall time `at` [ns] (the start's for an earlier time).
    pub fn sim_ns(&self, at: Instant) -> Ns {
        self.sim_start_ns + (at.saturating_duration_since(self.start).as_nanos() as f64 / self.slowdown) as Ns
    }

    /// Wall time of simulated time `sim_ns`.
    pub fn wall(&self, sim_ns: Ns) -> Instant {
        self.start + Duration::from_nanos((sim_ns.saturating_sub(self.sim_start_ns) as f64 * self.slowdown) as u64)
    }
}

/// How the emulator serves: FUSE threads and how many times slower than simulated the drive
/// runs on the wall clock.
#[derive(Clone, Copy, Debug)]
pub struct Serving {
    /// FUSE threads (≥ 1).
    pub threads: usize,
    /// Wall seconds per simulated second, in [1, [`MAX_SLOWDOWN`]]: every time of the drive
    /// (latencies, idle delays) takes this many times longer on the wall clock.
    pub slowdown: f64,
}

/// The largest slowdown: a simulated second in at most 1000 wall seconds.
pub const MAX_SLOWDOWN: f64 = 1000.0;

/// What the emulator has served: commands and bytes by kind, and requests answered with an
/// I/O error (the simulator refused them, or the data store failed).
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub commands: ReplayCounts,
    pub errors: u64,
    pub idle: Idle,
}

/// The idle gaps the host left the drive, as the simulator idled them before each command
/// ([`ssdsim::Submitted::idle_ns`]: from the later of its last completion and its last
/// submission to the next submission), in the drive's time. By length, in the buckets of
/// [`completer::LATE_BOUNDS_NS`]: `gaps[i]` gaps and their sum `ns[i]` [ns]. Cumulative: the
/// difference of two is the gaps that ended between them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Idle {
    pub gaps: [u64; completer::LATE_BOUNDS_NS.len() + 1],
    pub ns: [u64; completer::LATE_BOUNDS_NS.len() + 1],
}

impl Idle {
    pub(crate) fn add(&mut self, gap_ns: u64) {
        let i = completer::bucket(gap_ns);
        self.gaps[i] += 1;
        self.ns[i] += gap_ns;
    }
}

/// The simulated drive and what the FUSE threads share.
pub(crate) struct Drive {
    pub(crate) sim: Mutex<DriveState>,
    pub(crate) store: Store,
    pub(crate) capacity_bytes: u64,
    pub(crate) clock: Clock,
}

pub(crate) struct DriveState {
    pub(crate) sim: Simulation,
    pub(crate) counts: Counts,
    /// The first error the simulator gave (later requests fail the same way).
    pub(crate) error: Option<String>,
}

/// Commands in flight the online drive accepts at once (the kernel's FUSE and loop queues
/// hold far fewer).
const MAX_OUTSTANDING: u32 = 65_536;

/// A running emulator: the FUSE filesystem mounted, its threads serving it.
pub struct Emulator {
    drive: Arc<Drive>,
    session: Option<fuser::BackgroundSession>,
    completer: Arc<Mutex<completer::Completer>>,
    mountpoint: PathBuf,
    data_file: Option<PathBuf>,
}

impl Emulator {
    /// Mounts the drive's filesystem at `mountpoint` (an empty directory) and serves it on
    /// `threads` FUSE threads; the drive (a fresh simulation) starts now. Needs /dev/fuse and
    /// the right to mount (root).
    pub fn start(mut sim: Simulation, mountpoint: &Path, data: &DataMode, serving: Serving) -> io::Result<Emulator> {
        if !(1.0..=MAX_SLOWDOWN).contains(&serving.slowdown) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("slowdown {} is outside [1, {MAX_SLOWDOWN}]", serving.slowdown)));
        }
        let capacity_bytes = sim.geometry().user_units * ssdsim::UNIT_BYTES;
        sim.start_online(MAX_OUTSTANDING, ssdsim::time::NS_PER_S).map_err(io::Error::other)?;
        let (store, data_file) = match data {
            DataMode::None => (Store::None, None),
            DataMode::Memory => (Store::memory(capacity_bytes), None),
            DataMode::File(p) => (Store::file(p, capacity_bytes)?, Some(p.clone())),
        };
        let clock = Clock { start: Instant::now(), sim_start_ns: sim.now_ns(), slowdown: serving.slowdown };
        let drive = Arc::new(Drive { sim: Mutex::new(DriveState { sim, counts: Counts::default(), error: None }), store, capacity_bytes, clock });
        let completer = Arc::new(Mutex::new(completer::Completer::start()?));
        let fs = fs::DriveFs::new(drive.clone(), completer.clone());
        let threads = serving.threads;
        let mut config = fuser::Config::default();
        config.mount_options = vec![fuser::MountOption::FSName("ssdlab-emu".into()), fuser::MountOption::Subtype("ssdlab".into()), fuser::MountOption::NoAtime];
        config.n_threads = Some(threads.max(1));
        config.clone_fd = true;
        let started = fuser::Session::new(fs, mountpoint, &config).and_then(|s| s.spawn());
        let session = match started {
            Ok(s) => s,
            Err(e) => {
                if let Some(p) = &data_file {
                    let _ = std::fs::remove_file(p);
                }
                return Err(e);
            }
        };
        Ok(Emulator { drive, session: Some(session), completer, mountpoint: mountpoint.to_path_buf(), data_file })
    }

    /// The drive's file (inside the mount).
    pub fn image_path(&self) -> PathBuf {
        self.mountpoint.join(IMAGE_NAME)
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.drive.capacity_bytes
    }

    /// What it has served so far, and the first error the simulator gave.
    pub fn counts(&self) -> (Counts, Option<String>) {
        let st = self.drive.sim.lock().expect("the drive's lock");
        (st.counts, st.error.clone())
    }

    /// How long the host must leave the drive idle before the idle time changes it
    /// ([`ssdsim::device::Device::idle_work_delay_ns`]) [ns, drive time]; None when it never does.
    pub fn idle_work_delay_ns(&self) -> Option<u64> {
        self.drive.sim.lock().expect("the drive's lock").sim.device().idle_work_delay_ns()
    }

    /// Replies sent and how late.
    pub fn sent(&self) -> Sent {
        self.completer.lock().expect("the completer's lock").sent()
    }

    /// The drive's counters now, as the counters file holds them (see [`counters_json`]).
    pub fn counters_json(&self) -> String {
        counters_json(&self.drive, &self.completer)
    }

    /// Unmounts (the caller has detached the loop device: nothing has the file open), ends the
    /// threads and removes a data file. Errors: the unmount failed (the file is still in use).
    pub fn stop(&mut self) -> io::Result<()> {
        if let Some(s) = self.session.take() {
            s.umount_and_join()?;
        }
        self.completer.lock().expect("the completer's lock").stop();
        if let Some(p) = self.data_file.take() {
            std::fs::remove_file(&p)?;
        }
        Ok(())
    }
}

/// The drive's counters at this moment, one JSON object (layout [`COUNTERS_FORMAT`]; bytes,
/// ns and counts, cumulative since the emulator started unless named a level):
///
/// - `sim_time_ns`, `slowdown`: the drive's simulated time now, wall seconds per simulated second;
/// - `host_write_bytes` (host data written, by completion), `nand_write_bytes` (4 KiB units
///   programmed to NAND: host, GC copies, SLC folding, map write-back), `gc_copied_bytes`,
///   `erases`, `fold_bytes`: the work the drive has decided, whether or not its dies have
///   carried it out yet (data in the write buffer, GC queued on the dies), as the simulator's
///   phase totals count it, so that the deltas over a phase are the simulator's figures for it
///   even when GC work decided in it runs on after its end; the same amounts as the dies have
///   carried them out by now under `done` (these lag by the drive's backlog, seconds for a
///   drive deep in GC);
/// - `gc_die_ns` (die time of GC work carried out), levels `free_blocks` and `slc_bytes` (data in
///   the pseudo-SLC cache, not yet folded);
/// - `commands`: reads, writes, trims, flushes and their bytes; `errors` (requests failed);
/// - `replies` (sent), `late_bounds_ns` and `late` (replies by how long after their completion
///   time they were sent: `late[i]` at most `late_bounds_ns[i]`, the last one more), `late_ns`
///   (the sum), `max_late_ns`;
/// - `idle_gaps` and `idle_ns`: the idle gaps the host left the drive ([`Idle`]), a count and
///   the sum [ns] per bucket of `late_bounds_ns`;
/// - `error`: the simulator's first refusal, or null.
fn counters_json(drive: &Drive, completer: &Mutex<completer::Completer>) -> String {
    let (snap, decided, now_ns, counts, error) = {
        let st = drive.sim.lock().expect("the drive's lock");
        // No earlier than the latest submission (the series' boundaries are passed up to it).
        let now_ns = drive.clock.sim_ns(Instant::now()).max(st.sim.online_state().last_submit_ns);
        (st.sim.snapshot_at(now_ns), st.sim.device().media_decided(), now_ns, st.counts, st.error.clone())
    };
    let sent = completer.lock().expect("the completer's lock").sent();
    let unit = ssdsim::UNIT_BYTES;
    let c = counts.commands;
    serde_json::json!({
        "format": COUNTERS_FORMAT,
        "source": "ssdlab-emu",
        "sim_time_ns": now_ns,
        "slowdown": drive.clock.slowdown,
        "capacity_bytes": drive.capacity_bytes,
        "host_write_bytes": snap.host_bytes,
        "nand_write_bytes": decided.nand_units * unit,
        "gc_copied_bytes": decided.gc_units * unit,
        "erases": decided.erases,
        "fold_bytes": decided.fold_units * unit,
        "done": {"nand_write_bytes": snap.nand_units * unit, "gc_copied_bytes": snap.gc_units * unit,
                 "erases": snap.erases, "fold_bytes": snap.fold_units * unit},
        "gc_die_ns": snap.gc_die_done_ns,
        "free_blocks": snap.free_blocks,
        "slc_bytes": snap.slc_units * unit,
        "commands": {"reads": c.reads, "writes": c.writes, "trims": c.trims, "flushes": c.flushes,
                     "read_bytes": c.read_bytes, "write_bytes": c.write_bytes, "trim_bytes": c.trim_bytes},
        "errors": counts.errors,
        "replies": sent.replies,
        "late_bounds_ns": completer::LATE_BOUNDS_NS,
        "late": sent.late.to_vec(),
        "late_ns": sent.late_ns,
        "max_late_ns": sent.max_late_ns,
        "idle_gaps": counts.idle.gaps.to_vec(),
        "idle_ns": counts.idle.ns.to_vec(),
        "error": error,
    })
    .to_string()
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_gaps_are_counted_and_summed_by_length() {
        let mut idle = Idle::default();
        for gap_ns in [500, 1_000, 1_500_000, 2_000_000, 20_000_000_000] {
            idle.add(gap_ns);
        }
        // At most 1 µs; above 1 ms and at most 2 ms; above 10 s.
        let last = completer::LATE_BOUNDS_NS.len();
        assert_eq!((idle.gaps[0], idle.ns[0]), (2, 1_500));
        assert_eq!((idle.gaps[10], idle.ns[10]), (2, 3_500_000));
        assert_eq!((idle.gaps[last], idle.ns[last]), (1, 20_000_000_000));
        assert_eq!(idle.gaps.iter().sum::<u64>(), 5);
    }
}
