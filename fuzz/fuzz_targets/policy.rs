#![no_main]
//! libFuzzer entry point; the checks live in ../checks.rs (the fuzz
//! crate's library), shared with tests/fuzz_props.rs so every corpus file
//! is replayed by `cargo test`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::policy(data));
