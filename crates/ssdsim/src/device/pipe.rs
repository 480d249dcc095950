//! One phase of a simulation on two threads: the FTL's work of each command (map lookups,
//! writes with the GC they trigger, TRIMs) on one thread, ahead, and the timing model, host
//! loop and series on the other, which takes each FTL result from a ring of words in the
//! order the FTL produced it.
//!
//! Exact where the FTL's decisions do not depend on time: host data striped over the dies
//! (the die of a program is the next in turn, not the die free first), no SLC cache or map
//! cache (their state moves with idle time and command times), no zones, no compression, no
//! FDP handles, and foreground GC that stalls only its plane. Then the FTL sees the same
//! calls in the same order as on one thread, and the timing side gets the same answers:
//! the results are identical ([`Device::pipelinable`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::Device;
use crate::command::{CmdKind, Command};
use crate::config::StallScope;
use crate::ftl::bits::prefetch_ptr;
use crate::ftl::{Ftl, GcWork, NONE};

/// Words in a ring (a power of two) unless asked for more: 512 KiB, thousands of commands,
/// so that neither side waits on the other's short bursts (a GC victim's erase, a run of
/// reads).
pub(crate) const RING_WORDS: usize = 1 << 16;
/// The consumer publishes how far it has read every this many words.
pub(crate) const PUBLISH_EVERY: usize = 1 << 10;
/// Ring lines each side fetches ahead (the producer's for writing), 8 words each: every line
/// crosses between the two cores each time round, and a miss on it would stall either side.
const LINES_AHEAD: usize = 8;
const WORDS_AHEAD: usize = LINES_AHEAD * 8;

/// Spins before a waiting side sleeps.
const SPINS: u32 = 128;
/// A waiting side's sleep [us] once it has spun: the other side fills or empties the ring
/// meanwhile, and the waiting one's core is free (a sleep takes ~50 us or more).
const SLEEP_US: u64 = 20;

/// A position written by one side, read by the other, on a cache line of its own.
#[repr(align(128))]
struct Position(AtomicUsize);

/// A ring of words with one producer and one or more consumers, each of which reads every
/// word (one drive's timing model each, [`crate::sim`]'s shared replay).
pub(crate) struct Ring {
    words: Box<[AtomicU64]>,
    /// Words the producer has published.
    tail: Position,
    /// Words each consumer has read (published every [`PUBLISH_EVERY`] and when it waits):
    /// the producer overwrites none that the slowest has not read.
    heads: Box<[Position]>,
    /// In a timed phase, the commands the host loop is sure to submit (a count of the
    /// phase's commands): the producer makes none beyond. `usize::MAX` otherwise.
    granted: Position,
    /// Set when either side stops early (it panicked, or the consumer is done): the other
    /// stops waiting.
    stopped: AtomicBool,
}

impl Ring {
    /// A ring for `consumers` consumers whose producer may make `granted` commands of the
    /// phase (see [`Rx::grant`]; with more than one consumer, no limit: `u64::MAX`).
    pub(crate) fn new(granted: u64, consumers: usize) -> Arc<Ring> {
        Ring::with_words(granted, consumers, RING_WORDS)
    }

    /// [`Ring::new`] of at least `words` words (rounded up to a power of two).
    pub(crate) fn with_words(granted: u64, consumers: usize, words: usize) -> Arc<Ring> {
        assert!(consumers == 1 || granted == u64::MAX, "a ring's consumers share no grant");
        Arc::new(Ring {
            granted: Position(AtomicUsize::new(usize::try_from(granted).unwrap_or(usize::MAX))),
            words: (0..words.next_power_of_two()).map(|_| AtomicU64::new(0)).collect(),
            tail: Position(AtomicUsize::new(0)),
            heads: (0..consumers).map(|_| Position(AtomicUsize::new(0))).collect(),
            stopped: AtomicBool::new(false),
        })
    }

