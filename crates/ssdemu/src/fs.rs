//! The FUSE filesystem: a root directory holding the drive's file and its counters file.
//! Reads, writes, fsyncs and hole punches of the drive's file are drive commands; their
//! replies wait in the [`Completer`] for their completion time. The counters file reads as
//! the drive's counters when it was opened.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig, LockOwner, OpenFlags, ReplyAttr,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, WriteFlags,
};
use ssdsim::{CmdKind, Command, UNIT_BYTES};

use crate::completer::{Completer, Pending};
use crate::{counters_json, Drive, COUNTERS_NAME, IMAGE_NAME};

const IMAGE: INodeNo = INodeNo(2);
const COUNTERS: INodeNo = INodeNo(3);
/// How long the kernel may cache names and attributes (they never change).
const TTL: Duration = Duration::from_secs(3600);
/// Background requests the kernel keeps in flight (asynchronous direct I/O counts as such; the
/// kernel's default of 12 would cap the queue depth the host sees).
const MAX_BACKGROUND: u16 = 1024;

pub(crate) struct DriveFs {
    drive: Arc<Drive>,
    completer: Arc<Mutex<Completer>>,
    mounted: SystemTime,
    /// The counters file's text for each open handle (handles from 1; the drive's file is 0).
    counters: Mutex<HashMap<u64, Arc<[u8]>>>,
    next_handle: AtomicU64,
}

impl DriveFs {
    pub(crate) fn new(drive: Arc<Drive>, completer: Arc<Mutex<Completer>>) -> Self {
        DriveFs { drive, completer, mounted: SystemTime::now(), counters: Mutex::default(), next_handle: AtomicU64::new(1) }
    }

    fn attr(&self, ino: INodeNo) -> FileAttr {
        // The counters file's size is 0: it is read with direct I/O, to its end.
        let (kind, perm, size, nlink) = match ino {
            IMAGE => (FileType::RegularFile, 0o600, self.drive.capacity_bytes, 1),
            COUNTERS => (FileType::RegularFile, 0o444, 0, 1),
            _ => (FileType::Directory, 0o755, 0, 2),
        };
        let t = self.mounted;
        FileAttr { ino, size, blocks: size / 512, atime: t, mtime: t, ctime: t, crtime: t, kind, perm, nlink, uid: 0, gid: 0, rdev: 0, blksize: UNIT_BYTES as u32, flags: 0 }
    }

    /// Submits `cmd` to the drive now; returns the wall time of its completion, or None once
    /// the simulator has refused a command (the first refusal is kept for the report).
    fn submit(&self, cmd: Command, bytes: u64) -> Option<Instant> {
        let d = &self.drive;
        let mut st = d.sim.lock().expect("the drive's lock");
        if st.error.is_some() {
            st.counts.errors += 1;
            return None;
        }
        // The time is read under the lock: submissions reach the drive in time order.
        let at = d.clock.sim_ns(Instant::now());
        match st.sim.online_submit(cmd, at) {
            Ok(s) => {
                if s.idle_ns > 0 {
                    st.counts.idle.add(s.idle_ns);
                }
                let c = &mut st.counts.commands;
                match cmd.kind {
                    CmdKind::Read => (c.reads, c.read_bytes) = (c.reads + 1, c.read_bytes + bytes),
                    CmdKind::Write => (c.writes, c.write_bytes) = (c.writes + 1, c.write_bytes + bytes),
                    CmdKind::Trim => (c.trims, c.trim_bytes) = (c.trims + 1, c.trim_bytes + bytes),
                    CmdKind::Flush => c.flushes += 1,
                }
                // The series is not read here: its final intervals are dropped as they come, so
                // memory stays flat however long the emulator runs.
                if c.commands().is_multiple_of(65_536) {
                    st.sim.take_final_intervals();
                }
                Some(d.clock.wall(s.done_ns))
            }
            Err(e) => {
                eprintln!("ssdlab emulate: the simulated drive refused a command ({e}); every later request fails with an I/O error");
                st.error = Some(e.to_string());
                st.counts.errors += 1;
                None
            }
        }
    }

    fn hold(&self, at: Instant, reply: Pending) {
        self.completer.lock().expect("the completer's lock").hold(at, reply);
    }

    fn count_error(&self) {
        self.drive.sim.lock().expect("the drive's lock").counts.errors += 1;
    }

    /// `len` bytes at `offset`, cut at the drive's end; None when it starts past the end.
    fn within(&self, offset: u64, len: u64) -> Option<u64> {
        (offset < self.drive.capacity_bytes).then(|| len.min(self.drive.capacity_bytes - offset))
    }
}

/// The units a read or write of `len` bytes at `offset` touches.
fn touched(kind: CmdKind, offset: u64, len: u64) -> Command {
    let unit = offset / UNIT_BYTES;
    Command { kind, unit, units: (offset + len).div_ceil(UNIT_BYTES) - unit }
}

