//! Prints dcjail's completion script for a shell, generated from its clap
//! definitions (`src/completions.rs`):
//!
//!     cargo run --example completions -- bash|zsh|fish
//!     cargo run --example completions -- --write completions/
//!
//! `--write DIR` (re)writes all three files as they are committed.

use dcjail::completions::{generate, Shell};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["--write", dir] => {
            let mut code = 0;
            for sh in Shell::ALL {
                let path = std::path::Path::new(dir).join(sh.file_name());
                if let Err(e) = std::fs::write(&path, generate(sh)) {
                    eprintln!("completions: {}: {e}", path.display());
                    code = 1;
                }
            }
            code
        }
        [word] => match Shell::from_word(word) {
            Some(sh) => {
                print!("{}", generate(sh));
                0
            }
            None => usage(),
        },
        _ => usage(),
    };
    std::process::exit(code);
}

fn usage() -> i32 {
    eprintln!("usage: completions bash|zsh|fish | --write DIR");
    2
}
