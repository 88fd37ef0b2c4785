//! The committed completion scripts (`completions/`) are exactly what the
//! generator makes from the clap definitions, offer every option `--help`
//! shows (read from the real binary's help, not from the generator), and
//! load and complete in their shells. zsh, fish and bash are required
//! (scripts/test.sh installs them; see `scratch::need`).

#[path = "support/scratch.rs"]
mod scratch;

use dcjail::completions::{generate, Shell};
use std::path::{Path, PathBuf};
use std::process::Command;

use scratch::exe as bin;

fn file(sh: Shell) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("completions")
        .join(sh.file_name())
}

fn committed(sh: Shell) -> String {
    std::fs::read_to_string(file(sh)).unwrap()
}

#[test]
fn committed_scripts_are_exactly_what_the_generator_makes() {
    for sh in Shell::ALL {
        assert!(
            committed(sh) == generate(sh),
            "completions/{} is out of date; regenerate with\n  cargo run --example completions -- --write completions/",
            sh.file_name()
        );
    }
}

/// (node id in the scripts, the `--help` invocation) for every parser.
const HELPS: &[(&str, &[&str])] = &[
    ("dcjail", &["--help"]),
    ("explain", &["explain", "--help"]),
    ("doctor", &["doctor", "--help"]),
    ("worktree", &["worktree", "--help"]),
    ("worktree_enter", &["worktree", "enter", "--help"]),
    ("worktree_exit", &["worktree", "exit", "--help"]),
    ("setup", &["setup", "--help"]),
    ("setup_apparmor", &["setup", "apparmor", "--help"]),
    ("hook", &["hook", "--help"]),
    ("import", &["import", "--help"]),
    ("help", &["help", "--help"]),
];

/// The long options listed in the Options section of a help text.
fn help_options(args: &[&str]) -> Vec<String> {
    let o = Command::new(bin()).args(args).output().unwrap();
    assert!(o.status.success(), "dcjail {args:?} failed");
    let text = String::from_utf8(o.stdout).unwrap();
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if !t.starts_with('-') || line.len() == t.len() {
            continue;
        }
        for word in t.split(|c: char| c.is_whitespace() || c == ',') {
            if let Some(opt) = word.strip_prefix("--") {
                if !opt.is_empty() && opt.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                    out.push(opt.to_string());
                }
            }
        }
    }
    assert!(
        out.iter().any(|o| o == "help"),
        "no options parsed from dcjail {args:?}"
    );
    out
}

