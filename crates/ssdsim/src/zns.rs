//! The zone state machine of a zoned namespace (NVMe ZNS, TP4053), without time.
//!
//! Each zone has a write pointer (units written from its start) and a state: empty,
//! implicitly opened (by a write), explicitly opened (by Zone Open), closed (active, not
//! open), full. A write must start at its zone's write pointer (sequential write
//! required) and end within the zone capacity; writing to a zone that is not open opens it,
//! first closing the implicitly opened zone opened longest ago when the open limit is
//! reached (the spec lets the controller choose it), and failing when no zone can be
//! closed or the active limit would be passed. A zone whose capacity is written is full and
//! no longer open or active. Zone reset empties a zone, Zone Finish makes it full. A command
//! the drive refuses leaves every zone as it was and counts as an error of its kind
//! ([`ZoneCounters`]). Read-only and offline zones are not modelled.
//!
//! Where a zone's data goes in NAND is the FTL's ([`crate::ftl::Ftl::write_zoned`]): its
//! own erase blocks, erased by the reset.

use crate::config::ZoneGeometry;

/// A zone's state (TP4053's ZSE, ZSIO, ZSEO, ZSC, ZSF).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    Empty,
    ImplicitlyOpened,
    ExplicitlyOpened,
    Closed,
    Full,
}

impl ZoneState {
    /// Open or closed: the zone holds one of the drive's active resources.
    pub fn active(self) -> bool {
        matches!(self, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed)
    }

    pub fn open(self) -> bool {
        matches!(self, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened)
    }
}

/// Why a zoned drive refused a command (the NVMe status it returns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneError {
    /// Zone Invalid Write: a write not at the zone's write pointer.
    InvalidWrite,
    /// Zone Is Full: a write to a full zone.
    Full,
    /// Too Many Open Zones: opening the zone would pass the open limit and no implicitly
    /// opened zone can be closed.
    TooManyOpen,
    /// Too Many Active Zones: opening the zone would pass the active limit.
    TooManyActive,
    /// Zone Boundary Error: the write crosses the end of its zone, or of its writable
    /// capacity.
    Boundary,
}

/// Zone commands and refused commands, cumulative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneCounters {
    /// Zone resets of zones that held data [zones].
    pub resets: u64,
    /// Zones made full by Zone Finish [zones].
    pub finishes: u64,
    /// Implicitly opened zones closed to open another at the open limit [zones].
    pub implicit_closes: u64,
    /// Refused commands, by [`ZoneError`] [commands].
    pub invalid_writes: u64,
    pub full_writes: u64,
    pub too_many_open: u64,
    pub too_many_active: u64,
    pub boundary_errors: u64,
}

impl ZoneCounters {
    fn count(&mut self, e: ZoneError) {
        *match e {
            ZoneError::InvalidWrite => &mut self.invalid_writes,
            ZoneError::Full => &mut self.full_writes,
            ZoneError::TooManyOpen => &mut self.too_many_open,
            ZoneError::TooManyActive => &mut self.too_many_active,
            ZoneError::Boundary => &mut self.boundary_errors,
        } += 1;
    }

    /// Commands refused, every kind [commands].
    pub fn errors(&self) -> u64 {
        self.invalid_writes + self.full_writes + self.too_many_open + self.too_many_active + self.boundary_errors
    }
}

/// Every zone's state and write pointer, and the open and active counts.
#[derive(Clone, Debug)]
pub struct Zones {
    geo: ZoneGeometry,
    /// Units written from each zone's start.
    wp: Vec<u64>,
    state: Vec<ZoneState>,
    /// Open zones, in the order they were opened.
    open: Vec<u32>,
    active: usize,
    counters: ZoneCounters,
}

impl Zones {
    /// Every zone empty.
    pub fn new(geo: &ZoneGeometry) -> Self {
        Zones { geo: geo.clone(), wp: vec![0; geo.zones], state: vec![ZoneState::Empty; geo.zones], open: Vec::new(), active: 0, counters: ZoneCounters::default() }
    }

    pub fn geometry(&self) -> &ZoneGeometry {
        &self.geo
    }

    pub fn counters(&self) -> ZoneCounters {
        self.counters
    }

    /// The zone holding logical unit `lpn`.
    pub fn zone_of(&self, lpn: u64) -> usize {
        (lpn / self.geo.zone_units) as usize
    }

