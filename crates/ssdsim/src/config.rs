//! Drive profiles: every key is declared once below (name, type, default, unit and meaning);
//! parsing, `--set KEY=VALUE` overrides, key listings and the resolved profile in
//! `summary.json` all come from that one declaration.
//!
//! Units are in the key names: `_bytes`, `_us` (microseconds), `_mbps` (10^6 bytes/s),
//! `_blocks`. Byte keys accept size suffixes: `K M G T` (powers of 1000) and
//! `KiB MiB GiB TiB` (powers of 1024), e.g. `256G`, `16KiB`.

use std::fmt;
use crate::slc::WhenFull;

/// The logical sector / mapping unit of the FTL [bytes]. Host I/O is done in multiples of it.
pub const UNIT_BYTES: u64 = 4096;

/// A bad profile key or value, naming the key and saying what is expected.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    /// The profile key at fault (empty when the error is about the whole profile).
    pub key: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl ConfigError {
    pub(crate) fn new(key: &str, message: impl Into<String>) -> Self {
        ConfigError { key: key.to_string(), message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "profile key `{}`: {}", self.key, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// A profile value as it appears in a resolved profile.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(u64),
    Float(f64),
    Str(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Str(v) => write!(f, "{v}"),
        }
    }
}

/// Description of one profile key, for `ssdlab profiles --keys` and docs.
#[derive(Clone, Copy, Debug)]
pub struct KeyInfo {
    pub name: &'static str,
    /// "int", "float" or "str".
    pub kind: &'static str,
    /// Meaning and unit.
    pub doc: &'static str,
}

/// Parsing of one value type from text (TOML values and `--set` both arrive as text).
pub trait ParseValue: Sized {
    const KIND: &'static str;
    fn parse_value(key: &str, text: &str) -> Result<Self, ConfigError>;
    fn to_value(&self) -> Value;
}

impl ParseValue for u64 {
    const KIND: &'static str = "int";
    fn parse_value(key: &str, text: &str) -> Result<Self, ConfigError> {
        let t = text.trim().replace('_', "");
        let parsed = if key.ends_with("_bytes") { parse_size(&t) } else { parse_plain_int(&t) };
        parsed.ok_or_else(|| {
            let hint = if key.ends_with("_bytes") {
                "a non-negative whole number of bytes, optionally with a suffix K, M, G, T (10^3..) or KiB, MiB, GiB, TiB (2^10..)"
            } else {
                "a non-negative whole number"
            };
            ConfigError::new(key, format!("got {text:?}, expected {hint}"))
        })
    }
    fn to_value(&self) -> Value {
        Value::Int(*self)
    }
}

impl ParseValue for f64 {
    const KIND: &'static str = "float";
    fn parse_value(key: &str, text: &str) -> Result<Self, ConfigError> {
        match text.trim().replace('_', "").parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(ConfigError::new(key, format!("got {text:?}, expected a finite number"))),
        }
    }
    fn to_value(&self) -> Value {
        Value::Float(*self)
    }
}

impl ParseValue for String {
    const KIND: &'static str = "str";
    fn parse_value(_key: &str, text: &str) -> Result<Self, ConfigError> {
        Ok(text.to_string())
    }
    fn to_value(&self) -> Value {
        Value::Str(self.clone())
    }
}

fn parse_plain_int(t: &str) -> Option<u64> {
    if let Ok(v) = t.parse::<u64>() {
        return Some(v);
    }
    // Accept exact integers written as floats ("256e9", "4.0").
    let f: f64 = t.parse().ok()?;
    (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 1.8e19).then_some(f as u64)
}

/// Parses `123`, `256G`, `16KiB`, `1.5TB`... into bytes. Decimal suffixes are powers of
/// 1000, `i` suffixes powers of 1024; a trailing `B` is optional.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let mult: f64 = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "ki" | "kib" => 1024.0,
        "mi" | "mib" => 1024f64.powi(2),
        "gi" | "gib" => 1024f64.powi(3),
        "ti" | "tib" => 1024f64.powi(4),
        _ => return None,
    };
    if suffix.is_empty() {
        return parse_plain_int(num);
    }
    let v: f64 = num.trim().parse().ok()?;
    let bytes = v * mult;
    (bytes.is_finite() && bytes >= 0.0 && bytes.fract() == 0.0 && bytes < 1.8e19).then_some(bytes as u64)
}

