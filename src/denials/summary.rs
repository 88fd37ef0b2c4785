//! The denials of one run, bounded: the first `LISTED` distinct ones (by
//! kind, rule and path) with a count each, and counts of the rest, so that
//! a loop cannot fill a disk. Their JSON (the report's `denials`, one
//! `--events` line) and the one-line summary for a terminal.

use super::advice::{shell_line, shell_word};
use super::classify::{display, Denial, UNSHOWABLE};
use serde_json::{json, Value};
use std::path::Path;

/// Distinct denials listed in full.
pub const LISTED: usize = 64;

#[derive(Default)]
pub struct Log {
    pub listed: Vec<(Denial, u64)>,
    /// Denials not listed (beyond `LISTED` distinct ones).
    pub unlisted: u64,
    /// The calls that look like a nested dcjail's launch checks
    /// (`Denial::launch_check`), kept apart from the command's attempts:
    /// in the report's `launch_checks`, not in `denials`, the totals or
    /// the summary line.
    pub checks: Vec<(Denial, u64)>,
    /// Launch checks not listed.
    pub checks_unlisted: u64,
    /// Records the broker could not send (the pipe was full).
    pub dropped: u64,
}

/// One entry of the log. Launch checks are told apart by program too, so
/// that a command making the same call as a nested dcjail's check is
/// listed under its own name.
fn same(a: &Denial, b: &Denial) -> bool {
    a.kind == b.kind
        && a.rule == b.rule
        && a.resolved == b.resolved
        && a.op == b.op
        && (!a.launch_check || a.program == b.program)
}

impl Log {
    pub fn add(&mut self, d: Denial) {
        let (list, unlisted) = if d.launch_check {
            (&mut self.checks, &mut self.checks_unlisted)
        } else {
            (&mut self.listed, &mut self.unlisted)
        };
        if let Some((_, n)) = list.iter_mut().find(|(e, _)| same(e, &d)) {
            *n += 1;
        } else if list.len() < LISTED {
            list.push((d, 1));
        } else {
            *unlisted += 1;
        }
    }

    /// How many calls looked like a nested dcjail's launch checks.
    pub fn checks_total(&self) -> u64 {
        self.checks.iter().map(|(_, n)| n).sum::<u64>() + self.checks_unlisted
    }

    /// The report's `launch_checks`.
    pub fn checks_json(&self, home: Option<&Path>) -> Value {
        Value::Array(
            self.checks
                .iter()
                .map(|(d, n)| denial_json(d, *n, home))
                .collect(),
        )
    }

    pub fn total(&self) -> u64 {
        self.listed.iter().map(|(_, n)| n).sum::<u64>() + self.unlisted
    }

    pub fn json(&self, home: Option<&Path>) -> Value {
        Value::Array(
            self.listed
                .iter()
                .map(|(d, n)| denial_json(d, *n, home))
                .collect(),
        )
    }

    /// One line for a terminal, or `None` when nothing was denied.
    pub fn line(&self, home: Option<&Path>) -> Option<String> {
        if self.total() == 0 && self.dropped == 0 {
            return None;
        }
        let mut groups: Vec<(String, u64, Vec<String>)> = Vec::new();
        for (d, n) in &self.listed {
            let head = group_name(d);
            let item = item_text(d, home);
            match groups.iter_mut().find(|g| g.0 == head) {
                Some(g) => {
                    g.1 += n;
                    if !g.2.contains(&item) {
                        g.2.push(item);
                    }
                }
                None => groups.push((head, *n, vec![item])),
            }
        }
        let parts: Vec<String> = groups
            .iter()
            .map(|(head, n, items)| {
                let shown: Vec<&str> = items.iter().take(3).map(String::as_str).collect();
                let more = if items.len() > 3 { ", …" } else { "" };
                let what = if *n == 1 { "call" } else { "calls" };
                format!("{n} {what} blocked {head}: {}{more}", shown.join(", "))
            })
            .collect();
        let mut line = parts.join("; ");
        if self.unlisted > 0 {
            line.push_str(&format!("; {} more not listed", self.unlisted));
        }
        if self.dropped > 0 {
            line.push_str(&format!(
                "; {} not recorded (too many at once)",
                self.dropped
            ));
        }
        // Every name in it is escaped and cut already; the whole is bounded
        // too, by the one function every printer uses.
        Some(format!("dcjail: {}", crate::error::one_line(&line)))
    }
}

