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
//!
//! The parts, one file each: [`link`] (host link and controller, and the idle stretches of a
//! transfer resource), [`channel`] (the channels), [`die`] (the dies: their time, calendars
//! and GC work), [`buffer`] (the DRAM write buffer and the program being filled), [`idle`]
//! (idle-time GC and folding). The write, read, TRIM and flush commands that use them are here.

use std::collections::{BinaryHeap, VecDeque};

use crate::config::{Config, ConfigError, Geometry, UNIT_BYTES};
use crate::ftl::{FastDiv, Ftl};
use crate::map_cache::{Lookup, MapCache};
use crate::media::{MediaLedger, MediaWork};
use crate::slc::SlcCache;
use crate::time::{transfer_ns, us_to_ns, Ns};

pub mod buffer;
pub mod channel;
pub mod die;
pub mod idle;
pub mod link;
pub(crate) mod pipe;
mod zoned;

use buffer::WriteBuffer;
use channel::Channels;
use die::{DieQueue, Dies};
use idle::IdleGc;
use link::{Controller, Gaps, Link};

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

/// The timed drive: the FTL and the parts whose time it models. Times are [`Ns`] of
/// simulated time; "free" times are when a resource is next free.
pub struct Device {
    /// The flash translation layer: mapping, blocks, GC victims.
    pub(crate) ftl: Ftl,
    /// The drive's geometry (dies, planes, blocks, units), from the profile.
    geo: Geometry,
    /// Slot to die (slots per die) and slot to NAND page (units per page), without a `div`
    /// instruction on the read path: a pool's slots follow each other, and a die's pools.
    die_of_slot: FastDiv,
    page_of_slot: FastDiv,
    /// The controller: when it takes the next command, and its per-command costs.
    ctrl: Controller,
    /// The host link (PCIe/SATA) between host and write buffer.
    link: Link,
    /// The NAND channels between controller and dies.
    chan: Channels,
    /// The dies: when each is free, what it has booked, and its GC work.
    dies: Dies,
    /// Whether the drive has served a read: until then it keeps no calendar of die work or
    /// idle link stretches (nothing could use them), which keeps the write path of a drive
    /// only written lean.
    calendars: bool,
    /// The DRAM write buffer and the multi-plane program being filled from it.
    buf: WriteBuffer,
    /// Idle-time garbage collection (`gc_idle_*`).
    idle: IdleGc,
    /// The work the series counts (host writes, programs, GC copies, erases, folding), booked
    /// when the host's writes complete and the dies carry it out ([`crate::media`]).
    media: MediaLedger,
    /// Version tag of the next unit written (payload tracking, tests) [count].
    next_payload: u64,
    /// A page's worth of a write's units go to the FTL at once where that is exact
    /// ([`Device::place_run`]); off only to test that it is.
    write_runs: bool,
    /// Die time by kind of work [ns], host programs and read-modify-write counts.
    timing: TimingCounters,
    /// Compressed data: NAND slots the next units written fill [slots per 4 KiB unit, mean],
    /// the fraction of a slot carried from unit to unit [slots], and companion units written
    /// so far [units] ([`Device::write_compressed`]).
    slots_per_unit: f64,
    slot_carry: f64,
    companion_units: u64,
    /// The pseudo-SLC write cache, if the NAND has one ([`crate::slc`]).
    slc: Option<SlcCache>,
    /// The mapping-table cache of a DRAM-less drive ([`crate::map_cache`]).
    map: Option<MapCache>,
    /// Map-page data written back and not yet a whole program [units]; the die that takes the
    /// next such program [die index].
    map_carry: u64,
    map_die: usize,
    /// The die that takes the next program's worth of folding [die index].
    fold_die: usize,
    /// A zoned namespace's zones (None: a conventional namespace).
    zns: Option<crate::zns::Zones>,
    /// A zoned namespace: per die, the units of the program being filled and when the last
    /// of them was buffered [units, ns] (each die fills its own: zones' units are bound for
    /// their dies).
    zone_fill: Vec<(usize, Ns)>,
    /// In a phase on two threads, the FTL's results, in order ([`pipe`]); None otherwise.
    pipe: Option<pipe::Rx>,
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
            ctrl: Controller {
                free_ns: 0,
                cmd_ns: us_to_ns(cfg.controller_cmd_us),
                trim_cmd_ns: us_to_ns(cfg.trim_cmd_us),
                trim_ns_per_unit: cfg.trim_us_per_gib * 1e3 * UNIT_BYTES as f64 / (1u64 << 30) as f64,
            },
            link: Link { free_ns: 0, gaps: Gaps::new(unit_link, false), unit_ns: unit_link },
            chan: Channels {
                free_ns: vec![0; geo.channels],
                gaps: vec![Gaps::new(unit_chan, true); geo.channels],
                unit_ns: unit_chan,
                program_ns: transfer_ns(program_bytes, cfg.channel_mbps * 1e6),
                of_die: (0..geo.dies).map(|d| d % geo.channels).collect(),
            },
            dies: Dies {
                free_ns: vec![0; geo.dies],
                queue: vec![DieQueue::default(); geo.dies],
                t_read_ns: us_to_ns(cfg.t_read_us),
                t_prog_ns: us_to_ns(cfg.t_prog_us),
                t_erase_ns: us_to_ns(cfg.t_erase_us),
                gc_carry_units: vec![0; geo.pools],
                gc_booked: vec![VecDeque::new(); geo.dies],
                gc_forgotten_ns: 0,
                die_of_pool: FastDiv::new(geo.planes_per_die),
                pages_of_units: FastDiv::new(geo.units_per_page),
            },
            calendars: false,
            buf: WriteBuffer {
                capacity_units: geo.buffer_units as u64,
                used_units: 0,
                pending: vec![VecDeque::new(); geo.dies],
                next: BinaryHeap::new(),
                die: 0,
                fill_units: 0,
                ready_ns: 0,
                fill_plane: (0..geo.units_per_program).map(|i| i / geo.units_per_page).collect(),
            },
            idle: IdleGc { delay_ns: us_to_ns(cfg.gc_idle_delay_ms * 1e3), free_blocks: cfg.gc_idle_free_blocks as usize },
            media: MediaLedger::new(geo.dies),
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
            zns: geo.zones.as_ref().map(crate::zns::Zones::new),
            zone_fill: if geo.zones.is_some() { vec![(0, 0); geo.dies] } else { Vec::new() },
            pipe: None,
            die_of_slot: FastDiv::new(geo.slots_per_block * geo.blocks_per_pool * geo.planes_per_die),
            page_of_slot: FastDiv::new(geo.units_per_page),
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
            self.ctrl.free_ns = self.ctrl.free_ns.max(t) + miss_ns;
            ready = ready.max(self.ctrl.free_ns + self.dies.t_read_ns);
            if writeback {
                self.map_carry += page_units;
                while self.map_carry >= self.geo.units_per_program as u64 {
                    self.map_carry -= self.geo.units_per_program as u64;
                    let die = self.map_die;
                    self.map_die = (self.map_die + 1) % self.geo.dies;
                    let busy = self.chan.program_ns + self.dies.t_prog_ns;
                    let end = self.occupy_die(die, t, busy) + busy;
                    let units = self.geo.units_per_program as u64;
                    self.media.book(die, end, end, move || MediaWork { nand_units: units, ..MediaWork::default() });
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
            + (self.dies.free_ns.capacity() + self.chan.free_ns.capacity() + self.dies.gc_carry_units.capacity()) * 8
            + self.buf.pending.iter().map(|q| q.capacity() * 16).sum::<usize>()
            + self.buf.next.capacity() * 16
            + self.chan.gaps.iter().chain([&self.link.gaps]).map(|g| g.gaps.capacity() * 24).sum::<usize>()
            + self.dies.queue.iter().map(|q| q.ops.capacity() * 16).sum::<usize>()
            + self.dies.gc_booked.iter().map(|q| q.capacity() * 16).sum::<usize>()
            + self.media.state_bytes()
    }

    /// The work the series counts carried out by `t` [ns], cumulative: host writes completed,
    /// units programmed, GC copies and erases as the dies do them (see [`crate::media`]); `t`
    /// no earlier than the last time given to [`Device::forget_gc_before`].
    pub fn media_done(&self, t: Ns) -> MediaWork {
        self.media.done_by(t)
    }

    /// All the work decided so far, cumulative, whether or not the dies have carried it out
    /// (the units of the program being filled and of map pages not yet a whole program
    /// included): what a phase ending now counts ([`Device::settle_media`]).
    pub fn media_decided(&self) -> MediaWork {
        self.media.decided(self.unbooked())
    }

    fn unbooked(&self) -> MediaWork {
        MediaWork { nand_units: (self.buf.fill_units as u64) + self.map_carry, ..MediaWork::default() }
    }

    /// Counts all the work decided so far as carried out from now on ([`Device::media_done`]
    /// then gives it for any time): at a phase's end, the work its dies still have to do
    /// goes into its last interval, not into the next phase's. The units of the program
    /// being filled and of map pages not yet a whole program count too.
    pub fn settle_media(&mut self) {
        self.media.settle(self.unbooked());
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
        self.media.book(lane, done, done, move || MediaWork { host_units: units, host_bytes: bytes, ..MediaWork::default() });
    }

    /// Writes `n` 4 KiB units starting at logical unit `lpn`, submitted at `submit`.
    /// Returns the completion time. Always inlined: the host loop's hot path.
    #[inline(always)]
    pub fn write(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        self.write_in::<false>(lpn, n, submit)
    }

    /// [`Device::write`]; `PIPED`: in a two-thread phase, the FTL's results come from
    /// [`Device::pipe`], the FTL's thread having made its calls ([`pipe::Place::write`]).
    #[inline(always)]
    pub(crate) fn write_in<const PIPED: bool>(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
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
            let k = ((upp - self.buf.fill_units % upp) as u64).min(end - u);
            if k > 1 && self.write_runs && self.place_run::<PIPED>(u, k, accepted, &mut t) {
                u += k;
                continue;
            }
            t = self.buffer_and_send(accepted, t);
            self.place_unit::<PIPED>(u, t);
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
    fn place_run<const PIPED: bool>(&mut self, lpn: u64, k: u64, accepted: Ns, t: &mut Ns) -> bool {
        // The die as place_unit would pick it for the first unit (neither buffer nor link
        // moves a die); kept only if the run is taken (striping picks the die after pu_die).
        let die = if self.buf.fill_units == 0 { self.pick_die() } else { self.buf.die };
        let pool = die * self.geo.planes_per_die + self.buf.fill_plane[self.buf.fill_units];
        let taken = if PIPED { self.pipe().pop() != 0 } else { self.ftl.write_run(lpn, k, pool, self.next_payload) };
        if !taken {
            return false;
        }
        self.buf.die = die;
        self.next_payload += k;
        for _ in 0..k {
            *t = self.buffer_and_send(accepted, *t);
        }
        self.buf.fill_units += k as usize;
        self.buf.ready_ns = *t;
        if self.buf.fill_units == self.geo.units_per_program {
            self.program_pending();
        }
        true
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
        self.place_unit::<false>(lpn, t);
        self.slot_carry += self.slots_per_unit;
        let slots = (self.slot_carry.floor() as u64).clamp(1, per_unit + 1);
        self.slot_carry = (self.slot_carry - slots as f64).max(0.0);
        for j in 0..slots - 1 {
            t = self.reserve_buffer_unit(t);
            let c = self.ftl.companion_lpn(lpn, j);
            self.place_unit::<false>(c, t);
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
                self.place_unit::<false>(u, t);
                t
            };
        }
        t
    }

    /// Reads unit `lpn` for a read-modify-write from `t` (die, then channel); returns when
    /// its data is in the controller (`t` if it holds none).
    fn rmw_read(&mut self, lpn: u64, t: Ns) -> Ns {
        let Some(slot) = self.ftl.lookup(lpn) else { return t };
        let die = self.die_of_slot(slot);
        let ch = self.channel_of_die(die);
        let start = self.dies.free_ns[die].max(t);
        let sensed = start + self.dies.t_read_ns;
        self.dies.free_ns[die] = sensed;
        if self.calendars {
            self.dies.queue[die].push(self.ctrl.free_ns, start, sensed);
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

    /// The die that holds `slot`.
    #[inline(always)]
    fn die_of_slot(&self, slot: u32) -> usize {
        let die = self.die_of_slot.div(slot) as usize;
        debug_assert_eq!(die, self.ftl.pool_of_slot(slot) / self.geo.planes_per_die);
        die
    }

    /// Reads `n` units from `lpn`, submitted at `submit`; returns the completion time.
    /// Units of one command stored in the same NAND page share one page read (sense).
    /// Not inlined: the host loop stays small enough to keep its state in registers.
    #[inline(never)]
    pub fn read(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        self.read_in::<false>(lpn, n, submit)
    }

    /// [`Device::read`] in a two-thread phase; out of line for the same reason.
    #[inline(never)]
    pub(crate) fn read_piped(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        self.read_in::<true>(lpn, n, submit)
    }

    /// [`Device::read`]; `PIPED`: the map lookups' results come from [`Device::pipe`].
    #[inline(always)]
    pub(crate) fn read_in<const PIPED: bool>(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        let t = self.accept_command(submit);
        if !self.calendars {
            self.start_calendars(t);
        }
        // Data can be read once its map entries are known.
        let t = self.map_lookup(lpn, n, false, t);
        let mut done = t;
        let mut last_page = u32::MAX;
        let mut last_sensed = t;
        for u in lpn..lpn + n {
            let slot = if PIPED { self.pipe().slot() } else { self.ftl.lookup(u) };
            let ready = match slot {
                None => t,
                Some(slot) => {
                    let die = self.die_of_slot(slot);
                    let ch = self.channel_of_die(die);
                    let page = self.page_of_slot.div(slot);
                    let sensed = if page == last_page { last_sensed } else { self.read_start(die, t) + self.dies.t_read_ns };
                    last_page = page;
                    last_sensed = sensed;
                    self.read_channel(ch, t, sensed)
                }
            };
            done = done.max(self.transfer(t, ready, true));
        }
        done
    }

    /// A flush (cache sync) submitted at `submit`, after every earlier command completed:
    /// the program being filled (on a zoned namespace, every die's) is sent to NAND (partly
    /// filled), and the flush completes once
    /// every buffered unit is programmed. Returns the completion time.
    pub fn flush(&mut self, submit: Ns) -> Ns {
        let t = self.accept_command(submit);
        self.program_zone_fills();
        if self.buf.fill_units > 0 {
            self.program_pending();
        }
        let programmed = self.buf.pending.iter().filter_map(|q| q.back()).map(|&(end, _)| end).max().unwrap_or(0);
        t.max(programmed)
    }

    /// Deallocates (TRIMs) `n` units from `lpn`; returns the completion time.
    /// Costs `trim_cmd_us` per command plus `trim_us_per_gib` of controller time.
    #[inline(never)]
    pub fn trim(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        self.trim_in::<false>(lpn, n, submit)
    }

    /// [`Device::trim`] in a two-thread phase.
    #[inline(never)]
    pub(crate) fn trim_piped(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        self.trim_in::<true>(lpn, n, submit)
    }

    /// [`Device::trim`]; `PIPED`: the FTL's thread has unmapped the units.
    #[inline(always)]
    pub(crate) fn trim_in<const PIPED: bool>(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        let t = self.accept_command(submit);
        self.map_lookup(lpn, n, true, t);
        if !PIPED {
            for u in lpn..lpn + n {
                self.ftl.trim(u);
            }
        }
        let cost = self.ctrl.trim_cmd_ns + (self.ctrl.trim_ns_per_unit * n as f64).round() as Ns;
        self.ctrl.free_ns = t + cost;
        self.ctrl.free_ns
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
    /// Idle time changes a drive with idle GC, or with an SLC cache that idle time folds or,
    /// `direct`, takes back in use; a drive with neither has no idle delay to report.
    #[test]
    fn only_a_drive_idle_time_changes_has_an_idle_work_delay() {
        let delay = |sets: &[(&str, &str)]| {
            let mut cfg = tiny_config(1 << 20);
            for (k, v) in [("gc_idle_delay_ms", "250")].iter().chain(sets) {
                cfg.set(k, v).unwrap();
            }
            Device::new(&cfg, false, 1).unwrap().idle_work_delay_ns()
        };
        assert_eq!(delay(&[]), None);
        assert_eq!(delay(&[("gc_idle_free_blocks", "4")]), Some(250_000 * US));
        let slc = [("slc_static_bytes", "1MiB")];
        for (idle_fold, when_full, changes) in [("1", "fold", true), ("0", "fold", false), ("0", "direct", true)] {
            let sets = [slc[0], ("slc_idle_fold", idle_fold), ("slc_when_full", when_full)];
            assert_eq!(delay(&sets), changes.then_some(250_000 * US), "slc_idle_fold={idle_fold}, {when_full}");
        }
    }

    #[test]
    fn the_first_read_after_writes_goes_before_the_programs_queued_on_its_die() {
        let mut dev = Device::new(&tiny_config(1 << 20), false, 1).unwrap();
        // 30 programs over three dies: ~13 ms booked on each.
        assert!(dev.write(0, 30, 0) < 1000 * US);
        assert!(dev.dies.free_ns.iter().all(|&f| f > 12_000 * US), "{:?}", dev.dies.free_ns);
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
        let x = dev.chan.program_ns;
        assert_eq!(dev.program_channel(0, 10_000 * US), 10_000 * US);
        assert_eq!(dev.program_channel(0, 100 * US), 100 * US);
        assert_eq!(dev.program_channel(0, 50 * US), 50 * US, "the stretch before the last one placed");
        assert_eq!(dev.program_channel(0, 100 * US), 100 * US + x, "right after the one at 100 us");
        assert_eq!(dev.program_channel(0, 10_000 * US - x / 2), 10_000 * US + x, "too late to fit before 10 ms");
        // A read sensed meanwhile crosses in the stretches programs left.
        assert_eq!(dev.read_channel(0, 0, 1_000 * US), 1_000 * US + dev.chan.unit_ns);
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
