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
//! the caller removes it. A KEEP_DIR that an earlier run built is walked
//! again as it is (for profiling).
//!
//! Each round times the walk dcjail does (`median_ms`, on up to
//! `available_parallelism` threads) and the same walk on the calling thread
//! alone (`seq_median_ms`, what it does when no thread can be started),
//! alternating which goes first; both must find the same paths.
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
    let reuse = keep.as_ref().is_some_and(|k| k.join(MARK).exists());
    if keep.as_ref().is_some_and(|k| k.exists()) && !reuse {
        eprintln!("walk_bench: KEEP_DIR must not exist yet, or be a tree walk_bench built");
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
    if let Err(e) = if reuse { Ok(()) } else { build(&root, files) } {
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
    let mut seq: Vec<Duration> = Vec::new();
    let mut matches = 0;
    let mut same = true;
    for i in 0..runs {
        let mut got = [None, None];
        for k in [i % 2, 1 - i % 2] {
            let t = Instant::now();
            let r = if k == 0 {
                dcjail::walk::expand(&[&glob], &roots, dcjail::walk::DEFAULT_LIMIT)
            } else {
                dcjail::walk::expand_on(&[&glob], &roots, dcjail::walk::DEFAULT_LIMIT, 1)
                    .map(|e| e.paths)
            };
            let took = t.elapsed();
            match r {
                Ok(v) => got[k] = Some(v),
                Err(e) => {
                    eprintln!("walk_bench: {e}");
                    cleanup(&root);
                    std::process::exit(1);
                }
            }
            if k == 0 {
                times.push(took)
            } else {
                seq.push(took)
            }
        }
        matches = got[0].as_ref().map_or(0, Vec::len);
        same &= got[0] == got[1];
    }
    if !reuse {
        cleanup(&root);
    }
    times.sort();
    seq.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "walk_bench files={files} runs={runs} matches={matches} best_ms={:.1} median_ms={:.1} worst_ms={:.1} seq_median_ms={:.1} same_as_seq={same} threads={} no_glob_us={:.1} no_glob_paths={}",
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
        ms(seq[seq.len() / 2]),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        no_glob.as_secs_f64() * 1e6,
        none.map(|v| v.len()).unwrap_or(usize::MAX),
    );
    if !same {
        std::process::exit(1);
    }
}

/// Left at the top of a built tree, so a KEEP_DIR can be walked again.
const MARK: &str = ".walk-bench-tree";

fn build(root: &std::path::Path, files: usize) -> std::io::Result<()> {
    let leaves: Vec<PathBuf> = (0..1000)
        .map(|i| root.join(format!("d{}/e{}/f{}", i / 100, (i / 10) % 10, i % 10)))
        .collect();
    std::fs::create_dir_all(root)?;
    std::fs::write(root.join(MARK), b"")?;
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
