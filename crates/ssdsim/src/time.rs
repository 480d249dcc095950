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

/// Converts seconds to [`Ns`], rounding to the nearest ns.
pub fn s_to_ns(s: f64) -> Ns {
    (s * NS_PER_S as f64).round() as Ns
}

/// Time to move `bytes` over a link of `bytes_per_s` [ns], rounded up.
pub fn transfer_ns(bytes: u64, bytes_per_s: f64) -> Ns {
    if bytes_per_s <= 0.0 {
        return 0;
    }
    ((bytes as f64) * (NS_PER_S as f64) / bytes_per_s).ceil() as Ns
}
