//! The drive's counters and the series columns made of them, declared once: each
//! [`Snapshot`] counter by name ([`COUNTERS`]), each per-interval series column with its
//! unit, meaning, direction and chart ([`COLUMNS`]), and the charts they are drawn in
//! ([`CHARTS`]). The bindings export these tables; the series, the report and the plots
//! iterate them, so a new counter is its mechanism, its snapshot field and its rows here.

use crate::stats::Snapshot;

/// A counter of a [`Snapshot`]: its name and how to read it.
pub type Counter = (&'static str, fn(&Snapshot) -> u64);

/// Every counter of a [`Snapshot`], by name (cumulative since the drive was created, but
/// `free_blocks` and `slc_units`, which are levels).
pub const COUNTERS: [Counter; 22] = [
    ("host_units", |s| s.host_units),
    ("host_bytes", |s| s.host_bytes),
    ("nand_units", |s| s.nand_units),
    ("gc_units", |s| s.gc_units),
    ("erases", |s| s.erases),
    ("free_blocks", |s| s.free_blocks),
    ("gc_die_ns", |s| s.gc_die_ns),
    ("gc_die_done_ns", |s| s.gc_die_done_ns),
    ("slc_units", |s| s.slc_units),
    ("fold_units", |s| s.fold_units),
    ("map_misses", |s| s.map_misses),
    ("map_bypassed", |s| s.map_bypassed),
    ("map_writeback_units", |s| s.map_writeback_units),
    ("erased_units", |s| s.erased_units),
    ("ru_filled", |s| s.ru_filled),
    ("zone_resets", |s| s.zone_resets),
    ("zone_finishes", |s| s.zone_finishes),
    ("zone_invalid_writes", |s| s.zone_invalid_writes),
    ("zone_full_writes", |s| s.zone_full_writes),
    ("zone_too_many_open", |s| s.zone_too_many_open),
    ("zone_too_many_active", |s| s.zone_too_many_active),
    ("zone_boundary_errors", |s| s.zone_boundary_errors),
];

/// How a series column reads its counter at the snapshots bounding an interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// The counter's growth over the interval (a cumulative counter).
    Change,
    /// The counter at the interval's end (a level).
    Level,
}

/// What a counter's value is multiplied or divided by to give the column's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// As counted.
    One,
    /// 4 KiB units to bytes (× [`crate::UNIT_BYTES`]).
    UnitBytes,
    /// NAND units to the bytes they take in NAND (× the geometry's `nand_bytes_per_unit`,
    /// below 4096 when the profile compresses data).
    NandUnitBytes,
    /// Nanoseconds to seconds (÷ 10⁹).
    NsToS,
}

/// Which way a column's value is better for the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    /// Neither: it explains the drive's behaviour rather than grading it.
    Neither,
}

/// The drive feature a column needs: a drive without it has no such column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    Nothing,
    /// A pseudo-SLC cache (`slc_cache_pct` > 0).
    SlcCache,
    /// A map cache (a DRAM-less drive, `map_cache_bytes` > 0).
    MapCache,
    /// Flexible Data Placement (`fdp` = 1).
    Fdp,
    /// A zoned namespace (`zns_zone_size_bytes` > 0).
    Zones,
}

/// One per-interval series column made of a counter.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// The series column's name (its unit in the name where it has one).
    pub name: &'static str,
    /// The [`COUNTERS`] entry it is read from.
    pub counter: &'static str,
    pub reading: Reading,
    pub scale: Scale,
    /// Unit of the column's values: "bytes", "s", or what a count counts ("blocks").
    pub unit: &'static str,
    /// Short label for a chart legend.
    pub label: &'static str,
    /// What the column holds, in one sentence.
    pub meaning: &'static str,
    pub better: Better,
    /// Id of the [`CHARTS`] entry it leads ("" when not charted).
    pub chart: &'static str,
    pub needs: Needs,
}

/// A chart of the series against time. It is drawn when one of the columns leading it
/// holds data; `with` columns are drawn beside them for comparison.
#[derive(Clone, Copy, Debug)]
pub struct Chart {
    pub id: &'static str,
    pub title: &'static str,
    /// The y axis' label.
    pub ylabel: &'static str,
    /// The chart's button where several charts share a place.
    pub button: &'static str,
    pub with: &'static [&'static str],
}

#[allow(clippy::too_many_arguments)]
const fn column(
    name: &'static str, counter: &'static str, reading: Reading, scale: Scale, unit: &'static str, label: &'static str,
    meaning: &'static str, better: Better, chart: &'static str, needs: Needs,
) -> Column {
    Column { name, counter, reading, scale, unit, label, meaning, better, chart, needs }
}

