//! `dcjail hook claude-code|codex`: the agent's PreToolUse hook. It reads
//! the hook's JSON on stdin and answers on stdout as the agent documents,
//! from the same plan the sandbox enforces, for the shell and the file
//! tools alike: a call dcjail would refuse comes back as the agent's `deny`
//! with dcjail's one-line reason. Claude Code's Bash calls run through its
//! shell prefix (`prefix`), so the hook only decides them; Codex's are
//! rewritten to run under dcjail. The workspace is the session's
//! (`session`), never a field of the call. Other tools get no opinion.
//!
//! Any failure of the hook itself exits 2 with one line on stderr: both
//! agents read exit 2 as "block this call", while any other status would
//! let the original command run unsandboxed. It decides only through the
//! same pipeline a run uses (`run::decide_and_plan`, then `run::select`) and
//! starts nothing, except the sample command of `--check`; `--install`
//! writes the agent's settings (`install`).

mod codex_rules;
mod files;
mod install;
mod patch;
pub mod prefix;
mod session;
mod shell;

use crate::error::{Refusal, SUBCOMMAND_FAILED, SUCCESS};
use crate::policy::{Approval, GateArgs, Mode, Overrides, PolicyFormat, SandboxMode, Tool};
use clap::Parser;
use serde_json::{json, Map, Value};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

pub use crate::shellword::{plain, quote};
pub use shell::repair_surrogates;

/// The largest hook input read; a shell call is far smaller.
const MAX_INPUT: u64 = 16 * 1024 * 1024;

/// The status both agents read as "block the call", stderr as the reason.
const BLOCK: i32 = crate::error::HOOK_BLOCK;

/// The agents whose hook protocol is spoken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code (settings.json `hooks.PreToolUse`)
    ClaudeCode,
    /// Codex (`hooks.json` or `[hooks]` of config.toml)
    Codex,
}

/// dcjail hook: answer an agent's PreToolUse hook (its JSON on stdin).
#[derive(Parser, Debug)]
#[command(
    name = "dcjail hook",
    about = "dcjail hook: answer an agent's PreToolUse hook: shell calls run under dcjail, file tools are held to the same policy",
    after_help = "Set up with --install, verify with --check. Exit status: 0 with the decision JSON on stdout (or nothing: no opinion); 2 when the hook itself fails (one line on stderr), which the agent reads as \"block this call\"; --install and --check: 0, or 1 with the reason."
)]
pub struct HookCli {
    /// The agent: claude-code, codex
    #[arg(value_name = "AGENT")]
    pub agent: Agent,
    /// Policy for the agent's calls; also from env DCJAIL_POLICY. Default: the project writable, protected paths held, no network
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub policy: Option<PathBuf>,
    /// How to read the policy file: dcjail, srt, claude-code, codex
    #[arg(long, value_name = "FORMAT")]
    pub policy_format: Option<PolicyFormat>,
    /// Answer "ask" for every Bash call dcjail would run (Claude Code only): the user confirms each one
    #[arg(long)]
    pub ask: bool,
    /// Check the agent's settings (the hook is there, and trusted for Codex), then run a sample call through dcjail
    ///
    /// It says plainly when the agent would not run dcjail (no shell prefix, no
    /// hook, a Codex hook that is not trusted or whose trust entry no longer
    /// matches), prints the agent's version and whether dcjail was verified with
    /// it, then runs a sample shell call as the agent would and says whether it
    /// ran under dcjail (exit 0) or not (exit 1).
    #[arg(long, conflicts_with = "install")]
    pub check: bool,
    /// Write the integration into the agent's settings: Claude Code's shell prefix and hook, Codex's hook and its trust entry
    ///
    /// Other settings are kept (see `hook` under `SUBCOMMANDS`).
    #[arg(long)]
    pub install: bool,
    /// The settings file for --install and --check. Default: ~/.claude/settings.json ($CLAUDE_CONFIG_DIR), ~/.codex/config.toml ($CODEX_HOME)
    ///
    /// Claude Code's is found in `CLAUDE_CONFIG_DIR` when that is set, Codex's
    /// in `CODEX_HOME` when that is set.
    #[arg(long, visible_alias = "config", value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub settings: Option<PathBuf>,
}

