//! The timed drive: host link, controller, DRAM write buffer, channels and dies around the FTL.
//!
//! Time is modelled by resource reservation: each resource (controller, host link, every
//! channel, every die, every write-buffer slot) records when it is next free [`Ns`]. Host
//! commands are served in submission order; each reserves the resources it needs and so
//! gets an exact completion time without a general event queue.
//!
//! Write path: the controller accepts the command (`controller_cmd_us`), each 4 KiB unit
//! waits for a free write-buffer slot (slots are reused in FIFO order and freed when the
//! NAND program holding them ends), crosses the host link, and is acknowledged once
//! buffered (write-back cache). Buffered units fill one multi-plane program
//! (`planes_per_die × page_size_bytes`) at a time, for the die `die_allocation` picks: the
//! next in turn (`striped`) or the one free first (`earliest`); a full program is sent over
//! the die's channel and programmed. Foreground GC triggered by a write occupies the victim's
//! die (page reads, copyback programs, erase), so programs on that die wait; once the buffer
//! wraps around to slots still waiting on that die, the host stalls. That is how GC
//! becomes visible as low or zero IOPS.
//!
//! A program's data crosses the channel when its die is free (and the data buffered): in
//! the earliest idle stretch of the channel from then that it fits in, not necessarily
//! after the transfers booked before it. A program queued behind GC on its die is booked
//! far ahead; the channel stays free meanwhile for the programs of the other dies on it,
//! as on a drive, whose controller moves a program's data when its die can take it. (Were
//! the channel booked in submission order, a die's GC would idle every die of its channel,
//! and the drive's throughput would depend on whether the dies of a channel happened to
//! collect at the same time.)
//!
//! Reads take the die (`t_read_us`), the channel and the host link; a read of an unmapped
//! (never written or trimmed) unit is answered by the controller alone.
//!
//! Reads beside writes: programs and GC work are booked on a die as soon as they are due,
//! often well ahead of time; a read waits for the die's earlier reads and for the operation
//! in progress when it arrives, but goes before work booked to start later (a controller
//! serves reads first; no program or erase suspend), which moves back by the read's time
//! ([`Device::read_start`]; the buffer space and channel time of the programs it moves keep
//! their booked times, early by at most the reads that went before them). On the channel
//! and the host link each 4 KiB unit's transfer is booked when its data is ready (a read's
//! once sensed, a write's once it has buffer space), after the last booking as in
//! submission order, unless the resource is idle meanwhile in a stretch that a transfer of
//! the *other* direction left when it was booked ahead of its data ([`Gaps`]): a drive (NCQ,
//! NVMe) moves each command's data when it is ready and serves other commands' transfers in
//! between, so a write's data does not wait behind a read still being sensed, nor a read's
//! behind a write waiting for buffer space. The die and link calendars are kept once the
//! drive has served a read (a drive only written has no use for them, and its write path
//! stays as lean as before), and on the link and for reads only the other direction's
//! stretches are used, so that phases of only reads are booked exactly in submission order,
//! as are the link transfers of phases of only writes. The channels' stretches are always
//! kept: programs use those left by any transfer (above); a read, those programs left.
//!
//! A write that covers a unit only partly (sizes or offsets below 4 KiB) is a
//! read-modify-write: a unit that holds data is first read from NAND (die and channel, as a
//! read), merged in the buffer and programmed whole ([`Device::write_partial`]); its data
//! crosses the channel as a read's.

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

use crate::config::{Config, ConfigError, Geometry, StallScope, UNIT_BYTES};
use crate::ftl::{Ftl, GcWork};
use crate::map_cache::{Lookup, MapCache};
use crate::media::{MediaLedger, MediaWork};
use crate::slc::SlcCache;
use crate::time::{transfer_ns, us_to_ns, Ns};

/// Die-time counters of the timing model [ns].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimingCounters {
    /// Sum over dies of time spent on GC (reads, copy programs, erases).
    pub gc_die_ns: Ns,
    /// Sum over dies of time spent programming host data.
    pub host_prog_die_ns: Ns,
    /// Sum over dies of time spent folding pseudo-SLC data into the native mode.
    pub fold_die_ns: Ns,
    /// NAND page programs of host data (multi-plane programs count once).
    pub host_programs: u64,
    /// Units read from NAND to merge a write that covers them only partly
    /// (read-modify-write, [`Device::write_partial`]).
    pub rmw_reads: u64,
    /// 512-byte sectors of the units such writes programmed that the host did not send
    /// (merged from the old data, or left as they were in a unit that held none).
    pub rmw_fill_sectors: u64,
}

/// Idle stretches of a transfer resource (the host link, a channel) before its last booking,
/// left by transfers booked ahead while their data (or a program's die) was not ready:
/// `(start, end, left by a read)` [ns], disjoint, in time order. Those over by the time of
/// the command that records or looks for one are dropped, so the list holds about one per
/// transfer in flight. A transfer placed in a stretch takes part of it; the parts before and
/// after stay while at least `min` long (on the link, the part before is forgotten).
#[derive(Clone)]
struct Gaps {
    gaps: VecDeque<(Ns, Ns, bool)>,
    /// Stretches held that each direction may use: `[left by writes, left by reads]`.
    held: [u32; 2],
    /// The shortest stretch worth keeping (one 4 KiB transfer) [ns].
    min: Ns,
    /// Whether the part of a stretch before a transfer placed in it stays.
    keep_before: bool,
}

impl Gaps {
    fn new(min: Ns, keep_before: bool) -> Self {
        Gaps { gaps: VecDeque::new(), held: [0; 2], min, keep_before }
    }

    /// Books `len` [ns] of a transfer of a command accepted at `now`, ready at `ready`, on the
    /// resource whose bookings end at `free`: in the earliest stretch it may use (`usable`, as
    /// for [`Gaps::any_for`]) that it fits in, else after the last booking, recording the
    /// stretch before it (left by a read if `by_read`) when the data is ready only later.
    /// Returns the end of the transfer.
    #[inline(always)]
    fn book(&mut self, free: &mut Ns, now: Ns, ready: Ns, len: Ns, usable: [bool; 2], by_read: bool) -> Ns {
        if ready < *free && self.any_for(usable) {
            if let Some(done) = self.take(now, ready, len, usable) {
                return done;
            }
        }
        if ready >= *free + self.min {
            self.push(now, *free, ready, by_read);
        }
        *free = (*free).max(ready) + len;
        *free
    }

    /// Drops the stretches over by `now`.
    #[inline(always)]
    fn prune(&mut self, now: Ns) {
        while let Some(&(_, end, r)) = self.gaps.front() {
            if end > now {
                break;
            }
            self.gaps.pop_front();
            self.held[r as usize] -= 1;
        }
    }

    /// Records the stretch `[start, end)` left by a read (`by_read`) or a write booked ahead
    /// by a command accepted at `now`; it is later than every one recorded.
    #[inline(always)]
    fn push(&mut self, now: Ns, start: Ns, end: Ns, by_read: bool) {
        self.prune(now);
        self.gaps.push_back((start, end, by_read));
        self.held[by_read as usize] += 1;
    }

