//! # ssdemu — a simulated drive as a real block device
//!
//! A FUSE filesystem holding one file, the drive, of the simulated drive's capacity. Every
//! read, write, fsync (a flush) and hole punch (a TRIM: a loop device's discard) of that file
//! goes through an online [`ssdsim::Simulation`] ([`ssdsim::online`]) and is answered when
//! the wall clock reaches the command's simulated completion time; a loop device with direct
//! I/O over the file (set up by the caller) makes it a block device whose queue depth is
//! what the host has in flight, and whose idle time is the drive's idle time.
//!
//! Time: simulated time runs with the wall clock from the mount ([`Clock`]: wall = start +
//! simulated time since the start). A request is submitted at the simulated time its arrival
//! maps to; its reply is sent at its completion's wall time (late by the thread's wake-up, never
//! early). Data is kept per [`DataMode`].
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

/// Wall time ↔ simulated time. Simulated time runs at the wall clock's rate from `start`; a
/// slowdown factor (simulated time running K times slower than the wall clock) would scale
/// both conversions here.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// Wall time of `sim_start_ns`.
    start: Instant,
    /// Simulated time at `start` [ns].
    sim_start_ns: Ns,
}

impl Clock {
    /// Simulated time at wall time `at` [ns] (the start's for an earlier time).
    pub fn sim_ns(&self, at: Instant) -> Ns {
        self.sim_start_ns + at.saturating_duration_since(self.start).as_nanos() as Ns
    }

    /// Wall time of simulated time `sim_ns`.
    pub fn wall(&self, sim_ns: Ns) -> Instant {
        self.start + Duration::from_nanos(sim_ns.saturating_sub(self.sim_start_ns))
    }
}

/// What the emulator has served: commands and bytes by kind, and requests answered with an
/// I/O error (the simulator refused them, or the data store failed).
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub commands: ReplayCounts,
    pub errors: u64,
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
    pub fn start(mut sim: Simulation, mountpoint: &Path, data: &DataMode, threads: usize) -> io::Result<Emulator> {
        let capacity_bytes = sim.geometry().user_units * ssdsim::UNIT_BYTES;
        sim.start_online(MAX_OUTSTANDING, ssdsim::time::NS_PER_S).map_err(io::Error::other)?;
        let (store, data_file) = match data {
            DataMode::None => (Store::None, None),
            DataMode::Memory => (Store::memory(capacity_bytes), None),
            DataMode::File(p) => (Store::file(p, capacity_bytes)?, Some(p.clone())),
        };
        let clock = Clock { start: Instant::now(), sim_start_ns: sim.now_ns() };
        let drive = Arc::new(Drive { sim: Mutex::new(DriveState { sim, counts: Counts::default(), error: None }), store, capacity_bytes, clock });
        let completer = Arc::new(Mutex::new(completer::Completer::start()?));
        let fs = fs::DriveFs::new(drive.clone(), completer.clone());
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

    /// Replies sent and the most one was late.
    pub fn sent(&self) -> Sent {
        self.completer.lock().expect("the completer's lock").sent()
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

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
