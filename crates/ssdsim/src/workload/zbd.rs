//! fio's `zonemode=zbd` on a zoned namespace (fio's `zbd.c`, re-implemented): the host
//! moves each write to the write pointer of a zone it may write, keeps at most
//! `max_open_zones` write target zones on the drive (`job_max_open_zones` per job), resets a
//! full zone before writing it again, and with `zone_reset_threshold` /
//! `zone_reset_frequency` resets the zone of one write in every 1 / frequency once the
//! job's zones hold more than threshold × its span of data. Reads stay below the write
//! pointer unless `read_beyond_wp`; a TRIM resets the zone it starts in (fio's trims of a
//! zoned device), a random one a zone holding data.
//!
//! Simplifications: the host acts when it submits the command, not when earlier ones
//! complete (fio's quiesce before a reset or a zone change is not waited for), a zone
//! leaves the write target set when a write fills it, and a sequential job's next offset is
//! its own (fio continues from the adjusted one; they agree while the job writes zones in
//! order from their write pointers).

use super::{err, WorkloadError};
use crate::command::{CmdKind, Command};
use crate::config::ZoneGeometry;
use crate::device::Device;
use crate::time::Ns;
use crate::zns::ZoneState;

/// fio's zone options of a job (`zonemode=zbd`).
#[derive(Clone, Debug, PartialEq)]
pub struct Zbd {
    /// fio's `max_open_zones`: write target zones at once, every job together; 0: the
    /// drive's open zone limit (none if it has none) [zones].
    pub max_open_zones: u32,
    /// fio's `job_max_open_zones`: write target zones of this job at once; 0: no limit [zones].
    pub job_max_open_zones: u32,
    /// fio's `zone_reset_threshold` and `zone_reset_frequency` [fractions, 0..1]; frequency 0:
    /// no such resets.
    pub reset_threshold: f64,
    pub reset_frequency: f64,
    /// fio's `read_beyond_wp`: reads go where the offsets say, written or not.
    pub read_beyond_wp: bool,
    /// fio's `zonesize`: must be the drive's zone size (fio refuses another on a zoned
    /// device); 0: the drive's [bytes].
    pub zone_size_bytes: u64,
    /// fio's `ignore_zone_limits`: the drive's open zone limit is not the host's (only
    /// `max_open_zones` is).
    pub ignore_zone_limits: bool,
}

/// Write target zones, shared by every job of a phase (fio's `zbdi->write_zones`).
#[derive(Clone, Debug, Default)]
pub(crate) struct WriteZones {
    zones: Vec<u32>,
    /// At most this many (0: no limit, the set is not kept).
    max: usize,
}

impl WriteZones {
    /// At most `max` write target zones (0: no limit), starting with the zones the drive has
    /// open (`open`, oldest first): fio adds the zones it finds open when it sets up a job.
    pub(crate) fn new(max: usize, open: &[u32]) -> Self {
        let zones = if max == 0 { Vec::new() } else { open.iter().take(max).copied().collect() };
        WriteZones { zones, max }
    }
}

/// One job's zone state (fio's per-thread zbd counts).
#[derive(Clone, Debug)]
pub(crate) struct ZbdJob {
    cfg: Zbd,
    geo: ZoneGeometry,
    /// The job's zones: `first..end` (fio's min_zone, max_zone).
    first: usize,
    end: usize,
    /// Smallest write block [units] (fio's min_bs), whether its writes are random.
    min_bs: u64,
    random: bool,
    /// Write target zones the job added (fio's `td->num_write_zones`).
    own: usize,
    /// Writes left before a threshold reset (fio's `write_cnt`).
    write_cnt: u64,
}

