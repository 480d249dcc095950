//! Drive profiles: every key is declared once below (name, type, default, unit and meaning,
//! and the [`Range`] of values it accepts); parsing, `--set KEY=VALUE` overrides, validation,
//! key listings and the resolved profile in `summary.json` all come from that one declaration.
//!
//! The ranges keep every accepted profile's simulation bounded: times from 0.01 µs to 1 s
//! (every host command takes the controller at least `controller_cmd_us`, so the simulated
//! clock advances at least 10 ns per command), links and channels from 1 MB/s to 1 TB/s,
//! geometry below 2^32 4 KiB units of NAND, buffers and caches of at most a few TiB (the
//! write buffer is a count; a map cache holds at most the drive's whole table). What a
//! simulation allocates is then the drive's state (about 8 bytes per 4 KiB of NAND) plus its
//! series ([`crate::sim::MAX_SERIES_INTERVALS`] at most),
//! its queues (a few KiB per command outstanding) and each die's read calendar (at most
//! 256 KiB).
//!
//! Units are in the key names: `_bytes`, `_us` (microseconds), `_mbps` (10^6 bytes/s),
//! `_blocks`; `capacity` is in bytes. Byte keys read sizes as GNU coreutils do
//! ([`parse_size`]): `K M G T` and `KiB MiB GiB TiB` are powers of 1024, `KB MB GB TB`
//! powers of 1000, e.g. `256GB` (a drive maker's 256 GB), `16KiB`.

use std::fmt;
use crate::slc::{self, WhenFull};

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
    /// The values it accepts ([`Config::validate`] checks them).
    pub range: Range,
}

/// Shortest NAND, controller and firmware time a profile may give (0.01 µs = 10 ns): every
/// host command takes at least `controller_cmd_us` of the controller, so the simulated
/// clock advances by at least this much per command [µs].
pub const MIN_TIME_US: f64 = 0.01;
/// Longest such time (1 s) [µs].
pub const MAX_TIME_US: f64 = 1e6;
/// Slowest and fastest channel or host link (1 MB/s, 1 TB/s) [MB/s].
pub const MIN_RATE_MBPS: f64 = 1.0;
pub const MAX_RATE_MBPS: f64 = 1e6;
/// Longest profile name or description [bytes].
pub const MAX_TEXT_BYTES: usize = 4096;
/// Most erase blocks a plane may have [blocks].
pub const MAX_BLOCKS_PER_PLANE: u64 = 1 << 20;
const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;

/// The values of one profile key: a span of numbers (whole numbers possibly in steps; 0 as
/// well where 0 means off or a default), a fixed set of names, or free text. Shown by
/// `ssdlab profiles --keys`; [`Config::validate`] refuses a value outside it, then checks the
/// limits that depend on other keys (`note`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub bounds: Bounds,
    /// 0 is accepted too (off, or the default the key's doc names).
    pub zero: bool,
    /// Unit of the bounds ("" for a plain number).
    pub unit: &'static str,
    /// Limits that depend on other keys, in words ("" if none).
    pub note: &'static str,
    /// A value given as text that is not a multiple of the step is rounded to the nearest
    /// one (at least one step) with a note ([`Config::set`]), rather than refused.
    pub rounded: bool,
}

/// See [`Range`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bounds {
    /// `lo..=hi`, a multiple of `step`.
    Int { lo: u64, hi: u64, step: u64 },
    Float { lo: f64, hi: f64 },
    OneOf(&'static [&'static str]),
    /// Any text of at most this many bytes.
    Text(usize),
}

const fn int(lo: u64, hi: u64, unit: &'static str) -> Range {
    Range { bounds: Bounds::Int { lo, hi, step: 1 }, zero: false, unit, note: "", rounded: false }
}

const fn float(lo: f64, hi: f64, unit: &'static str) -> Range {
    Range { bounds: Bounds::Float { lo, hi }, zero: false, unit, note: "", rounded: false }
}

const fn choice(names: &'static [&'static str]) -> Range {
    Range { bounds: Bounds::OneOf(names), zero: false, unit: "", note: "", rounded: false }
}

const fn text(max_bytes: usize) -> Range {
    Range { bounds: Bounds::Text(max_bytes), zero: false, unit: "", note: "", rounded: false }
}

impl Range {
    const fn or_zero(self) -> Self {
        Range { zero: true, ..self }
    }

    const fn multiple_of(self, step: u64) -> Self {
        match self.bounds {
            Bounds::Int { lo, hi, .. } => Range { bounds: Bounds::Int { lo, hi, step }, ..self },
            _ => panic!("a step applies to whole numbers"),
        }
    }

    const fn note(self, note: &'static str) -> Self {
        Range { note, ..self }
    }

    /// A multiple of `step`, to which a value given as text is rounded.
    const fn rounded_to(self, step: u64) -> Self {
        Range { rounded: true, ..self.multiple_of(step) }
    }

    /// `v` rounded to the nearest multiple of this range's step (halves up) when the range
    /// rounds; `v` itself otherwise, and where the nearest multiple is 0 (less than half a
    /// step is not a size to round up: [`Range::check`] refuses it).
    pub fn round(&self, v: u64) -> u64 {
        match self.bounds {
            Bounds::Int { step, .. } if self.rounded && step > 1 && v.saturating_add(step / 2) >= step => {
                v.saturating_add(step / 2) / step * step
            }
            _ => v,
        }
    }

    /// Refuses `v`, the value of `key`, if it is outside the range; the error names the
    /// value and the range with its unit.
    pub fn check(&self, key: &str, v: &Value) -> Result<(), ConfigError> {
        let fits = match (self.bounds, v) {
            (_, Value::Int(0)) if self.zero => true,
            (_, Value::Float(x)) if self.zero && *x == 0.0 => true,
            (Bounds::Int { lo, hi, step }, Value::Int(x)) => (lo..=hi).contains(x) && x.is_multiple_of(step),
            (Bounds::Float { lo, hi }, Value::Float(x)) => (lo..=hi).contains(x),
            (Bounds::OneOf(names), Value::Str(x)) => names.contains(&x.as_str()),
            (Bounds::Text(max), Value::Str(x)) => x.len() <= max,
            _ => false,
        };
        if fits {
            return Ok(());
        }
        let shown = match v {
            Value::Float(x) => number(*x),
            Value::Str(x) if x.len() > 40 => format!("a text of {} bytes", x.len()),
            Value::Str(x) => format!("{x:?}"),
            Value::Int(x) => x.to_string(),
        };
        let why = match (self.bounds, v) {
            (Bounds::Float { lo, .. }, Value::Float(x)) if *x < 0.0 && lo >= 0.0 => "is negative",
            (Bounds::OneOf(_), _) => "is not a choice",
            (Bounds::Int { lo, hi, .. }, Value::Int(x)) if !(lo..=hi).contains(x) => "is out of range",
            (Bounds::Int { step, .. }, Value::Int(x)) if !x.is_multiple_of(step) => "is not a multiple of the step",
            _ => "is out of range",
        };
        Err(ConfigError::new(key, format!("{shown} {why}: expected {self}")))
    }
}

/// A number as a profile shows it: plain, or in exponent form when very large or small.
fn number(x: f64) -> String {
    if x != 0.0 && !(1e-4..1e9).contains(&x.abs()) { format!("{x:e}") } else { format!("{x}") }
}

/// Bytes as a profile would write them: with a binary suffix when exact (4 KiB, 16 TiB).
fn bytes_text(b: u64) -> String {
    for (suffix, size) in [("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)] {
        if b >= size && b.is_multiple_of(size) {
            return format!("{} {suffix}", b / size);
        }
    }
    format!("{b} bytes")
}

/// Bytes in decimal gigabytes, as drives are sold ("280.0 GB").
fn decimal_text(b: u64) -> String {
    format!("{:.1} GB", b as f64 / 1e9)
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = if self.unit.is_empty() { String::new() } else { format!(" {}", self.unit) };
        if self.zero {
            write!(f, "0 or ")?;
        }
        match self.bounds {
            Bounds::Int { lo, hi, step } if self.unit == "bytes" => {
                write!(f, "{} to {}", bytes_text(lo), bytes_text(hi))?;
                if step > 1 {
                    write!(f, ", {}a multiple of {step} bytes", if self.rounded { "rounded to " } else { "" })?;
                }
            }
            Bounds::Int { lo, hi, step } => {
                write!(f, "{lo} to {hi}{unit}")?;
                if step > 1 {
                    write!(f, ", a multiple of {step}")?;
                }
            }
            Bounds::Float { lo, hi } => write!(f, "{} to {}{unit}", number(lo), number(hi))?,
            Bounds::OneOf(names) => write!(f, "one of {}", names.join(", "))?,
            Bounds::Text(max) => write!(f, "any text of at most {max} bytes")?,
        }
        if !self.note.is_empty() {
            write!(f, "; {}", self.note)?;
        }
        Ok(())
    }
}

/// Parsing of one value type from text (TOML values and `--set` both arrive as text).
pub trait ParseValue: Sized {
    const KIND: &'static str;
    fn parse_value(key: &str, text: &str) -> Result<Self, ConfigError>;
    fn to_value(&self) -> Value;
    /// The value `key` takes from `text` within `range` (rounded where the range rounds), and
    /// a note naming the key, the text and the value used when they differ.
    fn rounded(self, _range: &Range, _key: &str, _text: &str) -> (Self, Option<String>) {
        (self, None)
    }
}

/// Whether `key` is a byte count (its range's unit is bytes): its text may carry a size
/// suffix ([`parse_size`]).
fn is_size_key(key: &str) -> bool {
    KEYS.iter().any(|k| k.name == key && k.range.unit == "bytes")
}

