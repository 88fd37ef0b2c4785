//! Writes the fuzz corpus's seeds of the second stage's program
//! (`fuzz/corpus/stub_program/seed-*` and `reject-*`) with dcjail's own
//! encoder (`fuzz/seeds.rs`), in the format the stub reads today. Other
//! files there (inputs a fuzz run found) are left alone.
//! `tests/fuzz_props.rs` fails when the committed seeds differ.
//!
//! Usage: `cargo run --example stub_corpus` (from the checkout, on x86_64:
//! the seeds carry the seccomp filters compiled for it).

#[path = "../fuzz/seeds.rs"]
mod seeds;

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/stub_program");
    let fail = |what: String| -> ! {
        eprintln!("stub_corpus: {what}");
        std::process::exit(1)
    };
    let seeds = seeds::stub_program().unwrap_or_else(|e| fail(e));
    for s in &seeds {
        let parsed = dcjail::inside::stub_format::Program::parse(&s.bytes).is_ok();
        if parsed != s.accepted {
            fail(format!(
                "{}: the parser does not agree (accepted: {parsed})",
                s.name
            ));
        }
    }
    let old = std::fs::read_dir(&dir).unwrap_or_else(|e| fail(format!("{}: {e}", dir.display())));
    for entry in old.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("seed-") || name.starts_with("reject-") {
            if let Err(e) = std::fs::remove_file(entry.path()) {
                fail(format!("{name}: {e}"));
            }
        }
    }
    for s in &seeds {
        if let Err(e) = std::fs::write(dir.join(&s.name), &s.bytes) {
            fail(format!("{}: {e}", s.name));
        }
    }
    println!(
        "stub_corpus: wrote {} seeds into {}",
        seeds.len(),
        dir.display()
    );
}
