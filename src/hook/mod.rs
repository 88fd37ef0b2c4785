//! `dcjail hook claude-code|codex`: the agent's PreToolUse hook. It reads
//! the hook's JSON on stdin and answers on stdout as the agent documents:
//! a shell (`Bash`) call comes back as `updatedInput` whose command runs the
//! original under dcjail, with the agent's permission mode, its working
//! directory as the workspace and the hook's policy; a call dcjail would
//! refuse comes back as the agent's `deny` with dcjail's one-line reason;
//! any other tool gets no opinion (no output, exit 0).
//!
//! Any failure of the hook itself exits 2 with one line on stderr: both
//! agents read exit 2 as "block this call", while any other status would
//! let the original command run unsandboxed. It decides only through the
//! same pipeline a run uses (`run::decide_and_plan`, then `run::select`) and
//! starts nothing, except the sample command of `--check`.

mod shell;

use crate::error::{Refusal, SUBCOMMAND_FAILED, SUCCESS};
use crate::policy::{Approval, GateArgs, Mode, Overrides, PolicyFormat, Tool};
use clap::Parser;
use serde_json::{json, Map, Value};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

pub use shell::{quote, repair_surrogates};

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
    about = "dcjail hook: answer an agent's PreToolUse hook: a shell call comes back wrapped in dcjail",
    after_help = "Exit status: 0 with the decision JSON on stdout (or nothing, for a tool that is not a shell); 2 when the hook itself fails (one line on stderr), which the agent reads as \"block this call\"."
)]
pub struct HookCli {
    /// The agent: claude-code, codex
    #[arg(value_name = "AGENT")]
    pub agent: Agent,
    /// Policy for the wrapped calls; also from env DCJAIL_POLICY. Default: the embedded profile
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub policy: Option<PathBuf>,
    /// How to read the policy file: dcjail, srt, claude-code, codex
    #[arg(long, value_name = "FORMAT")]
    pub policy_format: Option<PolicyFormat>,
    /// Answer "ask" instead of "allow" (Claude Code only): the user confirms each wrapped call
    #[arg(long)]
    pub ask: bool,
    /// Answer a sample shell call, run the wrapped command and say whether it ran sandboxed
    #[arg(long)]
    pub check: bool,
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
    if input.get("tool_name").and_then(Value::as_str) != Some("Bash") {
        return Ok(None);
    }
    Ok(Some(match shell_call(cli, &input) {
        Ok(wrapped) => wrapped,
        Err(r) => deny(&r),
    }))
}

/// The agent's own "deny", with dcjail's one-line refusal as the reason.
fn deny(r: &Refusal) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": r.line(),
        }
    })
}

/// What a `Bash` call's input says: its tool input, the command, the
/// agent's mode and working directory.
struct Call<'a> {
    tool_input: &'a Map<String, Value>,
    command: &'a str,
    mode: Mode,
    cwd: PathBuf,
}

fn read_call(input: &Map<String, Value>) -> Result<Call<'_>, Refusal> {
    let tool_input = match input.get("tool_input") {
        Some(Value::Object(m)) => m,
        _ => return Err(Refusal::usage("hook input: `tool_input` is not an object")),
    };
    let Some(command) = tool_input.get("command").and_then(Value::as_str) else {
        return Err(Refusal::usage(
            "hook input: the Bash call has no `tool_input.command` string",
        ));
    };
    if command.contains('\0') {
        return Err(Refusal::usage(
            "the command contains a NUL byte, which no shell can run",
        ));
    }
    let mode = match input.get("permission_mode") {
        None | Some(Value::Null) => Mode::Default,
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
        command,
        mode,
        cwd,
    })
}

fn current_dir() -> Result<PathBuf, Refusal> {
    std::env::current_dir().map_err(|e| {
        Refusal::policy(format!(
            "cannot read the current directory: {}",
            crate::policy::io_words(&e)
        ))
    })
}

/// A `Bash` call: decided as dcjail would decide the wrapped run, then
/// rewritten to run under dcjail.
fn shell_call(cli: &HookCli, input: &Map<String, Value>) -> Result<Value, Refusal> {
    let call = read_call(input)?;
    let policy = policy_file(cli)?;
    let auto_allow = auto_allow(cli, policy.as_deref())?;
    // The plan is made where the call will run: relative policy paths and
    // the workspace resolve as they will for the wrapped command.
    std::env::set_current_dir(&call.cwd).map_err(|e| {
        Refusal::policy(format!(
            "cwd `{}`: {}",
            call.cwd.display(),
            crate::policy::io_words(&e)
        ))
    })?;
    let o = Overrides {
        gate: GateArgs {
            policy: policy.clone(),
            mode: Some(call.mode),
            plan_card: None,
        },
        policy_format: cli.policy_format,
        tool: Some(Tool::Bash),
        approval: Some(Approval::Granted),
        workspace: Some(call.cwd.clone()),
        ..Overrides::default()
    };
    let argv = vec![
        OsString::from("bash"),
        OsString::from("-c"),
        OsString::from(call.command),
    ];
    let plan = crate::run::decide_and_plan(&o, argv)?;
    let choice = crate::run::select(&plan)?;
    let wrapped = wrap(cli, call.mode, &call.cwd, policy.as_deref(), call.command)?;
    let mut updated = call.tool_input.clone();
    updated.insert("command".into(), Value::String(wrapped));
    // An unsandboxed call is never approved on the user's behalf.
    let decision = if (cli.ask || auto_allow == Some(false) || !plan.sandboxed)
        && cli.agent == Agent::ClaudeCode
    {
        "ask"
    } else {
        "allow"
    };
    let how = if plan.sandboxed {
        format!(
            "dcjail: runs sandboxed ({} backend, {}, network {})",
            choice.backend_name(),
            plan.fs.access,
            plan.net.mode
        )
    } else {
        "dcjail: runs with the sandbox off (the policy says sandbox.enabled = false)".to_string()
    };
    Ok(json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": how,
            "updatedInput": Value::Object(updated),
        }
    }))
}

