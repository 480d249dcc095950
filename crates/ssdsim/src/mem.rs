//! Large state arrays (L2P, P2L) backed by transparent huge pages where the OS allows.
//!
//! The simulator's mapping tables are hundreds of MB to GB and are accessed at random;
//! with 4 KiB pages nearly every access misses the TLB as well as the cache. On Linux,
//! `madvise(MADV_HUGEPAGE)` before the first touch lets the kernel back them with 2 MiB
//! pages (when `/sys/kernel/mm/transparent_hugepage/enabled` is `always` or `madvise`).
//! Elsewhere, or if the call fails, this is a plain `vec![value; len]`.

/// A `Vec` of `len` copies of `value`, hinted to use huge pages when large.
pub fn big_vec<T: Copy>(len: usize, value: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(len);
    let bytes = len * std::mem::size_of::<T>();
    if bytes >= HUGE_MIN_BYTES {
        advise_huge(v.as_mut_ptr() as *mut u8, bytes);
    }
    v.resize(len, value);
    v
}

/// `big_vec(len_a, value)` and `big_vec(len_b, value)`, written on two threads when both are
/// large: the first touch of GBs of memory (the kernel zeroing pages, then the fill) is most
/// of the time a big drive takes to build.
pub fn big_vec_pair<T: Copy + Send + Sync>(len_a: usize, len_b: usize, value: T) -> (Vec<T>, Vec<T>) {
    let large = |len: usize| len * std::mem::size_of::<T>() >= PARALLEL_MIN_BYTES;
    if !(large(len_a) && large(len_b)) {
        return (big_vec(len_a, value), big_vec(len_b, value));
    }
    std::thread::scope(|s| {
        let b = s.spawn(|| big_vec(len_b, value));
        (big_vec(len_a, value), b.join().expect("building a table does not panic"))
    })
}

/// Tables smaller than this are built on the calling thread [bytes].
const PARALLEL_MIN_BYTES: usize = 64 << 20;

const HUGE_MIN_BYTES: usize = 8 << 20;

#[cfg(target_os = "linux")]
fn advise_huge(ptr: *mut u8, bytes: usize) {
    const MADV_HUGEPAGE: i32 = 14;
    extern "C" {
        fn madvise(addr: *mut core::ffi::c_void, length: usize, advice: i32) -> i32;
    }
    // madvise needs a page-aligned start: round up to 4 KiB and shrink the length.
    let start = (ptr as usize + 4095) & !4095;
    let end = ptr as usize + bytes;
    if end > start {
        // SAFETY: the range lies inside our own allocation; the call only sets a hint.
        unsafe {
            madvise(start as *mut core::ffi::c_void, end - start, MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_ptr: *mut u8, _bytes: usize) {}

#[cfg(test)]
mod tests {
    #[test]
    fn big_vec_pair_is_filled_on_either_path() {
        for len in [1000, 20 << 20] {
            let (a, b) = super::big_vec_pair(len, len + 3, 9u32);
            assert_eq!((a.len(), b.len()), (len, len + 3));
            assert!(a.iter().chain(&b).all(|&x| x == 9));
        }
    }

    #[test]
    fn big_vec_is_filled() {
        let v = super::big_vec(3 << 20, 7u32);
        assert_eq!(v.len(), 3 << 20);
        assert!(v.iter().all(|&x| x == 7));
    }
}
