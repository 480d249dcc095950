//! # ssdsim — a fast, explainable NAND/FTL SSD simulator
//!
//! A page-mapped FTL ([`ftl`]) over a NAND geometry with spare area, greedy or FIFO
//! garbage collection, TRIM, and a timed device model ([`device`]: DRAM write buffer,
//! channels, dies, host link, controller) driven by a closed-loop host at a queue depth
//! ([`sim`]) running fio-like jobs and workloads ([`workload`]), replaying a trace
//! ([`replay`]), or taking commands one at a time at times its caller chooses ([`online`]). Every host I/O gets a completion time, so per-second IOPS and latency
//! percentiles come out of the model ([`stats`]). Deterministic for a given seed.
//!
//! Units: time is [`time::Ns`] (u64 nanoseconds) everywhere; addresses and sizes inside the
//! simulator are 4 KiB mapping units ([`config::UNIT_BYTES`]); profile keys carry their units
//! in their names.
//!
//! ```
//! use ssdsim::{Config, Job, Pattern, Simulation};
//! let mut cfg = Config::default();
//! cfg.set("blocks_per_plane", "64").unwrap();
//! cfg.set("user_capacity_bytes", "1GiB").unwrap();
//! let mut sim = Simulation::new(&cfg, 42).unwrap();
//! let user = sim.geometry().user_units;
//! let fill = sim.run(Job::new(Pattern::SeqWrite, 32, 32, 0, user)).unwrap();
//! assert_eq!(fill.host_write_bytes, 1 << 30);
//! ```

pub mod columns;
pub mod command;
pub mod config;
pub mod device;
pub mod error;
pub mod ftl;
pub mod map_cache;
pub mod media;
pub mod mem;
pub mod online;
pub mod replay;
/// Deterministic random numbers (the shared `ssdrng` crate).
pub use ssdrng as rng;
pub mod sim;
pub mod slc;
pub mod stats;
pub mod time;
pub mod workload;
pub mod zns;

pub use error::SimError;
pub use config::{Config, ConfigError, Geometry, KeyInfo, Value, ZoneGeometry, KEYS, UNIT_BYTES};
pub use online::{OnlineState, Submitted};
pub use command::{CmdKind, Command, Job, Pattern};
pub use replay::{Mapper, Remap, ReplayReport};
pub use sim::{Progress, Simulation, MAX_SERIES_INTERVALS};
pub use stats::{DirectionReport, IntervalBatch, JobDirection, JobReport, PhaseReport, Snapshot};
pub use workload::{BlockSize, Direction, DirectionMix, Distribution, KeyError, KeyValue, Workload, WorkloadError, WorkloadJob, Zone};
pub use time::Ns;
