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
//! buffered (write-back cache). Buffered units are striped over dies round-robin; when a die
//! has a full multi-plane program (`planes_per_die × page_size_bytes`), it is sent over the
//! die's channel and programmed. Foreground GC triggered by a write occupies the victim's
//! die (page reads, copyback programs, erase), so programs on that die wait; once the buffer
//! wraps around to slots still waiting on that die, the host stalls. That is how GC
//! becomes visible as low or zero IOPS.
//!
//! Reads take the die (`t_read_us`), the channel and the host link; a read of an unmapped
//! (never written or trimmed) unit is answered by the controller alone.
//!
//! A write that covers a unit only partly (sizes or offsets below 4 KiB) is a
//! read-modify-write: a unit that holds data is first read from NAND (die and channel, as a
//! read), merged in the buffer and programmed whole ([`Device::write_partial`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::config::{Config, ConfigError, Geometry, StallScope, UNIT_BYTES};
use crate::ftl::{Ftl, GcWork};
use crate::time::{transfer_ns, us_to_ns, Ns};

/// Die-time counters of the timing model [ns].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimingCounters {
    /// Sum over dies of time spent on GC (reads, copy programs, erases).
    pub gc_die_ns: Ns,
    /// Sum over dies of time spent programming host data.
    pub host_prog_die_ns: Ns,
    /// NAND page programs of host data (multi-plane programs count once).
    pub host_programs: u64,
    /// Units read from NAND to merge a write that covers them only partly
    /// (read-modify-write, [`Device::write_partial`]).
    pub rmw_reads: u64,
    /// 512-byte sectors of the units such writes programmed that the host did not send
    /// (merged from the old data, or left as they were in a unit that held none).
    pub rmw_fill_sectors: u64,
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
    chan_free: Vec<Ns>,
    link_free: Ns,
    ctrl_free: Ns,
    /// Write-buffer capacity [units] and units held (buffered, not yet programmed).
    buf_capacity: u64,
    buf_used: u64,
    /// Programs in flight: (end time, units they free), earliest first.
    buf_pending: BinaryHeap<Reverse<(Ns, u64)>>,
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
    trim_cmd: Ns,
    trim_ns_per_unit: f64,
    idle_delay: Ns,
    idle_free_blocks: usize,
    next_payload: u64,
    timing: TimingCounters,
    /// Compressed data: NAND slots the next units written fill (their mean; carried as a
    /// fraction from unit to unit) and companion units written so far
    /// ([`Device::write_compressed`]).
    slots_per_unit: f64,
    slot_carry: f64,
    companion_units: u64,
}