pub fn command() -> clap::Command {
    <HookCli as clap::CommandFactory>::command()
}

/// `dcjail hook ARGS`: returns the exit status.
pub fn main(args: &[OsString]) -> i32 {
    let mut a = vec![OsString::from("dcjail hook")];
    a.extend(args.iter().cloned());
    let cli: HookCli = match crate::usage::parse(a) {
        Ok(c) => c,
        Err(crate::error::SUCCESS) => return crate::error::SUCCESS,
        // The usage error is already on stderr.
        Err(_) => return BLOCK,
    };
    if cli.ask && cli.agent == Agent::Codex {
        return block(&Refusal::usage(
            "--ask: Codex applies a rewritten command only with \"allow\"",
        ));
    }
    if cli.install {
        return match install::install(&cli) {
            Ok(said) => {
                println!("{said}");
                SUCCESS
            }
            Err(e) => {
                eprintln!("dcjail hook --install: {}", crate::error::one_line(&e));
                SUBCOMMAND_FAILED
            }
        };
    }
    if cli.check {
        return check(&cli);
    }
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin()
        .lock()
        .take(MAX_INPUT + 1)
        .read_to_end(&mut input)
    {
        return block(&Refusal::usage(format!(
            "hook input: cannot read stdin: {}",
            crate::policy::io_words(&e)
        )));
    }
    if input.len() as u64 > MAX_INPUT {
        return block(&Refusal::usage(format!(
            "hook input is larger than {MAX_INPUT} bytes"
        )));
    }
    let text = match String::from_utf8(input) {
        Ok(t) => t,
        Err(_) => return block(&Refusal::usage("hook input is not valid UTF-8 JSON")),
    };
    match answer(&cli, &text) {
        Ok(Some(v)) => {
            println!("{v}");
            SUCCESS
        }
        Ok(None) => SUCCESS,
        Err(r) => block(&r),
    }
}

fn block(r: &Refusal) -> i32 {
    eprintln!("{}", r.line());
    BLOCK
}

/// The decision for one hook input: `Some(json)` to print, `None` for no
/// opinion; `Err` when the input is not a hook input at all.
pub fn answer(cli: &HookCli, text: &str) -> Result<Option<Value>, Refusal> {
    let repaired = repair_surrogates(text);
    let v: Value = serde_json::from_str(&repaired).map_err(|e| {
        Refusal::usage(format!(
            "hook input is not JSON: {}",
            crate::error::one_line(&e.to_string())
        ))
    })?;
    let Value::Object(input) = v else {
        return Err(Refusal::usage("hook input is not a JSON object"));
    };
    let event = input.get("hook_event_name").and_then(Value::as_str);
    if event.is_some_and(|e| e != "PreToolUse") {
        return Ok(None);
    }
    let tool = input.get("tool_name").and_then(Value::as_str).unwrap_or("");
    let decided = match (cli.agent, tool) {
        (Agent::ClaudeCode, "Bash") => claude_bash(cli, &input),
        (Agent::Codex, "Bash") => codex_bash(cli, &input).map(Some),
        (Agent::Codex, "apply_patch") => codex_patch(cli, &input),
        (Agent::ClaudeCode, t) => match file_tool(t) {
            Some((kind, field)) => claude_file(cli, &input, kind, field),
            None => Ok(None),
        },
        _ => Ok(None),
    };
    Ok(match decided {
        Ok(v) => v,
        Err(r) => Some(deny(&r)),
    })
}

/// Claude Code's file tools: the tool kind dcjail decides them as, and the
/// input field holding the path.
fn file_tool(name: &str) -> Option<(Tool, &'static str)> {
    Some(match name {
        "Read" => (Tool::Read, "file_path"),
        "Grep" | "Glob" => (Tool::Read, "path"),
        "Write" => (Tool::Write, "file_path"),
        "Edit" | "MultiEdit" => (Tool::Edit, "file_path"),
        "NotebookEdit" => (Tool::Edit, "notebook_path"),
        _ => return None,
    })
}

