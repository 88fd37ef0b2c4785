//! Claude Code's `settings.json`: its `sandbox` block, and the permission
//! rules Claude Code builds the sandbox from (`Read(…)` and `Edit(…)` deny
//! rules, `Edit(…)` allow rules, `WebFetch(domain:…)` rules).
//!
//! Claude Code's sandbox reads everywhere but the denied paths, writes the
//! current directory and the allowed paths, and reaches only the allowed
//! domains: `sandbox.network.allowedDomains` and `WebFetch(domain:…)` allow
//! rules. A bare `WebFetch` allow rule approves Claude Code's own fetch tool
//! and gives its sandbox no network. The rest of the file (hooks, model,
//! other permission rules) is Claude Code's own and is not a sandbox setting.
//!
//! Paths are read where Claude Code reads them: a permission rule's `/x` and
//! a relative `sandbox.filesystem` path are under the settings file's root
//! (see [`settings_root`]), never the home directory.

use super::{is_glob, Cx, Imported, Obj};
use crate::error::Result;
use crate::policy::{NetMode, SandboxMode};
use serde_json::Value;
use std::path::{Path, PathBuf};

const READS: &str =
    "sandbox.{enabled, autoAllowBashIfSandboxed, filesystem.{allowWrite, denyWrite, \
denyRead, allowRead}, network.{allowedDomains, deniedDomains, allowAllUnixSockets}}, and, only \
when off or empty, sandbox.{excludedCommands, allowUnsandboxedCommands, ignoreViolations, \
enableWeakerNestedSandbox, enableWeakerNetworkIsolation, network.{allowUnixSockets, \
allowLocalBinding, allowManagedDomainsOnly}}";

pub(super) fn convert(cx: &Cx, imp: &mut Imported) -> Result<()> {
    let top = cx.json_object()?;
    for k in ["filesystem", "network"] {
        if top.contains_key(k) {
            return Err(cx.err(
                k,
                "a top-level `filesystem` or `network` is an srt settings file, not Claude \
                 Code's settings.json (whose rules sit under `sandbox`); use --policy-format srt",
            ));
        }
    }
    // Claude Code's sandbox always lets the command write its working directory.
    imp.policy.sandbox.mode = SandboxMode::WorkspaceWrite;
    imp.policy.sandbox.network.mode = NetMode::None;
    cx.origin(imp, "sandbox.mode", "sandbox");
    cx.origin(
        imp,
        "sandbox.network.mode",
        "sandbox.network.allowedDomains",
    );
    let mut o = Obj::new(&top, "");
    if let Some(mut sb) = o.object(cx, "sandbox")? {
        sandbox(cx, imp, &mut sb)?;
        sb.finish(cx, READS)?;
    }
    let mut no_web = false;
    if let Some(perms) = top.get("permissions").filter(|v| !v.is_null()) {
        no_web = permissions(cx, imp, perms)?;
    }
    let n = &mut imp.policy.sandbox.network;
    if no_web {
        n.allow_domains.clear();
    } else if !n.allow_domains.is_empty() {
        n.mode = NetMode::Allowlist;
    }
    // With no domain allowed there is no network, and nothing to deny.
    if n.mode == NetMode::None {
        n.deny_domains.clear();
        imp.policy.origins.retain(|o| {
            o.field != "sandbox.network.deny_domains" && o.field != "sandbox.network.allow_domains"
        });
    }
    Ok(())
}