fn group_name(d: &Denial) -> String {
    match d.rule {
        "outside the writable roots" => "outside the writable roots".into(),
        "home directory" => "in the home directory (read-only but for allow_write)".into(),
        "protected" => "on protected paths".into(),
        "deny_write" => "by deny_write".into(),
        "unix sockets off" => "(unix sockets)".into(),
        "unix socket not named" => "(unix socket not named)".into(),
        "unix datagram" => "(unix datagram socket)".into(),
        "network" => "(network sockets)".into(),
        "setuid" => "(setuid or setgid bits)".into(),
        "device" => "(device metadata)".into(),
        "link between roots" => "(hard links between writable roots)".into(),
        other => format!("({other})"),
    }
}

fn item_text(d: &Denial, home: Option<&Path>) -> String {
    use crate::error::{escaped, FIELD_MAX};
    let what = match &d.resolved {
        Some(p) => escaped(&display(p, home), FIELD_MAX),
        None => d.op.to_string(),
    };
    let how = match (&d.fix, &d.matched) {
        (Some(f), _) => {
            // The words quoted as a shell reads them back: the line can be
            // typed as it is shown.
            let mut s = shell_line(&f.flags());
            if f.allow_unix_socket.is_some() {
                s.push_str(", which lets the command drive that server");
            } else if f.warning.is_some() {
                s.push_str(", which opens more: see the report's warning");
            }
            if let Some(m) = &f.mkdir {
                let dir = display(Path::new(m), home);
                s = format!("mkdir -p -- {}, then {s}", shell_word(&dir));
            }
            escaped(&s, FIELD_MAX)
        }
        (None, Some(m)) if d.rule == "protected" => {
            format!(
                "protected: {}; see the report's why_not",
                escaped(m, FIELD_MAX)
            )
        }
        (None, Some(m)) => format!("{} {}", d.rule, escaped(m, FIELD_MAX)),
        (None, None) if d.why_not.as_deref() == Some(UNSHOWABLE) => {
            "a name that cannot be shown safely: no option is suggested".into()
        }
        (None, None) => "no option allows it".into(),
    };
    format!("{what} ({how})")
}

/// What a fix opens beyond what it seems to, if anything.
pub fn warning(f: &super::classify::Fix) -> Option<String> {
    match (&f.warning, &f.allow_unix_socket) {
        (Some(w), _) => Some(w.clone()),
        (None, Some(_)) => Some(SOCKET_WARNING.into()),
        (None, None) => None,
    }
}

/// Said beside every suggestion to name a unix socket.
pub const SOCKET_WARNING: &str = "naming a socket lets the command drive the program behind it with your rights: a terminal multiplexer (tmux, screen) runs commands outside the sandbox, docker.sock starts containers, an agent signs as you; name it only when the run needs it";

pub fn denial_json(d: &Denial, count: u64, home: Option<&Path>) -> Value {
    let fix = d.fix.as_ref().map(|f| {
        json!({
            "sandbox_mode": f.workspace_write.then_some("workspace-write"),
            "allow_write": f.allow_write,
            "mkdir_first": f.mkdir_argv(),
            "allow_unix_sockets": f.allow_unix_socket,
        })
    });
    json!({
        "kind": d.kind,
        "op": d.op,
        "path": d.path,
        "resolved": d.resolved.as_ref().map(|p| p.display().to_string()),
        "shown_as": d.resolved.as_ref().map(|p| display(p, home)),
        "pid": d.pid,
        "program": d.program,
        "errno": d.errno,
        "seen_by": d.seen_by,
        "rule": d.rule,
        "matched": d.matched,
        "allow": d.fix.as_ref().map(|f| shell_line(&f.flags())),
        "fix": fix,
        "why_not": d.why_not,
        "warning": d.fix.as_ref().and_then(warning),
        "count": count,
        "launch_check": d.launch_check,
    })
}
