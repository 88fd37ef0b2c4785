//! `dcjail hook AGENT --install` and the configuration half of `--check`:
//! the agent's settings written the way the agent reads them, and read back
//! to say plainly when the agent would not run dcjail.
//!
//! Claude Code: `env.CLAUDE_CODE_SHELL_PREFIX` names dcjail (every Bash call
//! then runs under it, after Claude Code's own permission rules decided on
//! the original command), the policy goes in `env.DCJAIL_POLICY`, and the
//! PreToolUse hook runs dcjail in exec form (`command` + `args`), which
//! Claude Code starts without the prefix.
//!
//! Codex: a `[[hooks.PreToolUse]]` group for `Bash|apply_patch` and its
//! trust entry, `[hooks.state."<config>:pre_tool_use:<group>:<handler>"]
//! trusted_hash`, computed as Codex computes it: the SHA-256 of the
//! key-sorted compact JSON of the event name, the matcher and the handler
//! (`type`, `command`, `timeout` 600 unless set, `async`). Codex skips a hook
//! without it, silently. Verified on the versions in `CODEX_VERIFIED`.

use super::{Agent, HookCli};
use crate::shellword::quote;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Codex versions whose hook trust this module was checked against.
pub const CODEX_VERIFIED: &[&str] = &["0.171.0"];
/// Claude Code versions the shell prefix and the hooks were checked on.
pub const CLAUDE_VERIFIED: &[&str] = &["2.1.197"];

/// The tools the hooks answer.
pub const CLAUDE_MATCHER: &str = "Bash|Read|Write|Edit|MultiEdit|NotebookEdit|Grep|Glob";
pub const CODEX_MATCHER: &str = "Bash|apply_patch";

/// Codex's default hook timeout, in its hash when the config sets none.
const CODEX_TIMEOUT: i64 = 600;

/// The settings or config file `--install` and `--check` work on.
pub fn target(cli: &HookCli) -> Result<PathBuf, String> {
    if let Some(f) = &cli.settings {
        return absolute(f);
    }
    let home = || {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
    };
    let (var, dir, file) = match cli.agent {
        Agent::ClaudeCode => ("CLAUDE_CONFIG_DIR", ".claude", "settings.json"),
        Agent::Codex => ("CODEX_HOME", ".codex", "config.toml"),
    };
    let base = match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => home()
            .ok_or("HOME is not set: name the file with --settings")?
            .join(dir),
    };
    absolute(&base.join(file))
}

/// `p` made absolute, and canonical when it exists (the agent reads it
/// from another directory, later).
fn absolute(p: &Path) -> Result<PathBuf, String> {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|c| c.join(p))
            .map_err(|e| format!("cannot read the current directory: {e}"))?
    };
    Ok(std::fs::canonicalize(&abs).unwrap_or(abs))
}

/// dcjail's own path, as text the agent's settings can hold.
fn exe() -> Result<String, String> {
    let e = crate::paths::own_exe().ok_or("cannot find dcjail's own binary")?;
    let e = std::fs::canonicalize(&e).unwrap_or(e);
    e.to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("dcjail's path `{}` is not UTF-8", e.display()))
}

/// The policy flags as absolute paths.
fn policy(cli: &HookCli) -> Result<Option<String>, String> {
    let Some(p) = &cli.policy else {
        return Ok(None);
    };
    let p = absolute(p)?;
    p.to_str()
        .map(|s| Some(s.to_string()))
        .ok_or_else(|| format!("the policy path `{}` is not UTF-8", p.display()))
}

/// Writes `text` to `file` through a new file renamed over it, so the agent
/// never reads half a file; the directory is made when missing.
fn write(file: &Path, text: &str) -> Result<(), String> {
    if let Some(d) = file.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let tmp = file.with_extension("dcjail-new");
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    if let Ok(m) = std::fs::metadata(file) {
        let _ = std::fs::set_permissions(&tmp, m.permissions());
    }
    std::fs::rename(&tmp, file).map_err(|e| format!("{}: {e}", file.display()))
}