use Better::*;
use Reading::*;
use Scale::*;

/// The drive's per-interval series columns, in series order.
pub const COLUMNS: [Column; 22] = [
    column("host_write_bytes", "host_bytes", Change, One, "bytes", "host writes",
        "Host data written in the interval, by the completion of its writes.", Neither, "", Needs::Nothing),
    column("nand_write_bytes", "nand_units", Change, NandUnitBytes, "bytes", "NAND writes",
        "Bytes programmed to NAND in the interval (host data, GC copies, folding, map pages), as the dies end the programs.",
        Lower, "", Needs::Nothing),
    column("gc_copied_bytes", "gc_units", Change, UnitBytes, "bytes", "GC copies",
        "Data relocated by garbage collection in the interval, as the dies carry out the GC work.", Lower, "gc",
        Needs::Nothing),
    column("erases", "erases", Change, One, "blocks", "erases",
        "Blocks erased in the interval, as the dies carry out the GC work.", Lower, "", Needs::Nothing),
    column("gc_die_s", "gc_die_done_ns", Change, NsToS, "s", "GC die time",
        "Die time spent on GC in the interval, summed over the dies.", Lower, "", Needs::Nothing),
    column("free_blocks", "free_blocks", Level, One, "blocks", "free blocks",
        "Free blocks at the end of the interval.", Higher, "free_blocks", Needs::Nothing),
    column("slc_cache_bytes", "slc_units", Level, UnitBytes, "bytes", "held in the SLC cache",
        "Host data held in the pseudo-SLC cache at the end of the interval, as decided.", Neither, "slc",
        Needs::SlcCache),
    column("fold_bytes", "fold_units", Change, UnitBytes, "bytes", "folding",
        "Data folded from the pseudo-SLC cache into the native mode in the interval, when the die ends the folding program.",
        Lower, "fold", Needs::SlcCache),
    column("map_misses", "map_misses", Change, One, "misses", "map-cache misses",
        "Map-cache misses in the interval.", Lower, "map", Needs::MapCache),
    column("map_bypassed", "map_bypassed", Change, One, "lookups", "lookups served from SRAM, map cache bypassed",
        "Map lookups served from the controller's SRAM while the map cache was bypassed as thrashing.", Neither, "map",
        Needs::MapCache),
    column("map_write_bytes", "map_writeback_units", Change, UnitBytes, "bytes", "map pages written back",
        "Dirty map pages written back to NAND in the interval to make room in the map cache, as decided.", Lower,
        "map_write", Needs::MapCache),
    column("fdp_hbmw_bytes", "host_bytes", Change, One, "bytes", "host bytes with metadata written (HBMW)",
        "nvme fdp stats' host bytes with metadata written (HBMW) in the interval: the host data written, as host_write_bytes.",
        Neither, "", Needs::Fdp),
    column("fdp_mbmw_bytes", "nand_units", Change, NandUnitBytes, "bytes", "media bytes with metadata written (MBMW)",
        "nvme fdp stats' media bytes with metadata written (MBMW) in the interval: the bytes programmed to NAND, as nand_write_bytes.",
        Lower, "fdp", Needs::Fdp),
    column("fdp_mbe_bytes", "erased_units", Change, NandUnitBytes, "bytes", "media bytes erased (MBE)",
        "nvme fdp stats' media bytes erased (MBE) in the interval: the erased blocks' bytes, as the dies carry out the erases.",
        Lower, "fdp", Needs::Fdp),
    column("fdp_ru_filled", "ru_filled", Change, One, "RUs", "reclaim units filled",
        "FDP reclaim units (erase blocks) filled by host writes in the interval, every handle, as decided.", Neither, "",
        Needs::Fdp),
    column("zone_resets", "zone_resets", Change, One, "zones", "zone resets",
        "Zones holding data that a zone reset emptied in the interval (their blocks erased), as the drive took the command.",
        Neither, "zones", Needs::Zones),
    column("zone_finishes", "zone_finishes", Change, One, "zones", "zone finishes",
        "Zones made full by Zone Finish in the interval.", Neither, "zones", Needs::Zones),
    column("zone_invalid_write_errors", "zone_invalid_writes", Change, One, "commands", "Zone Invalid Write",
        "Writes the drive refused in the interval because they did not start at their zone's write pointer (Zone Invalid Write).",
        Lower, "zone_errors", Needs::Zones),
    column("zone_full_errors", "zone_full_writes", Change, One, "commands", "Zone Is Full",
        "Writes the drive refused in the interval because their zone was full (Zone Is Full).", Lower, "zone_errors",
        Needs::Zones),
    column("zone_open_limit_errors", "zone_too_many_open", Change, One, "commands", "Too Many Open Zones",
        "Writes the drive refused in the interval because opening their zone would pass the open zone limit and no implicitly opened zone could be closed (Too Many Open Zones).",
        Lower, "zone_errors", Needs::Zones),
    column("zone_active_limit_errors", "zone_too_many_active", Change, One, "commands", "Too Many Active Zones",
        "Writes the drive refused in the interval because opening their zone would pass the active zone limit (Too Many Active Zones).",
        Lower, "zone_errors", Needs::Zones),
    column("zone_boundary_errors", "zone_boundary_errors", Change, One, "commands", "Zone Boundary Error",
        "Writes the drive refused in the interval because they crossed their zone's end or its writable capacity (Zone Boundary Error).",
        Lower, "zone_errors", Needs::Zones),
];