    /// First logical unit of zone `z`.
    pub fn start(&self, z: usize) -> u64 {
        z as u64 * self.geo.zone_units
    }

    /// Units written in zone `z` (its write pointer, from the zone's start).
    pub fn write_pointer(&self, z: usize) -> u64 {
        self.wp[z]
    }

    pub fn state(&self, z: usize) -> ZoneState {
        self.state[z]
    }

    /// Zones open / active now.
    pub fn open_zones(&self) -> usize {
        self.open.len()
    }

    pub fn active_zones(&self) -> usize {
        self.active
    }

    /// The open zones, in the order they were opened.
    pub fn open_list(&self) -> &[u32] {
        &self.open
    }

    /// Checks a write of `n` units at `lpn` and, if the drive takes it, opens its zone as
    /// needed and moves the write pointer (the zone becomes full at its capacity). Returns
    /// the zone, or the error the drive returns (counted; nothing changed).
    pub fn write(&mut self, lpn: u64, n: u64) -> Result<usize, ZoneError> {
        let r = self.check_write(lpn, n);
        match r {
            Ok(z) => {
                self.wp[z] += n;
                if self.wp[z] == self.geo.capacity_units {
                    self.make_full(z);
                }
            }
            Err(e) => self.counters.count(e),
        }
        r
    }

    /// Zone Append of `n` units to zone `z`: the drive writes them at the write pointer and
    /// returns where (the first logical unit), or the error (counted).
    pub fn append(&mut self, z: usize, n: u64) -> Result<u64, ZoneError> {
        let lpn = self.start(z) + self.wp[z];
        self.write(lpn, n).map(|_| lpn)
    }

    fn check_write(&mut self, lpn: u64, n: u64) -> Result<usize, ZoneError> {
        let z = self.zone_of(lpn);
        let off = lpn - self.start(z);
        if off + n > self.geo.zone_units {
            return Err(ZoneError::Boundary);
        }
        if self.state[z] == ZoneState::Full {
            return Err(ZoneError::Full);
        }
        if off != self.wp[z] {
            return Err(ZoneError::InvalidWrite);
        }
        if off + n > self.geo.capacity_units {
            return Err(ZoneError::Boundary);
        }
        if !self.state[z].open() {
            self.open_zone(z, ZoneState::ImplicitlyOpened)?;
        }
        Ok(z)
    }

    /// Opens zone `z` (empty or closed) as `how`, within the limits.
    fn open_zone(&mut self, z: usize, how: ZoneState) -> Result<(), ZoneError> {
        let was_active = self.state[z].active();
        if !was_active && self.geo.max_active != 0 && self.active >= self.geo.max_active {
            return Err(ZoneError::TooManyActive);
        }
        if self.geo.max_open != 0 && self.open.len() >= self.geo.max_open {
            let Some(i) = self.open.iter().position(|&o| self.state[o as usize] == ZoneState::ImplicitlyOpened) else {
                return Err(ZoneError::TooManyOpen);
            };
            let victim = self.open.remove(i) as usize;
            self.state[victim] = ZoneState::Closed;
            self.counters.implicit_closes += 1;
        }
        self.active += usize::from(!was_active);
        self.open.push(z as u32);
        self.state[z] = how;
        Ok(())
    }

    /// Zone Open: opens zone `z` explicitly (an explicitly opened zone is never closed to
    /// make room). A full zone, or one past a limit, gives the error (counted).
    pub fn open_explicitly(&mut self, z: usize) -> Result<(), ZoneError> {
        let r = match self.state[z] {
            ZoneState::Full => Err(ZoneError::Full),
            ZoneState::ExplicitlyOpened => Ok(()),
            ZoneState::ImplicitlyOpened => {
                self.state[z] = ZoneState::ExplicitlyOpened;
                Ok(())
            }
            ZoneState::Empty | ZoneState::Closed => self.open_zone(z, ZoneState::ExplicitlyOpened),
        };
        if let Err(e) = r {
            self.counters.count(e);
        }
        r
    }

    /// Zone Close: an open zone becomes closed (empty if nothing was written).
    pub fn close(&mut self, z: usize) {
        if self.state[z].open() {
            self.release_open(z);
            if self.wp[z] == 0 {
                self.state[z] = ZoneState::Empty;
                self.active -= 1;
            } else {
                self.state[z] = ZoneState::Closed;
            }
        }
    }