fn read_or_empty(file: &Path) -> Result<String, String> {
    match std::fs::read_to_string(file) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

/// `--install`: writes the integration into the agent's settings and says
/// what it wrote.
pub fn install(cli: &HookCli) -> Result<String, String> {
    let file = target(cli)?;
    match cli.agent {
        Agent::ClaudeCode => install_claude(cli, &file),
        Agent::Codex => install_codex(cli, &file),
    }
}

/// Whether a Claude Code hook handler is dcjail's.
fn is_ours_claude(h: &Value, exe: &str) -> bool {
    h.get("command").and_then(Value::as_str) == Some(exe)
        && h.get("args").and_then(|a| a.get(0)).and_then(Value::as_str) == Some("hook")
}

fn install_claude(cli: &HookCli, file: &Path) -> Result<String, String> {
    let exe = exe()?;
    // Claude Code splits its shell prefix at the last " -" (a program and
    // one flag) and quotes the part before it as one word.
    if exe.contains(" -") {
        return Err(format!(
            "dcjail's path `{exe}` holds \" -\", which Claude Code would split as a flag of its shell prefix: install dcjail at a path without it"
        ));
    }
    let text = read_or_empty(file)?;
    let mut root: Value = if text.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?
    };
    let obj = root
        .as_object_mut()
        .ok_or_else(|| format!("{}: not a JSON object", file.display()))?;
    let env = object_at(obj, "env", file)?;
    env.insert(super::prefix::VAR.into(), Value::String(exe.clone()));
    env.remove("DCJAIL_POLICY");
    env.remove("DCJAIL_POLICY_FORMAT");
    if let Some(p) = policy(cli)? {
        env.insert("DCJAIL_POLICY".into(), Value::String(p));
    }
    if let Some(f) = cli.policy_format {
        env.insert(
            "DCJAIL_POLICY_FORMAT".into(),
            Value::String(f.word().into()),
        );
    }
    let hooks = object_at(obj, "hooks", file)?;
    let pre = hooks
        .entry("PreToolUse")
        .or_insert_with(|| Value::Array(Vec::new()));
    let groups = pre
        .as_array_mut()
        .ok_or_else(|| format!("{}: `hooks.PreToolUse` is not an array", file.display()))?;
    // Earlier dcjail handlers go; other hooks stay as they are.
    for g in groups.iter_mut() {
        if let Some(hs) = g.get_mut("hooks").and_then(Value::as_array_mut) {
            hs.retain(|h| !is_ours_claude(h, &exe));
        }
    }
    groups.retain(|g| {
        g.get("hooks")
            .and_then(Value::as_array)
            .is_none_or(|h| !h.is_empty())
    });
    groups.push(json!({
        "matcher": CLAUDE_MATCHER,
        "hooks": [{"type": "command", "command": exe, "args": ["hook", "claude-code"]}],
    }));
    let out = serde_json::to_string_pretty(&root).map_err(|e| e.to_string())? + "\n";
    write(file, &out)?;
    Ok(format!(
        "wrote {}: env.{} = {exe}, a PreToolUse hook for {CLAUDE_MATCHER}{}",
        file.display(),
        super::prefix::VAR,
        policy(cli)?
            .map(|p| format!(", env.DCJAIL_POLICY = {p}"))
            .unwrap_or_default()
    ))
}

fn object_at<'a>(
    obj: &'a mut Map<String, Value>,
    key: &str,
    file: &Path,
) -> Result<&'a mut Map<String, Value>, String> {
    obj.entry(key)
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| format!("{}: `{key}` is not an object", file.display()))
}

/// The command line of dcjail's Codex hook (Codex runs it with `$SHELL -lc`).
fn codex_command(cli: &HookCli) -> Result<String, String> {
    let mut words = vec![quote(&exe()?), "hook".into(), "codex".into()];
    if let Some(p) = policy(cli)? {
        words.push("--policy".into());
        words.push(quote(&p));
    }
    if let Some(f) = cli.policy_format {
        words.push("--policy-format".into());
        words.push(f.word().into());
    }
    Ok(words.join(" "))
}

