//! Commands of a zoned namespace ([`crate::zns`]): writes checked by the zone state machine
//! and placed in their zone's blocks ([`crate::ftl::Ftl::write_zoned`]), zone reset (the
//! zone's blocks erased on their dies), Zone Finish and Zone Append. A refused command
//! costs the controller's command time and changes nothing.

use super::*;
use crate::ftl::GcWork;
use crate::zns::{ZoneError, Zones};

impl Device {
    /// The zones of a zoned namespace (None on a conventional one).
    pub fn zones(&self) -> Option<&Zones> {
        self.zns.as_ref()
    }

    /// Writes `n` units from `lpn` on a zoned namespace, submitted at `submit`: its
    /// completion time, or, refused, the error and when the drive returned it. Each unit
    /// goes to the plane its zone offset gives, into the program its die is filling (every
    /// die fills one, as a zoned drive buffers the open zones' data), sent when full.
    pub fn write_zoned(&mut self, lpn: u64, n: u64, submit: Ns) -> Result<Ns, (ZoneError, Ns)> {
        let accepted = self.accept_command(submit);
        let zns = self.zns.as_mut().expect("a zoned write on a zoned namespace");
        let z = zns.write(lpn, n).map_err(|e| (e, accepted))?;
        let start = zns.start(z);
        self.map_lookup(lpn, n, true, accepted);
        let mut t = accepted;
        for u in lpn..lpn + n {
            let off = u - start;
            let die = self.ftl.zone_pool(z, off) / self.geo.planes_per_die;
            t = self.buffer_and_send(accepted, t);
            let payload = self.next_payload;
            self.next_payload += 1;
            self.ftl.write_zoned(u, z, off, payload);
            let fill = &mut self.zone_fill[die];
            *fill = (fill.0 + 1, t);
            if fill.0 == self.geo.units_per_program {
                self.program_zone_fill(die);
            }
        }
        Ok(t)
    }

    /// Sends the program die `die` has been filling (the write buffer's program of that die).
    fn program_zone_fill(&mut self, die: usize) {
        let (units, ready) = std::mem::take(&mut self.zone_fill[die]);
        (self.buf.die, self.buf.fill_units, self.buf.ready_ns) = (die, units, ready);
        self.program_pending();
    }

    /// Sends every die's partly filled program (a flush; nothing on a conventional namespace).
    pub(super) fn program_zone_fills(&mut self) {
        for die in 0..self.zone_fill.len() {
            if self.zone_fill[die].0 > 0 {
                self.program_zone_fill(die);
            }
        }
    }

    /// Zone Append of `n` units to zone `z` at `submit`: the first logical unit written
    /// (the drive's choice: the write pointer) and the completion time, or the error.
    pub fn zone_append(&mut self, z: usize, n: u64, submit: Ns) -> Result<(u64, Ns), (ZoneError, Ns)> {
        let zns = self.zns.as_ref().expect("a zone append on a zoned namespace");
        let lpn = zns.start(z) + zns.write_pointer(z);
        self.write_zoned(lpn, n, submit).map(|done| (lpn, done))
    }

    /// Zone reset of zone `z` at `submit`: the zone empties and its blocks are erased on
    /// their dies (erases and erase time counted as GC work of their planes). The command
    /// completes once the controller has taken it; later programs on those dies wait for
    /// the erases. Returns the completion time.
    pub fn reset_zone(&mut self, z: usize, submit: Ns) -> Ns {
        let t = self.accept_command(submit);
        let zns = self.zns.as_mut().expect("a zone reset on a zoned namespace");
        let (start, held) = (zns.start(z), zns.reset(z));
        if held == 0 {
            return t;
        }
        for pool in self.ftl.reset_zone(z, start, held) {
            let pool = pool % self.geo.pools;
            let work = self.ftl.take_gc_work(pool);
            if work != GcWork::default() {
                self.charge_gc(pool, work, t);
            }
        }
        t
    }

    /// Zone Open of zone `z` at `submit`: opens it explicitly, or refuses (the error
    /// counted). Returns the completion time.
    pub fn open_zone(&mut self, z: usize, submit: Ns) -> Result<Ns, (ZoneError, Ns)> {
        let t = self.accept_command(submit);
        self.zns.as_mut().expect("a zone open on a zoned namespace").open_explicitly(z).map(|_| t).map_err(|e| (e, t))
    }

    /// Zone Finish of zone `z` at `submit`: the zone becomes full. Returns the completion time.
    pub fn finish_zone(&mut self, z: usize, submit: Ns) -> Ns {
        let t = self.accept_command(submit);
        self.zns.as_mut().expect("a zone finish on a zoned namespace").finish(z);
        t
    }
}