impl ZbdJob {
    /// Checks `cfg` against the drive (`zones`: None on a conventional namespace) for a job
    /// over `start..start + span` units writing blocks of at least `min_bs` units.
    pub(crate) fn new(cfg: &Zbd, zones: Option<&ZoneGeometry>, start: u64, span: u64, min_bs: u64, random: bool) -> Result<Self, WorkloadError> {
        let Some(geo) = zones else {
            return Err(err("zbd", "zonemode=zbd needs a zoned drive: set the profile key zns_zone_size_bytes (the zone size), or use the zns profile"));
        };
        if cfg.zone_size_bytes != 0 && cfg.zone_size_bytes != geo.zone_units * 4096 {
            return Err(err(
                "zbd.zone_size_bytes",
                format!("{} bytes is not the drive's zone size, {} bytes (zns_zone_size_bytes); fio refuses a zonesize other than a zoned device's: set it to that or leave it out", cfg.zone_size_bytes, geo.zone_units * 4096),
            ));
        }
        for (field, v) in [("zbd.reset_threshold", cfg.reset_threshold), ("zbd.reset_frequency", cfg.reset_frequency)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(err(field, format!("{v} is not a fraction between 0 and 1")));
            }
        }
        if !cfg.ignore_zone_limits && geo.max_open != 0 && cfg.max_open_zones as usize > geo.max_open {
            return Err(err(
                "zbd.max_open_zones",
                format!("{} is more than the drive's {} open zones (zns_max_open_zones), which fio refuses; lower it or set it to 0 (the drive's limit)", cfg.max_open_zones, geo.max_open),
            ));
        }
        if min_bs > geo.capacity_units {
            return Err(err("write_bs_bytes", format!("a block of {} bytes is larger than a zone's capacity ({} bytes)", min_bs * 4096, geo.capacity_units * 4096)));
        }
        let first = (start / geo.zone_units) as usize;
        let end = ((start + span).div_ceil(geo.zone_units) as usize).min(geo.zones);
        let mut job = ZbdJob { cfg: cfg.clone(), geo: geo.clone(), first, end, min_bs, random, own: 0, write_cnt: 0 };
        job.reset_write_cnt();
        Ok(job)
    }

    /// The phase's write target set limit for this job: fio's `max_open_zones`, else the
    /// drive's open limit (none with `ignore_zone_limits`).
    pub(crate) fn max_write_zones(&self) -> usize {
        if self.cfg.max_open_zones != 0 || self.cfg.ignore_zone_limits { self.cfg.max_open_zones as usize } else { self.geo.max_open }
    }

    fn reset_write_cnt(&mut self) {
        let f = self.cfg.reset_frequency;
        self.write_cnt = if f > 0.0 { (1.0 / f).min(u32::MAX as f64) as u64 } else { u32::MAX as u64 };
    }

    fn start(&self, z: usize) -> u64 {
        z as u64 * self.geo.zone_units
    }

    fn remainder(&self, dev: &Device, z: usize) -> u64 {
        let zs = dev.zones().expect("a zoned drive");
        if zs.state(z) == ZoneState::Full { 0 } else { self.geo.capacity_units - zs.write_pointer(z) }
    }

    /// Adds zone `z` to the write target set if there is room (fio's `zbd_write_zone_get`).
    fn get(&mut self, set: &mut WriteZones, z: usize) -> bool {
        if set.max == 0 && self.cfg.job_max_open_zones == 0 {
            return true;
        }
        if set.zones.contains(&(z as u32)) {
            return true;
        }
        let job_full = self.cfg.job_max_open_zones != 0 && self.own >= self.cfg.job_max_open_zones as usize;
        if job_full || (set.max != 0 && set.zones.len() >= set.max) {
            return false;
        }
        set.zones.push(z as u32);
        self.own += 1;
        true
    }

    fn put(&mut self, set: &mut WriteZones, z: usize) {
        if let Some(i) = set.zones.iter().position(|&w| w as usize == z) {
            set.zones.remove(i);
            self.own = self.own.saturating_sub(1);
        }
    }

    /// The zone a write at `unit` goes to (fio's `zbd_convert_to_write_zone`).
    fn write_zone(&mut self, set: &mut WriteZones, dev: &mut Device, unit: u64, submit: Ns) -> usize {
        let zb = ((unit / self.geo.zone_units) as usize).clamp(self.first, self.end - 1);
        if self.get(set, zb) {
            return zb;
        }
        // The set is full: a write target zone of the job's, picked by the offset.
        let mine: Vec<usize> = set.zones.iter().map(|&z| z as usize).filter(|z| (self.first..self.end).contains(z)).collect();
        if mine.is_empty() {
            return zb;
        }
        let span = (self.end - self.first) as u64 * self.geo.zone_units;
        let k = ((unit.saturating_sub(self.start(self.first))) * mine.len() as u64 / span) as usize;
        let z = mine[k.min(mine.len() - 1)];
        if self.remainder(dev, z) >= self.min_bs {
            return z;
        }
        if let Some(&w) = mine.iter().find(|&&w| self.remainder(dev, w) >= self.min_bs) {
            return w;
        }
        // Every write target zone is (nearly) full: fio finishes one and writes it again.
        dev.finish_zone(z, submit);
        z
    }

    /// The command fio sends for `cmd` (a write moved to a write pointer, a read below it, a
    /// TRIM to a zone's start), after any zone reset or finish it sends first; None for a
    /// read when no zone of the job's range holds data to read (fio ends the job there).
    pub(crate) fn adjust(&mut self, set: &mut WriteZones, dev: &mut Device, cmd: Command, submit: Ns) -> Option<Command> {
        Some(match cmd.kind {
            CmdKind::Write => self.adjust_write(set, dev, cmd, submit),
            CmdKind::Read if !self.cfg.read_beyond_wp => return self.adjust_read(dev, cmd),
            CmdKind::Trim => {
                let zs = dev.zones().expect("a zoned drive");
                let mut z = ((cmd.unit / self.geo.zone_units) as usize).clamp(self.first, self.end - 1);
                if self.random && zs.write_pointer(z) == 0 {
                    // A random TRIM goes to the nearest zone holding data (fio's zbd_find_zone).
                    if let Some(w) = (z..self.end).chain((self.first..z).rev()).find(|&w| zs.write_pointer(w) > 0) {
                        z = w;
                    }
                }
                Command { kind: CmdKind::Trim, unit: self.start(z), units: self.geo.zone_units }
            }
            _ => cmd,
        })
    }

    fn adjust_write(&mut self, set: &mut WriteZones, dev: &mut Device, cmd: Command, submit: Ns) -> Command {
        let z = self.write_zone(set, dev, cmd.unit, submit);
        let mut reset = false;
        if self.cfg.reset_frequency > 0.0 {
            let zs = dev.zones().expect("a zoned drive");
            let valid: u64 = (self.first..self.end).map(|w| zs.write_pointer(w)).sum();
            let span = (self.end - self.first) as u64 * self.geo.zone_units;
            if valid as f64 >= span as f64 * self.cfg.reset_threshold {
                self.write_cnt -= 1;
                if self.write_cnt == 0 {
                    self.reset_write_cnt();
                    reset = true;
                }
            }
        }
        if reset || self.remainder(dev, z) < self.min_bs {
            dev.reset_zone(z, submit);
        }
        let wp = dev.zones().expect("a zoned drive").write_pointer(z);
        let room = self.geo.capacity_units - wp;
        let units = cmd.units.min(room) / self.min_bs * self.min_bs;
        if wp + units == self.geo.capacity_units || self.geo.capacity_units - (wp + units) < self.min_bs {
            // The write fills the zone (or leaves less than a block: fio finishes it once
            // written): it leaves the write target set.
            self.put(set, z);
        }
        Command { kind: CmdKind::Write, unit: self.start(z) + wp, units: units.max(self.min_bs.min(room)) }
    }

    /// A read moved below a write pointer: in its own zone if that holds data, else in the
    /// next zone that does (fio's zbd_find_zone); None when none does.
    fn adjust_read(&mut self, dev: &Device, cmd: Command) -> Option<Command> {
        let zs = dev.zones().expect("a zoned drive");
        let z = ((cmd.unit / self.geo.zone_units) as usize).clamp(self.first, self.end - 1);
        let w = (z..self.end).chain(self.first..z).find(|&w| zs.write_pointer(w) >= cmd.units.min(self.min_bs).max(1))?;
        let written = zs.write_pointer(w);
        let off = if w == z { cmd.unit - self.start(z) } else { 0 };
        let off = if off + cmd.units > written { written.saturating_sub(cmd.units) } else { off };
        Some(Command { kind: CmdKind::Read, unit: self.start(w) + off, units: cmd.units.min(written) })
    }
}