fn sandbox(cx: &Cx, imp: &mut Imported, sb: &mut Obj) -> Result<()> {
    if let Some(on) = sb.bool(cx, "enabled")? {
        imp.policy.sandbox.enabled = on;
        cx.origin(imp, "sandbox.enabled", &sb.key("enabled"));
    }
    imp.auto_allow = sb.bool(cx, "autoAllowBashIfSandboxed")?;
    sb.empty(
        cx,
        "excludedCommands",
        "dcjail sandboxes every command it is given; keep the excluded commands out of dcjail \
         instead, and remove the list",
    )?;
    sb.only(
        cx,
        "allowUnsandboxedCommands",
        false,
        "dcjail never runs a call outside its sandbox (dangerouslyDisableSandbox is not \
         honoured); set it to false",
    )?;
    sb.empty(
        cx,
        "ignoreViolations",
        "dcjail records every denial and hides none; remove it",
    )?;
    for k in ["enableWeakerNestedSandbox", "enableWeakerNetworkIsolation"] {
        sb.only(
            cx,
            k,
            false,
            "dcjail never weakens its sandbox; set it to false",
        )?;
    }
    if let Some(mut fs) = sb.object(cx, "filesystem")? {
        for (k, field) in [
            ("allowWrite", "allow_write"),
            ("denyWrite", "deny_write"),
            ("denyRead", "deny_read"),
            ("allowRead", "allow_read"),
        ] {
            let key = fs.key(k);
            for s in fs.strings(cx, k)? {
                if field == "allow_write" && is_glob(&s) {
                    return Err(cx.err(
                        &key,
                        format!(
                            "`{s}` is a glob; dcjail's writable roots are directories or files"
                        ),
                    ));
                }
                let grants = matches!(field, "allow_write" | "allow_read");
                let p = sandbox_path(cx, &s, grants, &key)?;
                push(cx, imp, field, p, &key);
            }
        }
        fs.finish(cx, READS)?;
    }
    if let Some(mut net) = sb.object(cx, "network")? {
        for (k, field) in [
            ("allowedDomains", "allow_domains"),
            ("deniedDomains", "deny_domains"),
        ] {
            let key = net.key(k);
            for d in net.strings(cx, k)? {
                crate::net::domain::DomainRule::parse(&d).map_err(|e| cx.err(&key, e))?;
                domain(cx, imp, field, d, &key);
            }
        }
        super::unix_sockets(cx, imp, &mut net)?;
        net.only(
            cx,
            "allowLocalBinding",
            false,
            "dcjail's sandbox cannot listen on a local port; set it to false",
        )?;
        net.only(
            cx,
            "allowManagedDomainsOnly",
            false,
            "dcjail reads one settings file, not Claude Code's managed layers; set it to false",
        )?;
        net.finish(cx, READS)?;
    }
    Ok(())
}

/// A `sandbox.filesystem` path as Claude Code reads it: `/x` and `//x` are
/// absolute, `~/x` is in the home directory, anything else is relative to
/// the settings file's root ([`settings_root`]). Without a file the root is
/// unknown: a relative path that grants is refused, one that denies is
/// taken in the workspace (the root of project settings).
fn sandbox_path(cx: &Cx, s: &str, grants: bool, key: &str) -> Result<PathBuf> {
    let s = strip_all(s);
    if let Some(rest) = s.strip_prefix("//") {
        return Ok(PathBuf::from(format!("/{rest}")));
    }
    if s.starts_with('/') || s == "~" || s.starts_with("~/") {
        return Ok(PathBuf::from(s));
    }
    let rel = s.strip_prefix("./").unwrap_or(s);
    match cx.path.and_then(settings_root) {
        Some(root) => Ok(under(&root, rel)),
        None if grants => Err(cx.err(
            key,
            format!(
                "`{s}` is relative to the settings file's directory, and this policy was not \
                 read from a file; write an absolute path"
            ),
        )),
        None => Ok(PathBuf::from(rel)),
    }
}

/// `dir/**` covers what `dir` covers: the directory and all inside it.
fn strip_all(s: &str) -> &str {
    match s.strip_suffix("/**") {
        Some(d) if !d.is_empty() => d,
        _ => s,
    }
}

fn push(cx: &Cx, imp: &mut Imported, field: &str, p: PathBuf, key: &str) {
    let fs = &mut imp.policy.sandbox.filesystem;
    let list = match field {
        "allow_write" => &mut fs.allow_write,
        "deny_write" => &mut fs.deny_write,
        "deny_read" => &mut fs.deny_read,
        _ => &mut fs.allow_read,
    };
    if !list.contains(&p) {
        list.push(p);
    }
    cx.origin(imp, &format!("sandbox.filesystem.{field}"), key);
}

