//! The blkparse trace reader on any bytes: see `ssdlab_fuzz::check_trace` for what is a crash.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ssdlab_fuzz::check_trace(ssdtrace::Format::Blkparse, data));
