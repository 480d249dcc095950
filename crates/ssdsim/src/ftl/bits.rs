//! Compact bitmaps and fast fixed-divisor division, the FTL's hot-path helpers.

use crate::mem::big_vec;

/// Asks the CPU to bring the cache line holding `p` closer (a hint; never faults).
#[inline(always)]
pub(crate) fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch(p as *const i8, _MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Stores `v` at `p` without reading its cache line first: a non-temporal store on x86-64
/// (its line goes to memory through a write-combining buffer and leaves the caches), a plain
/// store elsewhere. For updates of a table too big for the caches whose line nothing reads
/// soon: the core does not hold a miss buffer for each. Such stores are ordered with this
/// thread's later stores only by [`fence_streamed`].
#[inline(always)]
pub(super) fn store_streamed(p: &mut u32, v: u32) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_stream_si32(p as *mut u32 as *mut i32, v as i32);
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        *p = v;
    }
}

/// Whether this CPU gains from [`store_streamed`] stores into a table too big for its caches:
/// AMD's. Active GC on the default profile, both ways alternated in one process: 1.10x to
/// 1.5x at 256 GB on a 2-core EPYC guest (32 MiB of L3); on a 2-core Xeon guest (260 MiB of
/// L3) a loss at every size, 0.63x at 8 GB to 0.88x at 256 GB. Two machines cannot tell the
/// cache from the core: that L3 holds even a 256 GB drive's map, and an Intel core's
/// streamed stores use the fill buffers its misses need, where a Zen core has write-combining
/// buffers of their own. The vendor is the choice both fit. False off x86-64.
pub fn cpu_streams_map() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AMD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AMD.get_or_init(|| {
            // Leaf 0: the vendor string, in ebx, edx, ecx.
            let r = std::arch::x86_64::__cpuid(0);
            [r.ebx, r.edx, r.ecx].iter().flat_map(|w| w.to_le_bytes()).eq(*b"AuthenticAMD")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Makes this thread's [`store_streamed`] stores visible before any later store (`sfence`),
/// so that another thread that takes the data over sees them.
#[inline]
pub(super) fn fence_streamed() {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_sfence();
    }
}

/// Exact division of a u32 by a divisor fixed at construction, without a `div` instruction
/// (20-40 cycles) on the hot paths that turn slots into blocks and blocks into planes:
/// a shift for powers of two, else Lemire's multiply-high, `n / d == (ceil(2^64 / d) * n) >> 64`
/// for every 32-bit `n` and `d` (Lemire, Kaser & Kurz, "Faster remainder by direct
/// computation", 2019, Theorem 1 with N = 32, F = 64).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastDiv {
    /// ceil(2^64 / d); 0 when `d` is a power of two (use `shift`).
    magic: u64,
    shift: u32,
}

impl FastDiv {
    pub(crate) fn new(d: usize) -> Self {
        assert!(d > 0 && d <= u32::MAX as usize, "divisor {d} out of range");
        if d.is_power_of_two() {
            FastDiv { magic: 0, shift: d.trailing_zeros() }
        } else {
            FastDiv { magic: u64::MAX / d as u64 + 1, shift: 0 }
        }
    }

    #[inline(always)]
    pub(crate) fn div(self, n: u32) -> u32 {
        if self.magic == 0 {
            n >> self.shift
        } else {
            ((self.magic as u128 * n as u128) >> 64) as u32
        }
    }
}

/// One bit per physical slot, set while the slot holds current data.
///
/// P2L entries are meaningful only where the bit is set. Overwriting or trimming a unit
/// clears its old slot's bit instead of writing the old slot's P2L entry: the bitmap is 32
/// times smaller than P2L (1 MiB for a 32 GB drive, so it stays in cache), which saves a
/// random P2L cache miss on every host write. GC finds a victim's valid units by scanning
/// its bits a word (64 slots) at a time.
pub(super) struct ValidBits(pub(super) Vec<u64>);

impl ValidBits {
    pub(super) fn new(slots: usize) -> Self {
        ValidBits(big_vec(slots.div_ceil(64), 0))
    }

    #[inline]
    pub(super) fn get(&self, s: usize) -> bool {
        self.0[s >> 6] >> (s & 63) & 1 != 0
    }

    #[inline]
    pub(super) fn set(&mut self, s: usize) {
        self.0[s >> 6] |= 1 << (s & 63);
    }

    #[inline]
    pub(super) fn clear(&mut self, s: usize) {
        self.0[s >> 6] &= !(1 << (s & 63));
    }

    /// The first set bit in `from..end`, or `end` if there is none.
    #[inline]
    pub(super) fn next_set(&self, from: usize, end: usize) -> usize {
        let mut i = from;
        while i < end {
            let w = self.0[i >> 6] >> (i & 63);
            if w != 0 {
                return (i + w.trailing_zeros() as usize).min(end);
            }
            i = (i | 63) + 1;
        }
        end
    }