    /// Tells the other side to stop waiting.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Words the slowest consumer has read.
    fn head(&self) -> usize {
        self.heads.iter().map(|h| h.0.load(Ordering::Acquire)).min().expect("a ring has a consumer")
    }
}

/// Waits a little: spins first, then sleeps.
#[inline(always)]
fn back_off(spins: &mut u32) {
    if *spins < SPINS {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(SLEEP_US));
    }
}

/// Asks the CPU for the cache line of `p` to write it (a hint).
#[inline(always)]
fn prefetch_for_write<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
        _mm_prefetch(p as *const i8, _MM_HINT_ET0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The producing side of a [`Ring`].
pub(crate) struct Tx {
    ring: Arc<Ring>,
    /// The ring's words less one (a power of two less one).
    mask: usize,
    tail: usize,
    head_seen: usize,
    granted_seen: usize,
}

impl Tx {
    pub(crate) fn new(ring: Arc<Ring>) -> Tx {
        let granted_seen = ring.granted.0.load(Ordering::Acquire);
        Tx { mask: ring.words.len() - 1, ring, tail: 0, head_seen: 0, granted_seen }
    }

    /// Waits until the host loop is sure to submit the phase's command number `k` (counted
    /// from 0); false if the consumer stopped first.
    #[inline(always)]
    pub(crate) fn may_make(&mut self, k: u64) -> bool {
        (k as usize) < self.granted_seen || self.wait_grant(k as usize)
    }

    #[cold]
    #[inline(never)]
    fn wait_grant(&mut self, k: usize) -> bool {
        self.publish();
        let mut spins = 0u32;
        loop {
            self.granted_seen = self.ring.granted.0.load(Ordering::Acquire);
            if k < self.granted_seen {
                return true;
            }
            if self.ring.is_stopped() {
                return false;
            }
            // The host loop grants a queue depth's worth of commands ahead: a few
            // microseconds of its work, too short for a sleep.
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(4096) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Appends a word (not yet visible to the consumer: [`Tx::publish`]). Returns false,
    /// having appended nothing, if the consumer has stopped.
    #[inline(always)]
    pub(crate) fn push(&mut self, w: u64) -> bool {
        if self.tail - self.head_seen > self.mask && !self.wait_room() {
            return false;
        }
        if self.tail.is_multiple_of(8) {
            prefetch_for_write(&self.ring.words[(self.tail + WORDS_AHEAD) & self.mask]);
        }
        self.ring.words[self.tail & self.mask].store(w, Ordering::Relaxed);
        self.tail += 1;
        true
    }

    /// Makes every word appended so far visible to the consumer.
    #[inline(always)]
    pub(crate) fn publish(&self) {
        self.ring.tail.0.store(self.tail, Ordering::Release);
    }

    #[cold]
    #[inline(never)]
    fn wait_room(&mut self) -> bool {
        self.publish();
        let mut spins = 0;
        loop {
            self.head_seen = self.ring.head();
            if self.tail - self.head_seen <= self.mask {
                return true;
            }
            if self.ring.is_stopped() {
                return false;
            }
            back_off(&mut spins);
        }
    }

    pub(crate) fn stopped(&self) -> bool {
        self.ring.is_stopped()
    }
}

/// A consuming side of a [`Ring`], with the command the host loop is taking.
pub(crate) struct Rx {
    ring: Arc<Ring>,
    /// Which of the ring's consumers.
    id: usize,
    /// The ring's words less one.
    mask: usize,
    head: usize,
    tail_seen: usize,
    granted: usize,
    /// The host loop takes no command from here on ([`Rx::pause_after`]).
    pause_at: usize,
    /// Command headers taken, the end mark included; whether that came.
    pub(crate) taken: u64,
    pub(crate) ended: bool,
    /// The FTL's free blocks before the command last taken ([`Rx::command`]): what a
    /// snapshot of the series sees.
    pub(crate) free_blocks: u64,
}

impl Rx {
    /// The consumer number `id` of `ring`.
    pub(crate) fn new(ring: Arc<Ring>, id: usize, free_blocks: u64) -> Rx {
        assert!(id < ring.heads.len(), "consumer {id} of a ring of {}", ring.heads.len());
        let granted = ring.granted.0.load(Ordering::Relaxed);
        Rx { mask: ring.words.len() - 1, ring, id, head: 0, tail_seen: 0, granted, pause_at: usize::MAX, taken: 0, ended: false, free_blocks }
    }

    /// Lets the producer make the phase's commands up to number `granted` (exclusive): the
    /// host loop is sure to submit them (a timed phase; see [`crate::sim`]'s `granted`).
    #[inline(always)]
    pub(crate) fn grant(&mut self, granted: u64) {
        let granted = granted as usize;
        if granted > self.granted {
            self.granted = granted;
            self.ring.granted.0.store(granted, Ordering::Release);
        }
    }

    #[inline(always)]
    pub(crate) fn pop(&mut self) -> u64 {
        if self.head == self.tail_seen {
            self.wait_data();
        }
        if self.head.is_multiple_of(8) && self.head + WORDS_AHEAD < self.tail_seen {
            prefetch_ptr(&self.ring.words[(self.head + WORDS_AHEAD) & self.mask]);
        }
        let w = self.ring.words[self.head & self.mask].load(Ordering::Relaxed);
        self.head += 1;
        if self.head.is_multiple_of(PUBLISH_EVERY) {
            self.publish_head();
        }
        w
    }

    #[cold]
    #[inline(never)]
    fn wait_data(&mut self) {
        self.publish_head();
        let mut spins = 0;
        loop {
            self.tail_seen = self.ring.tail.0.load(Ordering::Acquire);
            if self.tail_seen > self.head {
                return;
            }
            if self.ring.is_stopped() {
                // Its last words were published before it stopped.
                self.tail_seen = self.ring.tail.0.load(Ordering::Acquire);
                assert!(self.tail_seen > self.head, "the FTL's thread of a two-thread phase stopped before its last command");
                return;
            }
            back_off(&mut spins);
        }
    }

    /// Tells the producer how far this consumer has read (it does so itself only every
    /// [`PUBLISH_EVERY`] words and when it waits): a host loop whose turn ends
    /// ([`Rx::pause_after`]) leaves no room unclaimed.
    #[inline(always)]
    pub(crate) fn publish_head(&self) {
        self.ring.heads[self.id].0.store(self.head, Ordering::Release);
    }

    /// Whether every word published has been read (once the producer is done).
    pub(crate) fn drained(&self) -> bool {
        self.head == self.ring.tail.0.load(Ordering::Acquire)
    }

    /// Takes the next command's header ([`push_command`]): its kind code, first unit and
    /// units; keeps the free blocks it carries for [`Device::free_blocks`].
    #[inline(always)]
    pub(crate) fn command(&mut self) -> (u8, u64, u64) {
        let head = self.pop();
        let unit = self.pop();
        self.free_blocks = self.pop();
        let code = (head & 0xff) as u8;
        self.taken += 1;
        self.ended |= code == END_CODE;
        (code, unit, head >> 8)
    }

    /// Has the host loop stop before the first command that starts `words` or more words
    /// from here (a thread that runs several drives' host loops in turn: [`crate::sim`]'s
    /// shared replay); `usize::MAX`: never.
    pub(crate) fn pause_after(&mut self, words: usize) {
        self.pause_at = self.head.saturating_add(words);
    }

    /// Whether the host loop stops here ([`Rx::pause_after`]).
    #[inline(always)]
    pub(crate) fn paused(&self) -> bool {
        self.head >= self.pause_at
    }

    /// A map lookup's result ([`push_slot`]).
    #[inline(always)]
    pub(crate) fn slot(&mut self) -> Option<u32> {
        let w = self.pop();
        (w != NONE as u64).then_some(w as u32)
    }

    /// An FTL write's GC work ([`push_work`]).
    #[inline(always)]
    pub(crate) fn work(&mut self) -> GcWork {
        let tag = self.pop();
        if tag == 0 {
            return GcWork::default();
        }
        let mut field = |bit: u64| if tag & bit != 0 { self.pop() } else { 0 };
        GcWork { page_reads: field(1), units_copied: field(2), erases: field(4), foreground_victims: field(8) }
    }
}

/// The kind code of the header [`ahead`](crate::sim) sends when its source has no more
/// commands now (the end of a replay chunk, or a command the chunk refuses): the host loop
/// stops there, as it does on one thread when the source runs dry.
pub(crate) const END_CODE: u8 = u8::MAX;

/// The most words the FTL's thread sends for command `c` ([`crate::sim`]'s `ahead`): its
/// header, and per unit a write's run flag and GC work (tag and four fields), or a read's
/// map lookup; the end mark is a header too.
pub(crate) fn most_words(c: &Command) -> usize {
    let per_unit = match c.kind {
        CmdKind::Write => 6,
        CmdKind::Read => 1,
        CmdKind::Trim | CmdKind::Flush => 0,
    };
    3 + (c.units as usize).saturating_mul(per_unit)
}

/// A command's header: kind code, first unit, units, the FTL's free blocks before it.
#[inline(always)]
pub(crate) fn push_command(tx: &mut Tx, code: u8, unit: u64, units: u64, free_blocks: u64) -> bool {
    tx.push(code as u64 | units << 8) && tx.push(unit) && tx.push(free_blocks)
}

#[inline(always)]
pub(crate) fn push_slot(tx: &mut Tx, slot: Option<u32>) -> bool {
    tx.push(slot.unwrap_or(NONE) as u64)
}

/// GC work as a tag word (a bit per non-zero field) and the non-zero fields.
#[inline(always)]
pub(crate) fn push_work(tx: &mut Tx, w: GcWork) -> bool {
    if w == GcWork::default() {
        return tx.push(0);
    }
    let fields = [w.page_reads, w.units_copied, w.erases, w.foreground_victims];
    let tag = fields.iter().enumerate().fold(0, |t, (i, &f)| t | ((f != 0) as u64) << i);
    tx.push(tag) && fields.iter().filter(|&&f| f != 0).all(|&f| tx.push(f))
}

/// Where [`Device::write`] puts host units, as the FTL's thread follows it: the program
/// being filled (its die, units so far), the next payload, whether a page's units may go to
/// the FTL at once. The same rules as the device's own, for a striped drive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    fill: usize,
    die: usize,
    payload: u64,
    runs: bool,
    dies: usize,
    planes_per_die: usize,
    units_per_page: usize,
    units_per_program: usize,
}

impl Place {
    /// The FTL calls of [`Device::write`] of `n` units from `lpn`, made on `ftl`, their
    /// results sent on `tx`. Returns false if the consumer stopped.
    #[inline(always)]
    pub(crate) fn write(&mut self, ftl: &mut Ftl, lpn: u64, n: u64, tx: &mut Tx) -> bool {
        let (end, upp) = (lpn + n, self.units_per_page);
        let mut u = lpn;
        while u < end {
            let k = ((upp - self.fill % upp) as u64).min(end - u);
            if k > 1 && self.runs {
                let die = if self.fill == 0 { self.next_die() } else { self.die };
                let ok = ftl.write_run(u, k, self.pool(die), self.payload);
                if !tx.push(ok as u64) {
                    return false;
                }
                if ok {
                    self.die = die;
                    self.payload += k;
                    self.filled(k as usize);
                    u += k;
                    continue;
                }
            }
            if self.fill == 0 {
                self.die = self.next_die();
            }
            let work = ftl.write_and_take_gc_work(u, self.pool(self.die), self.payload);
            if !push_work(tx, work) {
                return false;
            }
            self.payload += 1;
            self.filled(1);
            u += 1;
        }
        true
    }

    /// A flush: the device programs a partly filled program as it is ([`Device::flush`]),
    /// so the next unit starts a program on the next die.
    #[inline(always)]
    pub(crate) fn flush(&mut self) {
        self.fill = 0;
    }

    /// The die after the last one, in turn (striped allocation: [`Device::pick_die`]).
    #[inline(always)]
    fn next_die(&self) -> usize {
        if self.die + 1 == self.dies { 0 } else { self.die + 1 }
    }

    /// The plane pool of the program's next unit on `die`.
    #[inline(always)]
    fn pool(&self, die: usize) -> usize {
        die * self.planes_per_die + self.fill / self.units_per_page
    }

    /// `k` more units in the program; a full one is sent (a new one starts).
    #[inline(always)]
    fn filled(&mut self, k: usize) {
        self.fill += k;
        if self.fill == self.units_per_program {
            self.fill = 0;
        }
    }
}

impl Device {
    /// Whether this drive's FTL decisions depend only on the order of the commands, not on
    /// their times, so that a phase can run its FTL on a thread of its own (see the module
    /// doc of [`crate::device::pipe`]).
    pub(crate) fn pipelinable(&self) -> bool {
        self.geo.die_striped
            && self.slc.is_none()
            && self.map.is_none()
            && self.zns.is_none()
            && !self.compressing()
            && self.geo.gc_fg_stall != StallScope::Drive
            && self.ftl.handle_counters().is_empty()
    }

    /// Where the next host unit goes, for the FTL's thread to follow ([`Place::write`]).
    pub(crate) fn place(&self) -> Place {
        Place {
            fill: self.buf.fill_units,
            die: self.buf.die,
            payload: self.next_payload,
            runs: self.write_runs,
            dies: self.geo.dies,
            planes_per_die: self.geo.planes_per_die,
            units_per_page: self.geo.units_per_page,
            units_per_program: self.geo.units_per_program,
        }
    }

    /// The FTL's free blocks, as the host loop's current command sees them: the FTL's own,
    /// or, in a two-thread phase, as the FTL's thread sent them with that command.
    pub(crate) fn free_blocks(&self) -> u64 {
        self.pipe.as_ref().map_or_else(|| self.ftl.free_blocks(), |p| p.free_blocks)
    }

    /// The ring of FTL results, in a two-thread phase.
    #[inline(always)]
    pub(crate) fn pipe(&mut self) -> &mut Rx {
        self.pipe.as_mut().expect("a two-thread phase has its ring")
    }
}

impl Device {
    /// Starts a two-thread phase: the FTL leaves for its own thread, `placeholder` stays
    /// (the host loop must not use it), and the FTL's results come from `rx`.
    pub(crate) fn start_pipe(&mut self, placeholder: Ftl, rx: Rx) -> Ftl {
        self.pipe = Some(rx);
        std::mem::replace(&mut self.ftl, placeholder)
    }

    /// Ends a two-thread phase: the FTL comes back; returns the ring's consumer.
    pub(crate) fn end_pipe(&mut self, ftl: Ftl) -> Rx {
        self.ftl = ftl;
        self.pipe.take().expect("a two-thread phase has its ring")
    }
}

/// An FTL of the smallest drive, to stand in the device while its FTL runs on the FTL's
/// thread of a two-thread phase (nothing uses it).
pub(crate) fn placeholder_ftl() -> Ftl {
    let mut cfg = crate::config::Config::default();
    for (k, v) in [("channels", "1"), ("dies_per_channel", "1"), ("planes_per_die", "1"), ("blocks_per_plane", "16"), ("pages_per_block", "4"), ("page_size_bytes", "4096"), ("user_capacity_bytes", "131072")] {
        cfg.set(k, v).expect("a key of the placeholder drive");
    }
    Ftl::new(&cfg.validate().expect("the placeholder drive is valid"), false)
}