/// Codex's trust hash of one command handler in a group with `matcher`.
pub fn codex_hash(matcher: Option<&str>, handler: &CodexHandler) -> String {
    let mut h = json!({
        "type": "command",
        "command": handler.command,
        "timeout": handler.timeout.unwrap_or(CODEX_TIMEOUT).max(1),
        "async": handler.is_async,
    });
    if let Some(s) = &handler.status_message {
        h["statusMessage"] = Value::String(s.clone());
    }
    let mut ident = json!({"event_name": "pre_tool_use", "hooks": [h]});
    if let Some(m) = matcher {
        ident["matcher"] = Value::String(m.to_string());
    }
    // serde_json's map is ordered by key: this is the key-sorted compact form.
    let digest = Sha256::digest(ident.to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The trust key of handler `handler` of PreToolUse group `group` in `config`.
pub fn codex_key(config: &Path, group: usize, handler: usize) -> String {
    format!("{}:pre_tool_use:{group}:{handler}", config.display())
}

/// One command handler of a Codex hook group, as its hash sees it.
pub struct CodexHandler {
    pub command: String,
    pub timeout: Option<i64>,
    pub is_async: bool,
    pub status_message: Option<String>,
}

/// Codex reads the trust key with the config's real path.
fn real(file: &Path) -> PathBuf {
    std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf())
}

fn install_codex(cli: &HookCli, file: &Path) -> Result<String, String> {
    use toml_edit::{value, ArrayOfTables, DocumentMut, Item, Table};
    let command = codex_command(cli)?;
    let text = read_or_empty(file)?;
    if !file.exists() {
        // The trust key names the config by its real path, which exists
        // only once the file does.
        write(file, "")?;
    }
    let config = real(file);
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| format!("{}: not TOML: {e}", file.display()))?;
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| format!("{}: `hooks` is not a table", file.display()))?;
    let groups = hooks
        .entry("PreToolUse")
        .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
        .as_array_of_tables_mut()
        .ok_or_else(|| {
            format!(
                "{}: `hooks.PreToolUse` is not an array of tables",
                file.display()
            )
        })?;
    let ours = groups.iter().position(|g| {
        g.get("matcher").and_then(Item::as_str) == Some(CODEX_MATCHER)
            && g.get("hooks")
                .and_then(Item::as_array_of_tables)
                .is_some_and(|hs| {
                    hs.len() == 1
                        && hs
                            .get(0)
                            .and_then(|h| h.get("command"))
                            .and_then(Item::as_str)
                            .is_some_and(|c| c.contains(" hook codex"))
                })
    });
    let index = match ours {
        Some(i) => i,
        None => {
            groups.push(Table::new());
            groups.len() - 1
        }
    };
    let group = groups
        .get_mut(index)
        .ok_or("the hook group just written is missing")?;
    group.clear();
    group.insert("matcher", value(CODEX_MATCHER));
    let mut handler = Table::new();
    handler.insert("type", value("command"));
    handler.insert("command", value(command.clone()));
    let mut handlers = ArrayOfTables::new();
    handlers.push(handler);
    group.insert("hooks", Item::ArrayOfTables(handlers));
    let key = codex_key(&config, index, 0);
    let hash = codex_hash(
        Some(CODEX_MATCHER),
        &CodexHandler {
            command: command.clone(),
            timeout: None,
            is_async: false,
            status_message: None,
        },
    );
    let state = hooks
        .entry("state")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| format!("{}: `hooks.state` is not a table", file.display()))?;
    let mut trust = Table::new();
    trust.insert("trusted_hash", value(hash));
    state.insert(&key, Item::Table(trust));
    write(file, &doc.to_string())?;
    Ok(format!(
        "wrote {}: a PreToolUse hook for {CODEX_MATCHER} running `{command}`, trusted as {key}",
        file.display()
    ))
}

/// What `--check` finds in the agent's configuration: `Ok` with what it
/// read, or `Err` with why the agent would not run dcjail.
pub fn check_config(cli: &HookCli) -> Result<String, String> {
    let file = target(cli)?;
    match cli.agent {
        Agent::ClaudeCode => check_claude(&file),
        Agent::Codex => check_codex(&file),
    }
}

fn check_claude(file: &Path) -> Result<String, String> {
    let exe = exe()?;
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
    let prefix = v["env"][super::prefix::VAR].as_str();
    if !super::prefix::names_dcjail(prefix.map(std::ffi::OsStr::new)) {
        return Err(format!(
            "{}: env.{} is {:?}, not dcjail ({exe}): Claude Code would run Bash calls unsandboxed",
            file.display(),
            super::prefix::VAR,
            prefix.unwrap_or("unset")
        ));
    }
    let hooked = v["hooks"]["PreToolUse"].as_array().is_some_and(|gs| {
        gs.iter().any(|g| {
            g["hooks"]
                .as_array()
                .is_some_and(|hs| hs.iter().any(|h| is_ours_claude(h, &exe)))
        })
    });
    if !hooked {
        return Err(format!(
            "{}: no PreToolUse hook runs `{exe} hook claude-code` in exec form: plan mode, the policy's deny and the file tools would not be checked",
            file.display()
        ));
    }
    Ok(format!(
        "{}: shell prefix and hook are dcjail",
        file.display()
    ))
}

