//! # ssdtrace — block I/O traces for ssdlab's trace test
//!
//! Readers for real trace formats, one streaming record type, statistics, conversion and a
//! JEDEC-client-like workload generator. Pure Rust (only dependency: the shared `ssdrng`); the Python bindings
//! (`ssdlab._native`) and the `ssdlab trace` command sit on top.
//!
//! * [`Record`]: `time_ns`, [`Op`] (read, write, trim, flush), `offset_bytes`, `len_bytes`.
//!   Units: ns and bytes everywhere; sector-based formats are converted from 512 B sectors.
//! * [`formats`]: readers for blkparse text, fio iolog v2/v3, DiskSim and MQSim ASCII,
//!   MSR Cambridge CSV, SPC/UMass, the JEDEC master-trace text, CloudPhysics VSCSI and the
//!   ssdlab binary format, all behind [`TraceReader`] (an iterator of
//!   `Result<Record, TraceError>`). They stream: memory does not grow with the trace.
//!   Errors ([`TraceError`]) read `FILE:LINE: expected ..., got "..."`.
//! * [`info`]: one-pass statistics (counts, op mix, size histogram, span, duration).
//! * [`convert`]: writers for fio iolog v3 and the binary format (specified there).
//! * [`generate`]: the JEDEC-client-like generator (75 % random / 25 % sequential writes by
//!   bytes, flushes, TRIMs freeing 13 % of the span), seeded and deterministic.
//!
//! ```
//! use ssdtrace::{open_reader, Format, Info, Op, ReadOptions};
//! let text = "fio version 3 iolog\n0 /dev/sdb add\n10 /dev/sdb write 0 4096\n25 /dev/sdb trim 0 8192\n";
//! let mut reader = open_reader(text.as_bytes(), "example.iolog", Format::Fio, &ReadOptions::default()).unwrap();
//! let info = Info::from_reader(&mut *reader).unwrap();
//! assert_eq!(info.op(Op::Write).bytes, 4096);
//! assert_eq!(info.duration_ns(), 15_000);
//! ```

pub mod convert;
pub mod error;
pub mod formats;
pub mod generate;
pub mod info;
mod lines;
pub mod record;
/// Deterministic random numbers (the shared `ssdrng` crate).
pub use ssdrng as rng;
pub mod samples;

pub use convert::{convert, writer, BinWriter, FioWriter, OutFormat, RecordWriter};
pub use error::TraceError;
pub use formats::{detect, detect_bytes, open_path, open_reader, BlkEvent, Format, ReadOptions, ReadStats, TimeUnit, TraceReader};
pub use generate::{GenParams, GenSummary, Generator, Skew};
pub use info::Info;
pub use record::{Op, Record, SECTOR_BYTES};
