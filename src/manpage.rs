//! The man page's OPTIONS entries, written from the clap definitions of
//! every parser (a run, `explain`, `doctor`, `worktree`, `hook`, `import`,
//! `setup`, `help`): each visible option once, in `--help`'s order, with
//! its value name, its default (when clap has one) and its text.
//!
//! The text is the option's doc comment: its first paragraph is the line
//! `--help` prints, the paragraphs after it are for the man page only
//! (`usage::parse` strips them before `--help` prints). In that text
//! `` `word` `` is bold and `*word*` italic, as the page prints them.
//!
//! `examples/man_tables.rs` writes the entries between the marks
//! `OPTIONS_BEGIN` and `OPTIONS_END` of `man/dcjail.1`, and
//! `tests/cli.rs` fails when the page holds anything else there. It only
//! renders text: it reads neither the environment nor the filesystem.

use crate::cli::{DoctorCli, ExplainCli, HelpCli, RunCli};
use clap::{Arg, ArgAction, Command, CommandFactory};

/// The marks around the generated entries of the OPTIONS section.
pub const OPTIONS_BEGIN: &str =
    ".\\\" The entries below are written from the flag definitions (cargo run --example man_tables).\n";
pub const OPTIONS_END: &str = ".\\\" End of the entries written from the flag definitions.\n";

/// One entry: an option, the parsers that define it with this text.
struct Entry<'a> {
    arg: &'a Arg,
    /// The parsers' names (empty for a run).
    scopes: Vec<String>,
    text: String,
}

/// Every parser, by the words that reach it (`""` for a run), its nested
/// subcommands as their own parsers.
fn parsers() -> Vec<(String, Command)> {
    fn add(out: &mut Vec<(String, Command)>, name: &str, mut cmd: Command) {
        cmd.build();
        let subs: Vec<Command> = cmd.get_subcommands().cloned().collect();
        out.push((name.to_string(), cmd));
        for sub in subs.into_iter().filter(|s| !s.is_hide_set()) {
            let name = format!("{name} {}", sub.get_name());
            add(out, &name, sub);
        }
    }
    let mut out = Vec::new();
    add(&mut out, "", RunCli::command());
    add(&mut out, "explain", ExplainCli::command());
    add(&mut out, "doctor", DoctorCli::command());
    add(&mut out, "worktree", crate::worktree::command());
    add(&mut out, "hook", crate::hook::command());
    add(&mut out, "import", crate::import::command());
    add(&mut out, "setup", crate::setup::command());
    add(&mut out, "help", HelpCli::command());
    out
}

/// `-h`/`--help` and `-V`/`--version`: the same in every parser, listed last.
fn is_builtin(arg: &Arg) -> bool {
    matches!(
        arg.get_action(),
        ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
    )
}

/// The option's text: clap's for the built-in ones, else its doc comment.
fn text_of(arg: &Arg) -> String {
    match arg.get_action() {
        ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong => {
            "Print help and exit 0.".to_string()
        }
        ArgAction::Version => "Print the version and exit 0.".to_string(),
        _ => arg
            .get_long_help()
            .or_else(|| arg.get_help())
            .map(|s| s.to_string())
            .unwrap_or_default(),
    }
}

/// The entries, in order: a run's options, then each subcommand's that a
/// run lacks (or defines with another text), then the built-in ones.
fn entries(parsers: &[(String, Command)]) -> Vec<Entry<'_>> {
    let mut out: Vec<Entry> = Vec::new();
    for builtin in [false, true] {
        for (name, cmd) in parsers {
            let mut args: Vec<&Arg> = cmd
                .get_arguments()
                .filter(|a| !a.is_hide_set() && !a.is_positional() && is_builtin(a) == builtin)
                .collect();
            args.sort_by_key(|a| a.get_display_order());
            for arg in args {
                let text = text_of(arg);
                let same = |e: &&mut Entry| {
                    e.arg.get_long() == arg.get_long()
                        && e.arg.get_short() == arg.get_short()
                        && e.text == text
                };
                match out.iter_mut().find(|e| same(e)) {
                    Some(e) => e.scopes.push(name.clone()),
                    None => out.push(Entry {
                        arg,
                        scopes: vec![name.clone()],
                        text,
                    }),
                }
            }
        }
    }
    out
}

/// Text as roff: backslashes and hyphens escaped, `` `bold` ``, `*italic*`,
/// an em dash as roff's own.
fn roff(s: &str) -> String {
    let mut out = String::new();
    let (mut bold, mut italic) = (false, false);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            '\u{2014}' => out.push_str("\\(em"),
            '`' => {
                out.push_str(if bold { "\\fR" } else { "\\fB" });
                bold = !bold;
            }
            '*' => {
                out.push_str(if italic { "\\fR" } else { "\\fI" });
                italic = !italic;
            }
            c => out.push(c),
        }
    }
    out
}

/// A line of text that roff must not read as a request.
fn text_line(s: &str) -> String {
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}\n")
    } else {
        format!("{s}\n")
    }
}