fn domain(cx: &Cx, imp: &mut Imported, field: &str, d: String, key: &str) {
    let n = &mut imp.policy.sandbox.network;
    let list = if field == "allow_domains" {
        &mut n.allow_domains
    } else {
        &mut n.deny_domains
    };
    if !list.contains(&d) {
        list.push(d);
    }
    cx.origin(imp, &format!("sandbox.network.{field}"), key);
}

/// `permissions.allow` / `permissions.deny`: the rules that shape Claude
/// Code's sandbox. Other rules (Bash, Write, MCP tools…) only decide
/// Claude Code's own prompts and are not read. Says whether a bare
/// `WebFetch` deny rule turns the network off.
fn permissions(cx: &Cx, imp: &mut Imported, perms: &Value) -> Result<bool> {
    let Value::Object(m) = perms else {
        return Err(cx.err("permissions", "expected an object"));
    };
    let mut no_web = false;
    for list in ["allow", "deny"] {
        let key = format!("permissions.{list}");
        let rules = match m.get(list) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(a)) => a,
            Some(_) => return Err(cx.err(&key, "expected a list of rules")),
        };
        for r in rules {
            let Value::String(r) = r else {
                return Err(cx.err(&key, "expected a list of rules"));
            };
            no_web |= rule(cx, imp, list == "deny", r, &key)?;
        }
    }
    Ok(no_web)
}

/// One rule; `true` for a bare `WebFetch` deny, which turns the network off.
fn rule(cx: &Cx, imp: &mut Imported, deny: bool, r: &str, key: &str) -> Result<bool> {
    let (tool, spec) = match r.split_once('(') {
        Some((t, rest)) => match rest.strip_suffix(')') {
            Some(spec) => (t.trim(), Some(spec.trim())),
            None => return Err(cx.err(key, format!("rule `{r}` has no closing parenthesis"))),
        },
        None => (r.trim(), None),
    };
    let spec = spec.filter(|s| !s.is_empty());
    match (tool, deny, spec) {
        ("Read", true, None) => Err(cx.err(
            key,
            "`Read` denies every read; dcjail cannot run a command that reads nothing",
        )),
        ("Read", true, Some(p)) => {
            for path in rule_paths(cx, p, true, key)? {
                push(cx, imp, "deny_read", path, key);
            }
            Ok(false)
        }
        ("Edit", true, None) => {
            imp.policy.sandbox.mode = SandboxMode::ReadOnly;
            cx.origin(imp, "sandbox.mode", key);
            Ok(false)
        }
        ("Edit", true, Some(p)) => {
            for path in rule_paths(cx, p, true, key)? {
                push(cx, imp, "deny_write", path, key);
            }
            Ok(false)
        }
        ("Edit", false, Some(p)) => {
            let paths = rule_paths(cx, p, false, key)?;
            if let Some(g) = paths.iter().find(|q| is_glob(&q.to_string_lossy())) {
                return Err(cx.err(
                    key,
                    format!(
                        "`{r}`: `{}` is a glob; dcjail's writable roots are directories or files",
                        g.display()
                    ),
                ));
            }
            for path in paths {
                push(cx, imp, "allow_write", path, key);
            }
            Ok(false)
        }
        // A bare allow approves Claude Code's own fetch tool; its sandbox
        // takes only `domain:` rules, so the commands get no network from it.
        ("WebFetch", false, None) => Ok(false),
        // A bare deny: Claude Code's documents do not say what it does to the
        // sandbox, and the narrower reading is no network at all.
        ("WebFetch", true, None) => {
            imp.policy.sandbox.network.mode = NetMode::None;
            cx.origin(imp, "sandbox.network.mode", key);
            Ok(true)
        }
        ("WebFetch", _, Some(s)) => match s.strip_prefix("domain:") {
            Some(d) => {
                crate::net::domain::DomainRule::parse(d.trim()).map_err(|e| cx.err(key, e))?;
                let field = if deny {
                    "deny_domains"
                } else {
                    "allow_domains"
                };
                domain(cx, imp, field, d.trim().to_string(), key);
                Ok(false)
            }
            None => Err(cx.err(
                key,
                format!(
                    "`{r}`: dcjail's network rules are domains (`WebFetch(domain:example.com)`)"
                ),
            )),
        },
        // Other tools' rules are prompts for Claude Code, not sandbox rules.
        _ => Ok(false),
    }
}

