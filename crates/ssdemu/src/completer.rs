//! Replies held until their wall-clock completion time: one thread sends each when the wall
//! clock reaches it, so a slow command does not hold back the others.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use fuser::{Errno, ReplyData, ReplyEmpty, ReplyWrite};

/// A reply to send later.
pub enum Pending {
    /// A read's data.
    Read(ReplyData, Vec<u8>),
    /// A write of this many bytes.
    Write(ReplyWrite, u32),
    /// A flush (fsync) or TRIM (fallocate).
    Done(ReplyEmpty),
}

impl Pending {
    fn send(self) {
        match self {
            Pending::Read(r, data) => r.data(&data),
            Pending::Write(r, n) => r.written(n),
            Pending::Done(r) => r.ok(),
        }
    }

    /// Answers with an error instead (the drive went away before the reply was due).
    fn fail(self) {
        match self {
            Pending::Read(r, _) => r.error(Errno::EIO),
            Pending::Write(r, _) => r.error(Errno::EIO),
            Pending::Done(r) => r.error(Errno::EIO),
        }
    }
}

struct Entry {
    at: Instant,
    seq: u64,
    reply: Pending,
}

// Earliest first (BinaryHeap is a max-heap); ties in arrival order.
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Entry {}

#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    stop: bool,
    sent: Sent,
}

/// The queue of held replies and its thread.
pub struct Completer {
    shared: Arc<(Mutex<Queue>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

/// Upper bounds of the lateness (and idle gap) buckets [ns]: 1, 2, 5 µs ... 10 s; a last
/// bucket holds the rest.
pub const LATE_BOUNDS_NS: [u64; 22] = [
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000,
    10_000_000, 20_000_000, 50_000_000, 100_000_000, 200_000_000, 500_000_000, 1_000_000_000, 2_000_000_000,
    5_000_000_000, 10_000_000_000,
];

/// Replies sent, and how late after their completion time each was: a count per bucket of
/// [`LATE_BOUNDS_NS`] (`late[i]`: late by at most `LATE_BOUNDS_NS[i]`, and more than the bound
/// before; the last: more than 10 s), the sum [ns] and the most [ns]. Cumulative: the
/// difference of two is what was sent between them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sent {
    pub replies: u64,
    pub late: [u64; LATE_BOUNDS_NS.len() + 1],
    pub late_ns: u64,
    pub max_late_ns: u64,
}

/// The bucket of [`LATE_BOUNDS_NS`] holding `ns`: the first whose bound is at least `ns`.
pub(crate) fn bucket(ns: u64) -> usize {
    LATE_BOUNDS_NS.partition_point(|&b| b < ns)
}

impl Sent {
    fn add(&mut self, late_ns: u64) {
        self.replies += 1;
        self.late[bucket(late_ns)] += 1;
        self.late_ns += late_ns;
        self.max_late_ns = self.max_late_ns.max(late_ns);
    }
}

impl Completer {
    pub fn start() -> std::io::Result<Completer> {
        let shared: Arc<(Mutex<Queue>, Condvar)> = Arc::default();
        let s = shared.clone();
        let thread = std::thread::Builder::new().name("ssdemu-complete".into()).spawn(move || run(&s))?;
        Ok(Completer { shared, thread: Some(thread) })
    }

    /// Sends `reply` once the wall clock reaches `at`: from this thread at once when that time
    /// has passed already (a drive faster than the request's round trip), else from the
    /// completer's thread.
    pub fn hold(&self, at: Instant, reply: Pending) {
        let (lock, cv) = &*self.shared;
        let mut q = lock.lock().expect("the completion queue's lock");
        if q.stop {
            drop(q);
            reply.fail();
            return;
        }
        let now = Instant::now();
        if at <= now {
            q.sent.add((now - at).as_nanos() as u64);
            drop(q);
            reply.send();
            return;
        }
        q.seq += 1;
        let seq = q.seq;
        let earliest = q.heap.peek().is_none_or(|e| at < e.at);
        q.heap.push(Entry { at, seq, reply });
        if earliest {
            cv.notify_one();
        }
    }

    pub fn sent(&self) -> Sent {
        let q = self.shared.0.lock().expect("the completion queue's lock");
        q.sent
    }

    /// Sends every held reply now (with an error: their time has not come) and ends the thread.
    pub fn stop(&mut self) {
        self.shared.0.lock().expect("the completion queue's lock").stop = true;
        self.shared.1.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Completer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(shared: &(Mutex<Queue>, Condvar)) {
    // Wake-ups as close to the deadline as the kernel can: the default 50 us timer slack
    // would be most of a fast read's latency.
    // SAFETY: prctl with an integer argument, on this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let (lock, cv) = shared;
    let mut due = Vec::new();
    let mut q = lock.lock().expect("the completion queue's lock");
    loop {
        let now = Instant::now();
        while q.heap.peek().is_some_and(|e| e.at <= now) {
            let e = q.heap.pop().expect("peeked");
            q.sent.add((now - e.at).as_nanos() as u64);
            due.push(e.reply);
        }
        if !due.is_empty() {
            drop(q);
            for r in due.drain(..) {
                r.send();
            }
            q = lock.lock().expect("the completion queue's lock");
            continue;
        }
        if q.stop {
            for e in std::mem::take(&mut q.heap) {
                e.reply.fail();
            }
            return;
        }
        q = match q.heap.peek().map(|e| e.at - now) {
            Some(wait) => cv.wait_timeout(q, wait).expect("the completion queue's lock").0,
            None => cv.wait(q).expect("the completion queue's lock"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_buckets_run_1_2_5_from_a_microsecond_to_ten_seconds() {
        assert_eq!(LATE_BOUNDS_NS[..4], [1_000, 2_000, 5_000, 10_000]);
        assert_eq!(*LATE_BOUNDS_NS.last().unwrap(), 10_000_000_000);
        let mut s = Sent::default();
        for late in [0, 1_000, 1_001, 4_999, 20_000_000_000] {
            s.add(late);
        }
        assert_eq!((s.late[0], s.late[1], s.late[2], s.late[LATE_BOUNDS_NS.len()]), (2, 1, 1, 1));
        assert_eq!((s.replies, s.max_late_ns), (5, 20_000_000_000));
    }
}