/// The agent's own "deny", with dcjail's one-line refusal as the reason.
fn deny(r: &Refusal) -> Value {
    decision("deny", &r.line(), None)
}

fn decision(what: &str, why: &str, updated: Option<Value>) -> Value {
    let mut out = json!({
        "hookEventName": "PreToolUse",
        "permissionDecision": what,
        "permissionDecisionReason": why,
    });
    if let Some(u) = updated {
        out["updatedInput"] = u;
    }
    json!({ "hookSpecificOutput": out })
}

/// What every call's input says: its tool input, the agent's mode and the
/// call's working directory.
struct Call<'a> {
    tool_input: &'a Map<String, Value>,
    mode: Mode,
    cwd: PathBuf,
}

fn read_call(agent: Agent, input: &Map<String, Value>) -> Result<Call<'_>, Refusal> {
    let tool_input = match input.get("tool_input") {
        Some(Value::Object(m)) => m,
        _ => return Err(Refusal::usage("hook input: `tool_input` is not an object")),
    };
    let mode = match input.get("permission_mode") {
        None | Some(Value::Null) => Mode::Default,
        // Codex reports bypassPermissions whatever the user set up: it is
        // not a choice the user made, and a policy's deny must hold.
        Some(Value::String(m)) if agent == Agent::Codex && m == "bypassPermissions" => {
            Mode::Default
        }
        Some(Value::String(m)) => Mode::from_word(m).ok_or_else(|| {
            Refusal::usage(format!(
                "hook input: permission_mode {}",
                crate::policy::vocab_error(m, Mode::WORDS)
            ))
        })?,
        Some(_) => {
            return Err(Refusal::usage(
                "hook input: `permission_mode` is not a string",
            ))
        }
    };
    let cwd = match input.get("cwd").and_then(Value::as_str) {
        Some(c) if Path::new(c).is_absolute() => PathBuf::from(c),
        Some(c) => {
            return Err(Refusal::usage(format!(
                "hook input: cwd `{c}` is not an absolute path"
            )))
        }
        None => current_dir()?,
    };
    Ok(Call {
        tool_input,
        mode,
        cwd,
    })
}

/// A string field of the tool input, without NUL bytes.
fn text_field<'a>(call: &Call<'a>, tool: &str, field: &str) -> Result<&'a str, Refusal> {
    let Some(v) = call.tool_input.get(field).and_then(Value::as_str) else {
        return Err(Refusal::usage(format!(
            "hook input: the {tool} call has no `tool_input.{field}` string"
        )));
    };
    if v.contains('\0') {
        return Err(Refusal::usage(format!(
            "the call's `{field}` contains a NUL byte"
        )));
    }
    Ok(v)
}

fn current_dir() -> Result<PathBuf, Refusal> {
    std::env::current_dir().map_err(|e| {
        Refusal::policy(format!(
            "cannot read the current directory: {}",
            crate::policy::io_words(&e)
        ))
    })
}