/// The policy file for the wrapped calls, absolute: the hook's `--policy`
/// (relative to where the agent started the hook), else `DCJAIL_POLICY`.
fn policy_file(cli: &HookCli) -> Result<Option<PathBuf>, Refusal> {
    let file = cli.policy.clone().or_else(|| {
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

/// Claude Code's `sandbox.autoAllowBashIfSandboxed`, when the policy is a
/// Claude Code settings file.
fn auto_allow(cli: &HookCli, policy: Option<&Path>) -> Result<Option<bool>, Refusal> {
    match (cli.policy_format, policy) {
        (Some(PolicyFormat::ClaudeCode), Some(p)) => {
            let text = crate::policy::read_policy_file(p)?;
            let name = p.display().to_string();
            Ok(crate::import::convert(PolicyFormat::ClaudeCode, &text, &name, Some(p))?.auto_allow)
        }
        _ => Ok(None),
    }
}

/// The command the agent runs instead of `command`: dcjail by absolute
/// path, the call's mode, workspace and policy, then `bash -c` and the
/// original as one single-quoted word, so no byte of it is read by the
/// agent's shell.
pub fn wrap(
    cli: &HookCli,
    mode: Mode,
    cwd: &Path,
    policy: Option<&Path>,
    command: &str,
) -> Result<String, Refusal> {
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
        mode.word().into(),
        "--tool".into(),
        "bash".into(),
        "--approval".into(),
        "granted".into(),
        "--workspace".into(),
        quote(&text(cwd, "cwd")?),
    ];
    if let Some(p) = policy {
        words.push("--policy".into());
        words.push(quote(&text(p, "the policy file")?));
    }
    if let Some(f) = cli.policy_format {
        words.push("--policy-format".into());
        words.push(f.word().into());
    }
    debug_assert!(words
        .iter()
        .skip(1)
        .all(|w| w.starts_with('\'') || shell::plain(w)));
    words.extend(["--".into(), "bash".into(), "-c".into(), quote(command)]);
    Ok(words.join(" "))
}

/// `--check`: a sample shell call through the whole chain on this machine.
fn check(cli: &HookCli) -> i32 {
    let cwd = match std::env::current_dir() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dcjail hook --check: cannot read the current directory: {e}");
            return SUBCOMMAND_FAILED;
        }
    };
    let sample = json!({
        "session_id": "dcjail-check",
        "transcript_path": Value::Null,
        "cwd": cwd.to_string_lossy(),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": "printf 'DCJAIL=%s DCJAIL_BACKEND=%s\\n' \"$DCJAIL\" \"$DCJAIL_BACKEND\""},
        "tool_use_id": "dcjail-check",
    });
    let agent = match cli.agent {
        Agent::ClaudeCode => "claude-code",
        Agent::Codex => "codex",
    };
    let out = match answer(cli, &sample.to_string()) {
        Ok(Some(v)) => v,
        Ok(None) => {
            println!("dcjail hook {agent}: FAILED: a Bash call got no answer");
            return SUBCOMMAND_FAILED;
        }
        Err(r) => {
            println!("dcjail hook {agent}: FAILED: {}", r.line());
            return SUBCOMMAND_FAILED;
        }
    };
    let hso = &out["hookSpecificOutput"];
    let Some(cmd) = hso["updatedInput"]["command"].as_str() else {
        println!(
            "dcjail hook {agent}: FAILED: the sample call is refused: {}",
            hso["permissionDecisionReason"].as_str().unwrap_or("")
        );
        return SUBCOMMAND_FAILED;
    };
    println!(
        "decision:  {}",
        hso["permissionDecision"].as_str().unwrap_or("")
    );
    println!("wrapped:   {cmd}");
    let ran = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .output();
    let text = match ran {
        Ok(o) => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        Err(e) => {
            println!("dcjail hook {agent}: FAILED: cannot run /bin/sh: {e}");
            return SUBCOMMAND_FAILED;
        }
    };
    println!("it printed: {text}");
    if text.starts_with("DCJAIL=1 ") {
        println!(
            "dcjail hook {agent}: ok. To check that the agent itself applies the rewrite, have it run:\n  test \"$DCJAIL\" = 1 && echo sandboxed by dcjail || echo NOT SANDBOXED"
        );
        SUCCESS
    } else {
        println!("dcjail hook {agent}: FAILED: the wrapped command did not run under dcjail");
        SUBCOMMAND_FAILED
    }
}
