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
    fn big_vec_is_filled() {
        let v = super::big_vec(3 << 20, 7u32);
        assert_eq!(v.len(), 3 << 20);
        assert!(v.iter().all(|&x| x == 7));
    }
}
