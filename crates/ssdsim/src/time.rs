//! Simulated time. One type everywhere: [`Ns`], integer nanoseconds since the start of the
//! simulation. `u64` nanoseconds cover 584 years, far beyond any test.

/// Simulated time or duration [ns].
pub type Ns = u64;

/// Nanoseconds per microsecond.
pub const NS_PER_US: Ns = 1_000;
/// Nanoseconds per millisecond.
pub const NS_PER_MS: Ns = 1_000_000;
/// Nanoseconds per second.
pub const NS_PER_S: Ns = 1_000_000_000;

/// Converts microseconds (as written in profiles) to [`Ns`], rounding to the nearest ns.
pub fn us_to_ns(us: f64) -> Ns {
    (us * NS_PER_US as f64).round() as Ns
}

/// The latest simulated time a run may reach [ns]: 2^63 ns (292 years), half the range of
/// [`Ns`], which leaves room for the completions after a phase's end.
pub const MAX_CLOCK_NS: Ns = 1 << 63;

/// Converts seconds to [`Ns`], rounding to the nearest ns.
pub fn s_to_ns(s: f64) -> Ns {
    (s * NS_PER_S as f64).round() as Ns
}

/// Seconds as [`Ns`] when they are a time [`Ns`] holds: finite, >= 0 and below 1.8e10 s (584
/// years); else None.
pub fn checked_s_to_ns(s: f64) -> Option<Ns> {
    (0.0..1.8e10).contains(&s).then(|| s_to_ns(s))
}

/// Time to move `bytes` over a link of `bytes_per_s` [ns], rounded up.
pub fn transfer_ns(bytes: u64, bytes_per_s: f64) -> Ns {
    if bytes_per_s <= 0.0 {
        return 0;
    }
    ((bytes as f64) * (NS_PER_S as f64) / bytes_per_s).ceil() as Ns
}

/// CPU time of the calling thread on the host [s] (`CLOCK_THREAD_CPUTIME_ID`, to the
/// nanosecond): for the benches and profiling drivers, a steadier figure than wall time on a
/// shared machine.
#[doc(hidden)]
pub fn thread_cpu_s() -> f64 {
    cpu_clock_s(CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time of the whole process, all its threads, on the host [s]
/// (`CLOCK_PROCESS_CPUTIME_ID`): what a simulation on two threads costs.
#[doc(hidden)]
pub fn process_cpu_s() -> f64 {
    cpu_clock_s(CLOCK_PROCESS_CPUTIME_ID)
}

/// Linux's clock ids of the CPU-time clocks (`<time.h>`).
const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;

/// `clock_gettime` of the CPU-time clock `clock` [s].
fn cpu_clock_s(clock: i32) -> f64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the struct we own.
    unsafe { clock_gettime(clock, &mut ts) };
    ts.sec as f64 + ts.nsec as f64 * 1e-9
}