/// The part of a script that belongs to one node.
fn section(sh: Shell, text: &str, node: &str) -> String {
    match sh {
        // The option list bash offers for a word starting with `-`.
        Shell::Bash => text
            .lines()
            .filter(|l| {
                l.trim_start()
                    .starts_with(&format!("{node}) _dcjail_add -W '-"))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        // The node's own function.
        Shell::Zsh => {
            let start = text
                .find(&format!("\n_dcjail__{node}() {{"))
                .unwrap_or_else(|| panic!("no zsh function for {node}"));
            let rest = &text[start..];
            let end = rest.find("\n}\n").unwrap_or(rest.len());
            rest[..end].to_string()
        }
        Shell::Fish => text
            .lines()
            .filter(|l| l.contains(&format!("-n '__dcjail_is {node}'")))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[test]
fn every_help_option_is_offered_by_each_script_in_its_place() {
    let mut missing = Vec::new();
    for sh in Shell::ALL {
        let text = committed(sh);
        for (node, args) in HELPS {
            let part = section(sh, &text, node);
            for opt in help_options(args) {
                let found = match sh {
                    Shell::Fish => part.contains(&format!(" -l {opt} ")),
                    _ => part
                        .split(|c: char| c.is_whitespace() || "'[=()*".contains(c))
                        .any(|w| w == format!("--{opt}")),
                };
                if !found {
                    missing.push(format!("{}: {node}: --{opt}", sh.file_name()));
                }
            }
        }
    }
    assert!(missing.is_empty(), "not offered: {missing:#?}");
}

#[test]
fn every_subcommand_and_vocabulary_word_is_offered() {
    use dcjail::policy::*;
    let words: Vec<&str> = [
        "explain",
        "doctor",
        "worktree",
        "enter",
        "exit",
        "hook",
        "import",
        "claude-code",
        "codex",
        "srt",
        "setup",
        "apparmor",
        "help",
    ]
    .into_iter()
    .chain(dcjail::cli::SUBCOMMANDS.iter().copied())
    .chain(Mode::WORDS.iter().copied())
    .chain(Tool::WORDS.iter().copied())
    .chain(Outcome::WORDS.iter().copied())
    .chain(Approval::WORDS.iter().copied())
    .chain(Verdict::WORDS.iter().copied())
    .chain(SandboxMode::WORDS.iter().copied())
    .chain(BackendChoice::WORDS.iter().copied())
    .chain(NetMode::WORDS.iter().copied())
    .chain(PolicyFormat::WORDS.iter().copied())
    .collect();
    for sh in Shell::ALL {
        let text = committed(sh);
        for w in &words {
            assert!(
                text.split(|c: char| c.is_whitespace() || "'()|:".contains(c))
                    .any(|x| x == *w),
                "{}: `{w}` not offered",
                sh.file_name()
            );
        }
    }
}

/// Runs the bash completion function for each line (words split on
/// spaces; a trailing space means an empty current word) and returns
/// COMPREPLY, one string per line.
fn bash_complete(lines: &[&str]) -> Vec<String> {
    let mut script = format!("source '{}' || exit 9\n", file(Shell::Bash).display());
    script.push_str(
        "t() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); _dcjail; \
         printf '%s\\n' \"$(printf '%s\\n' \"${COMPREPLY[@]}\" | sort -u | tr '\\n' ' ')\"; }\n",
    );
    for l in lines {
        let mut words: Vec<String> = l.split(' ').map(|w| format!("'{w}'")).collect();
        if l.ends_with(' ') {
            words.pop();
            words.push("''".into());
        }
        script.push_str(&format!("t {}\n", words.join(" ")));
    }
    let o = Command::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(&script)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "bash: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn bash_script_parses_and_completes_options_values_and_subcommands() {
    let o = Command::new("bash")
        .arg("-n")
        .arg(file(Shell::Bash))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cases: &[(&str, &str)] = &[
        ("dcjail --sandbox-m", "--sandbox-mode"),
        ("dcjail --sandbox-mode w", "workspace-write"),
        ("dcjail --mode = pl", "plan"),
        ("dcjail --backend ", "auto bwrap landlock seatbelt"),
        ("dcjail expl", "explain"),
        ("dcjail explain --net a", "allowlist"),
        ("dcjail worktree e", "enter exit"),
        ("dcjail worktree enter --mo", "--mode"),
        ("dcjail worktree enter --mode d", "default dontAsk"),
        ("dcjail doctor --", "--help --json"),
        ("dcjail setup ", "apparmor help"),
        ("dcjail setup apparmor --", "--help --install"),
        ("dcjail hoo", "hook"),
        ("dcjail hook ", "claude-code codex"),
        ("dcjail hook codex --policy-format c", "claude-code codex"),
        ("dcjail hook claude-code --c", "--check"),
        (
            "dcjail explain --policy-format ",
            "claude-code codex dcjail srt",
        ),
        ("dcjail import ", "claude-code codex srt"),
        // The second positional of `import` is the settings file.
        ("dcjail import srt Cargo.t", "Cargo.toml"),
        // After the command starts, dcjail's options are not offered.
        ("dcjail -- ls --mo", ""),
        ("dcjail --net none ls --sandbox", ""),
        // An option value is not mistaken for the command.
        ("dcjail --tool read --classi", "--classifier"),
        (
            "dcjail --policy /etc/host",
            "/etc/host.conf /etc/hostname /etc/hosts",
        ),
    ];
    let lines: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let got = bash_complete(&lines);
    for ((line, want), got) in cases.iter().zip(&got) {
        if line.starts_with("dcjail --policy") {
            // Which /etc/host* files exist varies; /etc/hosts always does.
            assert!(got.split(' ').any(|w| w == "/etc/hosts"), "{line}: {got}");
        } else {
            assert_eq!(got, want, "bash completion of `{line}`");
        }
    }
}

#[test]
fn zsh_script_parses_and_registers() {
    if !scratch::need("zsh") {
        return;
    }
    let home = scratch::Dir::new("completions-zsh-home");
    let f = file(Shell::Zsh);
    let o = Command::new("zsh").arg("-n").arg(&f).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("zsh")
        .arg("-f")
        .arg("-c")
        .arg(format!(
            "autoload -U compinit && compinit -u -D && source '{}' && print -r -- $_comps[dcjail]",
            f.display()
        ))
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "_dcjail");
}

#[test]
fn fish_script_parses_and_completes() {
    if !scratch::need("fish") {
        return;
    }
    let home = scratch::Dir::new("completions-fish-home");
    let f = file(Shell::Fish);
    let o = Command::new("fish").arg("-n").arg(&f).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cases: &[(&str, &[&str])] = &[
        ("dcjail --sandbox-m", &["--sandbox-mode"]),
        ("dcjail --sandbox-mode w", &["workspace-write"]),
        ("dcjail --mode=pl", &["--mode=plan"]),
        ("dcjail expl", &["explain"]),
        ("dcjail explain --backend l", &["landlock"]),
        ("dcjail worktree e", &["enter", "exit"]),
        ("dcjail worktree enter --ba", &["--base"]),
        ("dcjail doctor --j", &["--json"]),
        ("dcjail setup a", &["apparmor"]),
        ("dcjail setup apparmor --i", &["--install"]),
        ("dcjail hook --po", &["--policy", "--policy-format"]),
        ("dcjail imp", &["import"]),
        ("dcjail --tool read --classi", &["--classifier"]),
        // Inside the command, dcjail's own options are not offered.
        ("dcjail -- ls --sandbox", &[]),
        ("dcjail --net none ls --backe", &[]),
    ];
    for (line, want) in cases {
        let o = Command::new("fish")
            .arg("--no-config")
            .arg("-c")
            .arg(format!(
                "source '{}'; complete --do-complete='{line}'",
                f.display()
            ))
            .env("HOME", home.path())
            .output()
            .unwrap();
        assert!(
            o.status.success() && o.stderr.is_empty(),
            "fish: {line}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out = String::from_utf8(o.stdout).unwrap();
        let mut got: Vec<&str> = out
            .lines()
            .map(|l| l.split('\t').next().unwrap_or(""))
            .collect();
        got.sort();
        got.dedup();
        assert_eq!(&got, want, "fish completion of `{line}`");
    }
}
