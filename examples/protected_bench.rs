//! Cost of the protected table and git's files (`src/protected.rs`,
//! `src/gitfiles.rs`) per launch: builds the workspace-write plan of the
//! current directory (with this process's HOME, PATH and git config) many
//! times, and prints the median time of one build, of its protected-path
//! part alone, and how many protected paths and grants it found.
//!
//!     cargo run --release --example protected_bench -- [RUNS]
//!
//! Run it in a git checkout to see the audit of a real repository.

use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000)
        .max(1);
    let mut policy = dcjail::policy::Policy::default();
    policy.sandbox.mode = dcjail::policy::SandboxMode::WorkspaceWrite;
    let facts = match dcjail::plan::Facts::gather() {
        Ok(f) => f,
        Err(r) => {
            eprintln!("protected_bench: {}", r.line());
            std::process::exit(1);
        }
    };
    let env = facts.host_env();
    let build = || dcjail::plan::build_with(&policy, vec!["true".into()], &facts, &env);
    let plan = match build() {
        Ok(p) => p,
        Err(r) => {
            eprintln!("protected_bench: {}", r.line());
            std::process::exit(1);
        }
    };
    let roots = plan.fs.writable.clone();
    let home = facts.home.clone();
    let mut whole = Vec::with_capacity(runs);
    let mut part = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let _ = build();
        whole.push(t.elapsed());
        let t = Instant::now();
        let _ = dcjail::protected::collect(&roots, home.as_deref(), &env, true);
        part.push(t.elapsed());
    }
    println!(
        "plan::build {:.1} µs, protected::collect {:.1} µs (medians of {runs}); {} protected paths, {} writable roots",
        median(whole).as_secs_f64() * 1e6,
        median(part).as_secs_f64() * 1e6,
        plan.fs.protected.len(),
        plan.fs.writable.len()
    );
}
