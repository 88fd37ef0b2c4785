//! `dcjail explain --denials REPORT`: the smallest policy change that would
//! have let a reported run through, as options and as a TOML fragment, and
//! the denials no option allows (with why). It reads the report's `fix`
//! objects only: the judgement was made when the run was.

use serde_json::{json, Value};
use std::path::Path;

#[derive(Default, Debug, PartialEq, Eq)]
pub struct Change {
    pub workspace_write: bool,
    pub allow_write: Vec<String>,
    pub mkdir_first: Vec<String>,
    pub allow_unix_sockets: Vec<String>,
    /// What the options open beyond what they seem to (the report's
    /// `warning` of each fix taken): text, shown, never applied.
    pub warnings: Vec<String>,
}

impl Change {
    pub fn flags(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.workspace_write {
            v.extend(["--sandbox-mode".to_string(), "workspace-write".to_string()]);
        }
        for p in &self.allow_write {
            v.extend(["--allow-write".to_string(), p.clone()]);
        }
        for p in &self.allow_unix_sockets {
            v.extend(["--allow-unix-socket".to_string(), p.clone()]);
        }
        v
    }

    pub fn toml(&self) -> String {
        let mut t = String::new();
        if self.workspace_write {
            t.push_str("[sandbox]\nmode = \"workspace-write\"\n");
        }
        if !self.allow_write.is_empty() {
            let list: Vec<String> = self
                .allow_write
                .iter()
                .map(|p| Value::String(p.clone()).to_string())
                .collect();
            t.push_str(&format!(
                "[sandbox.filesystem]\nallow_write = [{}]\n",
                list.join(", ")
            ));
        }
        if !self.allow_unix_sockets.is_empty() {
            let list: Vec<String> = self
                .allow_unix_sockets
                .iter()
                .map(|p| Value::String(p.clone()).to_string())
                .collect();
            t.push_str(&format!(
                "[sandbox.network]\nallow_unix_sockets = [{}]\n",
                list.join(", ")
            ));
        }
        t
    }
}

/// One word of a shell line, read back by the shell as exactly `s` (or,
/// for `~/REST`, as the home directory and REST, which is what dcjail
/// makes of `~/REST` itself): as it is when every byte is plain, else
/// single-quoted (`crate::shellword::quote`).
pub fn shell_word(s: &str) -> String {
    use crate::shellword::{plain, quote};
    if plain(s) {
        return s.to_string();
    }
    match s.strip_prefix("~/") {
        Some(rest) if plain(rest) => s.to_string(),
        Some(rest) if !rest.is_empty() => format!("~/{}", quote(rest)),
        _ => quote(s),
    }
}

/// Words joined into one line a shell reads back as the same words.
pub fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Merges the fixes of a report's denials; also returns those none allows.
/// A report is a file anyone could have written: a fix is taken only as
/// the shapes dcjail writes (workspace-write, one showable directory
/// under `~/` or absolute, one showable socket path); any other goes to
/// `cannot`, never into the change.
pub fn change_of(report: &Value) -> (Change, Vec<Value>) {
    let mut c = Change::default();
    let mut cannot = Vec::new();
    let empty = Vec::new();
    let list = report["denials"].as_array().unwrap_or(&empty);
    for d in list {
        let fix = &d["fix"];
        let why_not = if fix.is_null() {
            d["why_not"].clone()
        } else {
            match parse_fix(fix) {
                Some((ww, aw, mk, us)) => {
                    c.workspace_write |= ww;
                    push_unique(&mut c.allow_unix_sockets, us);
                    push_unique(&mut c.allow_write, aw);
                    push_unique(&mut c.mkdir_first, mk);
                    let w = d["warning"].as_str().map(crate::error::one_line);
                    push_unique(&mut c.warnings, w);
                    continue;
                }
                None => Value::from(NOT_DCJAILS),
            }
        };
        cannot.push(json!({
            "kind": d["kind"], "path": d["shown_as"], "rule": d["rule"],
            "matched": d["matched"], "why_not": why_not,
        }));
    }
    // A root inside another root adds nothing.
    let all = c.allow_write.clone();
    c.allow_write
        .retain(|p| !all.iter().any(|q| q != p && Path::new(p).starts_with(q)));
    (c, cannot)
}