macro_rules! config_keys {
    ($( $(#[doc = $doc:expr])+ $name:ident : $ty:ty = $default:expr ; )*) => {
        /// A drive profile: geometry, capacities, timings and firmware policies.
        /// Build one with [`Config::default`] and [`Config::set`], then [`Config::validate`].
        #[derive(Clone, Debug, PartialEq)]
        pub struct Config {
            $( $(#[doc = $doc])+ pub $name: $ty, )*
        }

        impl Default for Config {
            fn default() -> Self {
                Config { $( $name: $default, )* }
            }
        }

        /// Every profile key with its type and meaning, in declaration order.
        pub const KEYS: &[KeyInfo] = &[
            $( KeyInfo { name: stringify!($name), kind: <$ty as ParseValue>::KIND, doc: concat!($($doc),+) }, )*
        ];

        impl Config {
            /// Sets `key` from its text form. An unknown key is an error naming it.
            pub fn set(&mut self, key: &str, text: &str) -> Result<(), ConfigError> {
                match key {
                    $( stringify!($name) => { self.$name = <$ty as ParseValue>::parse_value(key, text)?; Ok(()) } )*
                    _ => Err(unknown_key(key)),
                }
            }

            /// The value of `key`, or None for an unknown key.
            pub fn get(&self, key: &str) -> Option<Value> {
                match key {
                    $( stringify!($name) => Some(self.$name.to_value()), )*
                    _ => None,
                }
            }

            /// All keys and values, in declaration order (the resolved profile).
            pub fn to_pairs(&self) -> Vec<(&'static str, Value)> {
                vec![ $( (stringify!($name), self.$name.to_value()), )* ]
            }
        }
    };
}

fn unknown_key(key: &str) -> ConfigError {
    // Suggest the closest known key (common prefix/substring), to help with typos.
    let suggestion = KEYS
        .iter()
        .map(|k| (edit_distance(k.name, key), k.name))
        .min()
        .filter(|(d, _)| *d <= 3)
        .map(|(_, n)| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    ConfigError::new(key, format!("unknown key{suggestion}; `ssdlab profiles --keys` lists the keys"))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn s(v: &str) -> String {
    v.to_string()
}

config_keys! {
    /// Profile name (for reports).
    name: String = s("default");
    /// One-line description of the drive this profile models.
    description: String = s("256 GB-class client SATA drive, MLC NAND, greedy foreground GC, 7% spare");
    /// NAND channels (independent buses) [count].
    channels: u64 = 4;
    /// NAND dies on each channel [count].
    dies_per_channel: u64 = 4;
    /// Planes per die; a program writes one page on every plane of a die at once [count].
    planes_per_die: u64 = 2;
    /// Erase blocks per plane [count].
    blocks_per_plane: u64 = 2048;
    /// Pages per erase block [count].
    pages_per_block: u64 = 256;
    /// NAND page size [bytes]; a multiple of the 4096-byte mapping unit.
    page_size_bytes: u64 = 16384;
    /// Capacity the host can address [bytes]; the rest of the NAND is spare area.
    user_capacity_bytes: u64 = 256_000_000_000;
    /// GC victim policy: `greedy` (fewest valid units), `fifo` (oldest closed block), `cost-benefit` (max (1-u)/2u × age), `d-choices` (greedy among gc_d_choices random blocks).
    gc_policy: String = s("greedy");
    /// Sample size for the `d-choices` policy [blocks].
    gc_d_choices: u64 = 8;
    /// Foreground GC: when a plane needs a new block and has fewer free blocks than this, the write waits for GC [blocks].
    gc_fg_free_blocks: u64 = 2;
    /// Foreground GC, once started, reclaims until the plane has this many free blocks; 0 = just gc_fg_free_blocks ("clean up later" drives batch) [blocks].
    gc_fg_target_free_blocks: u64 = 0;
    /// What foreground GC stalls: `die` (only its die; other dies keep taking writes) or `drive` (the controller: every host command waits).
    gc_fg_stall: String = s("die");
    /// Which die takes the next program of host data: `striped` (every die in turn, as firmware that stripes pages over the dies in a fixed order: a die busy with GC holds up the stripe, the write buffer fills behind it, and every plane takes the same share of the writes) or `earliest` (the die free first: dies busy with GC are passed over while others can take data, so planes whose GC is cheap take more writes and hold less valid data).
    die_allocation: String = s("striped");
    /// Active (background) GC starts when a plane has fewer free blocks than this; 0 = no active GC [blocks].
    gc_bg_start_free_blocks: u64 = 0;
    /// Active GC stops when the plane has this many free blocks; 0 = gc_bg_start_free_blocks [blocks].
    gc_bg_stop_free_blocks: u64 = 0;
    /// Active GC work per host write: units relocated per 4 KiB host unit written to the plane while active GC runs; with gc_bg_reclaim_ratio > 0, the most it may relocate [units/unit].
    gc_bg_copies_per_write: f64 = 8.0;
    /// If > 0, active GC relocates just enough to reclaim this many units of space per host unit written: ratio × v/(1−v) copies for a victim with valid fraction v, at most gc_bg_copies_per_write; where that cap binds (little spare, full victims) it falls behind and foreground GC follows [units/unit].
    gc_bg_reclaim_ratio: f64 = 0.0;
    /// Idle GC starts after the host has been idle this long [ms].
    gc_idle_delay_ms: f64 = 1000.0;
    /// Idle GC reclaims until each plane has this many free blocks; 0 = no idle GC [blocks].
    gc_idle_free_blocks: u64 = 0;
    /// Idle GC sorts by LBA: it copies each unit into the open block of its LBA region (the user span cut into this many equal regions, each spread over all planes), so that after idle time no block mixes distant LBAs and a later sequential overwrite empties whole blocks; it also moves fully valid blocks that mix regions. 0 = idle GC copies within the plane like foreground GC; no effect without idle GC (gc_idle_free_blocks = 0) [regions].
    gc_idle_sort_regions: u64 = 0;
    /// Controller time per TRIM command [µs].
    trim_cmd_us: f64 = 0.0;
    /// Controller time per GiB deallocated by TRIM (mapping-table updates) [µs/GiB].
    trim_us_per_gib: f64 = 0.0;
    /// Data compression (SandForce-like): host bytes per NAND byte; 1.0 = incompressible data or no compression [ratio].
    compression_ratio: f64 = 1.0;
    /// DRAM write buffer; writes are acknowledged once buffered [bytes].
    write_buffer_bytes: u64 = 16 * 1024 * 1024;
    /// Bits per cell of the NAND in its native mode: 1 SLC, 2 MLC, 3 TLC, 4 QLC; t_read_us and t_prog_us are that mode's times, and a block run as pseudo-SLC (the slc_* keys) holds 1/cell_bits of its native data [bits].
    cell_bits: u64 = 2;
    /// Page read time (array to register), native mode [µs].
    t_read_us: f64 = 50.0;
    /// Page program time (register to array, all planes of a die together), native mode [µs].
    t_prog_us: f64 = 1300.0;
    /// DRAM-less drives: bytes of mapping-table entries (4 bytes per 4 KiB unit) the controller caches, in its SRAM or in the host memory buffer (HMB); a miss reads a map page from NAND. 0 = the whole table in DRAM [bytes].
    map_cache_bytes: u64 = 0;
    /// Mapping-table page: the unit the map cache reads from and writes back to NAND [bytes].
    map_page_bytes: u64 = 4096;
    /// Controller time to handle one map-cache miss, serialised (caps the miss rate) [µs].
    map_miss_us: f64 = 0.0;
    /// DRAM-less drives: when fewer than this percent of a window of 4096 map lookups hit the map cache, the controller serves the next window from its SRAM cache alone (map_sram_bytes), as with HMB off; 0 = never [%].
    map_bypass_hit_pct: f64 = 0.0;
    /// Controller SRAM cache of mapping-table entries used while the map cache is bypassed (map_bypass_hit_pct) [bytes].
    map_sram_bytes: u64 = 0;
    /// Pseudo-SLC write cache, static part: blocks kept in SLC mode [bytes of host data]; 0 with slc_dynamic_max_bytes = 0: no cache.
    slc_static_bytes: u64 = 0;
    /// Pseudo-SLC write cache, dynamic part: free native capacity run as SLC, at most 1/cell_bits of the user capacity not holding data and at most this much [bytes of host data].
    slc_dynamic_max_bytes: u64 = 0;
    /// Page program time in SLC mode [µs].
    slc_t_prog_us: f64 = 200.0;
    /// Page program time in SLC mode in the dynamic part of the cache, where it differs from the static part's (native blocks run as SLC); 0 = slc_t_prog_us [µs].
    slc_dynamic_t_prog_us: f64 = 0.0;
    /// Page read time in SLC mode (folding reads the cache back) [µs].
    slc_t_read_us: f64 = 30.0;
    /// Once the cache is full: `direct` (host data programmed in the native mode) or `fold` (the die folds cached data into the native mode first, then takes the host data in SLC).
    slc_when_full: String = s("direct");
    /// Background folding runs while the cache holds more than this share of its current size [%].
    slc_fold_start_pct: f64 = 100.0;
    /// Background folding work per host write: units folded (SLC read + native program) per 4 KiB host unit written; 0 = none while the host writes [units/unit].
    slc_fold_units_per_write: f64 = 0.0;
    /// 1: idle time (after gc_idle_delay_ms) folds the cache empty, so it is back for the next burst; 0: the cache is folded only while the host writes [flag].
    slc_idle_fold: u64 = 1;
    /// Block erase time [µs].
    t_erase_us: f64 = 3500.0;
    /// NAND channel transfer rate [MB/s, 10^6 bytes/s].
    channel_mbps: f64 = 400.0;
    /// Host interface transfer rate (SATA 6 Gb/s ≈ 550) [MB/s, 10^6 bytes/s]; ignored when pcie_gen is set.
    host_link_mbps: f64 = 550.0;
    /// PCIe generation of an NVMe host link (1 to 5); with pcie_lanes it sets the link rate to lanes × the generation's lane rate after line coding × 0.9 for packet overhead (PCIe 3.0 x4 ≈ 3,545 MB/s, 4.0 x4 ≈ 7,090). 0 = not PCIe: host_link_mbps [generation].
    pcie_gen: u64 = 0;
    /// PCIe lanes of the host link (1, 2, 4, 8 or 16; with pcie_gen) [lanes].
    pcie_lanes: u64 = 0;
    /// Controller time to process one host command (caps small-block IOPS) [µs].
    controller_cmd_us: f64 = 11.0;
    /// Program/erase cycles the NAND is rated for (25 nm-class MLC: 3000; 34 nm MLC: 5000; SLC: ~100000); used only to project endurance from the host write rate and write amplification (`ssdlab.analysis.endurance_projection`), never by the simulation. 0 = unknown [cycles].
    rated_pe_cycles: u64 = 3000;
}

/// Victim-selection policy for garbage collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcPolicy {
    /// Block with the fewest valid units (Desnoyers' "greedy").
    Greedy,
    /// Oldest closed block: first written, first cleaned (Desnoyers' LRW / FIFO).
    Fifo,
    /// Maximum (1 − u) / 2u × age, u = valid fraction, age = host writes since the block
    /// was closed, the age of its youngest data (Rosenblum & Ousterhout's LFS cleaner;
    /// Kawaguchi et al. for flash).
    CostBenefit,
    /// Greedy among d blocks sampled at random (the "d-choices" policy of Van Houdt,
    /// "A mean field model for a class of garbage collection algorithms in flash-based
    /// solid state drives", SIGMETRICS 2013).
    DChoices(usize),
}

impl GcPolicy {
    pub const NAMES: &'static [&'static str] = &["greedy", "fifo", "cost-benefit", "d-choices"];

    pub fn parse(name: &str, d: usize) -> Option<Self> {
        match name {
            "greedy" => Some(GcPolicy::Greedy),
            "fifo" => Some(GcPolicy::Fifo),
            "cost-benefit" => Some(GcPolicy::CostBenefit),
            "d-choices" => Some(GcPolicy::DChoices(d)),
            _ => None,
        }
    }
}

/// The value named `text` among `choices` (name, value) of the text key `key`, or an error
/// naming the key, the unknown `what` and the names to choose from.
fn one_of<T: Copy>(key: &str, what: &str, text: &str, choices: &[(&str, T)]) -> Result<T, ConfigError> {
    choices.iter().find(|&&(name, _)| name == text).map(|&(_, v)| v).ok_or_else(|| {
        let names: Vec<&str> = choices.iter().map(|&(name, _)| name).collect();
        ConfigError::new(key, format!("unknown {what} {text:?}; choose one of {names:?}"))
    })
}

/// What a foreground GC stalls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallScope {
    Die,
    Drive,
}

/// Quantities derived from a validated [`Config`], in the FTL's units.
#[derive(Clone, Debug, PartialEq)]
pub struct Geometry {
    pub channels: usize,
    pub dies: usize,
    pub planes_per_die: usize,
    /// Planes in the drive; each plane is one GC pool [count].
    pub pools: usize,
    pub blocks_per_pool: usize,
    /// 4 KiB mapping units per NAND page.
    pub units_per_page: usize,
    /// 4 KiB mapping units per erase block.
    pub slots_per_block: usize,
    /// Total erase blocks.
    pub blocks: usize,
    /// Physical 4 KiB slots (all NAND).
    pub physical_units: u64,
    /// Logical 4 KiB units the host can address.
    pub user_units: u64,
    /// Mapping units written by one (multi-plane) program on one die.
    pub units_per_program: usize,
    /// Write-buffer capacity [4 KiB units].
    pub buffer_units: usize,
    pub gc_policy: GcPolicy,
    pub gc_fg_free_blocks: usize,
    /// Foreground GC reclaims up to this many free blocks per plane (>= gc_fg_free_blocks).
    pub gc_fg_target_free_blocks: usize,
    pub gc_fg_stall: StallScope,
    /// Host programs go to every die in turn (`die_allocation = "striped"`), not to the die free first.
    pub die_striped: bool,
    /// Active GC watermarks (start 0 = off) [free blocks per plane].
    pub gc_bg_start_free_blocks: usize,
    pub gc_bg_stop_free_blocks: usize,
    pub gc_bg_copies_per_write: f64,
    pub gc_bg_reclaim_ratio: f64,
    /// Idle GC sorts data into this many LBA regions (0 = off).
    pub gc_idle_sort_regions: usize,
    /// NAND bytes one 4 KiB mapping unit occupies (4096 / compression ratio).
    pub nand_bytes_per_unit: f64,
    /// The most NAND slots the drive can keep mapped: the user capacity may not exceed it,
    /// nor may user units × slots per unit of less compressible data [slots].
    pub max_user_units: u64,
}

impl Geometry {
    /// Physical over user capacity (Desnoyers' α).
    pub fn alpha(&self) -> f64 {
        self.physical_units as f64 / self.user_units as f64
    }

    /// The profile's compression ratio as the geometry realises it: 4 KiB units per NAND
    /// slot-sized share of a page (4096 / `nand_bytes_per_unit`).
    pub fn compression_ratio(&self) -> f64 {
        UNIT_BYTES as f64 / self.nand_bytes_per_unit
    }
}

/// Data rate of one PCIe lane after line coding, per generation 1..=5 [MB/s]: 8b/10b for
/// 1 and 2, 128b/130b from 3 on.
const PCIE_LANE_MBPS: [f64; 5] = [250.0, 500.0, 984.6, 1969.2, 3938.5];
/// Share of a PCIe link's data rate left for payload (TLP headers, DLLPs, flow control).
const PCIE_PAYLOAD_SHARE: f64 = 0.9;

impl Config {
    /// The host link's transfer rate [MB/s]: the PCIe link's when pcie_gen is set, else
    /// host_link_mbps.
    pub fn host_link_rate_mbps(&self) -> f64 {
        match self.pcie_gen {
            1..=5 => PCIE_LANE_MBPS[self.pcie_gen as usize - 1] * self.pcie_lanes as f64 * PCIE_PAYLOAD_SHARE,
            _ => self.host_link_mbps,
        }
    }

    /// The pseudo-SLC cache, map cache and PCIe link keys. Errors name the key at fault.
    fn check_cache_and_link(&self) -> Result<(), ConfigError> {
        if !(1..=4).contains(&self.cell_bits) {
            return Err(ConfigError::new("cell_bits", format!("{} must be 1 (SLC), 2 (MLC), 3 (TLC) or 4 (QLC)", self.cell_bits)));
        }
        let cache = self.slc_static_bytes != 0 || self.slc_dynamic_max_bytes != 0;
        if cache && self.cell_bits == 1 {
            return Err(ConfigError::new("cell_bits", "1 (SLC NAND) has no pseudo-SLC cache: set slc_static_bytes and slc_dynamic_max_bytes to 0"));
        }
        if cache && self.slc_static_bytes > self.user_capacity_bytes {
            return Err(ConfigError::new("slc_static_bytes", format!("{} exceeds the user capacity ({} bytes)", self.slc_static_bytes, self.user_capacity_bytes)));
        }
        if WhenFull::parse(&self.slc_when_full).is_none() {
            return Err(ConfigError::new("slc_when_full", format!("unknown behaviour {:?}; choose one of {:?}", self.slc_when_full, WhenFull::NAMES)));
        }
        if !(0.0..=100.0).contains(&self.slc_fold_start_pct) {
            return Err(ConfigError::new("slc_fold_start_pct", format!("{} must be between 0 and 100 %", self.slc_fold_start_pct)));
        }
        if !(0.0..=64.0).contains(&self.slc_fold_units_per_write) {
            return Err(ConfigError::new("slc_fold_units_per_write", format!("{} must be between 0 and 64 units per unit", self.slc_fold_units_per_write)));
        }
        if self.slc_idle_fold > 1 {
            return Err(ConfigError::new("slc_idle_fold", format!("{} must be 0 (off) or 1 (on)", self.slc_idle_fold)));
        }
        for (key, v) in [("slc_t_prog_us", self.slc_t_prog_us), ("slc_dynamic_t_prog_us", self.slc_dynamic_t_prog_us), ("slc_t_read_us", self.slc_t_read_us)] {
            if v.is_nan() || v < 0.0 {
                return Err(ConfigError::new(key, format!("{v} is negative; times are >= 0 µs")));
            }
        }
        if self.map_cache_bytes != 0 {
            if self.map_page_bytes < 64 || !self.map_page_bytes.is_multiple_of(crate::map_cache::ENTRY_BYTES) || self.map_page_bytes > 1 << 20 {
                return Err(ConfigError::new("map_page_bytes", format!("{} must be a multiple of 4 bytes from 64 to 1 MiB", self.map_page_bytes)));
            }
            if self.map_cache_bytes < self.map_page_bytes {
                return Err(ConfigError::new("map_cache_bytes", format!("{} is less than one map page (map_page_bytes = {})", self.map_cache_bytes, self.map_page_bytes)));
            }
        }
        if self.map_bypass_hit_pct.is_nan() || !(0.0..=100.0).contains(&self.map_bypass_hit_pct) {
            return Err(ConfigError::new("map_bypass_hit_pct", format!("{} must be a percentage from 0 to 100", self.map_bypass_hit_pct)));
        }
        if self.map_bypass_hit_pct > 0.0 && self.map_cache_bytes == 0 {
            return Err(ConfigError::new("map_bypass_hit_pct", "needs a map cache to bypass: set map_cache_bytes, or 0 here"));
        }
        if self.map_bypass_hit_pct > 0.0 && self.map_sram_bytes < self.map_page_bytes {
            return Err(ConfigError::new("map_sram_bytes", format!("{} is less than one map page (map_page_bytes = {}); the map cache's bypass (map_bypass_hit_pct) needs an SRAM cache to fall back to", self.map_sram_bytes, self.map_page_bytes)));
        }
        if self.map_miss_us.is_nan() || self.map_miss_us < 0.0 {
            return Err(ConfigError::new("map_miss_us", format!("{} is negative; times are >= 0 µs", self.map_miss_us)));
        }
        match (self.pcie_gen, self.pcie_lanes) {
            (0, 0) => Ok(()),
            (0, _) => Err(ConfigError::new("pcie_gen", "must be set (1 to 5) with pcie_lanes")),
            (g, _) if g > 5 => Err(ConfigError::new("pcie_gen", format!("{g} must be 1 to 5"))),
            (_, l) if ![1, 2, 4, 8, 16].contains(&l) => Err(ConfigError::new("pcie_lanes", format!("{l} must be 1, 2, 4, 8 or 16 with pcie_gen"))),
            _ => Ok(()),
        }
    }

    /// Checks the profile and derives its geometry. Errors name the key at fault.
    pub fn validate(&self) -> Result<Geometry, ConfigError> {
        let positive = |key: &str, v: u64| {
            if v == 0 { Err(ConfigError::new(key, "must be at least 1")) } else { Ok(v) }
        };
        positive("channels", self.channels)?;
        positive("dies_per_channel", self.dies_per_channel)?;
        positive("planes_per_die", self.planes_per_die)?;
        positive("blocks_per_plane", self.blocks_per_plane)?;
        positive("pages_per_block", self.pages_per_block)?;
        if self.page_size_bytes == 0 || !self.page_size_bytes.is_multiple_of(UNIT_BYTES) {
            return Err(ConfigError::new(
                "page_size_bytes",
                format!("{} is not a positive multiple of the {UNIT_BYTES}-byte mapping unit", self.page_size_bytes),
            ));
        }
        if self.user_capacity_bytes == 0 || !self.user_capacity_bytes.is_multiple_of(UNIT_BYTES) {
            return Err(ConfigError::new(
                "user_capacity_bytes",
                format!("{} is not a positive multiple of {UNIT_BYTES} bytes", self.user_capacity_bytes),
            ));
        }
        let policy = GcPolicy::parse(&self.gc_policy, self.gc_d_choices as usize).ok_or_else(|| {
            ConfigError::new("gc_policy", format!("unknown policy {:?}; choose one of {:?}", self.gc_policy, GcPolicy::NAMES))
        })?;
        if self.gc_d_choices < 1 {
            return Err(ConfigError::new("gc_d_choices", "must be at least 1 block"));
        }
        if self.gc_fg_free_blocks < 1 {
            return Err(ConfigError::new("gc_fg_free_blocks", "must be at least 1 (GC needs a free block to copy into)"));
        }
        let stall = one_of("gc_fg_stall", "scope", &self.gc_fg_stall, &[("die", StallScope::Die), ("drive", StallScope::Drive)])?;
        let die_striped = one_of("die_allocation", "allocation", &self.die_allocation, &[("earliest", false), ("striped", true)])?;
        let fg_target = if self.gc_fg_target_free_blocks == 0 { self.gc_fg_free_blocks } else { self.gc_fg_target_free_blocks };
        if fg_target < self.gc_fg_free_blocks {
            return Err(ConfigError::new(
                "gc_fg_target_free_blocks",
                format!("{fg_target} is below gc_fg_free_blocks = {}: watermarks out of order", self.gc_fg_free_blocks),
            ));
        }
        let bg_start = self.gc_bg_start_free_blocks;
        let bg_stop = if self.gc_bg_stop_free_blocks == 0 { bg_start } else { self.gc_bg_stop_free_blocks };
        if bg_start != 0 && bg_start <= self.gc_fg_free_blocks {
            return Err(ConfigError::new(
                "gc_bg_start_free_blocks",
                format!("{bg_start} must be above gc_fg_free_blocks = {} (active GC starts before foreground GC): watermarks out of order", self.gc_fg_free_blocks),
            ));
        }
        if bg_stop < bg_start {
            return Err(ConfigError::new(
                "gc_bg_stop_free_blocks",
                format!("{bg_stop} is below gc_bg_start_free_blocks = {bg_start}: watermarks out of order"),
            ));
        }
        if self.gc_bg_reclaim_ratio < 0.0 {
            return Err(ConfigError::new("gc_bg_reclaim_ratio", format!("{} is negative", self.gc_bg_reclaim_ratio)));
        }
        if bg_start != 0 && (self.gc_bg_copies_per_write.is_nan() || self.gc_bg_copies_per_write <= 0.0) {
            return Err(ConfigError::new("gc_bg_copies_per_write", format!("{} must be > 0 when active GC is on", self.gc_bg_copies_per_write)));
        }
        for (key, v) in [("gc_idle_delay_ms", self.gc_idle_delay_ms), ("trim_cmd_us", self.trim_cmd_us), ("trim_us_per_gib", self.trim_us_per_gib)] {
            if v < 0.0 {
                return Err(ConfigError::new(key, format!("{v} is negative")));
            }
        }
        if !(self.compression_ratio >= 1.0 && self.compression_ratio <= 16.0) {
            return Err(ConfigError::new("compression_ratio", format!("{} must be between 1.0 (none) and 16", self.compression_ratio)));
        }
        for (key, v) in [("t_read_us", self.t_read_us), ("t_prog_us", self.t_prog_us), ("t_erase_us", self.t_erase_us), ("controller_cmd_us", self.controller_cmd_us)] {
            if v < 0.0 {
                return Err(ConfigError::new(key, format!("{v} is negative; times are >= 0 µs")));
            }
        }
        self.check_cache_and_link()?;
        for (key, v) in [("channel_mbps", self.channel_mbps), ("host_link_mbps", self.host_link_mbps)] {
            if v <= 0.0 {
                return Err(ConfigError::new(key, format!("{v} must be > 0 MB/s")));
            }
        }
        // Compression packs more 4 KiB host units into each NAND page.
        let units_per_page = ((self.page_size_bytes / UNIT_BYTES) as f64 * self.compression_ratio).round() as usize;
        let slots_per_block = self.pages_per_block as usize * units_per_page;
        let dies = (self.channels * self.dies_per_channel) as usize;
        let pools = dies * self.planes_per_die as usize;
        let blocks_per_pool = self.blocks_per_plane as usize;
        let blocks = pools * blocks_per_pool;
        let physical_units = blocks as u64 * slots_per_block as u64;
        if physical_units >= u32::MAX as u64 {
            return Err(ConfigError::new(
                "blocks_per_plane",
                format!("{physical_units} physical 4 KiB units exceed the simulator's 2^32 limit (16 TiB of NAND)"),
            ));
        }
        let user_units = self.user_capacity_bytes / UNIT_BYTES;
        // Each plane keeps two open blocks (host, GC) plus the foreground-GC reserve, and at
        // least one block for data (see the reserve below).
        let reserved_blocks = (self.gc_fg_free_blocks as usize + 2) * pools;
        if self.gc_fg_free_blocks as usize + 3 > blocks_per_pool {
            return Err(ConfigError::new(
                "gc_fg_free_blocks",
                format!("{} leaves no room: each plane has only {blocks_per_pool} blocks", self.gc_fg_free_blocks),
            ));
        }
        for (key, v) in [("gc_fg_target_free_blocks", fg_target), ("gc_bg_stop_free_blocks", bg_stop), ("gc_idle_free_blocks", self.gc_idle_free_blocks)] {
            if v as usize + 3 > blocks_per_pool {
                return Err(ConfigError::new(key, format!("{v} free blocks per plane is impossible: a plane has {blocks_per_pool} blocks")));
            }
        }
        let sort_regions = self.gc_idle_sort_regions as usize;
        if sort_regions != 0 {
            // Each region keeps one open block somewhere in the drive.
            if sort_regions > blocks / 8 || sort_regions as u64 > user_units {
                return Err(ConfigError::new(
                    "gc_idle_sort_regions",
                    format!("{sort_regions} regions need as many open blocks; this drive allows at most {} (1/8 of its {blocks} blocks)", blocks / 8),
                ));
            }
        }
        let usable_units = (blocks - reserved_blocks) as u64 * slots_per_block as u64;
        // The GC reserve the FTL relies on. Let B = blocks_per_plane, S = slots per block,
        // fg = gc_fg_free_blocks. Foreground GC runs when a plane's full host block has just
        // been closed and the plane has at most fg free blocks; then every block of the plane
        // is free, closed, its GC block or active GC's victim (idle sorting's region blocks
        // are closed first), so it has at least B − fg − 2 closed blocks. If the plane holds
        // at most (B − fg − 2)·S − 1 valid units, one of them holds invalid data: GC frees
        // space, each victim needing at most one new block while one is kept free (active GC
        // leaves the last free block, idle sorting takes blocks only from planes above the
        // reserve). So the user capacity (and the companion slots of less compressible data,
        // bounded by this too: `workload::slots_per_unit`) may fill at most B − fg − 3 blocks
        // per plane: one spare block per plane beyond the reserve and the open blocks, which
        // leaves S units of margin. That holds for a drive of one plane and whenever data is
        // spread evenly over the planes; the timing model writes to whichever die is free
        // first and idle sorting moves data between planes, so a workload can pile more than
        // a plane's share into one, which the FTL reports as an error naming this key
        // (`Ftl::check_space`) rather than a state validation could exclude.
        let max_user = usable_units.saturating_sub((pools * slots_per_block) as u64);
        if user_units > max_user {
            return Err(ConfigError::new(
                "user_capacity_bytes",
                format!(
                    "{} bytes leaves too little spare area: the NAND holds {} bytes, of which at most {} can be user capacity \
                     (each plane keeps {} blocks for open blocks and the GC reserve); lower it or raise blocks_per_plane",
                    self.user_capacity_bytes,
                    physical_units * UNIT_BYTES,
                    max_user * UNIT_BYTES,
                    self.gc_fg_free_blocks + 3
                ),
            ));
        }
        let units_per_program = units_per_page * self.planes_per_die as usize;
        let buffer_units = (self.write_buffer_bytes / UNIT_BYTES) as usize;
        if buffer_units < units_per_program {
            return Err(ConfigError::new(
                "write_buffer_bytes",
                format!(
                    "{} is smaller than one multi-plane program ({} bytes = planes_per_die × page_size_bytes)",
                    self.write_buffer_bytes,
                    units_per_program as u64 * UNIT_BYTES
                ),
            ));
        }
        Ok(Geometry {
            channels: self.channels as usize,
            dies,
            planes_per_die: self.planes_per_die as usize,
            pools,
            blocks_per_pool,
            units_per_page,
            slots_per_block,
            blocks,
            physical_units,
            user_units,
            units_per_program,
            buffer_units,
            gc_policy: policy,
            gc_fg_free_blocks: self.gc_fg_free_blocks as usize,
            gc_fg_target_free_blocks: fg_target as usize,
            gc_fg_stall: stall,
            die_striped,
            gc_bg_start_free_blocks: bg_start as usize,
            gc_bg_stop_free_blocks: bg_stop as usize,
            gc_bg_copies_per_write: self.gc_bg_copies_per_write,
            gc_bg_reclaim_ratio: self.gc_bg_reclaim_ratio,
            gc_idle_sort_regions: sort_regions,
            nand_bytes_per_unit: self.page_size_bytes as f64 / units_per_page as f64,
            max_user_units: max_user,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_profile_is_a_256gb_drive_with_7pct_spare() {
        let g = Config::default().validate().unwrap();
        assert_eq!(g.user_units * UNIT_BYTES, 256_000_000_000);
        assert_eq!(g.physical_units * UNIT_BYTES, 256 << 30);
        assert!((g.alpha() - 1.0737).abs() < 1e-3, "alpha {}", g.alpha());
    }

    #[test]
    fn sizes_parse_with_decimal_and_binary_suffixes() {
        assert_eq!(parse_size("256G"), Some(256_000_000_000));
        assert_eq!(parse_size("16KiB"), Some(16384));
        assert_eq!(parse_size("1.5TB"), Some(1_500_000_000_000));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("12 parsecs"), None);
        assert_eq!(parse_size("-1"), None);
    }

    #[test]
    fn unknown_key_is_named_with_a_suggestion() {
        let e = Config::default().set("pages_per_blok", "64").unwrap_err();
        assert_eq!(e.key, "pages_per_blok");
        assert!(e.to_string().contains("did you mean `pages_per_block`"), "{e}");
    }

    #[test]
    fn bad_values_name_their_key() {
        let mut c = Config::default();
        let e = c.set("channels", "four").unwrap_err();
        assert_eq!(e.key, "channels");
        c.set("gc_policy", "random").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "gc_policy");
        let mut c = Config::default();
        c.set("user_capacity_bytes", "300G").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "user_capacity_bytes");
        let mut c = Config::default();
        c.set("page_size_bytes", "6000").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "page_size_bytes");
        let mut c = Config::default();
        c.set("write_buffer_bytes", "16KiB").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "write_buffer_bytes");
        let mut c = Config::default();
        c.set("t_prog_us", "-3").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "t_prog_us");
    }

    #[test]
    fn watermarks_out_of_order_name_the_key() {
        let bad = |pairs: &[(&str, &str)]| {
            let mut c = Config::default();
            for (k, v) in pairs {
                c.set(k, v).unwrap();
            }
            c.validate().unwrap_err().key
        };
        assert_eq!(bad(&[("gc_fg_free_blocks", "4"), ("gc_bg_start_free_blocks", "3")]), "gc_bg_start_free_blocks");
        assert_eq!(bad(&[("gc_bg_start_free_blocks", "8"), ("gc_bg_stop_free_blocks", "6")]), "gc_bg_stop_free_blocks");
        assert_eq!(bad(&[("gc_fg_free_blocks", "4"), ("gc_fg_target_free_blocks", "3")]), "gc_fg_target_free_blocks");
        assert_eq!(bad(&[("gc_idle_free_blocks", "5000")]), "gc_idle_free_blocks");
        assert_eq!(bad(&[("gc_fg_stall", "host")]), "gc_fg_stall");
        assert_eq!(bad(&[("compression_ratio", "0.5")]), "compression_ratio");
        assert_eq!(bad(&[("gc_idle_delay_ms", "-1")]), "gc_idle_delay_ms");
        // Idle sorting keeps one open block per region.
        assert_eq!(bad(&[("gc_idle_free_blocks", "32"), ("gc_idle_sort_regions", "9000")]), "gc_idle_sort_regions");
    }

    #[test]
    fn compression_packs_more_units_per_page() {
        let mut c = Config::default();
        c.set("compression_ratio", "2").unwrap();
        let g = c.validate().unwrap();
        assert_eq!(g.units_per_page, 8);
        assert_eq!(g.nand_bytes_per_unit, 2048.0);
    }

    #[test]
    fn every_key_round_trips_through_text() {
        let c = Config::default();
        let mut d = Config { name: "x".into(), channels: 1, ..Config::default() };
        for (k, v) in c.to_pairs() {
            d.set(k, &v.to_string()).unwrap();
        }
        assert_eq!(c, d);
        assert_eq!(KEYS.len(), c.to_pairs().len());
    }
}
