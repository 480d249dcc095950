//! Placement of a workload's writes on a drive with Flexible Data Placement (profile key
//! `fdp`), as fio chooses it (`dataplacement.c`, fio 3.38: `plids`, `plid_select`,
//! `dp_scheme`; re-implemented): each write takes a placement id, an index into the
//! drive's reclaim unit handles. Reads and TRIMs carry none.
//!
//! - `roundrobin` (fio's default): the ids in turn, one per write command;
//! - `random`: an id drawn uniformly per write command, from the job's own placement
//!   random numbers (the job's offsets are not disturbed);
//! - `scheme` (fio's `dp_scheme` file): the id of the first entry whose byte range
//!   `start <= offset < end` holds the write's starting offset, 0 (the default handle) if
//!   none does; the id list is not used, as fio ignores `plids` with a scheme.

use super::{err, WorkloadError};
use crate::rng::Rng;

/// Most placement ids a workload may list (fio's `FIO_MAX_DP_IDS`).
pub const MAX_PLACEMENT_IDS: usize = 128;
/// Most entries of a placement scheme (fio's `DP_MAX_SCHEME_ENTRIES`).
pub const MAX_SCHEME_ENTRIES: usize = 32;

/// One line of a placement scheme: writes starting in `start_bytes..end_bytes` of the drive
/// go through placement id `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemeEntry {
    pub start_bytes: u64,
    pub end_bytes: u64,
    pub id: u32,
}

/// How a write's placement id is chosen (fio's `plid_select`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlacementSelect {
    RoundRobin,
    Random,
    /// By the write's offset (fio's `dp_scheme`), at most [`MAX_SCHEME_ENTRIES`] entries.
    Scheme(Vec<SchemeEntry>),
}

/// The placement ids a workload's writes carry and how each is chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Placement ids the writes may use (fio's `plids` / `fdp_pli`): indices of the drive's
    /// reclaim unit handles, each below `fdp_reclaim_unit_handles`, at most
    /// [`MAX_PLACEMENT_IDS`]; empty: every handle (fio's default).
    pub ids: Vec<u32>,
    pub select: PlacementSelect,
}

/// A running workload's placement: the next id of each write command.
#[derive(Clone, Debug)]
pub(crate) struct Placer {
    ids: Vec<u32>,
    next: usize,
    select: PlacementSelect,
    rng: Rng,
    /// Bytes per address of the workload's commands (4096, or 512 when it counts sectors).
    grain_bytes: u64,
}

impl Placer {
    /// Checks `p` against a drive of `handles` reclaim unit handles (0: FDP off); `seed`
    /// seeds the random choice.
    pub(crate) fn new(p: &Placement, handles: usize, grain_bytes: u64, seed: u64) -> Result<Placer, WorkloadError> {
        if handles == 0 {
            let field = if matches!(p.select, PlacementSelect::Scheme(_)) { "placement.scheme" } else { "placement.ids" };
            return Err(err(
                field,
                "placement ids need a drive with Flexible Data Placement: set the profile key fdp = 1 (and fdp_reclaim_unit_handles)",
            ));
        }
        if p.ids.len() > MAX_PLACEMENT_IDS {
            return Err(err("placement.ids", format!("{} ids; at most {MAX_PLACEMENT_IDS}", p.ids.len())));
        }
        let check = |field: &str, id: u32| {
            if (id as usize) < handles {
                Ok(())
            } else {
                Err(err(field, format!("placement id {id} is not below the drive's {handles} reclaim unit handles (fdp_reclaim_unit_handles)")))
            }
        };
        for (i, &id) in p.ids.iter().enumerate() {
            check(&format!("placement.ids[{i}]"), id)?;
        }
        if let PlacementSelect::Scheme(entries) = &p.select {
            if entries.is_empty() || entries.len() > MAX_SCHEME_ENTRIES {
                return Err(err("placement.scheme", format!("{} entries; expected 1 to {MAX_SCHEME_ENTRIES}", entries.len())));
            }
            for (i, e) in entries.iter().enumerate() {
                check(&format!("placement.scheme[{i}].id"), e.id)?;
                if e.start_bytes >= e.end_bytes {
                    return Err(err(format!("placement.scheme[{i}]"), format!("start {} is not below end {}: the range is empty", e.start_bytes, e.end_bytes)));
                }
            }
        }
        let ids = if p.ids.is_empty() { (0..handles.min(MAX_PLACEMENT_IDS) as u32).collect() } else { p.ids.clone() };
        Ok(Placer { ids, next: 0, select: p.select.clone(), rng: Rng::new(seed ^ 0x706c_6964_7365_6c65), grain_bytes })
    }