/// A permission rule's path, gitignore-style as Claude Code reads it: `//x`
/// is absolute, `~/x` in the home directory, `/x` under the settings file's
/// root ([`settings_root`]), anything else relative to the workspace. For a
/// deny rule a `/x` also denies the absolute `/x`, and a name without `/`
/// matches at any depth.
fn rule_paths(cx: &Cx, p: &str, deny: bool, key: &str) -> Result<Vec<PathBuf>> {
    let p = strip_all(p);
    // `./**` (and `.`, `./`) is the directory Claude Code runs in: the
    // workspace, not a name to look for at any depth.
    if p.is_empty() || p == "." || p == "./" {
        return Ok(vec![PathBuf::from(".")]);
    }
    if let Some(rest) = p.strip_prefix("//") {
        return Ok(vec![PathBuf::from(format!("/{rest}"))]);
    }
    if p.starts_with("~/") || p == "~" {
        return Ok(vec![PathBuf::from(p)]);
    }
    if let Some(rest) = p.strip_prefix('/') {
        let mut out = Vec::new();
        match cx.path.and_then(settings_root) {
            Some(root) => out.push(under(&root, rest)),
            None if !deny => {
                return Err(cx.err(
                    key,
                    format!(
                        "`{p}` is relative to the settings file, and this policy was not read \
                         from a file; write `//{rest}` for the absolute path"
                    ),
                ))
            }
            None => {}
        }
        if deny {
            let abs = PathBuf::from(p);
            if !out.contains(&abs) {
                out.push(abs);
            }
        }
        return Ok(out);
    }
    if let Some(rel) = p.strip_prefix("./") {
        return Ok(vec![PathBuf::from(rel)]);
    }
    if deny && !p.trim_end_matches('/').contains('/') && !p.starts_with("**") {
        return Ok(vec![PathBuf::from(format!("**/{p}"))]);
    }
    Ok(vec![PathBuf::from(p)])
}

/// `rest` under `root`; `root` itself when `rest` is empty.
fn under(root: &Path, rest: &str) -> PathBuf {
    let rest = rest.trim_start_matches('/');
    if rest.is_empty() {
        root.to_path_buf()
    } else if root == Path::new(".") {
        PathBuf::from(rest)
    } else {
        root.join(rest)
    }
}

/// The directory Claude Code resolves a settings file's `/x` rules and
/// relative sandbox paths against (its `getSettingsRootPathForSource`):
/// - the user settings (`settings.json` in `$CLAUDE_CONFIG_DIR` or in
///   `~/.claude`): that directory — `~/.claude`, never the home directory;
/// - a project's `.claude/settings.json` or `.claude/settings.local.json`:
///   the project, the directory holding `.claude/`;
/// - the managed `managed-settings.json` (or a file in `managed-settings.d`):
///   the directory Claude Code runs in, the workspace (`.`);
/// - any other file (`claude --settings FILE`): the file's directory.
fn settings_root(settings: &Path) -> Option<PathBuf> {
    let abs = if settings.is_absolute() {
        settings.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(settings)
    };
    let dir = abs.parent()?;
    let name = abs.file_name()?.to_string_lossy();
    if name == "managed-settings.json" || dir.file_name().is_some_and(|n| n == "managed-settings.d")
    {
        return Some(PathBuf::from("."));
    }
    if user_config_dirs().iter().any(|d| same_dir(d, dir)) {
        return Some(dir.to_path_buf());
    }
    if dir.file_name().is_some_and(|n| n == ".claude")
        && (name == "settings.json" || name == "settings.local.json")
    {
        return dir.parent().map(Path::to_path_buf);
    }
    Some(dir.to_path_buf())
}

