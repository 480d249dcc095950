//! The host's writes and TRIMs on a zoned namespace ([`crate::zns`]).

use super::*;

impl Simulation {
    /// [`Simulation::issue_bytes`] of a write or TRIM on a zoned namespace. A write the
    /// drive refuses (its error counted by the zone state machine) completes at once with
    /// no data: the series counts no IO for it. A TRIM resets every zone it covers whole, as
    /// fio's trims of a zoned block device do (a zone only partly covered keeps its data).
    #[inline(never)]
    pub(super) fn issue_zoned(&mut self, s: &mut Series, kind: CmdKind, unit: u64, units: u64, bytes: u64, submit: Ns) -> (Ns, u64) {
        if kind == CmdKind::Write {
            return match self.dev.write_zoned(unit, units, submit) {
                Ok(done) => {
                    self.dev.book_host_write(units, bytes, done);
                    s.record(1, submit, done, bytes);
                    (done, bytes)
                }
                Err((_, done)) => (done, 0),
            };
        }
        let zone_units = self.geometry().zones.as_ref().map_or(1, |z| z.zone_units);
        let mut done = submit;
        for z in unit.div_ceil(zone_units)..(unit + units) / zone_units {
            done = self.dev.reset_zone(z as usize, submit);
        }
        s.record(2, submit, done, bytes);
        (done, 0)
    }
}