impl ParseValue for u64 {
    const KIND: &'static str = "int";
    fn parse_value(key: &str, text: &str) -> Result<Self, ConfigError> {
        let t = text.trim().replace('_', "");
        let size = is_size_key(key);
        let parsed = if size { parse_size(&t) } else { parse_plain_int(&t) };
        parsed.ok_or_else(|| {
            let hint = if size {
                SIZE_RULE
            } else {
                "a non-negative whole number"
            };
            ConfigError::new(key, format!("got {text:?}, expected {hint}"))
        })
    }
    fn to_value(&self) -> Value {
        Value::Int(*self)
    }
    fn rounded(self, range: &Range, key: &str, text: &str) -> (Self, Option<String>) {
        let v = range.round(self);
        let note = (v != self).then(|| {
            let step = match range.bounds {
                Bounds::Int { step, .. } => step,
                _ => 1,
            };
            format!("{key} = {}: {self} bytes is not a multiple of {step}; using {v} bytes", text.trim())
        });
        (v, note)
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

/// Largest size [`parse_size`] reads [bytes]: 2^63 − 1 (8 EiB), what fio (strtoll) and a
/// signed 64-bit offset hold.
pub const MAX_SIZE_BYTES: u64 = i64::MAX as u64;

/// The size rule in words, for messages.
pub const SIZE_RULE: &str = "a whole number of bytes, or one with a unit: K, M, G, T or KiB, MiB, GiB, TiB \
                             (powers of 1024: 4K = 4KiB = 4096), KB, MB, GB, TB (powers of 1000: 256GB = 256 x 10^9)";

/// Parses a size as GNU coreutils read one (`truncate -s`, `dd`): `K`, `M`, `G`, `T` and
/// `KiB`, `MiB`, `GiB`, `TiB` are powers of 1024, `KB`, `MB`, `GB`, `TB` powers of 1000,
/// a plain number (or one ending in `B`) is bytes; case does not matter (`4k` = 4096).
/// A fraction is allowed where the result is a whole number of bytes (`1.5KiB`). None for
/// anything else or more than [`MAX_SIZE_BYTES`]. `ssdlab.units.parse_size` reads the same.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let mult: u128 = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        // The first character is an ASCII letter (where `split` cut), so byte 1 is a boundary.
        unit => {
            let power = 1 + "kmgt".find(&unit[..1])? as u32;
            match &unit[1..] {
                "" | "i" | "ib" => 1024u128.pow(power),
                "b" => 1000u128.pow(power),
                _ => return None,
            }
        }
    };
    let num = num.trim();
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) || num.ends_with('.') {
        return None;
    }
    let (int, frac) = (int.trim_start_matches('0'), frac.trim_end_matches('0'));
    let whole: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let scale = 10u128.checked_pow(u32::try_from(frac.len()).ok()?)?;
    let part: u128 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    let frac_bytes = part.checked_mul(mult)?;
    if !frac_bytes.is_multiple_of(scale) {
        return None;
    }
    let bytes = whole.checked_mul(mult)?.checked_add(frac_bytes / scale)?;
    u64::try_from(bytes).ok().filter(|b| *b <= MAX_SIZE_BYTES)
}