    /// Calls `f` with every set bit in `from..end`, in increasing order, a word at a time.
    #[inline]
    pub(super) fn for_each_set(&self, from: usize, end: usize, mut f: impl FnMut(usize)) {
        let mut i = from;
        while i < end {
            let lo = i & 63;
            let n = (64 - lo).min(end - i);
            let mask = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << lo };
            let mut w = self.0[i >> 6] & mask;
            let word_start = i - lo;
            while w != 0 {
                f(word_start + w.trailing_zeros() as usize);
                w &= w - 1;
            }
            i += n;
        }
    }

    /// The bits `from..end` of the word holding `from` (`end` in that word or at its end),
    /// in place: bit `i` is slot `(from & !63) + i`.
    #[inline(always)]
    pub(super) fn word_from(&self, from: usize, end: usize) -> u64 {
        debug_assert!(from < end && end <= (from | 63) + 1);
        let w = self.0[from >> 6] & (u64::MAX << (from & 63));
        if end & 63 == 0 {
            w
        } else {
            w & ((1u64 << (end & 63)) - 1)
        }
    }

    /// The set bits in `from..end`, in increasing order.
    #[inline]
    pub(super) fn iter_set(&self, from: usize, end: usize) -> SetBits<'_> {
        let word = if from < end { self.0[from >> 6] & (u64::MAX << (from & 63)) } else { 0 };
        SetBits { words: &self.0, word, word_start: from & !63, end }
    }

    /// Sets (`on`) or clears every bit in `from..end`.
    pub(super) fn fill(&mut self, from: usize, end: usize, on: bool) {
        let mut i = from;
        while i < end {
            let lo = i & 63;
            let n = (64 - lo).min(end - i);
            let mask = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << lo };
            let w = &mut self.0[i >> 6];
            *w = if on { *w | mask } else { *w & !mask };
            i += n;
        }
    }

    /// Set bits in `from..end`.
    pub(super) fn count(&self, from: usize, end: usize) -> usize {
        (from..end).filter(|&s| self.get(s)).count()
    }

    /// Address of the word holding bit `s`, for prefetching.
    #[inline]
    pub(super) fn word_ptr(&self, s: usize) -> *const u64 {
        self.0.as_ptr().wrapping_add(s >> 6)
    }

    pub(super) fn capacity_bytes(&self) -> usize {
        self.0.capacity() * 8
    }
}

/// Iterator over set bits (see [`ValidBits::iter_set`]).
pub(super) struct SetBits<'a> {
    words: &'a [u64],
    /// Bits of the current word not yet returned.
    word: u64,
    word_start: usize,
    end: usize,
}

impl Iterator for SetBits<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.word == 0 {
            self.word_start += 64;
            if self.word_start >= self.end {
                return None;
            }
            self.word = self.words[self.word_start >> 6];
        }
        let s = self.word_start + self.word.trailing_zeros() as usize;
        self.word &= self.word - 1;
        (s < self.end).then_some(s)
    }
}

/// The P2L ranges of two different blocks `a` and `b`, both mutable.
#[inline(always)]
pub(super) fn two_blocks_mut(p2l: &mut [u32], a: usize, b: usize, spb: usize) -> (&mut [u32], &mut [u32]) {
    assert_ne!(a, b);
    if a < b {
        let (lo, hi) = p2l.split_at_mut(b * spb);
        (&mut lo[a * spb..(a + 1) * spb], &mut hi[..spb])
    } else {
        let (lo, hi) = p2l.split_at_mut(a * spb);
        (&mut hi[..spb], &mut lo[b * spb..(b + 1) * spb])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn fast_division_is_exact() {
        let mut rng = Rng::new(9);
        let mut divisors: Vec<usize> = (1..=1100).collect();
        divisors.extend([1536, 3072, 4095, 4096, 6144, 65535, 65536, 100_003, 1 << 20, (1 << 31) - 1, 1 << 31, u32::MAX as usize]);
        for d in divisors {
            let f = FastDiv::new(d);
            let mut ns: Vec<u32> = vec![0, 1, u32::MAX, u32::MAX - 1, d as u32, (d - 1) as u32];
            ns.extend((0..200).map(|_| rng.below(1 << 32) as u32));
            let q = u32::MAX / d as u32;
            ns.extend([q * d as u32, (q * d as u32).wrapping_sub(1), (q * d as u32).saturating_add(1)]);
            for n in ns {
                assert_eq!(f.div(n), n / d as u32, "{n} / {d}");
            }
        }
    }

    #[test]
    fn valid_bits_ranges_and_iteration() {
        let mut rng = Rng::new(4);
        let n = 1000;
        let mut bits = ValidBits::new(n);
        let mut model = vec![false; n];
        for _ in 0..2000 {
            let a = rng.below(n as u64) as usize;
            let b = (a + rng.below(150) as usize).min(n);
            match rng.below(4) {
                0 => {
                    bits.fill(a, b, true);
                    model[a..b].iter_mut().for_each(|x| *x = true);
                }
                1 => {
                    bits.fill(a, b, false);
                    model[a..b].iter_mut().for_each(|x| *x = false);
                }
                2 => {
                    bits.set(a);
                    model[a] = true;
                }
                _ => {
                    bits.clear(a);
                    model[a] = false;
                }
            }
            let expect: Vec<usize> = (a..b).filter(|&s| model[s]).collect();
            assert_eq!(bits.iter_set(a, b).collect::<Vec<_>>(), expect);
            let mut seen = Vec::new();
            bits.for_each_set(a, b, |s| seen.push(s));
            assert_eq!(seen, expect);
            assert_eq!(bits.next_set(a, b), expect.first().copied().unwrap_or(b));
            assert_eq!(bits.count(a, b), expect.len());
            assert!((0..n).all(|s| bits.get(s) == model[s]));
        }
    }
}