/// The overrides of one call: the hook's policy (or, with none, the agent
/// default: the project writable, protected paths held, no network), the
/// agent's mode, the session's workspace (never the call's directory,
/// which must lie inside it), and approval granted: whether to ask the user
/// stays the agent's decision. The process moves to the call's directory,
/// where relative policy paths resolve as they will for the command.
fn session_overrides(cli: &HookCli, call: &Call, tool: Tool) -> Result<Overrides, Refusal> {
    let policy = policy_file(cli.policy.as_deref())?;
    let mut o = Overrides {
        gate: GateArgs {
            policy: policy.clone(),
            mode: Some(call.mode),
            plan_card: None,
        },
        policy_format: cli.policy_format.or(policy_format_env()?),
        tool: Some(tool),
        approval: Some(Approval::Granted),
        ..Overrides::default()
    };
    if policy.is_none() {
        o.sandbox_mode = Some(SandboxMode::WorkspaceWrite);
    }
    let root = match cli.agent {
        Agent::ClaudeCode => session::claude_project(),
        Agent::Codex => session::codex_project(),
    };
    let cwd = std::fs::canonicalize(&call.cwd).map_err(|e| {
        Refusal::policy(format!(
            "the call's directory `{}`: {}",
            call.cwd.display(),
            crate::policy::io_words(&e)
        ))
    })?;
    std::env::set_current_dir(&cwd).map_err(|e| {
        Refusal::policy(format!(
            "cwd `{}`: {}",
            cwd.display(),
            crate::policy::io_words(&e)
        ))
    })?;
    let (p, _) = crate::run::load(&o, None)?;
    if p.sandbox.workspace.is_none() {
        let root = root?;
        session::inside(&cwd, &root)?;
        o.workspace = Some(root);
    }
    Ok(o)
}

/// A Claude Code `Bash` call: Claude Code runs it through its shell prefix,
/// dcjail, after its own permission rules decided on the original command;
/// the hook only says no (plan mode, a policy deny, a sandbox this machine
/// cannot enforce, a prefix that is not dcjail) or, when told to, asks or
/// allows. No opinion otherwise: Claude Code decides as without dcjail.
fn claude_bash(cli: &HookCli, input: &Map<String, Value>) -> Result<Option<Value>, Refusal> {
    let call = read_call(cli.agent, input)?;
    let command = text_field(&call, "Bash", "command")?;
    if !prefix::names_dcjail(std::env::var_os(prefix::VAR).as_deref()) {
        return Err(Refusal::unavailable(format!(
            "{} is not dcjail, so Claude Code would run this command unsandboxed; set it with `dcjail hook claude-code --install`",
            prefix::VAR
        )));
    }
    let (o, sandboxed, how) = shell_decision(cli, &call, command)?;
    let auto_allow = auto_allow(&o)?;
    Ok(if cli.ask {
        Some(decision(
            "ask",
            &format!("dcjail: if approved, {how}"),
            None,
        ))
    } else if auto_allow == Some(true) && sandboxed {
        Some(decision("allow", &format!("dcjail: {how}"), None))
    } else {
        None
    })
}

/// A shell call decided as dcjail would decide `bash -c COMMAND` in the
/// session: its overrides, and how it runs (or the refusal).
fn shell_decision(
    cli: &HookCli,
    call: &Call,
    command: &str,
) -> Result<(Overrides, bool, String), Refusal> {
    let o = session_overrides(cli, call, Tool::Bash)?;
    let argv = vec![
        OsString::from("bash"),
        OsString::from("-c"),
        OsString::from(command),
    ];
    let mut plan = crate::run::decide_and_plan(&o, argv)?;
    // The hook's own descriptors (the agent's JSON in, the answer out) are
    // not the command's: the run checks its own. Pipes stand in, as
    // nothing a launch decides may hang on the hook's.
    plan.facts.stdio = [const { crate::plan::StdFd::Other }; 3];
    let choice = crate::run::select(&plan)?;
    Ok((o, plan.sandboxed, how(&plan, &choice)))
}

fn how(plan: &crate::plan::Plan, choice: &crate::backend::Choice) -> String {
    if plan.sandboxed {
        format!(
            "runs sandboxed ({} backend, {}, network {}; {})",
            choice.backend_name(),
            plan.fs.access,
            plan.net.mode,
            crate::backend::layers_words(choice)
        )
    } else {
        "runs with the sandbox off (the policy says sandbox.enabled = false)".to_string()
    }
}

/// A Claude Code file tool (Read, Write, Edit…): its path checked against
/// the plan a shell call would get; a refusal is the agent's deny, and an
/// allowed call gets no opinion.
fn claude_file(
    cli: &HookCli,
    input: &Map<String, Value>,
    tool: Tool,
    field: &str,
) -> Result<Option<Value>, Refusal> {
    let call = read_call(cli.agent, input)?;
    let path = match call.tool_input.get(field) {
        None | Some(Value::Null) if field == "path" => ".",
        _ => text_field(&call, "file", field)?,
    };
    let access = if tool == Tool::Read {
        files::Access::Read
    } else {
        files::Access::Write
    };
    check_paths(cli, &call, tool, access, &[PathBuf::from(path)])
}

