//! Parsing a command line with clap the way every dcjail parser does:
//! `--help`/`--version` print and succeed; anything wrong is one refusal
//! line naming what is wrong and ending with the usage. Shared by `cli` and
//! the subcommands that own their flags (`worktree`, `hook`, `import`,
//! `setup`), so none of them reaches back up to `cli`.

use crate::error::Refusal;
use clap::{Command, Parser};
use std::ffi::OsString;

/// Parses with clap; help/version print and exit 0, errors are one line
/// naming what is wrong and ending with the usage, 125.
pub fn parse<T: Parser>(args: impl IntoIterator<Item = OsString>) -> Result<T, i32> {
    // `--help` prints each option's first paragraph; the rest of its doc
    // comment is the man page's (`manpage`).
    let cmd = help_only(T::command());
    let parsed = cmd
        .try_get_matches_from(args)
        .and_then(|mut m| T::from_arg_matches_mut(&mut m).map_err(|e| e.format(&mut T::command())));
    match parsed {
        Ok(v) => Ok(v),
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    Err(crate::error::SUCCESS)
                }
                _ => {
                    let r = Refusal::usage(usage_message(&e, &T::command()));
                    eprintln!("{}", r.line());
                    Err(r.exit_code())
                }
            }
        }
    }
}

/// A command as `--help` prints it: each option's first paragraph only,
/// here and in its subcommands (the paragraphs after it are the man
/// page's OPTIONS text, which `manpage` writes).
pub fn help_only(cmd: Command) -> Command {
    cmd.mut_args(|a| a.long_help(None::<&str>))
        .mut_subcommands(help_only)
}

/// A clap error as one line: what is missing or wrong (clap's own words,
/// a missing argument by its name, a close option for a mistyped one),
/// then the command's usage. Refusals are one line, so the usage rides on
/// the same line instead of clap's paragraphs.
fn usage_message(e: &clap::Error, cmd: &clap::Command) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let what = match (e.kind(), e.get(ContextKind::InvalidArg)) {
        (ErrorKind::MissingRequiredArgument, Some(ContextValue::Strings(v))) => {
            let names: Vec<String> = v
                .iter()
                .map(|a| a.trim_matches(|c| "<>[]. ".contains(c)).to_string())
                .collect();
            format!(
                "{} {} missing",
                names.join(" and "),
                if names.len() > 1 { "are" } else { "is" }
            )
        }
        (ErrorKind::UnknownArgument, Some(ContextValue::String(arg))) => {
            let text = clap_words(e, false);
            match closest_option(arg, cmd) {
                Some(s) => format!("{text} (did you mean `{s}`?)"),
                None => clap_words(e, true),
            }
        }
        _ => clap_words(e, true),
    };
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("Usage:")
        .trim();
    format!("{what}; usage: {usage}")
}

/// The lines of clap's message before its usage, joined; with `tips`, its
/// hints too (`tip: …`, the list of possible values).
fn clap_words(e: &clap::Error, tips: bool) -> String {
    let text = e.render().to_string();
    let words: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:"))
        .map(|l| l.trim().trim_start_matches("error: "))
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
        .filter(|l| tips || !l.starts_with("tip:"))
        .collect();
    if words.is_empty() {
        "invalid command line".to_string()
    } else {
        words.join(" ")
    }
}

/// The option of `cmd` a mistyped `--name` most likely meant: the nearest
/// by edit distance, when it is close (a third of the length, at least one
/// edit), or the only option the word starts.
fn closest_option(typed: &str, cmd: &clap::Command) -> Option<String> {
    let name = typed.strip_prefix("--")?;
    let name = name.split('=').next().unwrap_or(name);
    let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    let prefixed: Vec<&&str> = longs.iter().filter(|l| l.starts_with(name)).collect();
    if let ([only], false) = (prefixed.as_slice(), name.is_empty()) {
        return Some(format!("--{only}"));
    }
    let limit = (name.chars().count() / 3).max(1);
    longs
        .iter()
        .map(|l| (edit_distance(name, l), *l))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, l)| format!("--{l}"))
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}