/// The charts of the drive's columns, in page order.
pub const CHARTS: [Chart; 9] = [
    Chart { id: "free_blocks", title: "Free blocks", ylabel: "free blocks", button: "free blocks", with: &[] },
    Chart {
        id: "gc",
        title: "Garbage-collection copies vs host writes",
        ylabel: "MB/s",
        button: "GC vs host writes",
        with: &["host_write_bytes"],
    },
    Chart {
        id: "slc",
        title: "Pseudo-SLC cache: host data held at the end of each interval",
        ylabel: "GB",
        button: "SLC cache",
        with: &[],
    },
    Chart {
        id: "fold",
        title: "Folding from the SLC cache into the native mode vs host writes",
        ylabel: "MB/s",
        button: "folding",
        with: &["host_write_bytes"],
    },
    Chart {
        id: "map",
        title: "Mapping-table cache: misses, and lookups served from SRAM while it is bypassed (DRAM-less drive)",
        ylabel: "per second",
        button: "map misses",
        with: &[],
    },
    Chart {
        id: "map_write",
        title: "Mapping-table pages written back to NAND vs host writes (DRAM-less drive)",
        ylabel: "MB/s",
        button: "map write-back",
        with: &["host_write_bytes"],
    },
    Chart {
        id: "fdp",
        title: "Flexible Data Placement: media bytes written and erased vs host bytes written (nvme fdp stats)",
        ylabel: "MB/s",
        button: "FDP stats",
        with: &["fdp_hbmw_bytes"],
    },
    Chart { id: "zones", title: "Zoned namespace: zone resets and finishes", ylabel: "zones per second", button: "zone resets", with: &[] },
    Chart {
        id: "zone_errors",
        title: "Zoned namespace: writes the drive refused, by error",
        ylabel: "commands per second",
        button: "zone errors",
        with: &[],
    },
];

/// The [`COUNTERS`] entry named `name`.
pub fn counter(name: &str) -> Option<fn(&Snapshot) -> u64> {
    COUNTERS.iter().find(|(n, _)| *n == name).map(|&(_, f)| f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_reads_a_counter_and_leads_a_declared_chart() {
        for c in COLUMNS {
            assert!(counter(c.counter).is_some(), "{}: no counter {}", c.name, c.counter);
            assert!(c.chart.is_empty() || CHARTS.iter().any(|k| k.id == c.chart), "{}: no chart {}", c.name, c.chart);
        }
        for k in CHARTS {
            assert!(COLUMNS.iter().any(|c| c.chart == k.id), "chart {} has no column", k.id);
            for w in k.with {
                assert!(COLUMNS.iter().any(|c| c.name == *w), "chart {}: no column {w}", k.id);
            }
        }
    }

    #[test]
    fn counters_read_their_own_field() {
        // Each counter reads a field of its own: give every field another value and see
        // every counter give another.
        let s = Snapshot {
            host_units: 1, host_bytes: 2, nand_units: 3, gc_units: 4, erases: 5, free_blocks: 6, gc_die_ns: 7,
            gc_die_done_ns: 8, slc_units: 9, fold_units: 10, map_misses: 11, map_bypassed: 12, map_writeback_units: 13,
            erased_units: 14, ru_filled: 15, zone_resets: 16, zone_finishes: 17, zone_invalid_writes: 18,
            zone_full_writes: 19, zone_too_many_open: 20, zone_too_many_active: 21, zone_boundary_errors: 22,
        };
        let mut seen: Vec<u64> = COUNTERS.iter().map(|(_, f)| f(&s)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), COUNTERS.len());
    }
}
