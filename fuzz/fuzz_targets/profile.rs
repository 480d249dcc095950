//! Profile text (`key = value` lines) -> Config::set -> validate (-> a tiny simulation):
//! see `ssdlab_fuzz::check_profile` for what is a crash.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ssdlab_fuzz::check_profile(data));
