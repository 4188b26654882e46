//! The `submission` target: [`xiangqi_fuzz::checks::submission`] on each input. Its seeds also run as
//! an ordinary test of the main workspace (README.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| xiangqi_fuzz::checks::submission::check(data));