impl Filesystem for DriveFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Asynchronous direct I/O: a loop device's requests are in flight together instead of
        // one at a time.
        config.add_capabilities(InitFlags::FUSE_ASYNC_DIO).map_err(|_| std::io::Error::other("the kernel's FUSE lacks asynchronous direct I/O (FUSE_ASYNC_DIO)"))?;
        let _ = config.set_max_background(MAX_BACKGROUND);
        let _ = config.set_congestion_threshold(MAX_BACKGROUND);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match (parent, name.to_str()) {
            (INodeNo::ROOT, Some(IMAGE_NAME)) => reply.entry(&TTL, &self.attr(IMAGE), Generation(0)),
            (INodeNo::ROOT, Some(COUNTERS_NAME)) => reply.entry(&TTL, &self.attr(COUNTERS), Generation(0)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match ino {
            INodeNo::ROOT | IMAGE | COUNTERS => reply.attr(&TTL, &self.attr(ino)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        // The drive's size is fixed; other attributes are not kept.
        if size.is_some_and(|s| s != self.drive.capacity_bytes) {
            reply.error(Errno::EPERM);
        } else {
            reply.attr(&TTL, &self.attr(ino));
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if ino == COUNTERS {
            if flags.0 & libc::O_ACCMODE != libc::O_RDONLY {
                reply.error(Errno::EACCES);
                return;
            }
            let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
            let text: Arc<[u8]> = counters_json(&self.drive, &self.completer).into_bytes().into();
            self.counters.lock().expect("the counters' lock").insert(fh, text);
            reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO);
            return;
        }
        if ino != IMAGE {
            reply.error(Errno::EISDIR);
            return;
        }
        // No page cache: every request reaches the drive. Direct writes may run in parallel. No
        // flush request on close(): the emulator's own process holds the file open (under its
        // loop device), and a SIGKILLed process closing it would wait forever for a reply from
        // its own dead threads.
        reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES | FopenFlags::FOPEN_NOFLUSH);
    }

    #[allow(clippy::too_many_arguments)]
    fn read(&self, _req: &Request, ino: INodeNo, fh: FileHandle, offset: u64, size: u32, _flags: OpenFlags, _lock: Option<LockOwner>, reply: ReplyData) {
        if ino == COUNTERS {
            let text = self.counters.lock().expect("the counters' lock").get(&fh.0).cloned();
            match text {
                Some(t) => {
                    let from = (offset as usize).min(t.len());
                    reply.data(&t[from..(from + size as usize).min(t.len())]);
                }
                None => reply.error(Errno::EBADF),
            }
            return;
        }
        let Some(len) = self.within(offset, size as u64).filter(|&n| n > 0) else {
            reply.data(&[]);
            return;
        };
        let Some(at) = self.submit(touched(CmdKind::Read, offset, len), len) else {
            reply.error(Errno::EIO);
            return;
        };
        let mut buf = vec![0u8; len as usize];
        if self.drive.store.read(offset, &mut buf).is_err() {
            self.count_error();
            reply.error(Errno::EIO);
            return;
        }
        self.hold(at, Pending::Read(reply, buf));
    }

    #[allow(clippy::too_many_arguments)]
    fn write(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, offset: u64, data: &[u8], _wf: WriteFlags, _flags: OpenFlags, _lock: Option<LockOwner>, reply: ReplyWrite) {
        if self.within(offset, data.len() as u64) != Some(data.len() as u64) || data.is_empty() {
            reply.error(Errno::ENOSPC);
            return;
        }
        if self.drive.store.write(offset, data).is_err() {
            self.count_error();
            reply.error(Errno::EIO);
            return;
        }
        match self.submit(touched(CmdKind::Write, offset, data.len() as u64), data.len() as u64) {
            Some(at) => self.hold(at, Pending::Write(reply, data.len() as u32)),
            None => reply.error(Errno::EIO),
        }
    }

    fn release(&self, _req: &Request, ino: INodeNo, fh: FileHandle, _flags: OpenFlags, _lock: Option<LockOwner>, _flush: bool, reply: ReplyEmpty) {
        if ino == COUNTERS {
            self.counters.lock().expect("the counters' lock").remove(&fh.0);
        }
        reply.ok();
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock: LockOwner, reply: ReplyEmpty) {
        // Called on close(): not a drive command (fsync is).
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        if ino == COUNTERS {
            reply.ok();
            return;
        }
        match self.submit(Command { kind: CmdKind::Flush, unit: 0, units: 0 }, 0) {
            Some(at) => self.hold(at, Pending::Done(reply)),
            None => reply.error(Errno::EIO),
        }
    }

    fn fallocate(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, offset: u64, length: u64, mode: i32, reply: ReplyEmpty) {
        let dealloc = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE;
        if mode & !(dealloc | libc::FALLOC_FL_KEEP_SIZE) != 0 {
            reply.error(Errno::EOPNOTSUPP);
            return;
        }
        let Some(len) = self.within(offset, length) else {
            reply.ok();
            return;
        };
        if mode & dealloc == 0 {
            // Preallocation: the drive's space is all there.
            reply.ok();
            return;
        }
        // A hole punch (a loop device's discard) or a zeroed range (its write-zeroes) is a
        // TRIM of the units it covers whole; the bytes read as zeros either way.
        if self.drive.store.zero(offset, len).is_err() {
            self.count_error();
            reply.error(Errno::EIO);
            return;
        }
        let first = offset.div_ceil(UNIT_BYTES);
        let end = (offset + len) / UNIT_BYTES;
        if end <= first {
            reply.ok();
            return;
        }
        match self.submit(Command { kind: CmdKind::Trim, unit: first, units: end - first }, len) {
            Some(at) => self.hold(at, Pending::Done(reply)),
            None => reply.error(Errno::EIO),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        if ino != INodeNo::ROOT {
            reply.error(Errno::ENOTDIR);
            return;
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (IMAGE, FileType::RegularFile, IMAGE_NAME),
            (COUNTERS, FileType::RegularFile, COUNTERS_NAME),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let blocks = self.drive.capacity_bytes / UNIT_BYTES;
        reply.statfs(blocks, 0, 0, 2, 0, UNIT_BYTES as u32, 255, UNIT_BYTES as u32);
    }
}