impl Device {
    /// A fresh drive; `seed` drives the FTL's random choices (d-choices GC).
    pub fn new(cfg: &Config, track_payload: bool, seed: u64) -> Result<Self, ConfigError> {
        let geo = cfg.validate()?;
        let ftl = Ftl::with_seed(&geo, track_payload, seed);
        let program_bytes = geo.units_per_program as u64 * UNIT_BYTES;
        Ok(Device {
            t_read: us_to_ns(cfg.t_read_us),
            t_prog: us_to_ns(cfg.t_prog_us),
            t_erase: us_to_ns(cfg.t_erase_us),
            ctrl_cmd: us_to_ns(cfg.controller_cmd_us),
            unit_link: transfer_ns(UNIT_BYTES, cfg.host_link_mbps * 1e6),
            unit_chan: transfer_ns(UNIT_BYTES, cfg.channel_mbps * 1e6),
            program_xfer: transfer_ns(program_bytes, cfg.channel_mbps * 1e6),
            die_free: vec![0; geo.dies],
            chan_free: vec![0; geo.channels],
            link_free: 0,
            ctrl_free: 0,
            buf_capacity: geo.buffer_units as u64,
            buf_used: 0,
            buf_pending: BinaryHeap::new(),
            pu_die: 0,
            pu_fill: 0,
            pu_ready: 0,
            fill_plane: (0..geo.units_per_program).map(|i| i / geo.units_per_page).collect(),
            die_channel: (0..geo.dies).map(|d| d % geo.channels).collect(),
            gc_carry: vec![0; geo.pools],
            trim_cmd: us_to_ns(cfg.trim_cmd_us),
            trim_ns_per_unit: cfg.trim_us_per_gib * 1e3 * UNIT_BYTES as f64 / (1u64 << 30) as f64,
            idle_delay: us_to_ns(cfg.gc_idle_delay_ms * 1e3),
            idle_free_blocks: cfg.gc_idle_free_blocks as usize,
            next_payload: 1,
            timing: TimingCounters::default(),
            slots_per_unit: 1.0,
            slot_carry: 0.0,
            companion_units: 0,
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

    /// Heap bytes held by the drive's state (FTL plus timing resources).
    pub fn state_bytes(&self) -> usize {
        self.ftl.state_bytes()
            + (self.die_free.capacity() + self.chan_free.capacity() + self.gc_carry.capacity()) * 8
            + self.buf_pending.capacity() * 16
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
        let mut t = self.accept_command(submit);
        for u in lpn..lpn + n {
            // Wait for buffer space, then move the data over the host link.
            t = self.reserve_buffer_unit(t);
            self.link_free = self.link_free.max(t) + self.unit_link;
            t = self.link_free;
            self.place_unit(u, t);
        }
        t
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
        let mut t = self.accept_command(submit);
        for u in lpn..lpn + n {
            t = self.reserve_buffer_unit(t);
            self.link_free = self.link_free.max(t) + self.unit_link;
            t = self.link_free;
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
        let mut t = accepted;
        self.timing.rmw_fill_sectors += fill_sectors;
        for u in lpn..lpn + n {
            t = self.reserve_buffer_unit(t);
            self.link_free = self.link_free.max(t) + self.unit_link;
            t = self.link_free;
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
        let sensed = self.die_free[die].max(t) + self.t_read;
        self.die_free[die] = sensed;
        self.chan_free[ch] = self.chan_free[ch].max(sensed) + self.unit_chan;
        self.timing.rmw_reads += 1;
        self.chan_free[ch]
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
        while let Some(&Reverse((end, units))) = self.buf_pending.peek() {
            if end > t && self.buf_used < self.buf_capacity {
                break;
            }
            self.buf_pending.pop();
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
    fn program_pending(&mut self) {
        let die = self.pu_die;
        let ch = self.channel_of_die(die);
        let start = self.die_free[die].max(self.pu_ready).max(self.chan_free[ch]);
        self.chan_free[ch] = start + self.program_xfer;
        let end = start + self.program_xfer + self.t_prog;
        self.die_free[die] = end;
        self.timing.host_prog_die_ns += self.t_prog;
        self.timing.host_programs += 1;
        self.buf_pending.push(Reverse((end, self.pu_fill as u64)));
        self.pu_fill = 0;
    }

    /// The die for the next program: the one free earliest, so a die busy with GC is
    /// skipped while others can take data (ties go round-robin after the last die used).
    /// That is the first die, in cyclic order from the one after the last used, whose free
    /// time is the minimum: found as the minimum (a vectorised scan), then its first position.
    #[inline]
    fn pick_die(&self) -> usize {
        let start = if self.pu_die + 1 == self.geo.dies { 0 } else { self.pu_die + 1 };
        let free = &self.die_free[..];
        let earliest = *free.iter().min().expect("a drive has dies");
        let (before, after) = free.split_at(start);
        match after.iter().position(|&t| t == earliest) {
            Some(i) => start + i,
            None => before.iter().position(|&t| t == earliest).expect("the minimum is in the slice"),
        }
    }

    /// Occupies the die of `pool` with the GC work, starting no earlier than `now`.
    fn charge_gc(&mut self, pool: usize, work: GcWork, now: Ns) {
        let die = pool / self.geo.planes_per_die;
        let carry = &mut self.gc_carry[pool];
        *carry += work.units_copied;
        let programs = *carry / self.geo.units_per_page as u64;
        *carry %= self.geo.units_per_page as u64;
        let busy = work.page_reads * self.t_read + programs * self.t_prog + work.erases * self.t_erase;
        let start = self.die_free[die].max(now);
        self.die_free[die] = start + busy;
        self.timing.gc_die_ns += busy;
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
        if self.idle_free_blocks == 0 || duration <= self.idle_delay {
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
        let mut next_plane = vec![0; self.geo.dies];
        let mut collected = 0;
        loop {
            let mut pick: Option<(Ns, usize)> = None;
            for die in 0..self.geo.dies {
                if has_work[die * planes..(die + 1) * planes].iter().any(|&w| w) {
                    let t = self.die_free[die].max(start);
                    if pick.is_none_or(|(best, _)| t < best) {
                        pick = Some((t, die));
                    }
                }
            }
            let Some((t, die)) = pick else { break };
            // Copies land on every die: stop once any die is booked to the end of the idle
            // period (each die overruns it by at most one victim's work, as without sorting).
            if t >= end || self.die_free.iter().any(|&f| f >= end) {
                break;
            }
            let plane = (0..planes).map(|k| (next_plane[die] + k) % planes).find(|&p| has_work[die * planes + p]).expect("die has work");
            next_plane[die] = (plane + 1) % planes;
            let pool = die * planes + plane;
            if !self.ftl.sort_for_idle(pool, self.idle_free_blocks) {
                has_work[pool] = false;
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
                    let sensed = if page == last_page {
                        last_sensed
                    } else {
                        let s = self.die_free[die].max(t) + self.t_read;
                        self.die_free[die] = s;
                        s
                    };
                    last_page = page;
                    last_sensed = sensed;
                    self.chan_free[ch] = self.chan_free[ch].max(sensed) + self.unit_chan;
                    self.chan_free[ch]
                }
            };
            self.link_free = self.link_free.max(ready) + self.unit_link;
            done = done.max(self.link_free);
        }
        done
    }

    /// A flush (cache sync) submitted at `submit`, after every earlier command completed:
    /// the program being filled is sent to NAND (partly filled), and the flush completes once
    /// every buffered unit is programmed. Returns the completion time.
    pub fn flush(&mut self, submit: Ns) -> Ns {
        let t = self.accept_command(submit);
        if self.pu_fill > 0 {
            self.program_pending();
        }
        let programmed = self.buf_pending.iter().map(|Reverse((end, _))| *end).max().unwrap_or(0);
        t.max(programmed)
    }

    /// Deallocates (TRIMs) `n` units from `lpn`; returns the completion time.
    /// Costs `trim_cmd_us` per command plus `trim_us_per_gib` of controller time.
    #[inline(never)]
    pub fn trim(&mut self, lpn: u64, n: u64, submit: Ns) -> Ns {
        let t = self.accept_command(submit);
        for u in lpn..lpn + n {
            self.ftl.trim(u);
        }
        let cost = self.trim_cmd + (self.trim_ns_per_unit * n as f64).round() as Ns;
        self.ctrl_free = t + cost;
        self.ctrl_free
    }
}
