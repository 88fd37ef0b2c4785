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
    pub allow_unix_sockets: bool,
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
        if self.allow_unix_sockets {
            v.push("--allow-unix-sockets".into());
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
        if self.allow_unix_sockets {
            t.push_str("[sandbox.network]\nallow_unix_sockets = true\n");
        }
        t
    }
}

/// Merges the fixes of a report's denials; also returns those none allows.
pub fn change_of(report: &Value) -> (Change, Vec<Value>) {
    let mut c = Change::default();
    let mut cannot = Vec::new();
    let empty = Vec::new();
    let list = report["denials"].as_array().unwrap_or(&empty);
    for d in list {
        let fix = &d["fix"];
        if fix.is_null() {
            cannot.push(json!({
                "kind": d["kind"], "path": d["shown_as"], "rule": d["rule"],
                "matched": d["matched"], "why_not": d["why_not"],
            }));
            continue;
        }
        c.workspace_write |= fix["sandbox_mode"].as_str() == Some("workspace-write");
        c.allow_unix_sockets |= fix["allow_unix_sockets"].as_bool() == Some(true);
        push_unique(&mut c.allow_write, fix["allow_write"].as_str());
        push_unique(&mut c.mkdir_first, fix["mkdir_first"].as_str());
    }
    // A root inside another root adds nothing.
    let all = c.allow_write.clone();
    c.allow_write
        .retain(|p| !all.iter().any(|q| q != p && Path::new(p).starts_with(q)));
    (c, cannot)
}

fn push_unique(v: &mut Vec<String>, s: Option<&str>) {
    if let Some(s) = s {
        if !v.iter().any(|x| x == s) {
            v.push(s.to_string());
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
                path.display(),
                crate::policy::io_words(&e)
            );
            return crate::error::Reason::UsageError.exit_code();
        }
    };
    let report: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!(
                "dcjail: usage-error: `{}` is not a dcjail report: {e}",
                path.display()
            );
            return crate::error::Reason::UsageError.exit_code();
        }
    };
    let (c, cannot) = change_of(&report);
    let flags = c.flags();
    let out = json!({
        "denials": report["denials"].as_array().map_or(0, Vec::len),
        "flags": flags,
        "command_line": flags.join(" "),
        "mkdir_first": c.mkdir_first,
        "toml": c.toml(),
        "cannot": cannot,
    });
    println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
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
            {"fix": {"sandbox_mode": null, "allow_write": null, "mkdir_first": null, "allow_unix_sockets": true}},
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
                "--allow-unix-sockets"
            ]
        );
        assert!(c.toml().contains("allow_write = [\"~/.npm\"]"));
        assert_eq!(cannot.len(), 1);
    }
}