/// Why a fix of the report is not passed on.
const NOT_DCJAILS: &str = "the report's fix is not one dcjail writes (another mode, a setting, or a path that is not one showable directory), so it is not suggested";

type Parsed = (bool, Option<String>, Option<String>, Option<String>);

/// The fields of one fix, when it is in the shape dcjail writes.
fn parse_fix(fix: &Value) -> Option<Parsed> {
    let o = fix.as_object()?;
    for k in o.keys() {
        if !matches!(
            k.as_str(),
            "sandbox_mode" | "allow_write" | "mkdir_first" | "allow_unix_sockets"
        ) {
            return None;
        }
    }
    let ww = match &o.get("sandbox_mode") {
        None | Some(Value::Null) => false,
        Some(v) if v.as_str() == Some("workspace-write") => true,
        Some(_) => return None,
    };
    let us = match &o.get("allow_unix_sockets") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => None,
        Some(v) => Some(one_dir(v.as_str()?, true)?),
    };
    let aw = match &o.get("allow_write") {
        None | Some(Value::Null) => None,
        Some(v) => Some(one_dir(v.as_str()?, true)?),
    };
    let mk = match &o.get("mkdir_first") {
        None | Some(Value::Null) => None,
        Some(Value::Array(argv)) => {
            let words: Vec<&str> = argv.iter().map(Value::as_str).collect::<Option<_>>()?;
            match words.as_slice() {
                ["mkdir", "-p", "--", dir] => Some(one_dir(dir, false)?),
                _ => return None,
            }
        }
        Some(_) => return None,
    };
    Some((ww, aw, mk, us))
}

/// `p` when it names one directory as dcjail suggests them: absolute (or
/// `~/…` where allowed), showable, no `.` or `..` step, not `/` nor `~`.
fn one_dir(p: &str, tilde: bool) -> Option<String> {
    let rest = match p.strip_prefix("~/") {
        Some(r) if tilde => r,
        Some(_) => return None,
        None => p.strip_prefix('/')?,
    };
    let steps_ok = rest
        .split('/')
        .all(|s| !s.is_empty() && s != "." && s != "..");
    (steps_ok && crate::error::showable(p)).then(|| p.to_string())
}

fn push_unique(v: &mut Vec<String>, s: Option<String>) {
    if let Some(s) = s {
        if !v.contains(&s) {
            v.push(s);
        }
    }
}