/// Where Claude Code keeps the user settings: `$CLAUDE_CONFIG_DIR`, and
/// `~/.claude` (both, so that either one set or not reads the narrower way).
fn user_config_dirs() -> Vec<PathBuf> {
    let set = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let mut out = Vec::new();
    if let Some(d) = set("CLAUDE_CONFIG_DIR") {
        out.push(PathBuf::from(d));
    }
    if let Some(h) = set("HOME") {
        out.push(PathBuf::from(h).join(".claude"));
    }
    out
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx<'a>(path: Option<&'a Path>) -> Cx<'a> {
        Cx {
            format: crate::policy::PolicyFormat::ClaudeCode,
            name: "settings.json",
            text: "",
            path,
        }
    }

    #[test]
    fn rule_paths_read_as_claude_code_writes_them() {
        let settings = Path::new("/proj/.claude/settings.json");
        let c = cx(Some(settings));
        let paths = |p: &str, deny: bool| {
            rule_paths(&c, p, deny, "k")
                .unwrap()
                .into_iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(paths("//etc/passwd", true), ["/etc/passwd"]);
        assert_eq!(paths("~/.aws/**", true), ["~/.aws"]);
        assert_eq!(
            paths("/src/secret", true),
            ["/proj/src/secret", "/src/secret"]
        );
        assert_eq!(paths("/build", false), ["/proj/build"]);
        assert_eq!(paths("./.env", true), [".env"]);
        assert_eq!(paths("./**", true), ["."]);
        assert_eq!(paths("./**", false), ["."]);
        assert_eq!(paths(".env", true), ["**/.env"]);
        assert_eq!(paths("config/prod.json", true), ["config/prod.json"]);
        assert_eq!(paths("out/", false), ["out/"]);
        // Without a settings file, a project-relative allow cannot be placed.
        assert!(rule_paths(&cx(None), "/build", false, "k").is_err());
        assert_eq!(
            rule_paths(&cx(None), "/src", true, "k").unwrap(),
            [PathBuf::from("/src")]
        );
    }

    #[test]
    fn sandbox_paths_are_absolute_with_one_or_two_slashes_and_else_under_the_root() {
        let settings = Path::new("/proj/.claude/settings.json");
        let c = cx(Some(settings));
        let path = |s: &str| sandbox_path(&c, s, true, "k").unwrap();
        assert_eq!(path("//tmp/build"), PathBuf::from("/tmp/build"));
        assert_eq!(path("/tmp/build/**"), PathBuf::from("/tmp/build"));
        assert_eq!(path("~/.kube"), PathBuf::from("~/.kube"));
        assert_eq!(path("out"), PathBuf::from("/proj/out"));
        assert_eq!(path("./out"), PathBuf::from("/proj/out"));
        // Without a file: a relative grant is refused, a relative deny stays
        // in the workspace.
        assert!(sandbox_path(&cx(None), "out", true, "k").is_err());
        assert_eq!(
            sandbox_path(&cx(None), "secrets", false, "k").unwrap(),
            PathBuf::from("secrets")
        );
    }

    /// Claude Code's `getSettingsRootPathForSource`: a project's settings
    /// under the project, a `--settings` file under its directory, managed
    /// settings under the directory Claude Code runs in.
    #[test]
    fn the_settings_root_is_where_claude_code_puts_it() {
        let root = |p: &str| settings_root(Path::new(p)).unwrap();
        assert_eq!(root("/proj/.claude/settings.json"), PathBuf::from("/proj"));
        assert_eq!(
            root("/proj/.claude/settings.local.json"),
            PathBuf::from("/proj")
        );
        assert_eq!(
            root("/proj/.claude/other.json"),
            PathBuf::from("/proj/.claude")
        );
        assert_eq!(root("/srv/cc/flags.json"), PathBuf::from("/srv/cc"));
        assert_eq!(
            root("/etc/claude-code/managed-settings.json"),
            PathBuf::from(".")
        );
        assert_eq!(under(Path::new("."), ""), PathBuf::from("."));
        assert_eq!(under(Path::new("."), "x/y"), PathBuf::from("x/y"));
        assert_eq!(under(Path::new("/a"), ""), PathBuf::from("/a"));
    }
}