    /// Zone Finish: zone `z` becomes full (its unwritten capacity is given up until reset).
    pub fn finish(&mut self, z: usize) {
        if self.state[z] != ZoneState::Full {
            self.make_full(z);
            self.counters.finishes += 1;
        }
    }

    /// Zone Reset: zone `z` becomes empty; returns the units it held (its old write
    /// pointer), whose blocks the FTL erases.
    pub fn reset(&mut self, z: usize) -> u64 {
        let held = std::mem::take(&mut self.wp[z]);
        if self.state[z].open() {
            self.release_open(z);
        }
        if self.state[z].active() {
            self.active -= 1;
        }
        self.state[z] = ZoneState::Empty;
        if held > 0 {
            self.counters.resets += 1;
        }
        held
    }

    fn make_full(&mut self, z: usize) {
        if self.state[z].open() {
            self.release_open(z);
        }
        if self.state[z].active() {
            self.active -= 1;
        }
        self.state[z] = ZoneState::Full;
    }

    fn release_open(&mut self, z: usize) {
        let i = self.open.iter().position(|&o| o as usize == z).expect("an open zone is in the open list");
        self.open.remove(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones(max_open: usize, max_active: usize) -> Zones {
        Zones::new(&ZoneGeometry { zones: 8, zone_units: 16, capacity_units: 12, planes: 1, blocks_per_plane: 1, max_open, max_active })
    }

    #[test]
    fn writes_go_at_the_write_pointer_and_fill_the_zone_at_its_capacity() {
        let mut z = zones(0, 0);
        assert_eq!(z.write(16, 4), Ok(1));
        assert_eq!((z.state(1), z.write_pointer(1), z.open_zones(), z.active_zones()), (ZoneState::ImplicitlyOpened, 4, 1, 1));
        assert_eq!(z.write(16, 4), Err(ZoneError::InvalidWrite));
        assert_eq!(z.write(24, 4), Err(ZoneError::InvalidWrite));
        assert_eq!(z.write(20, 12), Err(ZoneError::Boundary), "past the capacity, inside the zone");
        assert_eq!(z.write(30, 4), Err(ZoneError::Boundary), "across the zone's end");
        assert_eq!(z.write(20, 8), Ok(1));
        assert_eq!((z.state(1), z.open_zones(), z.active_zones()), (ZoneState::Full, 0, 0));
        assert_eq!(z.write(28, 1), Err(ZoneError::Full));
        let c = z.counters();
        assert_eq!((c.invalid_writes, c.boundary_errors, c.full_writes, c.errors()), (2, 2, 1, 5));
        assert_eq!(z.reset(1), 12);
        assert_eq!((z.state(1), z.write_pointer(1)), (ZoneState::Empty, 0));
        assert_eq!(z.write(16, 1), Ok(1));
    }

    #[test]
    fn the_open_limit_closes_the_oldest_implicitly_opened_zone_and_the_active_limit_refuses() {
        let mut z = zones(2, 3);
        for zone in 0..2 {
            z.write(zone * 16, 1).unwrap();
        }
        z.write(32, 1).unwrap();
        assert_eq!((z.state(0), z.state(1), z.state(2)), (ZoneState::Closed, ZoneState::ImplicitlyOpened, ZoneState::ImplicitlyOpened));
        assert_eq!((z.open_zones(), z.active_zones(), z.counters().implicit_closes), (2, 3, 1));
        assert_eq!(z.write(48, 1), Err(ZoneError::TooManyActive));
        // A closed zone is active: writing it reopens it without passing the active limit.
        assert_eq!(z.write(1, 1), Ok(0));
        z.open_explicitly(2).unwrap();
        z.open_explicitly(0).unwrap();
        assert_eq!(z.write(17, 1), Err(ZoneError::TooManyOpen), "both open zones are explicitly opened");
        z.finish(2);
        assert_eq!((z.state(2), z.active_zones(), z.counters().finishes), (ZoneState::Full, 2, 1));
        assert_eq!(z.write(17, 1), Ok(1));
        let c = z.counters();
        assert_eq!((c.too_many_active, c.too_many_open), (1, 1));
    }
}
