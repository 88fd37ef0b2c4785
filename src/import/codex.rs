//! Codex's `config.toml` (`~/.codex/config.toml`): `sandbox_mode` and the
//! `[sandbox_workspace_write]` table; the profile `profile` names may set
//! only `sandbox_mode` (Codex's profile type has no other sandbox key, so a
//! `[profiles.NAME.sandbox_workspace_write]` does nothing in Codex and is
//! refused here rather than honoured).
//!
//! Codex's `read-only` reads everywhere and reaches no network;
//! `workspace-write` also writes the working directory, `writable_roots`
//! (`~/x` in the home directory, a relative path under the config file's
//! directory), `/tmp` and `$TMPDIR` (unless excluded), with `.git`, `.codex`
//! and `.agents` inside each writable root kept read-only, and reaches the
//! network only with `network_access`; `danger-full-access` has no limit.
//! The rest of the file (model, approvals, MCP servers, hooks…) is Codex's
//! own.

use super::{Cx, Imported};
use crate::error::{Refusal, Result};
use crate::policy::{NetMode, SandboxMode};
use std::path::PathBuf;
use toml::{Table, Value};

const READS: &str = "sandbox_mode, profile, [sandbox_workspace_write] writable_roots, \
network_access, exclude_tmpdir_env_var, exclude_slash_tmp, and [profiles.NAME] sandbox_mode";

/// What Codex keeps read-only inside every writable root.
const CODEX_PROTECTED: &[&str] = &[".git", ".codex", ".agents"];

#[derive(Default)]
struct Sandbox<'a> {
    mode: Option<(&'a str, String)>,
    write: Option<(&'a Table, String)>,
}

pub(super) fn convert(cx: &Cx, imp: &mut Imported) -> Result<()> {
    let top: Table = toml::from_str(cx.text).map_err(|e| {
        let msg = crate::error::one_line(e.message());
        match e.span() {
            Some(span) => {
                let line = 1 + cx.text[..span.start.min(cx.text.len())]
                    .matches('\n')
                    .count();
                Refusal::policy(format!("{}:{line}: {msg}", cx.name))
            }
            None => Refusal::policy(format!("{}: {msg}", cx.name)),
        }
    })?;
    let mut sb = Sandbox::default();
    read_layer(cx, &top, "", &mut sb)?;
    if let Some(v) = top.get("profile") {
        let Value::String(name) = v else {
            return Err(cx.err("profile", "expected the name of a profile"));
        };
        let profile = top
            .get("profiles")
            .and_then(Value::as_table)
            .and_then(|p| p.get(name))
            .and_then(Value::as_table)
            .ok_or_else(|| cx.err("profile", format!("no [profiles.{name}] in this file")))?;
        read_layer(cx, profile, &format!("profiles.{name}."), &mut sb)?;
    }
    let mode = match &sb.mode {
        None => SandboxMode::ReadOnly,
        Some((w, key)) => SandboxMode::from_word(w)
            .ok_or_else(|| cx.err(key, crate::policy::vocab_error(w, SandboxMode::WORDS)))?,
    };
    let mode_key = sb
        .mode
        .as_ref()
        .map(|(_, k)| k.clone())
        .unwrap_or_else(|| "sandbox_mode".into());
    imp.policy.sandbox.mode = mode;
    cx.origin(imp, "sandbox.mode", &mode_key);
    imp.policy.sandbox.network.mode = match mode {
        SandboxMode::DangerFullAccess => NetMode::Full,
        _ => NetMode::None,
    };
    cx.origin(imp, "sandbox.network.mode", &mode_key);
    let applies = mode == SandboxMode::WorkspaceWrite;
    let roots = match sb.write {
        Some((t, at)) => workspace_write(cx, imp, t, &at, applies)?,
        None => Vec::new(),
    };
    if applies {
        protect(cx, imp, &roots, &mode_key);
    }
    Ok(())
}

/// Reads the sandbox keys of one layer (the file, or a profile); a later
/// layer overrides an earlier one, key by key as Codex does.
fn read_layer<'a>(cx: &Cx, t: &'a Table, at: &str, sb: &mut Sandbox<'a>) -> Result<()> {
    for k in ["default_permissions", "permissions"] {
        if t.contains_key(k) {
            return Err(cx.err(
                &format!("{at}{k}"),
                format!("Codex permission profiles are not read by dcjail; describe the sandbox with sandbox_mode (dcjail reads: {READS})"),
            ));
        }
    }
    if let Some(v) = t.get("sandbox_mode") {
        let Value::String(s) = v else {
            return Err(cx.err(&format!("{at}sandbox_mode"), "expected a string"));
        };
        sb.mode = Some((s.as_str(), format!("{at}sandbox_mode")));
    }
    if let Some(v) = t.get("sandbox_workspace_write") {
        if !at.is_empty() {
            return Err(cx.err(
                &format!("{at}sandbox_workspace_write"),
                "Codex ignores this table in a profile (a profile sets only sandbox_mode; the \
                 top-level [sandbox_workspace_write] applies): move it to the top level or \
                 remove it",
            ));
        }
        let Value::Table(w) = v else {
            return Err(cx.err(&format!("{at}sandbox_workspace_write"), "expected a table"));
        };
        sb.write = Some((w, format!("{at}sandbox_workspace_write")));
    }
    Ok(())
}