macro_rules! config_keys {
    ($( $(#[doc = $doc:expr])+ $name:ident : $ty:ty = $default:expr , $range:expr ; )*) => {
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
            $( KeyInfo { name: stringify!($name), kind: <$ty as ParseValue>::KIND, doc: concat!($($doc),+), range: $range }, )*
        ];

        impl Config {
            /// Sets `key` from its text form. An unknown key is an error naming it. A size that
            /// its key rounds ([`Range::rounded`]) and that was not a multiple of the step
            /// gives a note naming the key, the text and the value used.
            pub fn set(&mut self, key: &str, text: &str) -> Result<Option<String>, ConfigError> {
                match key {
                    $( stringify!($name) => {
                        let (value, note) = <$ty as ParseValue>::parse_value(key, text)?.rounded(&$range, key, text);
                        self.$name = value;
                        Ok(note)
                    } )*
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
    name: String = s("default"), text(MAX_TEXT_BYTES);
    /// One-line description of the drive this profile models.
    description: String = s("256 GB-class client SATA drive, MLC NAND, greedy foreground GC, 7% spare"), text(MAX_TEXT_BYTES);
    /// NAND channels (independent buses) [count].
    channels: u64 = 4, int(1, 32, "channels");
    /// NAND dies on each channel [count].
    dies_per_channel: u64 = 4, int(1, 32, "dies");
    /// Planes per die; a program writes one page on every plane of a die at once [count].
    planes_per_die: u64 = 2, int(1, 16, "planes");
    /// Erase blocks per plane [count].
    blocks_per_plane: u64 = 2048, int(4, MAX_BLOCKS_PER_PLANE, "blocks").note("the whole NAND below 2^32 4 KiB units (16 TiB)");
    /// Pages per erase block [count].
    pages_per_block: u64 = 256, int(1, 16384, "pages");
    /// NAND page size [bytes]; a multiple of the 4096-byte mapping unit.
    page_size_bytes: u64 = 16384, int(UNIT_BYTES, 64 * KIB, "bytes").multiple_of(UNIT_BYTES);
    /// Capacity the host can address [bytes]; the rest of the NAND is spare area. The low-level key: it leaves the NAND as the geometry keys make it, so a smaller value only adds spare area (`capacity` scales the drive instead).
    user_capacity_bytes: u64 = 256_000_000_000, int(UNIT_BYTES, 16 * TIB, "bytes").rounded_to(UNIT_BYTES).note("at most the NAND less each plane's gc_fg_free_blocks + 3 blocks");
    /// The same drive at another user capacity [bytes]: blocks_per_plane scales so that each plane keeps the profile's spare for GC (steady-state write amplification stays), and dies_per_channel, then channels, then planes_per_die halve where a smaller plane would raise the spare fraction more than 0.4 point; the SLC cache and map cache sizes scale with the user capacity; user_capacity_bytes becomes this value. 0 = the drive as the other keys give it.
    capacity: u64 = 0, int(UNIT_BYTES, 16 * TIB, "bytes").rounded_to(UNIT_BYTES).or_zero().note("the scaled NAND below 2^32 4 KiB units (16 TiB)");
    /// GC victim policy: `greedy` (fewest valid units), `fifo` (oldest closed block), `cost-benefit` (max (1-u)/2u × age), `d-choices` (greedy among gc_d_choices random blocks).
    gc_policy: String = s("greedy"), choice(GcPolicy::NAMES);
    /// Sample size for the `d-choices` policy [blocks].
    gc_d_choices: u64 = 8, int(1, 1 << 20, "blocks").note("at most blocks_per_plane with the d-choices policy");
    /// Foreground GC: when a plane needs a new block and has fewer free blocks than this, the write waits for GC [blocks].
    gc_fg_free_blocks: u64 = 2, int(1, 1 << 20, "blocks").note("at most blocks_per_plane - 3");
    /// Foreground GC, once started, reclaims until the plane has this many free blocks; 0 = just gc_fg_free_blocks ("clean up later" drives batch) [blocks].
    gc_fg_target_free_blocks: u64 = 0, int(1, 1 << 20, "blocks").or_zero().note("from gc_fg_free_blocks to blocks_per_plane - 3");
    /// What foreground GC stalls: `die` (only its die; other dies keep taking writes) or `drive` (the controller: every host command waits).
    gc_fg_stall: String = s("die"), choice(STALL_NAMES);
    /// Which die takes the next program of host data: `striped` (every die in turn, as firmware that stripes pages over the dies in a fixed order: a die busy with GC holds up the stripe, the write buffer fills behind it, and every plane takes the same share of the writes) or `earliest` (the die free first: dies busy with GC are passed over while others can take data, so planes whose GC is cheap take more writes and hold less valid data).
    die_allocation: String = s("striped"), choice(ALLOCATION_NAMES);
    /// Active (background) GC starts when a plane has fewer free blocks than this; 0 = no active GC [blocks].
    gc_bg_start_free_blocks: u64 = 0, int(2, 1 << 20, "blocks").or_zero().note("above gc_fg_free_blocks, at most blocks_per_plane - 3");
    /// Active GC stops when the plane has this many free blocks; 0 = gc_bg_start_free_blocks [blocks].
    gc_bg_stop_free_blocks: u64 = 0, int(2, 1 << 20, "blocks").or_zero().note("from gc_bg_start_free_blocks to blocks_per_plane - 3");
    /// Active GC work per host write: units relocated per 4 KiB host unit written to the plane while active GC runs; with gc_bg_reclaim_ratio > 0, the most it may relocate [units/unit].
    gc_bg_copies_per_write: f64 = 8.0, float(0.0, 1024.0, "units/unit").note("above 0 with active GC");
    /// If > 0, active GC relocates just enough to reclaim this many units of space per host unit written: ratio × v/(1−v) copies for a victim with valid fraction v, at most gc_bg_copies_per_write; where that cap binds (little spare, full victims) it falls behind and foreground GC follows [units/unit].
    gc_bg_reclaim_ratio: f64 = 0.0, float(0.0, 100.0, "units/unit");
    /// Idle GC starts after the host has been idle this long [ms].
    gc_idle_delay_ms: f64 = 1000.0, float(0.0, 86_400_000.0, "ms");
    /// Idle GC reclaims until each plane has this many free blocks; 0 = no idle GC [blocks].
    gc_idle_free_blocks: u64 = 0, int(1, 1 << 20, "blocks").or_zero().note("at most blocks_per_plane - 3");
    /// Idle GC sorts by LBA: it copies each unit into the open block of its LBA region (the user span cut into this many equal regions, each spread over all planes), so that after idle time no block mixes distant LBAs and a later sequential overwrite empties whole blocks; it also moves fully valid blocks that mix regions. 0 = idle GC copies within the plane like foreground GC; no effect without idle GC (gc_idle_free_blocks = 0) [regions].
    gc_idle_sort_regions: u64 = 0, int(1, 1 << 20, "regions").or_zero().note("at most 1/8 of the blocks and the user units");
    /// Flexible Data Placement (NVMe TP4146): 1 = writes carry a placement handle (the workload's placement ids) and the drive keeps the data of each reclaim unit handle in reclaim units of its own; 0 = off, every write goes to one stream as on a conventional drive [flag].
    fdp: u64 = 0, int(0, 1, "");
    /// FDP reclaim unit size (the spec's RUNS, reclaim unit nominal size): the unit the drive fills for one handle and erases as a whole; here one erase block of a plane (pages_per_block × page_size_bytes), the FTL's erase and GC unit; 0 = that size [bytes].
    fdp_reclaim_unit_bytes: u64 = 0, int(UNIT_BYTES, 16 * GIB, "bytes").or_zero().note("the erase block size, pages_per_block × page_size_bytes");
    /// FDP reclaim unit handles (the spec's NRUH): write streams the drive keeps apart, each with an open reclaim unit in every plane; placement id i of a write (fio's plids index) is handle i [handles].
    fdp_reclaim_unit_handles: u64 = 8, int(1, 128, "handles").note("with fdp = 1, the open reclaim units (handles, and GC's per handle when persistently isolated) leave each plane at least gc_fg_free_blocks + 3 blocks for data");
    /// FDP reclaim groups (the spec's NRG): sets of dies a placement handle can name; the simulated drive has one, spanning every die (writes go to the die the die_allocation picks) [groups].
    fdp_reclaim_groups: u64 = 1, int(1, 1, "groups");
    /// FDP reclaim unit handle type (the spec's RUHT): `initially-isolated` (GC may copy data of every handle into one shared GC reclaim unit: handles stay apart only until GC moves their data) or `persistently-isolated` (GC copies each handle's valid data only into that handle's own GC reclaim unit: handles never share a reclaim unit).
    fdp_ruh_type: String = s("initially-isolated"), choice(RUH_TYPE_NAMES);
    /// Zoned namespace (NVMe ZNS, TP4053): the zone size (the spec's ZSZE), the LBA span of each zone; the namespace holds user_capacity_bytes / this many zones, each written only sequentially at its write pointer (zone reset empties it); 0 = a conventional namespace [bytes].
    zns_zone_size_bytes: u64 = 0, int(UNIT_BYTES, 16 * TIB, "bytes").multiple_of(UNIT_BYTES).or_zero().note("a divisor of user_capacity_bytes, at least zns_zone_capacity_bytes");
    /// Zoned namespace: the zone capacity (the spec's ZCAP), the bytes of a zone that can be written (the rest of its zone size up to the next zone is not writable): a whole number of erase blocks (pages_per_block × page_size_bytes), which the zone holds alone, striped page by page over g planes (g: the greatest common divisor of its blocks and the drive's planes, each plane holding blocks / g of them; zone z's planes start at plane z × g); 0 = the zone size [bytes].
    zns_zone_capacity_bytes: u64 = 0, int(UNIT_BYTES, 16 * TIB, "bytes").or_zero().note("a multiple of the erase block, at most zns_zone_size_bytes; every zone's blocks within the planes");
    /// Zoned namespace: the most zones open at once, implicitly or explicitly (the spec's MOR, maximum open resources, plus one); writing to a zone that is not open opens it, first closing an implicitly opened zone when at this limit; 0 = no limit [zones].
    zns_max_open_zones: u64 = 0, int(1, 1 << 20, "zones").or_zero().note("at most zns_max_active_zones");
    /// Zoned namespace: the most zones active at once, open or closed (the spec's MAR, maximum active resources, plus one); a write that would open one more zone fails with Too Many Active Zones; 0 = no limit [zones].
    zns_max_active_zones: u64 = 0, int(1, 1 << 20, "zones").or_zero();
    /// Controller time per TRIM command [µs].
    trim_cmd_us: f64 = 0.0, float(0.0, MAX_TIME_US, "µs");
    /// Controller time per GiB deallocated by TRIM (mapping-table updates) [µs/GiB].
    trim_us_per_gib: f64 = 0.0, float(0.0, MAX_TIME_US, "µs/GiB");
    /// Data compression (SandForce-like): host bytes per NAND byte; 1.0 = incompressible data or no compression [ratio].
    compression_ratio: f64 = 1.0, float(1.0, 16.0, "");
    /// DRAM write buffer; writes are acknowledged once buffered [bytes].
    write_buffer_bytes: u64 = 16 * 1024 * 1024, int(UNIT_BYTES, 16 * GIB, "bytes").note("at least planes_per_die × page_size_bytes");
    /// Bits per cell of the NAND in its native mode: 1 SLC, 2 MLC, 3 TLC, 4 QLC; t_read_us and t_prog_us are that mode's times, and a block run as pseudo-SLC (the slc_* keys) holds 1/cell_bits of its native data [bits].
    cell_bits: u64 = 2, int(1, 4, "bits");
    /// Page read time (array to register), native mode [µs].
    t_read_us: f64 = 50.0, float(MIN_TIME_US, MAX_TIME_US, "µs");
    /// Page program time (register to array, all planes of a die together), native mode [µs].
    t_prog_us: f64 = 1300.0, float(MIN_TIME_US, MAX_TIME_US, "µs");
    /// DRAM-less drives: bytes of mapping-table entries (4 bytes per 4 KiB unit) the controller caches, in its SRAM or in the host memory buffer (HMB); a miss reads a map page from NAND. 0 = the whole table in DRAM [bytes].
    map_cache_bytes: u64 = 0, int(64, TIB, "bytes").or_zero().note("at least map_page_bytes");
    /// Mapping-table page: the unit the map cache reads from and writes back to NAND [bytes].
    map_page_bytes: u64 = 4096, int(64, MIB, "bytes").multiple_of(crate::map_cache::ENTRY_BYTES);
    /// Controller time to handle one map-cache miss, serialised (caps the miss rate) [µs].
    map_miss_us: f64 = 0.0, float(0.0, MAX_TIME_US, "µs");
    /// DRAM-less drives: when fewer than this percent of a window of 4096 map lookups hit the map cache, the controller serves the next window from its SRAM cache alone (map_sram_bytes), as with HMB off; 0 = never [%].
    map_bypass_hit_pct: f64 = 0.0, float(0.0, 100.0, "%");
    /// Controller SRAM cache of mapping-table entries used while the map cache is bypassed (map_bypass_hit_pct) [bytes].
    map_sram_bytes: u64 = 0, int(0, TIB, "bytes");
    /// Pseudo-SLC write cache, static part: blocks kept in SLC mode, whole blocks in every plane taken from the NAND before the user capacity (a block in SLC mode holds 1/cell_bits of its native bytes) [bytes of host data]; 0 with slc_dynamic_max_bytes = 0: no cache.
    slc_static_bytes: u64 = 0, int(0, 16 * TIB, "bytes").note("at most user_capacity_bytes; its blocks (cell_bits native bytes per byte), the user capacity and each plane's gc_fg_free_blocks + 3 blocks within the NAND");
    /// Pseudo-SLC write cache, dynamic part: free native capacity run as SLC, at most 1/cell_bits of the user capacity not holding data (cached data included: the room folding it needs) and at most this much; a full drive has none [bytes of host data].
    slc_dynamic_max_bytes: u64 = 0, int(0, 16 * TIB, "bytes");
    /// Page program time in SLC mode [µs].
    slc_t_prog_us: f64 = 200.0, float(MIN_TIME_US, MAX_TIME_US, "µs");
    /// Page program time in SLC mode in the dynamic part of the cache, where it differs from the static part's (native blocks run as SLC); 0 = slc_t_prog_us [µs].
    slc_dynamic_t_prog_us: f64 = 0.0, float(MIN_TIME_US, MAX_TIME_US, "µs").or_zero();
    /// Bytes of the cache, counted from empty, static part first, whose SLC programs take slc_t_prog_us; beyond them the dynamic part's take slc_dynamic_t_prog_us (a cache whose first part the controller writes faster, as on drives whose fast tier outlasts their static blocks); 0 = the static part [bytes of host data].
    slc_fast_bytes: u64 = 0, int(0, 16 * TIB, "bytes");
    /// Page read time in SLC mode (folding reads the cache back) [µs].
    slc_t_read_us: f64 = 30.0, float(MIN_TIME_US, MAX_TIME_US, "µs");
    /// Once the cache is full: `direct` (host data programmed in the native mode) or `fold` (the die folds cached data into the native mode first, then takes the host data in SLC).
    slc_when_full: String = s("direct"), choice(WhenFull::NAMES);
    /// Background folding runs while the cache holds more than this share of its current size [%].
    slc_fold_start_pct: f64 = 100.0, float(0.0, 100.0, "%");
    /// Background folding work per host write: units folded (SLC read + native program) per 4 KiB host unit written; 0 = none while the host writes [units/unit].
    slc_fold_units_per_write: f64 = 0.0, float(0.0, 64.0, "units/unit");
    /// 1: idle time (after gc_idle_delay_ms) folds the cache empty, so it is back for the next burst; 0: the cache is folded only while the host writes [flag].
    slc_idle_fold: u64 = 1, int(0, 1, "");
    /// Block erase time [µs].
    t_erase_us: f64 = 3500.0, float(MIN_TIME_US, MAX_TIME_US, "µs");
    /// NAND channel transfer rate [MB/s, 10^6 bytes/s].
    channel_mbps: f64 = 400.0, float(MIN_RATE_MBPS, MAX_RATE_MBPS, "MB/s");
    /// Host interface transfer rate (SATA 6 Gb/s ≈ 550) [MB/s, 10^6 bytes/s]; ignored when pcie_gen is set.
    host_link_mbps: f64 = 550.0, float(MIN_RATE_MBPS, MAX_RATE_MBPS, "MB/s");
    /// PCIe generation of an NVMe host link (1 to 5); with pcie_lanes it sets the link rate to lanes × the generation's lane rate after line coding × 0.9 for packet overhead (PCIe 3.0 x4 ≈ 3,545 MB/s, 4.0 x4 ≈ 7,090). 0 = not PCIe: host_link_mbps [generation].
    pcie_gen: u64 = 0, int(0, 5, "");
    /// PCIe lanes of the host link (1, 2, 4, 8 or 16; with pcie_gen) [lanes].
    pcie_lanes: u64 = 0, int(0, 16, "lanes").note("1, 2, 4, 8 or 16 with pcie_gen");
    /// Controller time to process one host command (caps small-block IOPS) [µs].
    controller_cmd_us: f64 = 11.0, float(MIN_TIME_US, MAX_TIME_US, "µs");
    /// Program/erase cycles the NAND is rated for (25 nm-class MLC: 3000; 34 nm MLC: 5000; SLC: ~100000); used only to project endurance from the host write rate and write amplification (`ssdlab.analysis.endurance_projection`), never by the simulation. 0 = unknown [cycles].
    rated_pe_cycles: u64 = 3000, int(0, 10_000_000, "cycles");
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

/// The values of `gc_fg_stall` ([`StallScope`]) and `die_allocation`.
const STALL_NAMES: &[&str] = &["die", "drive"];
const ALLOCATION_NAMES: &[&str] = &["earliest", "striped"];
/// The values of `fdp_ruh_type`.
const RUH_TYPE_NAMES: &[&str] = &["initially-isolated", "persistently-isolated"];

/// The zones of a zoned namespace ([`Config`]'s `zns_*` keys), in 4 KiB units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneGeometry {
    /// Zones in the namespace [zones].
    pub zones: usize,
    /// LBA span of a zone (ZSZE) [units].
    pub zone_units: u64,
    /// Writable units of a zone (ZCAP) [units].
    pub capacity_units: u64,
    /// Planes a zone's blocks are striped over, page by page [planes].
    pub planes: usize,
    /// Erase blocks of a zone in each of its planes [blocks].
    pub blocks_per_plane: usize,
    /// Most zones open / active at once; 0 = no limit [zones].
    pub max_open: usize,
    pub max_active: usize,
}

impl ZoneGeometry {
    /// Erase blocks a zone holds [blocks].
    pub fn blocks(&self) -> usize {
        self.planes * self.blocks_per_plane
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
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
    /// Flexible Data Placement: reclaim unit handles (0 = FDP off) [handles].
    pub fdp_handles: usize,
    /// FDP handles are persistently isolated: GC keeps each handle's data in its own blocks.
    pub fdp_persistent: bool,
    /// Zoned namespace: its zones (None: a conventional namespace).
    pub zones: Option<ZoneGeometry>,
    /// NAND bytes one 4 KiB mapping unit occupies (4096 / compression ratio).
    pub nand_bytes_per_unit: f64,
    /// The most NAND slots the drive can keep mapped: the user capacity may not exceed it,
    /// nor may user units × slots per unit of less compressible data [slots].
    pub max_user_units: u64,
    /// Blocks of every plane kept in SLC mode for the static part of the pseudo-SLC cache,
    /// outside the FTL's `blocks_per_pool` [blocks per plane].
    pub slc_static_blocks_per_pool: usize,
    /// The largest static part of the pseudo-SLC cache the NAND holds with the user
    /// capacity and the FTL's reserve, leaving the FTL's planes room for their highest GC
    /// watermark [units of host data].
    pub slc_static_max_units: u64,
}

/// Most a drive scaled by `capacity` may raise the profile's spare fraction while it has
/// planes to lose instead ([`Config::resolved`]) [fraction of the NAND]: its planes keep the
/// profile's usable spare beside the blocks GC holds free, which takes a larger share of a
/// smaller plane.
pub const SCALED_SPARE_RISE: f64 = 0.004;

/// Share of the NAND above which [`Config::spare_warning`] states the spare area.
pub const WARN_SPARE_FRACTION: f64 = 0.5;

impl Geometry {
    /// Share of the NAND the host cannot address [fraction]: 1 − user bytes / NAND bytes.
    pub fn spare_fraction(&self) -> f64 {
        1.0 - self.user_units as f64 * UNIT_BYTES as f64 / (self.physical_units as f64 * self.nand_bytes_per_unit)
    }

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

    /// The pseudo-SLC cache, map cache and PCIe link keys that depend on other keys. Errors
    /// name the key at fault.
    fn check_cache_and_link(&self) -> Result<(), ConfigError> {
        let cache = self.slc_static_bytes != 0 || self.slc_dynamic_max_bytes != 0;
        if cache && self.cell_bits == 1 {
            return Err(ConfigError::new("cell_bits", "1 (SLC NAND) has no pseudo-SLC cache: set slc_static_bytes and slc_dynamic_max_bytes to 0"));
        }
        if cache && self.slc_static_bytes > self.user_capacity_bytes {
            return Err(ConfigError::new("slc_static_bytes", format!("{} exceeds the user capacity ({} bytes)", self.slc_static_bytes, self.user_capacity_bytes)));
        }
        if self.map_cache_bytes != 0 && self.map_cache_bytes < self.map_page_bytes {
            return Err(ConfigError::new("map_cache_bytes", format!("{} is less than one map page (map_page_bytes = {})", self.map_cache_bytes, self.map_page_bytes)));
        }
        if self.map_bypass_hit_pct > 0.0 && self.map_cache_bytes == 0 {
            return Err(ConfigError::new("map_bypass_hit_pct", "needs a map cache to bypass: set map_cache_bytes, or 0 here"));
        }
        if self.map_bypass_hit_pct > 0.0 && self.map_sram_bytes < self.map_page_bytes {
            return Err(ConfigError::new("map_sram_bytes", format!("{} is less than one map page (map_page_bytes = {}); the map cache's bypass (map_bypass_hit_pct) needs an SRAM cache to fall back to", self.map_sram_bytes, self.map_page_bytes)));
        }
        match (self.pcie_gen, self.pcie_lanes) {
            (0, 0) => Ok(()),
            (0, _) => Err(ConfigError::new("pcie_gen", "must be set (1 to 5) with pcie_lanes")),
            (_, l) if ![1, 2, 4, 8, 16].contains(&l) => Err(ConfigError::new("pcie_lanes", format!("{l} must be 1, 2, 4, 8 or 16 with pcie_gen"))),
            _ => Ok(()),
        }
    }

    /// The static part of the pseudo-SLC cache against the NAND: its blocks in SLC mode
    /// ([`slc::static_blocks_per_plane`]), the user capacity and the FTL's reserve (each
    /// plane's `gc_fg_free_blocks` + 3 blocks, see [`Config::validate`]) must fit every
    /// plane. Returns the static blocks per plane and the largest static part that fits,
    /// leaving the FTL's planes room for its highest GC watermark too [units]; the error
    /// (key `slc_static_bytes`) gives what the profile needs, what the NAND holds [NAND
    /// bytes] and that largest part. A user capacity that does not fit even without the
    /// cache is left to `validate`.
    fn check_slc_static(&self, user_units: u64, pools: usize, slots_per_block: usize) -> Result<(usize, u64), ConfigError> {
        let (planes, slots) = (pools as u64, slots_per_block as u64);
        let static_units = self.slc_static_bytes / UNIT_BYTES;
        let per_plane = slc::static_blocks_per_plane(static_units, slots, self.cell_bits, planes);
        let reserve = self.gc_fg_free_blocks + 3;
        // Blocks per plane the user capacity fills, rounded up.
        let user_blocks = user_units.div_ceil(planes * slots);
        // Blocks per plane left for SLC mode beside the user data and the reserve; the
        // largest static part also leaves the FTL's planes room for its highest GC watermark.
        let watermark = [self.gc_fg_target_free_blocks, self.gc_bg_start_free_blocks, self.gc_bg_stop_free_blocks, self.gc_idle_free_blocks]
            .into_iter()
            .fold(self.gc_fg_free_blocks, u64::max);
        let spare_nand = self.blocks_per_plane.saturating_sub(reserve + user_blocks);
        let spare = spare_nand.min(self.blocks_per_plane.saturating_sub(watermark + 3));
        let largest_units = spare * planes * slc::slc_block_units(slots, self.cell_bits);
        if user_blocks + reserve > self.blocks_per_plane {
            return Ok((0, 0));
        }
        if per_plane <= spare_nand {
            // A watermark the blocks left cannot hold is the watermark's error.
            return Ok((per_plane as usize, largest_units));
        }
        // NAND bytes (4 KiB units of compressible data take less).
        let block_bytes = self.page_size_bytes * self.pages_per_block;
        let user_nand = (user_units as f64 * block_bytes as f64 / slots as f64) as u64;
        let needs = user_nand + (per_plane + reserve) * planes * block_bytes;
        let largest = largest_units * UNIT_BYTES;
        Err(ConfigError::new(
            "slc_static_bytes",
            format!(
                "{} bytes ({}) of static SLC cache do not fit the NAND: a block in SLC mode holds 1/{} of its {} bytes, so they take \
                 {per_plane} blocks in each of the {planes} planes, and with the user capacity ({} bytes) and the FTL's reserve \
                 ({reserve} blocks per plane) the drive needs {needs} bytes ({}) of NAND, which holds {} bytes ({}); at most \
                 {largest} bytes ({}) of static SLC cache fit: lower slc_static_bytes or user_capacity_bytes, or raise blocks_per_plane",
                self.slc_static_bytes,
                decimal_text(self.slc_static_bytes),
                self.cell_bits,
                block_bytes,
                self.user_capacity_bytes,
                decimal_text(needs),
                self.blocks_per_plane * planes * block_bytes,
                decimal_text(self.blocks_per_plane * planes * block_bytes),
                decimal_text(largest),
            ),
        ))
    }

    /// Whether `capacity` asks for another drive than the geometry keys give.
    fn scales(&self) -> bool {
        self.capacity != 0 && self.capacity != self.user_capacity_bytes
    }

    /// Blocks of a plane that hold no data once random writes keep GC busy (the steady
    /// state) [blocks]: the free blocks GC keeps (gc_bg_start_free_blocks with active GC, which
    /// starts below it; else midway from gc_fg_free_blocks to gc_fg_target_free_blocks) and one
    /// for the host and GC open blocks, half empty on average. The GC's usable spare in a
    /// plane is its blocks less these and less the user data.
    fn blocks_without_data(&self) -> f64 {
        let fg_target = self.gc_fg_target_free_blocks.max(self.gc_fg_free_blocks);
        let free = match self.gc_bg_start_free_blocks {
            0 => (self.gc_fg_free_blocks + fg_target) as f64 / 2.0,
            start => start as f64,
        };
        free + 1.0
    }

    /// Fewest blocks a plane of a drive scaled by `capacity` may have whatever its size: the
    /// GC watermarks with the FTL's 3 blocks beside them, and the d-choices sample.
    fn min_scaled_blocks_per_plane(&self) -> u64 {
        let fg_target = self.gc_fg_target_free_blocks.max(self.gc_fg_free_blocks);
        let bg_stop = self.gc_bg_stop_free_blocks.max(self.gc_bg_start_free_blocks);
        let watermarks = fg_target.max(bg_stop).max(self.gc_idle_free_blocks) + 3;
        let d_choices = if self.gc_policy == "d-choices" { self.gc_d_choices } else { 0 };
        watermarks.max(d_choices).min(MAX_BLOCKS_PER_PLANE)
    }

    /// The drive this profile simulates: itself, or with `capacity` set, the profile's drive
    /// scaled to that user capacity. Each plane (one GC pool) keeps the profile's usable spare:
    /// its data blocks (its blocks less [`Config::blocks_without_data`]) per block of user
    /// data are the profile's, so random writes amplify alike at any capacity. Those blocks
    /// GC holds free are a larger share of a smaller plane and raise the spare fraction, so
    /// where it would rise more than [`SCALED_SPARE_RISE`] above the profile's,
    /// dies_per_channel halves, then channels, then planes_per_die (pages, page size, timings
    /// and GC watermarks stay), and the planes left get more blocks. A drive too small for
    /// one such plane keeps it, and more spare ([`Config::spare_warning`] states it). The SLC
    /// cache (slc_static_bytes, slc_dynamic_max_bytes, slc_fast_bytes) and the map caches
    /// (map_cache_bytes, map_sram_bytes, in whole map pages) scale with the user capacity, so
    /// they keep their share of it. Errors name the key at fault (`capacity` for the scaled
    /// drive's).
    pub fn resolved(&self) -> Result<Config, ConfigError> {
        if !self.scales() {
            return Ok(self.clone());
        }
        let info = KEYS.iter().find(|k| k.name == "capacity").expect("capacity is a key");
        info.range.check(info.name, &self.capacity.to_value())?;
        let own = Config { capacity: 0, ..self.clone() }.validate()?;
        let ratio = self.capacity as f64 / self.user_capacity_bytes as f64;
        let slots = own.slots_per_block as f64;
        let without_data = self.blocks_without_data();
        // The profile's data blocks per block of user data in a plane (every plane alike).
        let data_per_user_block = (own.blocks_per_pool as f64 - without_data) / (own.user_units as f64 / (own.pools as f64 * slots));
        let user_blocks = (self.capacity / UNIT_BYTES) as f64 / slots;
        let floor = self.min_scaled_blocks_per_plane();
        let most_spare = own.spare_fraction() + SCALED_SPARE_RISE;
        // The FTL's blocks per plane for `pools` planes (at least the user data's, the
        // foreground-GC reserve and 3 more, as validate() asks), and the spare fraction they give.
        let plane = |pools: u64| {
            let user = user_blocks / pools as f64;
            let least = floor.max(user.ceil() as u64 + self.gc_fg_free_blocks + 3);
            let blocks = ((data_per_user_block * user + without_data).round() as u64).max(least);
            (blocks, 1.0 - user * own.compression_ratio() / blocks as f64)
        };
        let (mut channels, mut dies, mut planes) = (self.channels, self.dies_per_channel, self.planes_per_die);
        while plane(channels * dies * planes).1 > most_spare && channels * dies * planes > 1 {
            if dies > 1 {
                dies /= 2;
            } else if channels > 1 {
                channels /= 2;
            } else {
                planes /= 2;
            }
        }
        let scaled = |bytes: u64, step: u64| match bytes {
            0 => 0,
            b => ((b as f64 * ratio / step as f64).round() as u64).max(1) * step,
        };
        // The FTL's blocks per plane, and beside them the blocks the scaled static SLC cache
        // takes in SLC mode.
        let pools = channels * dies * planes;
        let slc_static_bytes = scaled(self.slc_static_bytes, UNIT_BYTES);
        let slc_blocks = slc::static_blocks_per_plane(slc_static_bytes / UNIT_BYTES, own.slots_per_block as u64, self.cell_bits, pools);
        let blocks_per_plane = plane(pools).0 + slc_blocks;
        let drive = Config {
            channels,
            dies_per_channel: dies,
            planes_per_die: planes,
            blocks_per_plane,
            user_capacity_bytes: self.capacity,
            slc_static_bytes,
            slc_dynamic_max_bytes: scaled(self.slc_dynamic_max_bytes, UNIT_BYTES),
            slc_fast_bytes: scaled(self.slc_fast_bytes, UNIT_BYTES),
            map_cache_bytes: scaled(self.map_cache_bytes, self.map_page_bytes),
            map_sram_bytes: scaled(self.map_sram_bytes, self.map_page_bytes),
            ..self.clone()
        };
        match drive.validate() {
            Ok(_) => Ok(drive),
            Err(e) => Err(ConfigError::new(
                "capacity",
                format!(
                    "{} bytes makes a drive of {channels} channels x {dies} dies x {planes} planes x {blocks_per_plane} blocks, which is refused: {e}",
                    self.capacity
                ),
            )),
        }
    }

    /// A sentence on the drive's spare area when it is out of the ordinary, for the command
    /// output and the summary: more than [`WARN_SPARE_FRACTION`] of the NAND (GC has little
    /// to do, so writes hardly reach a steady state), or, with `capacity`, more than 0.5
    /// point above the profile's own because the drive is one plane too small to keep the
    /// profile's spare fraction ([`Config::resolved`]). None when neither holds.
    pub fn spare_warning(&self) -> Result<Option<String>, ConfigError> {
        let drive = self.resolved()?;
        let geo = drive.validate()?;
        let spare = geo.spare_fraction();
        let own = Config { capacity: 0, ..self.clone() }.validate()?.spare_fraction();
        let pct = |f: f64| format!("{:.1} %", f * 100.0);
        let sizes = format!("{} bytes of user capacity on {} bytes of NAND", geo.user_units * UNIT_BYTES, (geo.physical_units as f64 * geo.nand_bytes_per_unit) as u64);
        if self.scales() && spare > own + 0.005 {
            return Ok(Some(format!(
                "spare area is {} of the NAND, not the profile's {} ({sizes}): with capacity = {} the drive is one plane of {} blocks, \
                 which beside the user data and the profile's spare for GC keeps the blocks GC holds free and its watermarks, \
                 a larger share of a plane this small",
                pct(spare),
                pct(own),
                self.capacity,
                drive.blocks_per_plane
            )));
        }
        if spare > WARN_SPARE_FRACTION {
            let how = if self.scales() { "" } else { "; to test a smaller drive of this profile, set `capacity` (it scales the NAND) rather than user_capacity_bytes" };
            return Ok(Some(format!(
                "spare area is {} of the NAND ({sizes}): GC has little to do, so writes hardly reach a steady state{how}",
                pct(spare)
            )));
        }
        Ok(None)
    }

    /// Checks the profile and derives its geometry. Errors name the key at fault: first a
    /// value outside its key's [`Range`], then limits that depend on other keys. With
    /// `capacity` set, the geometry is that of the scaled drive ([`Config::resolved`]).
    /// The FDP keys: (handles, persistently isolated), (0, false) with FDP off. The reclaim
    /// unit is one erase block of `slots_per_block` units; idle sorting, which moves data by
    /// LBA region whatever its handle, is refused beside FDP.
    fn check_fdp(&self, sort_regions: usize, slots_per_block: usize) -> Result<(usize, bool), ConfigError> {
        if self.fdp == 0 {
            return Ok((0, false));
        }
        let block_bytes = self.pages_per_block * self.page_size_bytes;
        if self.fdp_reclaim_unit_bytes != 0 && self.fdp_reclaim_unit_bytes != block_bytes {
            return Err(ConfigError::new(
                "fdp_reclaim_unit_bytes",
                format!(
                    "{} is not the erase block size, {} (pages_per_block × page_size_bytes): the simulated drive's reclaim unit is one erase block of a plane ({slots_per_block} 4 KiB units); set it to {block_bytes} or 0",
                    bytes_text(self.fdp_reclaim_unit_bytes),
                    bytes_text(block_bytes)
                ),
            ));
        }
        if sort_regions != 0 {
            return Err(ConfigError::new(
                "gc_idle_sort_regions",
                "idle sorting by LBA region mixes the data of every FDP handle; set it to 0 with fdp = 1",
            ));
        }
        Ok((self.fdp_reclaim_unit_handles as usize, self.fdp_ruh_type == "persistently-isolated"))
    }

    /// The zones of a zoned namespace (`zns_zone_size_bytes` > 0), None for a conventional
    /// one. A zone's capacity is whole erase blocks it holds alone, striped over
    /// gcd(its blocks, planes) planes; every plane must hold the blocks of the zones striped
    /// over it beside its host and GC block. Features that move data between blocks or mix
    /// zones (FDP, compression, an SLC cache, idle sorting) are refused beside zones.
    fn check_zns(&self, user_units: u64, pools: usize, slots_per_block: usize, blocks_per_pool: usize) -> Result<Option<ZoneGeometry>, ConfigError> {
        if self.zns_zone_size_bytes == 0 {
            for key in ["zns_zone_capacity_bytes", "zns_max_open_zones", "zns_max_active_zones"] {
                if self.get(key) != Some(Value::Int(0)) {
                    return Err(ConfigError::new(key, "applies to a zoned namespace only; set zns_zone_size_bytes (the zone size) too, or this key to 0"));
                }
            }
            return Ok(None);
        }
        let zone_units = self.zns_zone_size_bytes / UNIT_BYTES;
        let block_bytes = slots_per_block as u64 * UNIT_BYTES;
        let cap = if self.zns_zone_capacity_bytes == 0 { self.zns_zone_size_bytes } else { self.zns_zone_capacity_bytes };
        if cap > self.zns_zone_size_bytes {
            return Err(ConfigError::new("zns_zone_capacity_bytes", format!("{} is more than the zone size, zns_zone_size_bytes = {}", bytes_text(cap), bytes_text(self.zns_zone_size_bytes))));
        }
        if !cap.is_multiple_of(block_bytes) {
            let key = if self.zns_zone_capacity_bytes == 0 { "zns_zone_size_bytes" } else { "zns_zone_capacity_bytes" };
            return Err(ConfigError::new(
                key,
                format!("a zone's capacity, {}, is not a whole number of erase blocks of {} (pages_per_block × page_size_bytes): a zone holds whole blocks of its own; set zns_zone_capacity_bytes to a multiple of {block_bytes}", bytes_text(cap), bytes_text(block_bytes)),
            ));
        }
        if !(user_units * UNIT_BYTES).is_multiple_of(self.zns_zone_size_bytes) {
            return Err(ConfigError::new(
                "user_capacity_bytes",
                format!("{} is not a whole number of zones of {} (zns_zone_size_bytes); set it to a multiple of the zone size", self.user_capacity_bytes, bytes_text(self.zns_zone_size_bytes)),
            ));
        }
        for (key, on) in [("fdp", self.fdp != 0), ("compression_ratio", self.compression_ratio != 1.0), ("slc_static_bytes", self.slc_static_bytes != 0), ("slc_dynamic_max_bytes", self.slc_dynamic_max_bytes != 0), ("gc_idle_sort_regions", self.gc_idle_sort_regions != 0)] {
            if on {
                return Err(ConfigError::new(key, "is not modelled on a zoned namespace (each zone keeps its data in blocks of its own, written in order); set it to its default or zns_zone_size_bytes to 0"));
            }
        }
        let zones = (user_units / zone_units) as usize;
        let blocks = (cap / block_bytes) as usize;
        let planes = gcd(blocks, pools);
        // Zone z is striped over planes z·g .. z·g + g (mod planes): some planes take one zone more.
        let zones_per_plane = (zones * planes).div_ceil(pools);
        let need = zones_per_plane * (blocks / planes) + 2;
        if need > blocks_per_pool {
            return Err(ConfigError::new(
                "user_capacity_bytes",
                format!(
                    "{zones} zones of {} capacity need {need} blocks in a plane ({zones_per_plane} zones × {} blocks, and its host and GC block), which has {blocks_per_pool}; lower user_capacity_bytes or zns_zone_capacity_bytes, or raise blocks_per_plane",
                    bytes_text(cap),
                    blocks / planes
                ),
            ));
        }
        let (max_open, max_active) = (self.zns_max_open_zones as usize, self.zns_max_active_zones as usize);
        if max_active != 0 && (max_open == 0 || max_open > max_active) {
            return Err(ConfigError::new("zns_max_open_zones", format!("{max_open} allows more open zones than zns_max_active_zones = {max_active} (an open zone is active); set it to at most that")));
        }
        Ok(Some(ZoneGeometry { zones, zone_units, capacity_units: cap / UNIT_BYTES, planes, blocks_per_plane: blocks / planes, max_open, max_active }))
    }

    pub fn validate(&self) -> Result<Geometry, ConfigError> {
        if self.scales() {
            return self.resolved()?.validate();
        }
        for (info, (_, value)) in KEYS.iter().zip(self.to_pairs()) {
            info.range.check(info.name, &value)?;
        }
        let policy = GcPolicy::parse(&self.gc_policy, self.gc_d_choices as usize).expect("gc_policy is checked against its range");
        if matches!(policy, GcPolicy::DChoices(_)) && self.gc_d_choices > self.blocks_per_plane {
            return Err(ConfigError::new(
                "gc_d_choices",
                format!("{} is more than blocks_per_plane = {}: the d-choices policy samples at most every block of a plane", self.gc_d_choices, self.blocks_per_plane),
            ));
        }
        let stall = if self.gc_fg_stall == "drive" { StallScope::Drive } else { StallScope::Die };
        let die_striped = self.die_allocation == "striped";
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
        if bg_start != 0 && self.gc_bg_copies_per_write == 0.0 {
            return Err(ConfigError::new("gc_bg_copies_per_write", "must be > 0 when active GC is on (gc_bg_start_free_blocks > 0)"));
        }
        self.check_cache_and_link()?;
        // Compression packs more 4 KiB host units into each NAND page.
        let units_per_page = ((self.page_size_bytes / UNIT_BYTES) as f64 * self.compression_ratio).round() as usize;
        let slots_per_block = self.pages_per_block as usize * units_per_page;
        let dies = (self.channels * self.dies_per_channel) as usize;
        let pools = dies * self.planes_per_die as usize;
        let nand_units = (pools as u64 * self.blocks_per_plane).saturating_mul(slots_per_block as u64);
        if nand_units >= u32::MAX as u64 {
            return Err(ConfigError::new(
                "blocks_per_plane",
                format!("{nand_units} physical 4 KiB units exceed the simulator's 2^32 limit (16 TiB of NAND)"),
            ));
        }
        let user_units = self.user_capacity_bytes / UNIT_BYTES;
        // The static SLC blocks come out of every plane; the FTL's planes are the blocks left.
        let (slc_static_blocks, slc_static_max_units) = self.check_slc_static(user_units, pools, slots_per_block)?;
        let blocks_per_pool = self.blocks_per_plane as usize - slc_static_blocks;
        let plane_blocks = if slc_static_blocks == 0 {
            format!("{blocks_per_pool} blocks")
        } else {
            format!("{blocks_per_pool} blocks (blocks_per_plane less {slc_static_blocks} in SLC mode for slc_static_bytes)")
        };
        let blocks = pools * blocks_per_pool;
        let physical_units = blocks as u64 * slots_per_block as u64;
        let (fdp_handles, fdp_persistent) = self.check_fdp(self.gc_idle_sort_regions as usize, slots_per_block)?;
        // Open blocks of each plane beyond its host and GC block: one host block per further
        // FDP handle, and as many GC blocks when handles are persistently isolated.
        let fdp_open = fdp_handles.saturating_sub(1) * (1 + fdp_persistent as usize);
        // Each plane keeps two open blocks (host, GC) plus the foreground-GC reserve, and at
        // least one block for data (see the reserve below).
        let reserved_blocks = (self.gc_fg_free_blocks as usize + 2 + fdp_open) * pools;
        if fdp_open > 0 && self.gc_fg_free_blocks as usize + 3 + fdp_open > blocks_per_pool {
            return Err(ConfigError::new(
                "fdp_reclaim_unit_handles",
                format!(
                    "{fdp_handles} handles keep {} open reclaim units in each plane, which leaves no room: each plane has only {plane_blocks}; use fewer handles",
                    fdp_open + 2
                ),
            ));
        }
        if self.gc_fg_free_blocks as usize + 3 > blocks_per_pool {
            return Err(ConfigError::new(
                "gc_fg_free_blocks",
                format!("{} leaves no room: each plane has only {plane_blocks}", self.gc_fg_free_blocks),
            ));
        }
        for (key, v) in [("gc_fg_target_free_blocks", fg_target), ("gc_bg_stop_free_blocks", bg_stop), ("gc_idle_free_blocks", self.gc_idle_free_blocks)] {
            if v as usize + 3 > blocks_per_pool {
                return Err(ConfigError::new(key, format!("{v} free blocks per plane is impossible: a plane has {plane_blocks}")));
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
        // The GC reserve the FTL relies on. Let B = a plane's blocks (blocks_per_plane less its
        // static SLC blocks), S = slots per block,
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
        // a plane's share into one. GC then moves a block of it to the plane holding the least
        // (`Ftl::spill`); only when no plane can take one does the FTL report an error naming
        // this key (`Ftl::check_space`).
        let max_user = usable_units.saturating_sub((pools * slots_per_block) as u64);
        let zones = self.check_zns(user_units, pools, slots_per_block, blocks_per_pool)?;
        // A zoned namespace's data needs no GC reserve: its zones' blocks are checked above.
        if zones.is_none() && user_units > max_user {
            return Err(ConfigError::new(
                "user_capacity_bytes",
                format!(
                    "{} bytes leaves too little spare area: the NAND holds {} bytes, of which at most {} can be user capacity \
                     (each plane keeps {} blocks for open blocks and the GC reserve); lower it or raise blocks_per_plane",
                    self.user_capacity_bytes,
                    nand_units * UNIT_BYTES,
                    max_user * UNIT_BYTES,
                    self.gc_fg_free_blocks as usize + 3 + fdp_open
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
            fdp_handles,
            fdp_persistent,
            zones,
            nand_bytes_per_unit: self.page_size_bytes as f64 / units_per_page as f64,
            max_user_units: max_user,
            slc_static_blocks_per_pool: slc_static_blocks,
            slc_static_max_units,
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
        assert_eq!(parse_size("256GB"), Some(256_000_000_000));
        assert_eq!(parse_size("256G"), Some(256 << 30));
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("16KiB"), Some(16384));
        assert_eq!(parse_size("1.5TB"), Some(1_500_000_000_000));
        assert_eq!(parse_size("1.5K"), Some(1536));
        assert_eq!(parse_size("0.1K"), None);
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("8EiB"), None);
        assert_eq!(parse_size("8192PiB"), None);
        assert_eq!(parse_size("9223372036854775807"), Some(MAX_SIZE_BYTES));
        assert_eq!(parse_size("9223372036854775808"), None);
        assert_eq!(parse_size("12 parsecs"), None);
        assert_eq!(parse_size("-1"), None);
    }

    #[test]
    fn capacities_round_to_whole_units_with_a_note_naming_key_text_and_value() {
        let mut c = Config::default();
        let note = c.set("user_capacity_bytes", "2GB").unwrap().expect("2 x 10^9 is not a multiple of 4096");
        assert_eq!(c.user_capacity_bytes, 1_999_998_976);
        assert_eq!(note, "user_capacity_bytes = 2GB: 2000000000 bytes is not a multiple of 4096; using 1999998976 bytes");
        assert_eq!(c.set("capacity", "6000").unwrap().map(|_| c.capacity), Some(4096));
        assert_eq!(c.set("capacity", "16GiB").unwrap(), None);
        // Less than half a unit is not rounded up to one: refused as below the range.
        assert_eq!(c.set("capacity", "100").unwrap(), None);
        assert!(c.validate().unwrap_err().message.starts_with("100 is out of range"));
        // A NAND geometry key is refused, not rounded.
        assert_eq!(refused(&[("page_size_bytes", "6000")]).key, "page_size_bytes");
    }

    /// The default drive scaled to `capacity`.
    fn scaled(capacity: &str) -> Config {
        let mut c = Config::default();
        c.set("capacity", capacity).unwrap();
        c.resolved().unwrap()
    }

    #[test]
    fn capacity_keeps_each_planes_spare_for_gc_and_loses_dies_to_keep_the_spare_fraction() {
        let own = Config::default().validate().unwrap();
        // The default drive's planes: 2048 blocks, 2 of them free (gc_fg_free_blocks) and 1
        // in the open blocks; 256e9 / 4096 / 32 / 1024 = 1907.35 blocks of user data: 2045 /
        // 1907.35 = 1.0722 data blocks per user block.
        let user_per_plane = 256e9 / 4096.0 / 32.0 / 1024.0;
        let per_user = 2045.0 / user_per_plane;
        // 16 GiB = 4096 user blocks: over 32 and 16 planes, 128 × 1.0722 + 3 = 140 and 277
        // blocks per plane, 8.6 % and 7.6 % spare (the profile's: 6.9 %); 8 planes of 512 ×
        // 1.0722 + 3 = 552 blocks give 7.25 %, within 0.4 point.
        let d = scaled("16GiB");
        let g = d.validate().unwrap();
        assert_eq!(g.user_units * UNIT_BYTES, 16 << 30);
        assert_eq!((d.channels, d.dies_per_channel, d.planes_per_die, d.blocks_per_plane), (4, 1, 2, 552), "{d:?}");
        let rise = g.spare_fraction() - own.spare_fraction();
        assert!((0.0..SCALED_SPARE_RISE).contains(&rise), "{} vs {}", g.spare_fraction(), own.spare_fraction());
        // 64 GB: every plane stays, with a quarter of the user data and of the data blocks:
        // 2045 / 4 + 3 = 514 blocks (7.2 %).
        let d = scaled("64GB");
        assert_eq!((d.channels, d.dies_per_channel, d.planes_per_die, d.blocks_per_plane), (4, 4, 2, 514));
        assert!(((d.blocks_per_plane - 3) as f64 - per_user * user_per_plane / 4.0).abs() <= 0.5);
        // With active GC a plane holds gc_bg_start_free_blocks free: 2043 / 1907.35 = 1.0711
        // data blocks per user block, and 5 blocks without data, a larger share of a plane:
        // 16 GiB keeps 4 planes of 1024 × 1.0711 + 5 = 1102 blocks (8 planes of 553: 7.4 %).
        let mut c = Config { gc_bg_start_free_blocks: 4, gc_bg_stop_free_blocks: 6, ..Config::default() };
        c.set("capacity", "16GiB").unwrap();
        let d = c.resolved().unwrap();
        assert_eq!((d.channels, d.dies_per_channel, d.planes_per_die, d.blocks_per_plane), (2, 1, 2, 1102), "{d:?}");
        assert!(((d.blocks_per_plane - 5) as f64 - 2043.0 / user_per_plane * 1024.0).abs() <= 0.5);
        // Foreground GC that collects up to 6 free blocks holds 4 on average, as many.
        let mut c = Config { gc_fg_target_free_blocks: 6, ..Config::default() };
        c.set("capacity", "16GiB").unwrap();
        assert_eq!(c.resolved().unwrap().blocks_per_plane, 1102);
        // 2 GiB: one plane of 552 blocks.
        let d = scaled("2GiB");
        assert_eq!((d.channels, d.dies_per_channel, d.planes_per_die, d.blocks_per_plane), (1, 1, 1, 552), "{d:?}");
        // The scaled drive is what validate() and a second resolution give.
        assert_eq!(d.resolved().unwrap(), d);
        let mut c = Config::default();
        c.set("capacity", "2GiB").unwrap();
        assert_eq!(c.validate().unwrap(), d.validate().unwrap());
        assert_eq!(Config::default().resolved().unwrap(), Config::default());
    }

    #[test]
    fn capacity_scales_the_slc_and_map_caches_with_the_user_capacity() {
        let mut c = Config { cell_bits: 3, slc_static_bytes: 6_000_000_000, slc_dynamic_max_bytes: 100_000_000_000, map_cache_bytes: 64 * MIB, map_sram_bytes: MIB, map_page_bytes: 4096, ..Config::default() };
        c.set("capacity", "16GiB").unwrap();
        let d = c.resolved().unwrap();
        let ratio = (16u64 << 30) as f64 / 256e9;
        for (scaled, own) in [(d.slc_static_bytes, c.slc_static_bytes), (d.slc_dynamic_max_bytes, c.slc_dynamic_max_bytes), (d.map_cache_bytes, c.map_cache_bytes), (d.map_sram_bytes, c.map_sram_bytes)] {
            // Rounded to whole 4 KiB units or map pages (4096 bytes here).
            assert!((scaled as f64 - own as f64 * ratio).abs() <= 2048.0, "{scaled} from {own}");
        }
    }

    #[test]
    fn spare_above_half_the_nand_or_above_the_profiles_is_stated() {
        assert_eq!(Config::default().spare_warning().unwrap(), None);
        assert_eq!(scaled("16GiB").spare_warning().unwrap(), None);
        let mut c = Config::default();
        c.set("user_capacity_bytes", "2GiB").unwrap();
        let w = c.spare_warning().unwrap().expect("99 % spare");
        assert!(w.starts_with("spare area is 99.2 % of the NAND") && w.contains("set `capacity`"), "{w}");
        // A plane too small to keep the profile's spare fraction: the spare rises, and says so.
        let mut c = Config::default();
        c.set("capacity", "64MiB").unwrap();
        let w = c.spare_warning().unwrap().expect("more spare than the profile's");
        // 16 user blocks: 16 × 1.0722 + 3 = 20 blocks, fewer than the user data and the
        // FTL's gc_fg_free_blocks + 3 beside it: 21 blocks, 23.8 % spare.
        assert!(w.contains("not the profile's 6.9 %") && w.contains("one plane of 21 blocks"), "{w}");
        assert_eq!(c.resolved().unwrap().planes_per_die, 1);
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
        c.set("user_capacity_bytes", "300GB").unwrap();
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
    fn zone_keys_change_nothing_while_off_and_refuse_a_drive_that_cannot_exist() {
        // 240 GiB: 960 zones of 256 MiB.
        let zoned = |pairs: &[(&str, &str)]| {
            with(&[&[("user_capacity_bytes", "240GiB"), ("zns_zone_size_bytes", "256MiB")], pairs].concat()).validate()
        };
        assert_eq!(Config::default().validate().unwrap().zones, None);
        let z = zoned(&[("zns_zone_capacity_bytes", "192MiB"), ("zns_max_open_zones", "14"), ("zns_max_active_zones", "14")]).unwrap().zones.unwrap();
        // 48 blocks of 4 MiB over gcd(48, 32) = 16 planes, 3 in each.
        assert_eq!((z.zones, z.zone_units, z.capacity_units, z.planes, z.blocks_per_plane, z.max_open, z.max_active), (960, 65536, 49152, 16, 3, 14, 14));
        let bad = |pairs: &[(&str, &str)]| zoned(pairs).unwrap_err().key;
        assert_eq!(bad(&[("zns_zone_capacity_bytes", "300MiB")]), "zns_zone_capacity_bytes");
        assert_eq!(bad(&[("zns_zone_capacity_bytes", "6MiB")]), "zns_zone_capacity_bytes");
        assert_eq!(bad(&[("zns_zone_size_bytes", "6MiB")]), "zns_zone_size_bytes");
        assert_eq!(bad(&[("user_capacity_bytes", "240001MiB")]), "user_capacity_bytes");
        // 960 zones of 256 MiB capacity need 1,920 blocks per plane, more than 1,024 have.
        assert_eq!(bad(&[("blocks_per_plane", "1024")]), "user_capacity_bytes");
        assert_eq!(bad(&[("zns_max_open_zones", "20"), ("zns_max_active_zones", "14")]), "zns_max_open_zones");
        assert_eq!(bad(&[("fdp", "1")]), "fdp");
        let mut c = Config::default();
        c.set("zns_max_open_zones", "4").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "zns_max_open_zones");
    }

    #[test]
    fn watermarks_out_of_order_name_the_key() {
        let bad = |pairs: &[(&str, &str)]| refused(pairs).key;
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
    fn fdp_keys_change_nothing_while_fdp_is_off_and_are_checked_when_on() {
        let off = Config::default().validate().unwrap();
        let mut c = Config::default();
        c.set("fdp_reclaim_unit_handles", "8").unwrap();
        c.set("fdp_ruh_type", "persistently-isolated").unwrap();
        assert_eq!(c.validate().unwrap(), off);
        c.set("fdp", "1").unwrap();
        let g = c.validate().unwrap();
        assert_eq!((g.fdp_handles, g.fdp_persistent), (8, true));
        // 7 more host and 7 more GC open blocks per plane come out of the user capacity.
        assert!(g.max_user_units < off.max_user_units);
        let bad = |pairs: &[(&str, &str)]| refused(&[&[("fdp", "1"), ("user_capacity_bytes", "4096")], pairs].concat()).key;
        // The reclaim unit is one erase block (256 pages of 16 KiB = 4 MiB).
        assert_eq!(bad(&[("fdp_reclaim_unit_bytes", "8MiB")]), "fdp_reclaim_unit_bytes");
        assert_eq!(bad(&[("fdp_reclaim_unit_handles", "129")]), "fdp_reclaim_unit_handles");
        assert_eq!(bad(&[("blocks_per_plane", "64"), ("fdp_reclaim_unit_handles", "40"), ("fdp_ruh_type", "persistently-isolated")]), "fdp_reclaim_unit_handles");
        assert_eq!(bad(&[("fdp_reclaim_groups", "2")]), "fdp_reclaim_groups");
        assert_eq!(bad(&[("gc_idle_free_blocks", "32"), ("gc_idle_sort_regions", "8")]), "gc_idle_sort_regions");
        let mut ok = Config::default();
        ok.set("fdp", "1").unwrap();
        ok.set("fdp_reclaim_unit_bytes", "4MiB").unwrap();
        assert!(ok.validate().is_ok());
    }

    #[test]
    fn compression_packs_more_units_per_page() {
        let mut c = Config::default();
        c.set("compression_ratio", "2").unwrap();
        let g = c.validate().unwrap();
        assert_eq!(g.units_per_page, 8);
        assert_eq!(g.nand_bytes_per_unit, 2048.0);
    }

    /// The default profile with `pairs` set.
    fn with(pairs: &[(&str, &str)]) -> Config {
        let mut c = Config::default();
        for (k, v) in pairs {
            c.set(k, v).unwrap();
        }
        c
    }

    fn refused(pairs: &[(&str, &str)]) -> ConfigError {
        with(pairs).validate().unwrap_err()
    }

    fn range_of(key: &str) -> Range {
        KEYS.iter().find(|k| k.name == key).unwrap().range
    }

    #[test]
    fn values_outside_their_range_are_refused_naming_value_range_and_unit() {
        let e = refused(&[("controller_cmd_us", "1e308")]);
        assert_eq!(e.key, "controller_cmd_us");
        assert_eq!(e.message, "1e308 is out of range: expected 0.01 to 1000000 µs");
        let e = refused(&[("host_link_mbps", "1e-12")]);
        assert_eq!(e.message, "1e-12 is out of range: expected 1 to 1000000 MB/s");
        assert!(refused(&[("t_prog_us", "-3")]).message.starts_with("-3 is negative: expected 0.01 to"));
        for (key, value) in [("t_read_us", "0"), ("t_erase_us", "1e12"), ("channel_mbps", "1e308"), ("channels", "33"), ("pages_per_block", "0"), ("write_buffer_bytes", "1TiB")] {
            assert_eq!(refused(&[(key, value)]).key, key, "{key} = {value}");
        }
        let e = refused(&[("page_size_bytes", "6000")]);
        assert_eq!(e.message, "6000 is not a multiple of the step: expected 4 KiB to 64 KiB, a multiple of 4096 bytes");
        let e = refused(&[("gc_policy", "lru")]);
        assert_eq!(e.message, "\"lru\" is not a choice: expected one of greedy, fifo, cost-benefit, d-choices");
        // 0 where 0 means "off" or "the default"; not otherwise.
        assert!(Config { slc_dynamic_t_prog_us: 0.0, trim_cmd_us: 0.0, ..Config::default() }.validate().is_ok());
        assert_eq!(refused(&[("slc_dynamic_t_prog_us", "0.001")]).key, "slc_dynamic_t_prog_us");
        // Values set directly, not through text: NaN is outside every range.
        assert_eq!(Config { t_read_us: f64::NAN, ..Config::default() }.validate().unwrap_err().key, "t_read_us");
        assert_eq!(Config { name: "x".repeat(MAX_TEXT_BYTES + 1), ..Config::default() }.validate().unwrap_err().key, "name");
    }

    #[test]
    fn d_choices_samples_at_most_the_blocks_of_a_plane() {
        let e = refused(&[("gc_policy", "d-choices"), ("gc_d_choices", "1000000000")]);
        assert_eq!(e.key, "gc_d_choices");
        let e = refused(&[("gc_policy", "d-choices"), ("gc_d_choices", "2049")]);
        assert!(e.message.contains("blocks_per_plane = 2048"), "{e}");
        let mut c = Config::default();
        c.set("gc_policy", "d-choices").unwrap();
        c.set("gc_d_choices", "2048").unwrap();
        assert!(c.validate().is_ok());
        // Another policy ignores the sample size.
        c.set("gc_policy", "greedy").unwrap();
        c.set("blocks_per_plane", "6").unwrap();
        c.set("user_capacity_bytes", "4MiB").unwrap();
        assert!(c.validate().is_ok());
    }

    #[test]
    fn ranges_read_as_written_with_the_unit_their_key_names() {
        assert_eq!(range_of("t_prog_us").to_string(), "0.01 to 1000000 µs");
        assert_eq!(range_of("slc_dynamic_t_prog_us").to_string(), "0 or 0.01 to 1000000 µs");
        assert_eq!(range_of("write_buffer_bytes").to_string(), "4 KiB to 16 GiB; at least planes_per_die × page_size_bytes");
        assert_eq!(range_of("channels").to_string(), "1 to 32 channels");
        let suffixes = [("_us", "µs"), ("_ms", "ms"), ("_mbps", "MB/s"), ("_bytes", "bytes"), ("_pct", "%"), ("_per_gib", "µs/GiB")];
        for k in KEYS {
            if let Some((_, unit)) = suffixes.iter().rev().find(|(s, _)| k.name.ends_with(s)) {
                assert_eq!(k.range.unit, *unit, "{}", k.name);
            }
            let numeric = matches!(k.range.bounds, Bounds::Int { .. } | Bounds::Float { .. });
            assert_eq!(numeric, k.kind != "str", "{}: a {} key with range {}", k.name, k.kind, k.range);
        }
    }

    #[test]
    fn every_range_takes_its_ends_and_refuses_beyond_them() {
        let base = Config::default();
        for k in KEYS {
            let r = k.range;
            let (lo, hi, below, above) = match (r.bounds, base.get(k.name).unwrap()) {
                (Bounds::Int { lo, hi, .. }, Value::Int(_)) => (Value::Int(lo), Value::Int(hi), lo.checked_sub(1).map(Value::Int), Some(Value::Int(hi + 1))),
                (Bounds::Float { lo, hi }, Value::Float(_)) => (Value::Float(lo), Value::Float(hi), Some(Value::Float(lo - lo.abs().max(1e-3) * 0.5)), Some(Value::Float(hi * 1.5))),
                _ => continue,
            };
            assert!(r.check(k.name, &lo).is_ok() && r.check(k.name, &hi).is_ok(), "{}: {r}", k.name);
            for v in [below, above].into_iter().flatten() {
                let zero = matches!(v, Value::Int(0)) || v == Value::Float(0.0);
                assert_eq!(r.check(k.name, &v).is_ok(), zero && r.zero, "{} = {v}: {r}", k.name);
            }
        }
    }

    /// A 1 TB drive on 1 TiB of TLC (8 × 2 dies, 4 planes, 1024 blocks of 1024 16 KiB
    /// pages): 16 MiB blocks natively, 4096/3 = 1365 units in SLC mode.
    fn tlc_1tb(static_bytes: &str) -> Config {
        let mut c = Config::default();
        for (k, v) in [("channels", "8"), ("dies_per_channel", "2"), ("planes_per_die", "4"), ("blocks_per_plane", "1024"),
            ("pages_per_block", "1024"), ("user_capacity_bytes", "1000204886016"), ("cell_bits", "3"), ("slc_static_bytes", static_bytes)] {
            c.set(k, v).unwrap();
        }
        c
    }

    #[test]
    fn a_static_slc_cache_larger_than_the_spare_area_allows_is_refused_with_the_largest_that_fits() {
        // The user capacity fills ceil(244190646 / (64 planes × 4096 units)) = 932 blocks per
        // plane and the reserve 2 + 3: 87 blocks per plane are left, 87 × 64 × 1365 × 4096 bytes
        // in SLC mode. 280 GB take ceil(ceil(68359375 / 1365) / 64) = 783 blocks per plane.
        let e = tlc_1tb("280GB").validate().unwrap_err();
        assert_eq!(e.key, "slc_static_bytes");
        for part in ["take 783 blocks in each of the 64 planes", "needs 1846313443328 bytes (1846.3 GB) of NAND",
            "which holds 1099511627776 bytes", "at most 31130910720 bytes (31.1 GB) of static SLC cache fit"] {
            assert!(e.message.contains(part), "{part:?} not in {e}");
        }
        assert!(!e.to_string().contains('\n'), "{e}");
        // The largest that fits does; one unit more takes another block in every plane.
        let g = tlc_1tb("31130910720").validate().unwrap();
        assert_eq!(g.slc_static_blocks_per_pool, 87);
        assert_eq!(g.blocks_per_pool, 1024 - 87);
        assert_eq!(g.max_user_units, (1024 - 87 - 5) * 64 * 4096);
        assert_eq!(g.slc_static_max_units * UNIT_BYTES, 31130910720);
        assert_eq!(tlc_1tb("31130914816").validate().unwrap_err().key, "slc_static_bytes");
        // A user capacity that does not fit even without the cache is what the error names.
        let mut c = tlc_1tb("1GB");
        c.set("user_capacity_bytes", "1.2TB").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "user_capacity_bytes");
    }

    #[test]
    fn static_slc_blocks_leave_the_ftl_s_planes() {
        // 6 GB of TLC SLC: ceil(1464843.75 / 1365) = 1074 blocks, 17 per plane of 64.
        let g = tlc_1tb("6GB").validate().unwrap();
        assert_eq!((g.slc_static_blocks_per_pool, g.blocks_per_pool, g.blocks), (17, 1007, 1007 * 64));
        assert_eq!(g.physical_units, 1007 * 64 * 4096);
        assert_eq!(tlc_1tb("0").validate().unwrap().blocks_per_pool, 1024);
        // GC watermarks count the FTL's blocks, and their errors say where the rest went.
        let mut c = tlc_1tb("6GB");
        c.set("gc_idle_free_blocks", "1010").unwrap();
        let e = c.validate().unwrap_err();
        assert_eq!(e.key, "gc_idle_free_blocks");
        assert!(e.message.ends_with("a plane has 1007 blocks (blocks_per_plane less 17 in SLC mode for slc_static_bytes)"), "{e}");
        // The largest static part leaves room for the watermark: 1024 - 1010 - 3 = 11 blocks per plane.
        c.set("slc_static_bytes", "0").unwrap();
        assert_eq!(c.validate().unwrap().slc_static_max_units, 11 * 64 * 1365);
        // 2 TB on 2 TiB of QLC (2048 blocks per plane): 48 GB take ceil(11718750 / 1024) = 11445
        // SLC blocks, 179 per plane, the most that fits (2048 - 5 - 1864 blocks of user data).
        let mut c = tlc_1tb("48GB");
        for (k, v) in [("blocks_per_plane", "2048"), ("user_capacity_bytes", "2000398934016"), ("cell_bits", "4")] {
            c.set(k, v).unwrap();
        }
        let g = c.validate().unwrap();
        assert_eq!((g.slc_static_blocks_per_pool, g.blocks_per_pool), (179, 2048 - 179));
        c.set("slc_static_bytes", "54GB").unwrap();
        let e = c.validate().unwrap_err();
        assert!(e.message.contains("at most 48049946624 bytes (48.0 GB) of static SLC cache fit"), "{e}");
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
