//! Launch time of several commands, measured side by side: each round runs
//! every command once, in turn, so that whatever else the machine does (the
//! kernel tearing down the network namespaces of earlier runs, other load)
//! falls on all of them alike instead of on whichever ran during it. For
//! `scripts/bench.sh`:
//!
//!     launch_bench RUNS WARMUP NAME CMD ARGS... ::: NAME CMD ARGS... ...
//!
//! Prints one line per command: `NAME median_ms p25_ms p75_ms`. Every run
//! must exit 0 (a failing command would measure its refusal, not a launch):
//! a failing command ends the benchmark, unless its NAME starts with `?`
//! (an optional peer). Such a one is dropped from the rounds that follow and
//! printed as `NAME failed REASON`; the others are still measured. A NAME
//! of the form `NAME<FILE` runs its command with FILE as stdin (a hook reads
//! its input there); stdin is /dev/null otherwise.

use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!("usage: launch_bench RUNS WARMUP NAME CMD ARGS... [::: NAME CMD ARGS...]...");
        std::process::exit(2)
    };
    if args.len() < 4 {
        usage();
    }
    let (Ok(runs), Ok(warmup)) = (args[0].parse::<usize>(), args[1].parse::<usize>()) else {
        usage()
    };
    let cmds: Vec<&[String]> = args[2..].split(|a| a == ":::").collect();
    if cmds.iter().any(|c| c.len() < 2) || runs == 0 {
        usage();
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(runs); cmds.len()];
    let mut failed: Vec<Option<String>> = vec![None; cmds.len()];
    for round in 0..warmup + runs {
        for (i, c) in cmds.iter().enumerate() {
            if failed[i].is_some() {
                continue;
            }
            let stdin = match c[0].split_once('<') {
                Some((_, file)) => match std::fs::File::open(file) {
                    Ok(f) => Stdio::from(f),
                    Err(e) => {
                        eprintln!("launch_bench: {file}: {e}");
                        std::process::exit(1);
                    }
                },
                None => Stdio::null(),
            };
            let start = Instant::now();
            let status = Command::new(&c[1])
                .args(&c[2..])
                .stdin(stdin)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let ms = start.elapsed().as_secs_f64() * 1000.0;
            match status {
                Ok(s) if s.success() => {}
                other => {
                    let why = match other {
                        Ok(s) => format!("{s} in round {}", round + 1),
                        Err(e) => format!("cannot start: {e}"),
                    };
                    if c[0].starts_with('?') {
                        failed[i] = Some(why);
                        continue;
                    }
                    eprintln!("launch_bench: `{}` failed: {why}", c[1..].join(" "));
                    std::process::exit(1);
                }
            }
            if round >= warmup {
                times[i].push(ms);
            }
        }
    }
    for ((c, t), f) in cmds.iter().zip(times.iter_mut()).zip(&failed) {
        if let Some(why) = f {
            println!("{} failed {why}", name(&c[0]));
            continue;
        }
        t.sort_by(f64::total_cmp);
        let q = |f: f64| t[((t.len() - 1) as f64 * f).round() as usize];
        println!(
            "{} {:.3} {:.3} {:.3}",
            name(&c[0]),
            q(0.5),
            q(0.25),
            q(0.75)
        );
    }
}

/// The row's name: without the optional mark and the stdin file.
fn name(n: &str) -> &str {
    let n = n.trim_start_matches('?');
    n.split_once('<').map_or(n, |(n, _)| n)
}