fn workspace_write(
    cx: &Cx,
    imp: &mut Imported,
    t: &Table,
    at: &str,
    applies: bool,
) -> Result<Vec<PathBuf>> {
    let key = |k: &str| format!("{at}.{k}");
    let mut roots = Vec::new();
    let mut network = false;
    let (mut no_tmpdir, mut no_tmp) = (false, false);
    for (k, v) in t {
        match (k.as_str(), v) {
            ("writable_roots", Value::Array(a)) => {
                for r in a {
                    let Value::String(s) = r else {
                        return Err(cx.err(&key(k), "expected a list of paths"));
                    };
                    roots.push(root_path(cx, s, &key(k))?);
                }
            }
            ("network_access", Value::Boolean(b)) => network = *b,
            ("exclude_tmpdir_env_var", Value::Boolean(b)) => no_tmpdir = *b,
            ("exclude_slash_tmp", Value::Boolean(b)) => no_tmp = *b,
            ("writable_roots", _) => return Err(cx.err(&key(k), "expected a list of paths")),
            ("network_access" | "exclude_tmpdir_env_var" | "exclude_slash_tmp", _) => {
                return Err(cx.err(&key(k), "expected true or false"))
            }
            _ => {
                return Err(cx.err(
                    &key(k),
                    format!("dcjail cannot honour this codex setting (it reads: {READS})"),
                ))
            }
        }
    }
    // Codex reads the table only in workspace-write.
    if !applies {
        return Ok(Vec::new());
    }
    if network {
        imp.policy.sandbox.network.mode = NetMode::Full;
        cx.origin(imp, "sandbox.network.mode", &key("network_access"));
    }
    if !roots.is_empty() {
        imp.policy.sandbox.filesystem.allow_write = roots.clone();
        cx.origin(
            imp,
            "sandbox.filesystem.allow_write",
            &key("writable_roots"),
        );
    }
    let mut excluded = Vec::new();
    if no_tmp {
        excluded.push((PathBuf::from("/tmp"), "exclude_slash_tmp"));
    }
    if no_tmpdir {
        if let Some(t) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
            excluded.push((PathBuf::from(t), "exclude_tmpdir_env_var"));
        }
    }
    for (p, k) in excluded {
        imp.policy.sandbox.filesystem.deny_write.push(p);
        cx.origin(imp, "sandbox.filesystem.deny_write", &key(k));
    }
    Ok(roots)
}

/// A writable root as Codex reads it: absolute as written, `~` and `~/x`
/// in the home directory, anything else under the config file's directory.
fn root_path(cx: &Cx, s: &str, key: &str) -> Result<PathBuf> {
    let p = std::path::Path::new(s);
    if p.is_absolute() || s == "~" || s.starts_with("~/") {
        return Ok(p.to_path_buf());
    }
    let dir = cx.path.and_then(|f| {
        let abs = if f.is_absolute() {
            f.to_path_buf()
        } else {
            std::env::current_dir().ok()?.join(f)
        };
        abs.parent().map(std::path::Path::to_path_buf)
    });
    match dir {
        Some(d) => Ok(d.join(s.strip_prefix("./").unwrap_or(s))),
        None => Err(cx.err(
            key,
            format!(
                "`{s}` is relative to the config file's directory, and this policy was not read \
                 from a file; write an absolute path"
            ),
        )),
    }
}

/// `.git`, `.codex` and `.agents` stay read-only in the workspace and in every
/// writable root, as in Codex.
fn protect(cx: &Cx, imp: &mut Imported, roots: &[PathBuf], key: &str) {
    let deny = &mut imp.policy.sandbox.filesystem.deny_write;
    for name in CODEX_PROTECTED {
        deny.push(PathBuf::from(name));
        for r in roots {
            deny.push(r.join(name));
        }
    }
    cx.origin(imp, "sandbox.filesystem.deny_write", key);
}