    /// The first stretch that ends at or after `t` (they end in time order; a transfer can
    /// use none before it): a galloping search from the last, near which a program usually
    /// finds its place (the stretches before are mostly ones only reads could still use).
    #[inline(always)]
    fn first_ending_from(&self, t: Ns) -> usize {
        let g = &self.gaps;
        // Those before `lo` end before `t`, those from `hi` on at or after it.
        let (mut lo, mut hi, mut step) = (0, g.len(), 1);
        while lo < hi {
            let probe = hi.saturating_sub(step).max(lo);
            if g[probe].1 < t {
                lo = probe + 1;
                break;
            }
            hi = probe;
            step *= 2;
        }
        while lo < hi {
            let mid = (lo + hi) / 2;
            if g[mid].1 < t {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Whether a transfer that may use the stretches left by writes (`usable[0]`) and/or by
    /// reads (`usable[1]`) may find one here.
    #[inline(always)]
    fn any_for(&self, usable: [bool; 2]) -> bool {
        (usable[0] && self.held[0] != 0) || (usable[1] && self.held[1] != 0)
    }

    /// Books `len` [ns] of time starting no earlier than `ready`, for a transfer of a command
    /// accepted at `now`, in the earliest stretch it may use (`usable`, as for
    /// [`Gaps::any_for`]) that it fits in. What is left of the stretch after the transfer
    /// stays if at least `min` long, and so does the part before it if `keep_before`.
    /// Returns the end of the transfer, or None if no stretch has room.
    #[inline(always)]
    fn take(&mut self, now: Ns, ready: Ns, len: Ns, usable: [bool; 2]) -> Option<Ns> {
        let (min, keep_before) = (self.min, self.keep_before);
        self.prune(now);
        let first = self.first_ending_from(ready + len);
        let i = first + self.gaps.range(first..).position(|&(start, end, r)| usable[r as usize] && start.max(ready) + len <= end)?;
        let (start, end, r) = self.gaps[i];
        let from = start.max(ready);
        let done = from + len;
        match (keep_before && from >= start + min, end >= done + min) {
            (true, true) => {
                self.gaps[i] = (start, from, r);
                self.gaps.insert(i + 1, (done, end, r));
                self.held[r as usize] += 1;
            }
            (true, false) => self.gaps[i] = (start, from, r),
            (false, true) => self.gaps[i] = (done, end, r),
            (false, false) => {
                // Too short for another transfer.
                self.gaps.remove(i);
                self.held[r as usize] -= 1;
            }
        }
        Some(done)
    }
}

/// Most operations [`Device::start_calendars`] records on a die for the work booked on it
/// before the drive kept calendars: their memory is bounded whatever the timings.
const CALENDAR_PIECES: Ns = 1 << 14;

/// What a die is booked for beyond the reads ([`Device::read_start`]): host programs and GC
/// work in time order (those over by the time of the command that books or reads are
/// dropped), and when its last read ends. Each operation is kept as its start relative to
/// the previous one's and its duration [ns], so a read that moves every later operation
/// back moves one entry.
#[derive(Clone, Default)]
struct DieQueue {
    /// `(start - previous start, duration)` [ns]; the first's relative start is unused.
    ops: VecDeque<(Ns, Ns)>,
    /// Start of the first and of the last operation [ns].
    first_start: Ns,
    last_start: Ns,
    read_end: Ns,
}

impl DieQueue {
    /// Records work booked on the die from `start` to `end` (after everything booked) by a
    /// command at `now`.
    #[inline(always)]
    fn push(&mut self, now: Ns, start: Ns, end: Ns) {
        self.drop_over(now);
        if self.ops.is_empty() {
            self.first_start = start;
            self.ops.push_back((0, end - start));
        } else {
            debug_assert!(start >= self.last_start, "die work is booked in time order");
            self.ops.push_back((start - self.last_start, end - start));
        }
        self.last_start = start;
    }

    /// Drops the operations over by `now`.
    #[inline(always)]
    fn drop_over(&mut self, now: Ns) {
        while let Some(&(_, len)) = self.ops.front() {
            if self.first_start + len > now {
                break;
            }
            self.ops.pop_front();
            if let Some(&(rel, _)) = self.ops.front() {
                self.first_start += rel;
            }
        }
    }

    /// Moves operation `i` and every later one back by `shift` [ns].
    #[inline(always)]
    fn delay_from(&mut self, i: usize, shift: Ns) {
        if i == 0 {
            self.first_start += shift;
        } else {
            self.ops[i].0 += shift;
        }
        self.last_start += shift;
    }
}

pub struct Device {
    pub(crate) ftl: Ftl,
    geo: Geometry,
    t_read: Ns,
    t_prog: Ns,
    t_erase: Ns,
    ctrl_cmd: Ns,
    unit_link: Ns,
    unit_chan: Ns,
    program_xfer: Ns,
    die_free: Vec<Ns>,
    /// Per die, the programs and GC work booked on it, which reads go before if not started.
    die_queue: Vec<DieQueue>,
    /// Per channel, idle stretches before transfers booked ahead (programs waiting for their
    /// die, reads for their sense), for programs and reads (see the module doc).
    chan_gaps: Vec<Gaps>,
    chan_free: Vec<Ns>,
    link_free: Ns,
    /// Idle stretches of the link before `link_free` (see the module doc).
    link_gaps: Gaps,
    /// Whether the drive has served a read: until then it keeps no calendar of die work or
    /// idle link stretches (nothing could use them), which keeps the write path of a drive
    /// only written lean.
    calendars: bool,
    ctrl_free: Ns,
    /// Write-buffer capacity [units] and units held (buffered, not yet programmed).
    buf_capacity: u64,
    buf_used: u64,
    /// Programs in flight per die, oldest first: (end time, units they free). A die's
    /// programs end in the order they were sent (its free time only grows).
    buf_pending: Vec<VecDeque<(Ns, u64)>>,
    /// (end of a die's oldest program in flight, die), earliest first; one per die with
    /// programs in flight. A heap of at most one entry per die, not of every program.
    buf_next: BinaryHeap<Reverse<(Ns, usize)>>,
    /// The multi-plane program being filled: die, units so far, data ready time.
    pu_die: usize,
    pu_fill: usize,
    pu_ready: Ns,
    /// Plane of the die that the i-th unit of a program goes to (`i / units_per_page`).
    fill_plane: Vec<usize>,
    /// Channel of each die (`die % channels`).
    die_channel: Vec<usize>,
    /// Copied units not yet making a full page, per pool.
    gc_carry: Vec<u64>,
    /// GC work booked on each die as `(start, end)` [ns], in time order, back-to-back work
    /// merged; bookings that end by the time given to [`Device::forget_gc_before`] are gone.
    gc_booked: Vec<VecDeque<(Ns, Ns)>>,
    /// Latest time given to [`Device::forget_gc_before`] [ns].
    gc_forgotten_ns: Ns,
    /// The work the series counts (host writes, programs, GC copies, erases, folding), booked
    /// when the host's writes complete and the dies carry it out ([`crate::media`]).
    media: MediaLedger,
    trim_cmd: Ns,
    trim_ns_per_unit: f64,
    idle_delay: Ns,
    idle_free_blocks: usize,
    next_payload: u64,
    /// A page's worth of a write's units go to the FTL at once where that is exact
    /// ([`Device::place_run`]); off only to test that it is.
    write_runs: bool,
    timing: TimingCounters,
    /// Compressed data: NAND slots the next units written fill (their mean; carried as a
    /// fraction from unit to unit) and companion units written so far
    /// ([`Device::write_compressed`]).
    slots_per_unit: f64,
    slot_carry: f64,
    companion_units: u64,
    /// The pseudo-SLC write cache, if the NAND has one ([`crate::slc`]).
    slc: Option<SlcCache>,
    /// The mapping-table cache of a DRAM-less drive ([`crate::map_cache`]).
    map: Option<MapCache>,
    /// Map-page units written back and not yet a whole program; the die that takes the next.
    map_carry: u64,
    map_die: usize,
    /// The die that takes the next program's worth of folding.
    fold_die: usize,
}

impl Device {
    /// A fresh drive; `seed` drives the FTL's random choices (d-choices GC).
    pub fn new(cfg: &Config, track_payload: bool, seed: u64) -> Result<Self, ConfigError> {
        let cfg = &cfg.resolved()?;
        let geo = cfg.validate()?;
        let ftl = Ftl::with_seed(&geo, track_payload, seed);
        let program_bytes = geo.units_per_program as u64 * UNIT_BYTES;
        let unit_link = transfer_ns(UNIT_BYTES, cfg.host_link_rate_mbps() * 1e6);
        let unit_chan = transfer_ns(UNIT_BYTES, cfg.channel_mbps * 1e6);
        Ok(Device {
            t_read: us_to_ns(cfg.t_read_us),
            t_prog: us_to_ns(cfg.t_prog_us),
            t_erase: us_to_ns(cfg.t_erase_us),
            ctrl_cmd: us_to_ns(cfg.controller_cmd_us),
            unit_link,
            unit_chan,
            program_xfer: transfer_ns(program_bytes, cfg.channel_mbps * 1e6),
            die_free: vec![0; geo.dies],
            die_queue: vec![DieQueue::default(); geo.dies],
            chan_gaps: vec![Gaps::new(unit_chan, true); geo.channels],
            chan_free: vec![0; geo.channels],
            link_free: 0,
            link_gaps: Gaps::new(unit_link, false),
            calendars: false,
            ctrl_free: 0,
            buf_capacity: geo.buffer_units as u64,
            buf_used: 0,
            buf_pending: vec![VecDeque::new(); geo.dies],
            buf_next: BinaryHeap::new(),
            pu_die: 0,
            pu_fill: 0,
            pu_ready: 0,
            fill_plane: (0..geo.units_per_program).map(|i| i / geo.units_per_page).collect(),
            die_channel: (0..geo.dies).map(|d| d % geo.channels).collect(),
            gc_carry: vec![0; geo.pools],
            gc_booked: vec![VecDeque::new(); geo.dies],
            gc_forgotten_ns: 0,
            media: MediaLedger::new(geo.dies),
            trim_cmd: us_to_ns(cfg.trim_cmd_us),
            trim_ns_per_unit: cfg.trim_us_per_gib * 1e3 * UNIT_BYTES as f64 / (1u64 << 30) as f64,
            idle_delay: us_to_ns(cfg.gc_idle_delay_ms * 1e3),
            idle_free_blocks: cfg.gc_idle_free_blocks as usize,
            next_payload: 1,
            write_runs: true,
            timing: TimingCounters::default(),
            slots_per_unit: 1.0,
            slot_carry: 0.0,
            companion_units: 0,
            slc: SlcCache::new(cfg, &geo),
            map: MapCache::new(cfg, geo.user_units),
            map_carry: 0,
            map_die: 0,
            fold_die: 0,
            ftl,
            geo,
        })
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    pub fn ftl(&self) -> &Ftl {
        &self.ftl
    }

    pub fn timing(&self) -> TimingCounters {
        self.timing
    }

    /// Turns off (or on) placing a page's worth of units at once: the same results either
    /// way, which the tests check.
    #[doc(hidden)]
    pub fn set_write_runs(&mut self, on: bool) {
        self.write_runs = on;
    }

    /// The map cache of a DRAM-less drive, if the drive is one.
    pub fn map_cache(&self) -> Option<&MapCache> {
        self.map.as_ref()
    }

    /// Looks up the map entries of units `lpn..lpn + n` for a command accepted at `t`
    /// (`write`: it updates them); returns when they are available: `t` when cached, else
    /// after the firmware's miss handling and the map page's NAND read (`t_read`). A dirty
    /// page a miss replaces is written back, in whole programs on the dies in turn.
    #[inline(always)]
    fn map_lookup(&mut self, lpn: u64, n: u64, write: bool, t: Ns) -> Ns {
        if self.map.is_none() {
            return t;
        }
        self.map_lookup_cached(lpn, n, write, t)
    }

    #[inline(never)]
    fn map_lookup_cached(&mut self, lpn: u64, n: u64, write: bool, t: Ns) -> Ns {
        let Some(pages) = self.map.as_ref().map(|m| m.pages(lpn, n)) else { return t };
        let mut ready = t;
        for page in pages {
            let m = self.map.as_mut().expect("checked above");
            let Lookup::Miss { writeback } = m.lookup(page, write) else { continue };
            let (miss_ns, page_units) = (m.miss_ns, m.page_units());
            // The map page's read: its latency, not booked on a die (booked there in command
            // order it would hold back the reads of the commands after it).
            self.ctrl_free = self.ctrl_free.max(t) + miss_ns;
            ready = ready.max(self.ctrl_free + self.t_read);
            if writeback {
                self.map_carry += page_units;
                while self.map_carry >= self.geo.units_per_program as u64 {
                    self.map_carry -= self.geo.units_per_program as u64;
                    let die = self.map_die;
                    self.map_die = (self.map_die + 1) % self.geo.dies;
                    let busy = self.program_xfer + self.t_prog;
                    let end = self.occupy_die(die, t, busy) + busy;
                    self.media.book(die, end, end, MediaWork { nand_units: self.geo.units_per_program as u64, ..MediaWork::default() });
                }
            }
        }
        ready
    }

    /// The pseudo-SLC cache, if the drive has one.
    pub fn slc(&self) -> Option<&SlcCache> {
        self.slc.as_ref()
    }

    /// Heap bytes held by the drive's state (FTL plus timing resources).
    pub fn state_bytes(&self) -> usize {
        self.ftl.state_bytes()
            + (self.die_free.capacity() + self.chan_free.capacity() + self.gc_carry.capacity()) * 8
            + self.buf_pending.iter().map(|q| q.capacity() * 16).sum::<usize>()
            + self.buf_next.capacity() * 16
            + self.chan_gaps.iter().chain([&self.link_gaps]).map(|g| g.gaps.capacity() * 24).sum::<usize>()
            + self.die_queue.iter().map(|q| q.ops.capacity() * 16).sum::<usize>()
            + self.gc_booked.iter().map(|q| q.capacity() * 16).sum::<usize>()
            + self.media.state_bytes()
    }

    /// Die time of the GC work decided so far that the dies have carried out by `t`, summed
    /// over dies [ns]: [`TimingCounters::gc_die_ns`] less the booked work still ahead of
    /// `t`, or by the last time given to [`Device::forget_gc_before`] if that is later (it
    /// no longer knows the work between). In the time since an earlier `t`, it grows by at
    /// most the number of dies times that time.
    pub fn gc_die_done_ns(&self, t: Ns) -> Ns {
        let t = t.max(self.gc_forgotten_ns);
        let mut ahead = 0;
        for booked in &self.gc_booked {
            for &(start, end) in booked.iter().rev() {
                if end <= t {
                    break;
                }
                ahead += end - start.max(t);
            }
        }
        self.timing.gc_die_ns - ahead
    }

    /// Drops the GC bookings that end by `t` and the work the series counts that is over by
    /// then: the caller asks [`Device::gc_die_done_ns`] and [`Device::media_done`] about no
    /// earlier time from now on.
    pub fn forget_gc_before(&mut self, t: Ns) {
        self.gc_forgotten_ns = self.gc_forgotten_ns.max(t);
        self.media.forget_before(t);
        for booked in &mut self.gc_booked {
            while booked.front().is_some_and(|&(_, end)| end <= t) {
                booked.pop_front();
            }
        }
    }

    /// The work the series counts carried out by `t` [ns], cumulative: host writes completed,
    /// units programmed, GC copies and erases as the dies do them (see [`crate::media`]); `t`
    /// no earlier than the last time given to [`Device::forget_gc_before`].
    pub fn media_done(&self, t: Ns) -> MediaWork {
        self.media.done_by(t)
    }

    /// Counts all the work decided so far as carried out from now on ([`Device::media_done`]
    /// then gives it for any time): at a phase's end, the work its dies still have to do
    /// goes into its last interval, not into the next phase's. The units of the program
    /// being filled and of map pages not yet a whole program count too.
    pub fn settle_media(&mut self) {
        let unbooked = (self.pu_fill as u64) + self.map_carry;
        self.media.settle(MediaWork { nand_units: unbooked, ..MediaWork::default() });
    }

    /// A phase's series asks about the work carried out only at `start + k × interval` [ns],
    /// k up to `intervals`, until [`Device::settle_media`] (see [`MediaLedger::set_grid`]).
    pub fn set_media_grid(&mut self, start: Ns, interval: Ns, intervals: u64) {
        self.media.set_grid(start, interval, intervals);
    }

    /// Books a host write of `units` 4 KiB units and `bytes` of host data as done when it
    /// completes at `done`.
    #[inline(always)]
    pub(crate) fn book_host_write(&mut self, units: u64, bytes: u64, done: Ns) {
        let lane = self.media.host_lane();
        self.media.book(lane, done, done, MediaWork { host_units: units, host_bytes: bytes, ..MediaWork::default() });
    }

    #[inline]
    fn channel_of_die(&self, die: usize) -> usize {
        self.die_channel[die]
    }

    #[inline]
    fn accept_command(&mut self, submit: Ns) -> Ns {
        self.ctrl_free = self.ctrl_free.max(submit) + self.ctrl_cmd;
        self.ctrl_free
    }

    /// Writes `n` 4 KiB units starting at logical unit `lpn`, submitted at `submit`.
    /// Returns the completion time. Always inlined: the host loop's hot path.
    #[inline(always)]
    pub fn write(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        let accepted = self.accept_command(submit);
        // The entries are updated once the data is placed; the write is acknowledged when
        // buffered, so a miss costs controller and die time, not this command's.
        self.map_lookup(lpn, n, true, accepted);
        let mut t = accepted;
        let (end, upp) = (lpn + n, self.geo.units_per_page);
        let mut u = lpn;
        while u < end {
            // The units left for the current page of the program being filled, at once if
            // the FTL can take them so; else one.
            let k = ((upp - self.pu_fill % upp) as u64).min(end - u);
            if k > 1 && self.write_runs && self.place_run(u, k, accepted, &mut t) {
                u += k;
                continue;
            }
            t = self.buffer_and_send(accepted, t);
            self.place_unit(u, t);
            u += 1;
        }
        t
    }

    /// [`Device::write`]'s buffer, link and placement of units `lpn..lpn + k`, all bound for
    /// one page of the program being filled, with their FTL writes done at once
    /// ([`Ftl::write_run`]); `t` is the previous unit's time, and becomes the last one's.
    /// Returns false, having changed nothing, if the FTL cannot take them so. The same as
    /// [`Device::place_unit`] for each in turn: buffer and link do not depend on the FTL,
    /// and without GC work the FTL does not depend on the time.
    #[inline(always)]
    fn place_run(&mut self, lpn: u64, k: u64, accepted: Ns, t: &mut Ns) -> bool {
        // The die as place_unit would pick it for the first unit (neither buffer nor link
        // moves a die); kept only if the run is taken (striping picks the die after pu_die).
        let die = if self.pu_fill == 0 { self.pick_die() } else { self.pu_die };
        let pool = die * self.geo.planes_per_die + self.fill_plane[self.pu_fill];
        if !self.ftl.write_run(lpn, k, pool, self.next_payload) {
            return false;
        }
        self.pu_die = die;
        self.next_payload += k;
        for _ in 0..k {
            *t = self.buffer_and_send(accepted, *t);
        }
        self.pu_fill += k as usize;
        self.pu_ready = *t;
        if self.pu_fill == self.geo.units_per_program {
            self.program_pending();
        }
        true
    }

    /// Waits from `t` for write-buffer space for one unit of a write accepted at `accepted`,
    /// then moves the unit over the host link; returns when it has crossed.
    #[inline(always)]
    fn buffer_and_send(&mut self, accepted: Ns, t: Ns) -> Ns {
        let t = self.reserve_buffer_unit(t);
        self.write_transfer(accepted, t)
    }

    /// Books the link for one unit of write data ready (buffer space held) at `t`, of a
    /// command accepted at `now`; returns when it has crossed. Until the drive has served a
    /// read, simply after the last booking; then see [`Device::transfer`].
    #[inline(always)]
    fn write_transfer(&mut self, now: Ns, t: Ns) -> Ns {
        if self.calendars {
            return self.transfer(now, t, false);
        }
        self.link_free = self.link_free.max(t) + self.unit_link;
        self.link_free
    }

    /// Books the link for one unit of data of a read (`by_read`) or write accepted at `now`,
    /// ready at `ready`: in the earliest idle stretch that a transfer of the other direction
    /// left and that it fits in, else after the last booking, leaving the link idle before
    /// it for the other direction if the data is ready only later. Returns when it has crossed.
    #[inline(never)]
    fn transfer(&mut self, now: Ns, ready: Ns, by_read: bool) -> Ns {
        self.link_gaps.book(&mut self.link_free, now, ready, self.unit_link, [by_read, !by_read], by_read)
    }

    /// True once data with its own compressibility has been written
    /// ([`Device::set_slots_per_unit`]): writes and TRIMs must then go through
    /// [`Device::write_compressed`] and [`Device::trim_compressed`].
    #[inline]
    pub fn compressing(&self) -> bool {
        self.ftl.companions_per_unit() != 0
    }

    /// The data written from now on fills `slots` NAND slots per 4 KiB unit on average
    /// (≥ 1; 1 = the profile's `compression_ratio` holds, as without a compressibility).
    /// Makes room for the companions the first time more than one slot is asked for.
    pub fn set_slots_per_unit(&mut self, slots: f64) {
        self.slots_per_unit = slots.max(1.0);
        self.slot_carry = 0.0;
        let per_unit = self.slots_per_unit.ceil() as u64 - 1;
        if per_unit > 0 {
            self.ftl.enable_companions(per_unit);
        }
    }

    /// Exchanges the compressibility state (NAND slots per unit, fraction carried between
    /// units) with `state`: each job of a phase of several that write data of different
    /// compressibility keeps its own and swaps it in around its writes.
    pub(crate) fn swap_slot_state(&mut self, state: &mut (f64, f64)) {
        std::mem::swap(&mut self.slots_per_unit, &mut state.0);
        std::mem::swap(&mut self.slot_carry, &mut state.1);
    }

    /// Companion units written for compressed data (not host data: [`crate::Simulation`]
    /// leaves them out of the host units; they are NAND writes).
    pub fn companion_units(&self) -> u64 {
        self.companion_units
    }

    /// [`Device::write`] of data that fills `slots_per_unit` NAND slots per unit: each unit
    /// crosses the link once, then its compressed data takes one slot for the unit and
    /// companion slots for the rest (buffered and programmed like data); companions an
    /// earlier, less compressible copy left are deallocated.
    /// Out of line: it stays out of the host loop's hot path.
    #[inline(never)]
    pub fn write_compressed(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        let accepted = self.accept_command(submit);
        self.map_lookup(lpn, n, true, accepted);
        let mut t = accepted;
        for u in lpn..lpn + n {
            t = self.buffer_and_send(accepted, t);
            t = self.place_compressed(u, t);
        }
        t
    }

    /// Places unit `lpn`, buffered at `t`, as compressed data: its slot and the companion
    /// slots its data fills; returns when the last is buffered.
    #[inline(always)]
    fn place_compressed(&mut self, lpn: u64, mut t: Ns) -> Ns {
        let per_unit = self.ftl.companions_per_unit();
        self.place_unit(lpn, t);
        self.slot_carry += self.slots_per_unit;
        let slots = (self.slot_carry.floor() as u64).clamp(1, per_unit + 1);
        self.slot_carry = (self.slot_carry - slots as f64).max(0.0);
        for j in 0..slots - 1 {
            t = self.reserve_buffer_unit(t);
            let c = self.ftl.companion_lpn(lpn, j);
            self.place_unit(c, t);
            self.companion_units += 1;
        }
        for j in slots - 1..per_unit {
            self.ftl.unmap(self.ftl.companion_lpn(lpn, j));
        }
        t
    }

    /// [`Device::write`] of `n` units from `lpn` whose first (`head`) and/or last (`tail`)
    /// unit the host covers only partly, with `fill_sectors` 512-byte sectors of them not
    /// sent: such a unit that holds data is read from NAND first (from the command's
    /// acceptance, on its die and channel) and merged, then programmed whole; the command
    /// completes once every unit is buffered, merged ones after their read.
    #[inline(never)]
    pub fn write_partial(&mut self, lpn: u64, n: u64, head: bool, tail: bool, fill_sectors: u64, submit: Ns) -> Ns {
        let accepted = self.accept_command(submit);
        let accepted = self.map_lookup(lpn, n, true, accepted);
        let mut t = accepted;
        self.timing.rmw_fill_sectors += fill_sectors;
        for u in lpn..lpn + n {
            t = self.buffer_and_send(accepted, t);
            if (u == lpn && head) || (u == lpn + n - 1 && tail) {
                t = t.max(self.rmw_read(u, accepted));
            }
            t = if self.compressing() { self.place_compressed(u, t) } else {
                self.place_unit(u, t);
                t
            };
        }
        t
    }

    /// Reads unit `lpn` for a read-modify-write from `t` (die, then channel); returns when
    /// its data is in the controller (`t` if it holds none).
    fn rmw_read(&mut self, lpn: u64, t: Ns) -> Ns {
        let Some(slot) = self.ftl.lookup(lpn) else { return t };
        let die = self.ftl.pool_of_slot(slot) / self.geo.planes_per_die;
        let ch = self.channel_of_die(die);
        let start = self.die_free[die].max(t);
        let sensed = start + self.t_read;
        self.die_free[die] = sensed;
        if self.calendars {
            self.die_queue[die].push(self.ctrl_free, start, sensed);
        }
        self.timing.rmw_reads += 1;
        self.read_channel(ch, t, sensed)
    }

    /// [`Device::trim`] that also deallocates the units' companion slots.
    #[inline(never)]
    pub fn trim_compressed(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        let done = self.trim(lpn, n, submit);
        for u in lpn..lpn + n {
            for j in 0..self.ftl.companions_per_unit() {
                self.ftl.unmap(self.ftl.companion_lpn(u, j));
            }
        }
        done
    }

    /// Takes one write-buffer unit at or after `t`; returns when it is available. Space is
    /// freed out of order, as each program ends: data waiting for a die busy with GC does
    /// not block data bound for other dies until the buffer is full.
    #[inline(always)]
    fn reserve_buffer_unit(&mut self, mut t: Ns) -> Ns {
        while let Some(mut next) = self.buf_next.peek_mut() {
            let Reverse((end, die)) = *next;
            if end > t && self.buf_used < self.buf_capacity {
                break;
            }
            let (_, units) = self.buf_pending[die].pop_front().expect("a die in buf_next has a program in flight");
            match self.buf_pending[die].front() {
                Some(&(later, _)) => *next = Reverse((later, die)),
                None => drop(PeekMut::pop(next)),
            }
            self.buf_used -= units;
            t = t.max(end);
        }
        self.buf_used += 1;
        t
    }

    /// Puts one buffered unit into the program being filled; programs it when full.
    #[inline(always)]
    fn place_unit(&mut self, lpn: u64, ready: Ns) {
        if self.pu_fill == 0 {
            self.pu_die = self.pick_die();
        }
        let pool = self.pu_die * self.geo.planes_per_die + self.fill_plane[self.pu_fill];
        let payload = self.next_payload;
        self.next_payload += 1;
        let work = self.ftl.write_and_take_gc_work(lpn, pool, payload);
        if work != GcWork::default() {
            self.charge_gc(pool, work, ready);
            if self.geo.gc_fg_stall == StallScope::Drive && work.foreground_victims != 0 {
                self.drive_wide_gc(pool, ready);
            }
        }
        self.pu_fill += 1;
        self.pu_ready = ready;
        if self.pu_fill == self.geo.units_per_program {
            self.program_pending();
        }
    }

    /// Sends the full multi-plane program to its die and frees its buffer slots at the end.
    /// With a pseudo-SLC cache, the program goes to SLC or the native mode, and the dies
    /// fold cached data where the cache needs room ([`SlcCache::plan_program`],
    /// [`Device::book_folds`]).
    fn program_pending(&mut self) {
        let die = self.pu_die;
        let mut t_prog = self.t_prog;
        let mut fold_units = 0;
        if let Some(c) = self.slc.as_mut() {
            let plan = c.plan_program(self.pu_fill as u64, self.geo.user_units.saturating_sub(self.ftl.mapped_units()));
            t_prog = plan.slc_t_prog.unwrap_or(t_prog);
            fold_units = plan.fold_units;
        }
        let start = self.program_channel(self.channel_of_die(die), self.die_free[die].max(self.pu_ready));
        if self.calendars {
            self.die_queue[die].push(self.ctrl_free, start, start + self.program_xfer + t_prog);
        }
        let end = start + self.program_xfer + t_prog;
        self.die_free[die] = end;
        self.timing.host_prog_die_ns += t_prog;
        self.timing.host_programs += 1;
        let in_flight = &mut self.buf_pending[die];
        debug_assert!(in_flight.back().is_none_or(|&(last, _)| last <= end), "a die's programs end in order");
        if in_flight.is_empty() {
            self.buf_next.push(Reverse((end, die)));
        }
        in_flight.push_back((end, self.pu_fill as u64));
        self.media.book(die, end, end, MediaWork { nand_units: self.pu_fill as u64, ..MediaWork::default() });
        self.pu_fill = 0;
        if fold_units > 0 {
            self.book_folds(fold_units, start);
        }
    }

    /// Books folding of `units` from `from` on: a program's worth at a time on the dies in
    /// turn, as the cached data is spread over them. Charged to the host program's own die
    /// it would make that die take less host data than the others with the `earliest` die
    /// allocation, piling data into some planes. (With `striped`, the dies' turns for folding
    /// and for host data run out of step, which costs a few percent of the rate.)
    fn book_folds(&mut self, units: u64, from: Ns) {
        let Some(c) = self.slc.as_ref() else { return };
        let per_program = self.geo.units_per_program as u64;
        let (whole_ns, part_ns) = (c.fold_ns(per_program), c.fold_ns(units % per_program));
        for k in 0..units.div_ceil(per_program) {
            let (busy, n) = if (k + 1) * per_program <= units { (whole_ns, per_program) } else { (part_ns, units % per_program) };
            let die = self.fold_die;
            self.fold_die = (self.fold_die + 1) % self.geo.dies;
            let end = self.occupy_die(die, from, busy) + busy;
            self.book_fold(die, n, end);
            self.timing.fold_die_ns += busy;
        }
    }

    /// Books `units` folded on `die`, done at `end`.
    fn book_fold(&mut self, die: usize, units: u64, end: Ns) {
        self.media.book(die, end, end, MediaWork { nand_units: units, fold_units: units, ..MediaWork::default() });
    }

    /// Books channel `ch` for a program's transfer, its die free and its data buffered at
    /// `ready`: in the earliest idle stretch from then that it fits in (left by any transfer
    /// booked ahead), else after the channel's last booking, leaving the channel idle before
    /// it if the die is free only later. Returns when the transfer starts.
    #[inline(always)]
    fn program_channel(&mut self, ch: usize, ready: Ns) -> Ns {
        // Stretches over before the command now accepted are of no more use; those after it
        // stay, for reads too (a phase of writes may book a die's work far ahead, and a read
        // that comes next crosses the channel between).
        let end = self.chan_gaps[ch].book(&mut self.chan_free[ch], self.ctrl_free, ready, self.program_xfer, [true, true], false);
        end - self.program_xfer
    }

    /// The die for the next program: with `striped` allocation the one after the last used;
    /// with `earliest`, the one free earliest, so a die busy with GC is skipped while others
    /// can take data (ties go round-robin after the last die used): the first die, in cyclic
    /// order from the one after the last used, whose free time is the minimum, found as the
    /// minimum (a vectorised scan), then its first position.
    #[inline]
    fn pick_die(&self) -> usize {
        let start = if self.pu_die + 1 == self.geo.dies { 0 } else { self.pu_die + 1 };
        if self.geo.die_striped {
            return start;
        }
        let free = &self.die_free[..];
        let earliest = *free.iter().min().expect("a drive has dies");
        let (before, after) = free.split_at(start);
        match after.iter().position(|&t| t == earliest) {
            Some(i) => start + i,
            None => before.iter().position(|&t| t == earliest).expect("the minimum is in the slice"),
        }
    }

    /// Books `busy` [ns] of work (GC, folding, map write-back) on `die` from when it is free,
    /// no earlier than `from`, in its calendar too once the drive keeps one (reads go before
    /// work booked later); returns the start.
    fn occupy_die(&mut self, die: usize, from: Ns, busy: Ns) -> Ns {
        let start = self.die_free[die].max(from);
        self.die_free[die] = start + busy;
        if busy > 0 && self.calendars {
            self.die_queue[die].push(self.ctrl_free, start, start + busy);
        }
        start
    }

    /// Occupies the die of `pool` with the GC work, starting no earlier than `now`.
    fn charge_gc(&mut self, pool: usize, work: GcWork, now: Ns) {
        let die = pool / self.geo.planes_per_die;
        let carry = &mut self.gc_carry[pool];
        *carry += work.units_copied;
        let programs = *carry / self.geo.units_per_page as u64;
        *carry %= self.geo.units_per_page as u64;
        let busy = work.page_reads * self.t_read + programs * self.t_prog + work.erases * self.t_erase;
        let start = self.occupy_die(die, now, busy);
        self.timing.gc_die_ns += busy;
        let copied = work.units_copied;
        self.media.book(die, start, start + busy, MediaWork { nand_units: copied, gc_units: copied, erases: work.erases, ..MediaWork::default() });
        if busy > 0 {
            let booked = &mut self.gc_booked[die];
            match booked.back_mut() {
                Some(last) if last.1 == start => last.1 = start + busy,
                _ => booked.push_back((start, start + busy)),
            }
        }
        if self.geo.gc_fg_stall == StallScope::Drive && work.foreground_victims != 0 {
            // Firmware that stops serving the host while it collects.
            self.ctrl_free = self.ctrl_free.max(start + busy);
        }
    }

    /// Drive-scope foreground GC ("clean up later" firmware): once one plane is forced to
    /// collect, every plane at or below the foreground target collects up to it too, all dies
    /// in parallel, and the controller serves no host command until the slowest die is done.
    fn drive_wide_gc(&mut self, trigger: usize, now: Ns) {
        let target = self.geo.gc_fg_target_free_blocks + 1;
        for pool in 0..self.geo.pools {
            if pool == trigger || self.ftl.pool_free_blocks(pool) >= target {
                continue;
            }
            while self.ftl.collect_for_idle(pool, target) {}
            let mut work = self.ftl.take_gc_work(pool);
            work.foreground_victims = work.erases;
            if work != GcWork::default() {
                self.charge_gc(pool, work, now);
            }
        }
    }

    /// The host has been idle from `from` for `duration`: after `gc_idle_delay_ms`, each
    /// die collects victims in its planes (round-robin) until every plane has
    /// `gc_idle_free_blocks` free blocks or the idle period is over. Returns the number of
    /// victims collected. With `gc_idle_sort_regions`, see [`Device::idle_sorting`].
    pub fn idle(&mut self, from: Ns, duration: Ns) -> u64 {
        if duration <= self.idle_delay {
            return 0;
        }
        // Folding first, every die its share: it brings the cache back for the next burst.
        if let Some(mut c) = self.slc.take() {
            c.rest();
            let per_program = c.program_fold_ns().max(1);
            let share = c.idle_programs().div_ceil(self.geo.dies as u64);
            let end = from + duration;
            for die in 0..self.geo.dies {
                let from_die = self.die_free[die].max(from + self.idle_delay);
                let folded = c.folded_units();
                let busy = c.idle_fold(share.min(end.saturating_sub(from_die) / per_program));
                if busy > 0 {
                    let done = self.occupy_die(die, from_die, busy) + busy;
                    self.book_fold(die, c.folded_units() - folded, done);
                    self.timing.fold_die_ns += busy;
                }
            }
            self.slc = Some(c);
        }
        if self.idle_free_blocks == 0 {
            return 0;
        }
        if self.geo.gc_idle_sort_regions != 0 {
            return self.idle_sorting(from, duration);
        }
        let end = from + duration;
        let planes = self.geo.planes_per_die;
        let mut collected = 0;
        for die in 0..self.geo.dies {
            let mut t = self.die_free[die].max(from + self.idle_delay);
            let mut plane = 0;
            let mut idle_planes = 0;
            while t < end && idle_planes < planes {
                let pool = die * planes + plane;
                plane = (plane + 1) % planes;
                if !self.ftl.collect_for_idle(pool, self.idle_free_blocks) {
                    idle_planes += 1;
                    continue;
                }
                idle_planes = 0;
                collected += 1;
                let work = self.ftl.take_gc_work(pool);
                self.die_free[die] = self.die_free[die].max(t);
                self.charge_gc(pool, work, t);
                t = self.die_free[die];
            }
        }
        collected
    }

    /// Idle GC that sorts by LBA region ([`Ftl::sort_for_idle`]). Copies cross planes, so
    /// the dies are served in time order: the die free earliest (among those with a plane
    /// that still has work) collects its next victim, reading and erasing on its own die
    /// while the copies are programmed on the dies that hold the region blocks. Open region
    /// blocks are closed at the end. Returns the number of victims collected.
    ///
    /// Time: reads and erase on the victim's die; programs on each destination die, no
    /// earlier than the victim's time.
    fn idle_sorting(&mut self, from: Ns, duration: Ns) -> u64 {
        let end = from + duration;
        let start = from + self.idle_delay;
        let planes = self.geo.planes_per_die;
        let mut has_work = vec![true; self.geo.pools];
        let mut planes_with_work = vec![planes; self.geo.dies];
        let mut next_plane = vec![0; self.geo.dies];
        let mut collected = 0;
        // The dies with work by the time they are free (from `start`), earliest first, ties
        // to the lowest die. Keys may lag behind: a die's time only grows, so a popped key
        // older than the die's time is pushed again with it.
        let mut due: BinaryHeap<Reverse<(Ns, usize)>> = (0..self.geo.dies).map(|d| Reverse((self.die_free[d].max(start), d))).collect();
        // Copies land on every die: stop once any die is booked to the end of the idle
        // period (each die overruns it by at most one victim's work, as without sorting).
        let mut past_end = self.die_free.iter().any(|&f| f >= end);
        while let Some(Reverse((key, die))) = due.pop() {
            let t = self.die_free[die].max(start);
            if t > key {
                due.push(Reverse((t, die)));
                continue;
            }
            if t >= end || past_end {
                break;
            }
            let plane = (0..planes).map(|k| (next_plane[die] + k) % planes).find(|&p| has_work[die * planes + p]).expect("die has work");
            next_plane[die] = (plane + 1) % planes;
            let pool = die * planes + plane;
            if !self.ftl.sort_for_idle(pool, self.idle_free_blocks) {
                has_work[pool] = false;
                planes_with_work[die] -= 1;
                if planes_with_work[die] > 0 {
                    due.push(Reverse((t, die)));
                }
                continue;
            }
            collected += 1;
            self.die_free[die] = t;
            let work = self.ftl.take_gc_work(pool);
            self.charge_gc(pool, work, t);
            for q in (0..self.geo.pools).filter(|&q| q != pool) {
                let work = self.ftl.take_gc_work(q);
                if work != GcWork::default() {
                    self.charge_gc(q, work, t);
                }
            }
            past_end = self.die_free.iter().any(|&f| f >= end);
            due.push(Reverse((self.die_free[die].max(start), die)));
        }
        self.ftl.close_sort_streams();
        collected
    }

    /// Reads `n` units from `lpn`, submitted at `submit`; returns the completion time.
    /// Units of one command stored in the same NAND page share one page read (sense).
    /// Not inlined: the host loop stays small enough to keep its state in registers.
    #[inline(never)]
    pub fn read(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        let t = self.accept_command(submit);
        if !self.calendars {
            self.start_calendars(t);
        }
        // Data can be read once its map entries are known.
        let t = self.map_lookup(lpn, n, false, t);
        let mut done = t;
        let upp = self.geo.units_per_page as u32;
        let mut last_page = u32::MAX;
        let mut last_sensed = t;
        for u in lpn..lpn + n {
            let ready = match self.ftl.lookup(u) {
                None => t,
                Some(slot) => {
                    let die = self.ftl.pool_of_slot(slot) / self.geo.planes_per_die;
                    let ch = self.channel_of_die(die);
                    let page = slot / upp;
                    let sensed = if page == last_page { last_sensed } else { self.read_start(die, t) + self.t_read };
                    last_page = page;
                    last_sensed = sensed;
                    self.read_channel(ch, t, sensed)
                }
            };
            done = done.max(self.transfer(t, ready, true));
        }
        done
    }

    /// Starts the dies' calendars at `now`, the first read: what each die has booked beyond
    /// `now` (host programs and GC work of a phase of writes, often well ahead) is recorded as
    /// operations of a program's time each (which work it is is not known), the first in
    /// progress; reads then go before those that have not started, as they would had the
    /// calendar been kept all along.
    fn start_calendars(&mut self, now: Ns) {
        self.calendars = true;
        for (q, &free) in self.die_queue.iter_mut().zip(&self.die_free) {
            if free > now {
                // The operation in progress started before `now` (when exactly does not matter
                // to a read); the rest is cut into a program's time each, as booked (into
                // longer pieces where that would make more than CALENDAR_PIECES).
                let piece = self.t_prog.max((free - now).div_ceil(CALENDAR_PIECES));
                let mut start = now.saturating_sub(1);
                let mut end = free.min(now + piece);
                loop {
                    q.push(now, start, end);
                    if end == free {
                        break;
                    }
                    (start, end) = (end, free.min(end + piece));
                }
            }
        }
    }

    /// When a read of a command accepted at `t` starts sensing on `die`, which it then
    /// holds for `t_read`: after the die's earlier reads and the program or GC work in
    /// progress at `t`, but before work booked to start later (a controller serves reads
    /// first), which moves back by what the read overlaps of it. Only the die's own schedule
    /// moves: the buffer space and channel time of programs already booked keep their times
    /// (their end is early by at most the reads that went before them).
    /// With no such work (a phase of only reads) this is `max(die free, t)`, as in order.
    fn read_start(&mut self, die: usize, t: Ns) -> Ns {
        let q = &mut self.die_queue[die];
        let mut s = t.max(q.read_end);
        q.drop_over(s);
        // Work that has started by then goes on to its end; `later` is the first operation
        // that starts after, and its start.
        let mut later = None;
        let mut start = q.first_start;
        for (i, &(rel, len)) in q.ops.iter().enumerate() {
            if i > 0 {
                start += rel;
            }
            if start >= s {
                later = Some((i, start));
                break;
            }
            s = s.max(start + len);
        }
        if later.is_none() {
            // Nothing recorded starts later, but the die may be booked later still (by work
            // from before the drive kept its calendars): wait for it, as in order.
            s = s.max(self.die_free[die]);
        }
        let end = s + self.t_read;
        let shift = later.map_or(0, |(_, start)| end.saturating_sub(start));
        if let (Some((i, _)), true) = (later, shift > 0) {
            q.delay_from(i, shift);
        }
        q.read_end = end;
        let free = &mut self.die_free[die];
        *free = if *free > s { *free + shift } else { end };
        s
    }

    /// When a read's unit, sensed at `sensed` for a command accepted at `t`, has crossed
    /// channel `ch`: in an idle stretch before program transfers booked ahead if one has
    /// room (see [`Gaps`]), else after the channel's last booking, leaving the channel idle
    /// before it, for programs, if the unit is sensed only later.
    fn read_channel(&mut self, ch: usize, t: Ns, sensed: Ns) -> Ns {
        self.chan_gaps[ch].book(&mut self.chan_free[ch], t, sensed, self.unit_chan, [true, false], true)
    }

    /// A flush (cache sync) submitted at `submit`, after every earlier command completed:
    /// the program being filled is sent to NAND (partly filled), and the flush completes once
    /// every buffered unit is programmed. Returns the completion time.
    pub fn flush(&mut self, submit: Ns) -> Ns {
        let t = self.accept_command(submit);
        if self.pu_fill > 0 {
            self.program_pending();
        }
        let programmed = self.buf_pending.iter().filter_map(|q| q.back()).map(|&(end, _)| end).max().unwrap_or(0);
        t.max(programmed)
    }

    /// Deallocates (TRIMs) `n` units from `lpn`; returns the completion time.
    /// Costs `trim_cmd_us` per command plus `trim_us_per_gib` of controller time.
    #[inline(never)]
    pub fn trim(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        let t = self.accept_command(submit);
        self.map_lookup(lpn, n, true, t);
        for u in lpn..lpn + n {
            self.ftl.trim(u);
        }
        let cost = self.trim_cmd + (self.trim_ns_per_unit * n as f64).round() as Ns;
        self.ctrl_free = t + cost;
        self.ctrl_free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One channel, three one-plane dies, 4 KiB pages (every unit is its own program), 8 MiB
    /// of user space; the default timing (read 50 us, program 1.3 ms, controller 11 us).
    fn tiny_config(buffer_bytes: u64) -> Config {
        let mut cfg = Config::default();
        for (k, v) in [
            ("channels", "1"),
            ("dies_per_channel", "3"),
            ("planes_per_die", "1"),
            ("page_size_bytes", "4096"),
            ("blocks_per_plane", "64"),
            ("pages_per_block", "16"),
            ("user_capacity_bytes", "8MiB"),
        ] {
            cfg.set(k, v).unwrap();
        }
        cfg.set("write_buffer_bytes", &buffer_bytes.to_string()).unwrap();
        cfg
    }

    /// A drive of [`tiny_config`] that has served a read.
    fn tiny(buffer_bytes: u64) -> Device {
        let mut dev = Device::new(&tiny_config(buffer_bytes), false, 1).unwrap();
        // A read (of a unit never written: the controller answers it) at time 0, so that the
        // drive keeps its calendars from the start.
        assert!(dev.read(1000, 1, 0) < 100 * US);
        dev
    }

    const US: Ns = 1_000;

    /// The first read after a phase of only writes waits for the program in progress on its
    /// die, not for everything the writes booked behind it (programs queued on that die).
    #[test]
    fn the_first_read_after_writes_goes_before_the_programs_queued_on_its_die() {
        let mut dev = Device::new(&tiny_config(1 << 20), false, 1).unwrap();
        // 30 programs over three dies: ~13 ms booked on each.
        assert!(dev.write(0, 30, 0) < 1000 * US);
        assert!(dev.die_free.iter().all(|&f| f > 12_000 * US), "{:?}", dev.die_free);
        let done = dev.read(0, 1, 100 * US);
        // The program in progress on unit 0's die ends ~1.33 ms; then the sense, channel, link.
        assert!(done > 1300 * US && done < 1500 * US, "read done at {done} ns");
    }

    /// A read waits for the program in progress on its die, not for the programs booked
    /// behind it.
    #[test]
    fn a_read_goes_before_programs_booked_on_its_die_that_have_not_started() {
        let mut dev = tiny(1 << 20);
        // Six programs over three dies: each die has one in progress and one booked behind.
        assert!(dev.write(0, 6, 0) < 100 * US);
        let done = dev.read(0, 1, 100 * US);
        // The first program on unit 0's die ends ~1.33 ms; then the sense (50 us), channel, link.
        assert!(done > 1300 * US && done < 1500 * US, "read done at {done} ns");
    }

    /// A write's data crosses the link while a read is still being sensed, instead of after
    /// the read's transfer booked for later.
    #[test]
    fn a_write_uses_the_link_while_a_read_is_sensed() {
        let mut dev = tiny(1 << 20);
        dev.write(0, 1, 0);
        let read_done = dev.read(0, 1, 100 * US);
        assert!(read_done > 1300 * US, "the read waits for the program: {read_done} ns");
        let done = dev.write(1, 1, 200 * US);
        assert!(done < 300 * US, "write done at {done} ns");
    }

    /// A program crosses its channel as soon as its die is free, though a program for another
    /// die of the channel (waiting for GC there) was booked on it for later; the stretch left
    /// around it stays free for others, and a transfer that does not fit goes after the last.
    #[test]
    fn a_program_crosses_the_channel_before_one_booked_later_behind_its_die() {
        let mut dev = tiny(1 << 20);
        let x = dev.program_xfer;
        assert_eq!(dev.program_channel(0, 10_000 * US), 10_000 * US);
        assert_eq!(dev.program_channel(0, 100 * US), 100 * US);
        assert_eq!(dev.program_channel(0, 50 * US), 50 * US, "the stretch before the last one placed");
        assert_eq!(dev.program_channel(0, 100 * US), 100 * US + x, "right after the one at 100 us");
        assert_eq!(dev.program_channel(0, 10_000 * US - x / 2), 10_000 * US + x, "too late to fit before 10 ms");
        // A read sensed meanwhile crosses in the stretches programs left.
        assert_eq!(dev.read_channel(0, 0, 1_000 * US), 1_000 * US + dev.unit_chan);
    }

    /// A read's data crosses the link (and the channel) while a write waits for buffer space,
    /// instead of after the write's transfer booked for when the space frees.
    #[test]
    fn a_read_uses_the_link_while_a_write_waits_for_buffer_space() {
        let mut dev = tiny(8192);
        dev.write(100, 1, 0);
        // Long after: two units buffered, the other two wait ~1.3 ms for programs to end.
        let t0 = 10_000 * US;
        let write_done = dev.write(0, 4, t0);
        assert!(write_done > t0 + 1300 * US, "the write waits for buffer space: {write_done} ns");
        let done = dev.read(100, 1, t0 + 100 * US);
        assert!(done < t0 + 200 * US, "read done at {} us after the write", (done - t0) / US);
    }
}