    /// The placement id (reclaim unit handle) of a write starting at address `addr` (in the
    /// workload's grain).
    #[inline]
    pub(crate) fn pick(&mut self, addr: u64) -> usize {
        match &self.select {
            PlacementSelect::RoundRobin => {
                if self.next >= self.ids.len() {
                    self.next = 0;
                }
                self.next += 1;
                self.ids[self.next - 1] as usize
            }
            PlacementSelect::Random => self.ids[self.rng.below(self.ids.len() as u64) as usize] as usize,
            PlacementSelect::Scheme(entries) => {
                let offset = addr * self.grain_bytes;
                entries.iter().find(|e| (e.start_bytes..e.end_bytes).contains(&offset)).map_or(0, |e| e.id as usize)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placer(ids: &[u32], select: PlacementSelect) -> Placer {
        Placer::new(&Placement { ids: ids.to_vec(), select }, 8, 4096, 1).unwrap()
    }

    #[test]
    fn round_robin_cycles_the_ids_and_defaults_to_every_handle() {
        let mut p = placer(&[4, 5], PlacementSelect::RoundRobin);
        assert_eq!((0..5).map(|_| p.pick(0)).collect::<Vec<_>>(), [4, 5, 4, 5, 4]);
        let mut all = placer(&[], PlacementSelect::RoundRobin);
        assert_eq!((0..9).map(|_| all.pick(0)).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5, 6, 7, 0]);
    }

    #[test]
    fn random_draws_each_id_evenly() {
        let mut p = placer(&[1, 3, 6], PlacementSelect::Random);
        let mut seen = [0u32; 8];
        for _ in 0..30_000 {
            seen[p.pick(0)] += 1;
        }
        assert!([1, 3, 6].iter().all(|&i| (9_500..10_500).contains(&seen[i])), "{seen:?}");
        assert_eq!(seen.iter().sum::<u32>(), seen[1] + seen[3] + seen[6]);
    }

    #[test]
    fn a_scheme_takes_the_first_range_holding_the_offset_else_handle_0() {
        let e = |s: u64, t: u64, id: u32| SchemeEntry { start_bytes: s, end_bytes: t, id };
        let mut p = placer(&[7], PlacementSelect::Scheme(vec![e(0, 8192, 2), e(4096, 16384, 3)]));
        // Addresses in 4 KiB units: offsets 0, 4096 (both ranges: the first), 12288, 16384.
        assert_eq!([0, 1, 3, 4].map(|a| p.pick(a)), [2, 2, 3, 0]);
    }

    #[test]
    fn ids_beyond_the_drive_and_placement_without_fdp_are_refused_by_field() {
        let p = Placement { ids: vec![0, 8], select: PlacementSelect::RoundRobin };
        assert_eq!(Placer::new(&p, 8, 4096, 0).unwrap_err().field, "placement.ids[1]");
        assert!(Placer::new(&p, 0, 4096, 0).unwrap_err().message.contains("fdp = 1"));
        let empty = Placement { ids: vec![], select: PlacementSelect::Scheme(vec![SchemeEntry { start_bytes: 5, end_bytes: 5, id: 0 }]) };
        assert_eq!(Placer::new(&empty, 8, 4096, 0).unwrap_err().field, "placement.scheme[0]");
    }
}
