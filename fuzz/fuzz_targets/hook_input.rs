#![no_main]
//! libFuzzer entry point; the checks live in ../checks.rs, shared with
//! tests/fuzz_props.rs so every corpus file is replayed by `cargo test`.

#[allow(dead_code)] // each target uses one of the checks
#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::hook_input(data));