/// Decides `paths` as one `tool` call of the session and checks each.
fn check_paths(
    cli: &HookCli,
    call: &Call,
    tool: Tool,
    access: files::Access,
    paths: &[PathBuf],
) -> Result<Option<Value>, Refusal> {
    let o = session_overrides(cli, call, tool)?;
    let plan = crate::run::decide_and_plan(&o, vec![OsString::from(tool.word())])?;
    if !plan.sandboxed {
        return Ok(None);
    }
    for p in paths {
        files::check(&plan, p, &call.cwd, access)?;
    }
    Ok(None)
}

/// A Codex `apply_patch`: every path it adds, updates, deletes or moves to
/// must be writable under the plan.
fn codex_patch(cli: &HookCli, input: &Map<String, Value>) -> Result<Option<Value>, Refusal> {
    let call = read_call(cli.agent, input)?;
    let text = text_field(&call, "apply_patch", "command")?;
    let paths = patch::paths(text).map_err(|e| {
        Refusal::new(
            crate::error::Reason::SandboxDenied,
            Some(crate::error::Gate::Sandbox),
            format!("the patch cannot be checked: {e}"),
        )
    })?;
    check_paths(cli, &call, Tool::Edit, files::Access::Write, &paths)
}

/// A Codex shell call: decided as dcjail would decide the wrapped run, then
/// rewritten to run under dcjail (Codex has no shell prefix).
fn codex_bash(cli: &HookCli, input: &Map<String, Value>) -> Result<Value, Refusal> {
    let call = read_call(cli.agent, input)?;
    let command = text_field(&call, "Bash", "command")?;
    codex_rules_hold(command)?;
    if patch::through_shell(command) {
        return Err(Refusal::new(
            crate::error::Reason::SandboxDenied,
            Some(crate::error::Gate::Sandbox),
            "a patch typed through the shell (apply_patch <<EOF) is not checked path by path; send it with the apply_patch tool",
        ));
    }
    let (o, _, how) = shell_decision(cli, &call, command)?;
    let wrapped = wrap(&o, command)?;
    let mut updated = call.tool_input.clone();
    updated.insert("command".into(), Value::String(wrapped));
    Ok(decision(
        "allow",
        &format!("dcjail: {how}"),
        Some(Value::Object(updated)),
    ))
}

/// Codex's own `prefix_rule`s, checked on the original command: Codex
/// checks them on the rewritten one, which none of them names.
fn codex_rules_hold(command: &str) -> Result<(), Refusal> {
    use crate::error::{Gate, Reason};
    let root = session::codex_project()?;
    let rules = codex_rules::load(&codex_rules::files(&root)).map_err(|e| {
        Refusal::new(
            Reason::PermissionDenied,
            Some(Gate::Permission),
            format!("Codex's rules cannot be read, so no shell call runs: {e}"),
        )
    })?;
    let Some(rule) = codex_rules::decide(&rules, command) else {
        return Ok(());
    };
    let words: Vec<String> = rule.pattern.iter().map(|alts| alts.join("|")).collect();
    let said = match rule.decision {
        codex_rules::Decision::Allow => return Ok(()),
        codex_rules::Decision::Forbidden => "forbids",
        codex_rules::Decision::Prompt => "asks the user first for (which a hook cannot pass on)",
    };
    Err(Refusal::new(
        Reason::PermissionDenied,
        Some(Gate::Permission),
        format!(
            "Codex's rule `{}` {said} this command{}",
            words.join(" "),
            rule.justification
                .as_deref()
                .map(|j| format!(": {j}"))
                .unwrap_or_default()
        ),
    ))
}