/// The line naming the option: `.B`, `.BI` with its value, `.BR` with its
/// short form.
fn head(arg: &Arg) -> String {
    let long = arg.get_long().map(|l| roff(&format!("--{l}")));
    let short = arg.get_short().map(|s| roff(&format!("-{s}")));
    let value = arg
        .get_action()
        .takes_values()
        .then(|| {
            arg.get_value_names()
                .and_then(|v| v.first())
                .map(|s| s.to_string())
                .unwrap_or_else(|| arg.get_id().to_string().to_uppercase())
        })
        .map(|v| roff(&v));
    match (short, long, value) {
        (Some(s), Some(l), None) => format!(".BR {s} \", \" {l}\n"),
        (Some(s), Some(l), Some(v)) => format!(".BR {s} \", \" {l} \" {v}\"\n"),
        (s, l, Some(v)) => format!(".BI {} \" {v}\"\n", l.or(s).unwrap_or_default()),
        (s, l, None) => format!(".B {}\n", l.or(s).unwrap_or_default()),
    }
}

/// "With \fBdoctor\fR and \fBworktree exit\fR: " for an option a run lacks.
fn scope_prefix(scopes: &[String]) -> String {
    if scopes.iter().any(String::is_empty) {
        return String::new();
    }
    let names: Vec<String> = scopes.iter().map(|s| format!("\\fB{s}\\fR")).collect();
    let list = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    };
    format!("With {list}: ")
}

/// The body: the first paragraph as a sentence (with the scope before it),
/// the others after it, one roff line each (they fill as one paragraph);
/// then the aliases and the default.
fn body(e: &Entry) -> String {
    let mut paras: Vec<String> = e
        .text
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .collect();
    if let Some(first) = paras.first_mut() {
        if !first.ends_with(['.', '!', '?']) {
            first.push('.');
        }
        let prefix = scope_prefix(&e.scopes);
        if !prefix.is_empty() {
            // "With hook: the settings file" reads on; "JSON" stays.
            let mut cs = first.chars();
            if let (Some(c), Some(next)) = (cs.next(), cs.next()) {
                if c.is_uppercase() && !next.is_uppercase() {
                    *first = format!("{}{}", c.to_lowercase(), &first[c.len_utf8()..]);
                }
            }
        }
        *first = format!("{prefix}{}", roff(first));
    }
    for p in paras.iter_mut().skip(1) {
        *p = roff(p);
    }
    let aliases: Vec<String> = e
        .arg
        .get_visible_aliases()
        .unwrap_or_default()
        .into_iter()
        .map(|a| format!("\\fB{}\\fR", roff(&format!("--{a}"))))
        .collect();
    if !aliases.is_empty() {
        paras.push(format!("Also spelled {}.", aliases.join(", ")));
    }
    let defaults: Vec<String> = e
        .arg
        .get_default_values()
        .iter()
        .map(|v| roff(&v.to_string_lossy()))
        .collect();
    if e.arg.get_action().takes_values() && !defaults.is_empty() {
        paras.push(format!("Default: \\fB{}\\fR.", defaults.join(" ")));
    }
    paras.iter().map(|p| text_line(p)).collect()
}

/// The OPTIONS entries in roff, as the page holds them between the marks.
pub fn options() -> String {
    let parsers = parsers();
    let mut out = String::new();
    for e in entries(&parsers) {
        out.push_str(".TP\n");
        out.push_str(&head(e.arg));
        out.push_str(&body(&e));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_escapes_and_marks_up() {
        assert_eq!(
            roff("`--net none` is *FILE*\\ \u{2014} ok"),
            "\\fB\\-\\-net none\\fR is \\fIFILE\\fR\\e \\(em ok"
        );
        assert_eq!(text_line(".x"), "\\&.x\n");
    }

    #[test]
    fn every_visible_option_has_an_entry_with_text() {
        let parsers = parsers();
        let list = entries(&parsers);
        for (name, cmd) in &parsers {
            for a in cmd
                .get_arguments()
                .filter(|a| !a.is_hide_set() && !a.is_positional())
            {
                assert!(
                    list.iter()
                        .any(|e| e.arg.get_long() == a.get_long() && e.scopes.contains(name)),
                    "{name}: {:?}",
                    a.get_long()
                );
            }
        }
        for e in &list {
            assert!(e.text.len() > 5, "{:?} has no text", e.arg.get_long());
        }
        // Hidden ones stay out (`help`'s NESTED is hidden).
        assert!(!options().contains("NESTED"));
    }

    #[test]
    fn scopes_read_as_a_list() {
        assert_eq!(scope_prefix(&["".into(), "hook".into()]), "");
        assert_eq!(
            scope_prefix(&["doctor".into(), "worktree enter".into(), "setup".into()]),
            "With \\fBdoctor\\fR, \\fBworktree enter\\fR and \\fBsetup\\fR: "
        );
    }
}
