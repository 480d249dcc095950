//! Where the emulated drive's data lives: nowhere (reads return zeros), in memory, or in a
//! sparse file. Every store is shared by the FUSE threads; offsets and lengths are bytes
//! inside the drive's capacity.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::Mutex;

/// Bytes per chunk of the memory store: chunks are allocated on first write, so memory
/// grows with the data written, not with the capacity.
const CHUNK_BYTES: u64 = 64 * 1024;

/// What the drive keeps of the data written to it.
pub enum Store {
    /// Nothing: writes are dropped, reads return zeros (timing only).
    None,
    /// Chunks of [`CHUNK_BYTES`], allocated on first write; `None` reads as zeros.
    Memory(Vec<Mutex<Option<Box<[u8]>>>>),
    /// A sparse file of the drive's capacity; TRIMs punch holes in it.
    File(File),
}

impl Store {
    /// A memory store for `capacity_bytes`.
    pub fn memory(capacity_bytes: u64) -> Store {
        let chunks = capacity_bytes.div_ceil(CHUNK_BYTES) as usize;
        Store::Memory((0..chunks).map(|_| Mutex::new(None)).collect())
    }

    /// A file store: `path` is created (it must not exist) sparse, `capacity_bytes` long.
    pub fn file(path: &Path, capacity_bytes: u64) -> io::Result<Store> {
        let f = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(path)?;
        f.set_len(capacity_bytes)?;
        Ok(Store::File(f))
    }

    /// Fills `buf` with the data at `offset`.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        match self {
            Store::None => buf.fill(0),
            Store::Memory(chunks) => {
                for (c, range, part) in pieces(offset, buf.len()) {
                    let dst = &mut buf[part];
                    match chunks[c].lock().expect("a memory chunk's lock").as_deref() {
                        Some(data) => dst.copy_from_slice(&data[range]),
                        None => dst.fill(0),
                    }
                }
            }
            Store::File(f) => f.read_exact_at(buf, offset)?,
        }
        Ok(())
    }

    /// Stores `data` at `offset`.
    pub fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        match self {
            Store::None => {}
            Store::Memory(chunks) => {
                for (c, range, part) in pieces(offset, data.len()) {
                    let mut chunk = chunks[c].lock().expect("a memory chunk's lock");
                    let stored = chunk.get_or_insert_with(|| vec![0u8; CHUNK_BYTES as usize].into_boxed_slice());
                    stored[range].copy_from_slice(&data[part]);
                }
            }
            Store::File(f) => f.write_all_at(data, offset)?,
        }
        Ok(())
    }

    /// Makes `len` bytes at `offset` read as zeros, freeing what they held where it can.
    pub fn zero(&self, offset: u64, len: u64) -> io::Result<()> {
        match self {
            Store::None => {}
            Store::Memory(chunks) => {
                for (c, range, _) in pieces(offset, len as usize) {
                    let mut chunk = chunks[c].lock().expect("a memory chunk's lock");
                    if range.len() as u64 == CHUNK_BYTES {
                        *chunk = None;
                    } else if let Some(stored) = chunk.as_deref_mut() {
                        stored[range].fill(0);
                    }
                }
            }
            Store::File(f) => {
                let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
                // SAFETY: fallocate on an open file descriptor the store owns.
                if unsafe { libc::fallocate(f.as_raw_fd(), mode, offset as libc::off_t, len as libc::off_t) } != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
}

/// The chunks `offset..offset + len` touches: (chunk index, byte range inside the chunk, byte
/// range inside the caller's buffer).
fn pieces(offset: u64, len: usize) -> impl Iterator<Item = (usize, std::ops::Range<usize>, std::ops::Range<usize>)> {
    let end = offset + len as u64;
    let mut at = offset;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let c = at / CHUNK_BYTES;
        let within = (at % CHUNK_BYTES) as usize;
        let n = ((CHUNK_BYTES - at % CHUNK_BYTES).min(end - at)) as usize;
        let part = (at - offset) as usize;
        at += n as u64;
        Some((c as usize, within..within + n, part..part + n))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Data written across chunk boundaries reads back; zeroed ranges read as zeros, whole
    /// chunks are freed, partial ones cleared.
    #[test]
    fn memory_store_keeps_what_was_written() {
        let s = Store::memory(4 * CHUNK_BYTES);
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8 + 1).collect();
        let at = CHUNK_BYTES - 1000;
        s.write(at, &data).unwrap();
        let mut back = vec![0u8; data.len()];
        s.read(at, &mut back).unwrap();
        assert_eq!(back, data);
        // From inside chunk 0 to inside chunk 2: chunk 1 whole.
        let zeroed = CHUNK_BYTES as usize + 2000;
        s.zero(at + 10, zeroed as u64).unwrap();
        s.read(at, &mut back).unwrap();
        assert_eq!(&back[..10], &data[..10]);
        assert!(back[10..10 + zeroed].iter().all(|&b| b == 0));
        assert_eq!(&back[10 + zeroed..], &data[10 + zeroed..]);
        let Store::Memory(chunks) = &s else { unreachable!() };
        assert!(chunks[1].lock().unwrap().is_none(), "a chunk zeroed whole is freed");
        assert!(chunks[3].lock().unwrap().is_none(), "a chunk never written holds nothing");
    }

    #[test]
    fn file_store_punches_holes() {
        let dir = std::env::temp_dir().join(format!("ssdemu-store-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let s = Store::file(&dir, 1 << 20).unwrap();
        assert!(Store::file(&dir, 1 << 20).is_err(), "an existing file is not taken");
        s.write(4096, &[7u8; 8192]).unwrap();
        s.zero(8192, 4096).unwrap();
        let mut back = vec![1u8; 12288];
        s.read(0, &mut back).unwrap();
        assert!(back[..4096].iter().all(|&b| b == 0));
        assert!(back[4096..8192].iter().all(|&b| b == 7));
        assert!(back[8192..].iter().all(|&b| b == 0));
        std::fs::remove_file(&dir).unwrap();
    }
}