/// The policy file for the calls, absolute: the hook's `--policy`
/// (relative to where the agent started the hook), else `DCJAIL_POLICY`.
pub fn policy_file(flag: Option<&Path>) -> Result<Option<PathBuf>, Refusal> {
    let file = flag.map(Path::to_path_buf).or_else(|| {
        std::env::var_os("DCJAIL_POLICY")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let Some(f) = file else { return Ok(None) };
    if f.is_absolute() {
        return Ok(Some(f));
    }
    Ok(Some(current_dir()?.join(f)))
}

/// `DCJAIL_POLICY_FORMAT`: how the shell prefix and the hook read the
/// policy when no flag says it.
pub fn policy_format_env() -> Result<Option<PolicyFormat>, Refusal> {
    match std::env::var("DCJAIL_POLICY_FORMAT") {
        Ok(v) if !v.is_empty() => PolicyFormat::from_word(&v).map(Some).ok_or_else(|| {
            Refusal::usage(format!(
                "DCJAIL_POLICY_FORMAT {}",
                crate::policy::vocab_error(&v, PolicyFormat::WORDS)
            ))
        }),
        _ => Ok(None),
    }
}

/// Claude Code's `sandbox.autoAllowBashIfSandboxed`, when the policy is a
/// Claude Code settings file.
fn auto_allow(o: &Overrides) -> Result<Option<bool>, Refusal> {
    match (o.policy_format, o.gate.policy.as_deref()) {
        (Some(PolicyFormat::ClaudeCode), Some(p)) => {
            let text = crate::policy::read_policy_file(p)?;
            let name = p.display().to_string();
            Ok(crate::import::convert(PolicyFormat::ClaudeCode, &text, &name, Some(p))?.auto_allow)
        }
        _ => Ok(None),
    }
}

/// The command Codex runs instead of `command`: dcjail by absolute path,
/// the call's mode, the session's workspace and the policy (or, with none,
/// the agent default), then `bash -c` and the original as one single-quoted
/// word, so no byte of it is read by the agent's shell.
pub fn wrap(o: &Overrides, command: &str) -> Result<String, Refusal> {
    let exe = crate::plan::own_exe()
        .ok_or_else(|| Refusal::policy("cannot find dcjail's own binary to wrap the call"))?;
    let text = |p: &Path, what: &str| {
        p.to_str().map(str::to_string).ok_or_else(|| {
            Refusal::usage(format!(
                "{what} `{}` is not UTF-8 and cannot go in the agent's JSON",
                p.display()
            ))
        })
    };
    let mut words = vec![
        quote(&text(&exe, "dcjail's path")?),
        "--mode".into(),
        o.gate.mode.unwrap_or(Mode::Default).word().into(),
        "--tool".into(),
        "bash".into(),
        "--approval".into(),
        "granted".into(),
    ];
    if let Some(w) = &o.workspace {
        words.push("--workspace".into());
        words.push(quote(&text(w, "the workspace")?));
    }
    if let Some(p) = &o.gate.policy {
        words.push("--policy".into());
        words.push(quote(&text(p, "the policy file")?));
    }
    if let Some(f) = o.policy_format {
        words.push("--policy-format".into());
        words.push(f.word().into());
    }
    if let Some(m) = o.sandbox_mode {
        words.push("--sandbox-mode".into());
        words.push(m.word().into());
    }
    debug_assert!(words
        .iter()
        .skip(1)
        .all(|w| w.starts_with('\'') || plain(w)));
    words.extend(["--".into(), "bash".into(), "-c".into(), quote(command)]);
    Ok(words.join(" "))
}

/// `--check`: the agent's settings read back (would the agent run dcjail
/// at all?), then a sample shell call through dcjail as the agent would
/// make it, which must report that it ran sandboxed.
fn check(cli: &HookCli) -> i32 {
    let agent = match cli.agent {
        Agent::ClaudeCode => "claude-code",
        Agent::Codex => "codex",
    };
    let failed = |why: &str| {
        println!(
            "dcjail hook {agent}: FAILED: {}",
            crate::error::one_line(why)
        );
        SUBCOMMAND_FAILED
    };
    match install::check_config(cli) {
        Ok(said) => println!("settings:  {}", crate::error::one_line(&said)),
        Err(e) => return failed(&e),
    }
    match install::agent_version(cli.agent) {
        Some((v, true)) => println!("agent:     {v} (verified with this dcjail)"),
        Some((v, false)) => println!(
            "agent:     {v}: WARNING: not a version this dcjail was verified with; run the check with the agent itself (below)"
        ),
        None => println!("agent:     not on PATH"),
    }
    let marker = "printf 'DCJAIL=%s DCJAIL_BACKEND=%s\\n' \"$DCJAIL\" \"$DCJAIL_BACKEND\"";
    let ran = match sample(cli, marker) {
        Ok(o) => o,
        Err(e) => return failed(&e),
    };
    let text = String::from_utf8_lossy(&ran.stdout).trim().to_string();
    println!("it printed: {}", crate::error::one_line(&text));
    if !text.starts_with("DCJAIL=1 ") {
        return failed("the sample command did not run under dcjail");
    }
    println!(
        "dcjail hook {agent}: ok. To check that the agent itself applies it, have it run:\n  test \"$DCJAIL\" = 1 && echo sandboxed by dcjail || echo NOT SANDBOXED"
    );
    SUCCESS
}

/// `/bin/sh -c command` with `input` on its stdin.
fn run_with_input(command: &str, input: &str) -> Result<std::process::Output, String> {
    use std::io::Write;
    let mut child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run the installed hook: {e}"))?;
    if let Some(mut w) = child.stdin.take() {
        let _ = w.write_all(input.as_bytes());
    }
    child
        .wait_with_output()
        .map_err(|e| format!("the installed hook: {e}"))
}

/// Runs `command` as the agent would: Claude Code through the shell prefix
/// (dcjail with the line as its one argument), Codex as the hook rewrites it.
fn sample(cli: &HookCli, command: &str) -> Result<std::process::Output, String> {
    let cwd = current_dir().map_err(|r| r.line())?;
    let exe = crate::plan::own_exe().ok_or("cannot find dcjail's own binary")?;
    let mut c = match cli.agent {
        Agent::ClaudeCode => {
            let mut c = std::process::Command::new(&exe);
            c.arg(command)
                .env(prefix::VAR, &exe)
                .env_remove("CLAUDE_CODE_EXECPATH")
                .env("CLAUDE_PROJECT_DIR", &cwd);
            let file = install::target(cli)?;
            let text =
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            for k in ["DCJAIL_POLICY", "DCJAIL_POLICY_FORMAT"] {
                match v["env"][k].as_str() {
                    Some(val) => c.env(k, val),
                    None => c.env_remove(k),
                };
            }
            c
        }
        Agent::Codex => {
            // The hook exactly as installed, run as Codex runs it.
            let installed = install::codex_installed(cli)?;
            let input = json!({
                "session_id": "dcjail-check",
                "cwd": cwd.to_string_lossy(),
                "hook_event_name": "PreToolUse",
                "permission_mode": "bypassPermissions",
                "tool_name": "Bash",
                "tool_input": {"command": command},
            });
            let out = run_with_input(&installed, &input.to_string())?;
            let v: Value = serde_json::from_slice(&out.stdout).map_err(|_| {
                format!(
                    "the installed hook answered no JSON (exit {}): {}",
                    out.status,
                    crate::error::one_line(&String::from_utf8_lossy(&out.stderr))
                )
            })?;
            let hso = &v["hookSpecificOutput"];
            let Some(cmd) = hso["updatedInput"]["command"].as_str() else {
                return Err(format!(
                    "the installed hook refuses the sample call: {}",
                    hso["permissionDecisionReason"].as_str().unwrap_or("")
                ));
            };
            println!("wrapped:   {}", crate::error::one_line(cmd));
            let mut c = std::process::Command::new("/bin/sh");
            c.arg("-c").arg(cmd);
            c
        }
    };
    c.stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run the sample: {e}"))
}