fn check_codex(file: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let doc: toml::Table =
        toml::from_str(&text).map_err(|e| format!("{}: not TOML: {e}", file.display()))?;
    let hooks = doc.get("hooks").and_then(toml::Value::as_table);
    let groups = hooks
        .and_then(|h| h.get("PreToolUse"))
        .and_then(toml::Value::as_array)
        .ok_or_else(|| {
            format!(
                "{}: no [[hooks.PreToolUse]]: Codex runs no dcjail hook",
                file.display()
            )
        })?;
    let state = hooks
        .and_then(|h| h.get("state"))
        .and_then(toml::Value::as_table);
    let config = real(file);
    for (gi, g) in groups.iter().enumerate() {
        let matcher = g.get("matcher").and_then(toml::Value::as_str);
        let handlers = g.get("hooks").and_then(toml::Value::as_array);
        for (hi, h) in handlers.into_iter().flatten().enumerate() {
            let Some(command) = h.get("command").and_then(toml::Value::as_str) else {
                continue;
            };
            if !command.contains(" hook codex") {
                continue;
            }
            let known = [
                "type",
                "command",
                "timeout",
                "async",
                "statusMessage",
                "commandWindows",
            ];
            if let Some(k) = h
                .as_table()
                .and_then(|t| t.keys().find(|k| !known.contains(&k.as_str())))
            {
                return Err(format!(
                    "{}: the dcjail hook has a field `{k}` this dcjail does not know how Codex hashes (verified on Codex {})",
                    file.display(),
                    CODEX_VERIFIED.join(", ")
                ));
            }
            let handler = CodexHandler {
                command: command.to_string(),
                timeout: h.get("timeout").and_then(toml::Value::as_integer),
                is_async: h
                    .get("async")
                    .and_then(toml::Value::as_bool)
                    .unwrap_or(false),
                status_message: h
                    .get("statusMessage")
                    .and_then(toml::Value::as_str)
                    .map(str::to_string),
            };
            let key = codex_key(&config, gi, hi);
            let want = codex_hash(matcher, &handler);
            let have = state
                .and_then(|s| s.get(&key))
                .and_then(|t| t.get("trusted_hash"))
                .and_then(toml::Value::as_str);
            if have != Some(want.as_str()) {
                return Err(format!(
                    "{}: Codex will skip the dcjail hook `{command}`: {} (key {key}); run `dcjail hook codex --install` again",
                    file.display(),
                    match have {
                        None => "it is not trusted (no trust entry for its place in the file)",
                        Some(_) => "its trust entry is for another command, matcher or place",
                    }
                ));
            }
            if !matcher.is_some_and(|m| {
                m.split('|').any(|t| t == "Bash") && m.split('|').any(|t| t == "apply_patch")
            }) {
                return Err(format!(
                    "{}: the dcjail hook's matcher is {:?}: it must name Bash and apply_patch",
                    file.display(),
                    matcher.unwrap_or("(none)")
                ));
            }
            return Ok(format!(
                "{}: the dcjail hook `{command}` is trusted ({key})",
                file.display()
            ));
        }
    }
    Err(format!(
        "{}: no PreToolUse hook runs `dcjail hook codex`: Codex would run every call unsandboxed",
        file.display()
    ))
}

/// The command line of dcjail's hook in the Codex config `cli` names: what
/// Codex will run, with the flags that were installed.
pub fn codex_installed(cli: &HookCli) -> Result<String, String> {
    let file = target(cli)?;
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let doc: toml::Table =
        toml::from_str(&text).map_err(|e| format!("{}: not TOML: {e}", file.display()))?;
    doc.get("hooks")
        .and_then(|h| h.get("PreToolUse"))
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|g| g.get("hooks").and_then(toml::Value::as_array))
        .flatten()
        .filter_map(|h| h.get("command").and_then(toml::Value::as_str))
        .find(|c| c.contains(" hook codex"))
        .map(str::to_string)
        .ok_or_else(|| format!("{}: no dcjail hook", file.display()))
}

/// The agent's version when it is on PATH, and whether it was verified.
pub fn agent_version(agent: Agent) -> Option<(String, bool)> {
    let (bin, verified) = match agent {
        Agent::ClaudeCode => ("claude", CLAUDE_VERIFIED),
        Agent::Codex => ("codex", CODEX_VERIFIED),
    };
    let out = std::process::Command::new(bin)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?
        .to_string();
    let ok = verified.contains(&version.as_str());
    Some((version, ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codex_trust_hash_is_the_one_codex_computes() {
        // Measured with Codex 0.171.0: this hook ran with exactly this hash.
        let h = CodexHandler {
            command: "/work/exp/codex/loghook.sh".into(),
            timeout: None,
            is_async: false,
            status_message: None,
        };
        assert_eq!(
            codex_hash(Some("Bash|apply_patch"), &h),
            "sha256:43ce961dd0a734130b39699098347101791044c5a49b8c5d1f916a0062a701c9"
        );
    }
}