/// Reads REPORT and prints the change as JSON on stdout; the exit status.
pub fn explain(path: &Path) -> i32 {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "dcjail: usage-error: cannot read report `{}`: {}",
                crate::error::escaped(&path.display().to_string(), crate::error::FIELD_MAX),
                crate::policy::io_words(&e)
            );
            return crate::error::Reason::UsageError.exit_code();
        }
    };
    let report: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!(
                "dcjail: usage-error: `{}` is not a dcjail report: {}",
                crate::error::escaped(&path.display().to_string(), crate::error::FIELD_MAX),
                crate::error::one_line(&e.to_string())
            );
            return crate::error::Reason::UsageError.exit_code();
        }
    };
    let (c, cannot) = change_of(&report);
    let flags = c.flags();
    let mkdir_first = if c.mkdir_first.is_empty() {
        Vec::new()
    } else {
        super::classify::mkdir_argv(c.mkdir_first.iter().map(String::as_str))
    };
    let out = json!({
        "denials": report["denials"].as_array().map_or(0, Vec::len),
        "flags": flags,
        "command_line": shell_line(&flags),
        "mkdir_first": mkdir_first,
        "toml": c.toml(),
        "warnings": c.warnings,
        "cannot": cannot,
    });
    let text = serde_json::to_string_pretty(&out).unwrap_or_default();
    crate::error::print_out(&(crate::error::json_for_terminal(&text) + "\n"));
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixes_merge_into_one_change_and_nested_roots_collapse() {
        let r = json!({"denials": [
            {"fix": {"sandbox_mode": "workspace-write", "allow_write": "~/.npm", "mkdir_first": null, "allow_unix_sockets": false}},
            {"fix": {"sandbox_mode": null, "allow_write": "~/.npm/x", "mkdir_first": null, "allow_unix_sockets": false}},
            {"fix": {"sandbox_mode": null, "allow_write": null, "mkdir_first": null, "allow_unix_sockets": "~/.gnupg/S.gpg-agent"}},
            {"fix": null, "kind": "write", "rule": "protected", "why_not": "because"},
        ]});
        let (c, cannot) = change_of(&r);
        assert_eq!(
            c.flags(),
            [
                "--sandbox-mode",
                "workspace-write",
                "--allow-write",
                "~/.npm",
                "--allow-unix-socket",
                "~/.gnupg/S.gpg-agent"
            ]
        );
        assert!(c.toml().contains("allow_write = [\"~/.npm\"]"));
        assert!(c
            .toml()
            .contains("allow_unix_sockets = [\"~/.gnupg/S.gpg-agent\"]"));
        assert_eq!(cannot.len(), 1);
    }

    #[test]
    fn warnings_are_passed_on_as_one_escaped_line_and_only_with_a_fix_taken() {
        let r = json!({"denials": [
            {"fix": {"allow_write": "/ok"}, "warning": "opens\u{1b}[31m more\nline"},
            {"fix": {"allow_write": "/"}, "warning": "of a fix refused"},
            {"fix": {"allow_write": "/ok2"}, "warning": 7},
        ]});
        let (c, cannot) = change_of(&r);
        assert_eq!(c.flags(), ["--allow-write", "/ok", "--allow-write", "/ok2"]);
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(!c.warnings[0].contains('\u{1b}') && !c.warnings[0].contains('\n'));
        assert!(c.warnings[0].starts_with("opens"));
        assert_eq!(cannot.len(), 1);
    }

    #[test]
    fn a_crafted_report_widens_nothing_but_one_showable_directory() {
        let r = json!({"denials": [
            {"fix": {"sandbox_mode": "danger-full-access", "allow_write": null}},
            {"fix": {"allow_write": "/", "sandbox_mode": null}},
            {"fix": {"allow_write": "~/../etc"}},
            {"fix": {"allow_write": "relative"}},
            {"fix": {"allow_write": "/x\u{202e}y"}},
            {"fix": {"allow_write": "/x\ny"}},
            {"fix": {"allow_write": "/ok", "net": "full"}},
            {"fix": {"mkdir_first": ["sh", "-c", "touch pwned"]}},
            {"fix": {"mkdir_first": "~/x"}},
            {"fix": {"allow_unix_sockets": true}},
            {"fix": {"allow_unix_sockets": "/run/../x"}},
            {"fix": {"allow_write": "~/a b; touch pwned", "mkdir_first": ["mkdir", "-p", "--", "/h/a b; touch pwned"]}},
        ]});
        let (c, cannot) = change_of(&r);
        assert_eq!(c.flags(), ["--allow-write", "~/a b; touch pwned"]);
        assert_eq!(c.mkdir_first, ["/h/a b; touch pwned"]);
        assert_eq!(cannot.len(), 11, "{cannot:#?}");
    }

    #[test]
    fn a_shell_line_reads_back_as_the_same_words() {
        let words: Vec<String> = [
            "--allow-write",
            "~/.npm --sandbox-mode danger-full-access --net full",
            "~/$(touch ${HOME}${IFS}pwned)",
            "/a'b/`id`",
            "~/.npm",
            "/plain/path",
            "~",
            "~/",
        ]
        .map(String::from)
        .into();
        let line = shell_line(&words);
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\n' {line}"))
            .env("HOME", "/h")
            .output()
            .unwrap();
        let got: Vec<String> = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        let want: Vec<String> = words
            .iter()
            .map(|w| match w.strip_prefix("~/") {
                Some(r) if !r.is_empty() => format!("/h/{r}"),
                _ => w.clone(),
            })
            .collect();
        assert_eq!(got, want, "{line}");
    }
}
