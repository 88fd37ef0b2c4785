//! Cost of the launch-time glob walk (`src/walk.rs`): builds a tree of N
//! files (default 100 000) in a temporary directory, expands `**/.env` over
//! it several times, and prints one line with the timings. For
//! `scripts/bench.sh`:
//!
//!     cargo run --release --example walk_bench -- [FILES] [RUNS] [KEEP_DIR]
//!
//! With KEEP_DIR (a path that does not exist yet) the tree is built there
//! and left in place, so the launch cost with a glob can then be measured
//! on it (`cd KEEP_DIR && hyperfine 'dcjail --deny-read "**/.env" -- true'`);
//! the caller removes it.
//!
//! The tree: 10 × 10 × 10 directories, the files spread evenly over the
//! leaves, a `.env` in every tenth leaf (so matches sit at depth 4).

use std::path::PathBuf;
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5).max(1);
    let keep = args.next().map(PathBuf::from);
    if keep.as_ref().is_some_and(|k| k.exists()) {
        eprintln!("walk_bench: KEEP_DIR must not exist yet");
        std::process::exit(1);
    }
    let root = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("dcjail-walk-bench-{}", std::process::id()))
    });
    let cleanup = |root: &std::path::Path| {
        if keep.is_none() {
            let _ = std::fs::remove_dir_all(root);
        }
    };
    if let Err(e) = build(&root, files) {
        eprintln!(
            "walk_bench: cannot build the tree in {}: {e}",
            root.display()
        );
        cleanup(&root);
        std::process::exit(1);
    }
    let glob = match dcjail::walk::compile("**/.env") {
        Ok(g) => g,
        Err(e) => {
            eprintln!("walk_bench: {e}");
            std::process::exit(1);
        }
    };
    let roots = vec![root.clone()];

    let t = Instant::now();
    let none = dcjail::walk::expand(&[], &roots, dcjail::walk::DEFAULT_LIMIT);
    let no_glob = t.elapsed();

    let mut times: Vec<Duration> = Vec::new();
    let mut matches = 0;
    for _ in 0..runs {
        let t = Instant::now();
        match dcjail::walk::expand(&[&glob], &roots, dcjail::walk::DEFAULT_LIMIT) {
            Ok(v) => matches = v.len(),
            Err(e) => {
                eprintln!("walk_bench: {e}");
                cleanup(&root);
                std::process::exit(1);
            }
        }
        times.push(t.elapsed());
    }
    cleanup(&root);
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "walk_bench files={files} runs={runs} matches={matches} best_ms={:.1} median_ms={:.1} worst_ms={:.1} no_glob_us={:.1} no_glob_paths={}",
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
        no_glob.as_secs_f64() * 1e6,
        none.map(|v| v.len()).unwrap_or(usize::MAX),
    );
}

fn build(root: &std::path::Path, files: usize) -> std::io::Result<()> {
    let leaves: Vec<PathBuf> = (0..1000)
        .map(|i| root.join(format!("d{}/e{}/f{}", i / 100, (i / 10) % 10, i % 10)))
        .collect();
    for (i, leaf) in leaves.iter().enumerate() {
        std::fs::create_dir_all(leaf)?;
        if i % 10 == 0 {
            std::fs::write(leaf.join(".env"), b"SECRET=1\n")?;
        }
    }
    for n in 0..files {
        std::fs::write(leaves[n % leaves.len()].join(format!("file{n}.txt")), b"")?;
    }
    Ok(())
}
