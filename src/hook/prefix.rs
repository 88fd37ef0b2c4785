//! dcjail as Claude Code's `CLAUDE_CODE_SHELL_PREFIX`. Claude Code runs
//! each Bash call as `PREFIX '<the command line it built>'` *after* its own
//! permission rules have decided on the model's original command, so those
//! rules keep matching as they would without dcjail; it also runs
//! shell-form hooks and stdio MCP servers that way. dcjail is then called
//! with exactly one argument, a shell line, and runs it under the hook's
//! policy with the session's project as the workspace: the shell the line
//! was built for, `-c`, the line. Deciding (plan mode, a policy's deny, the
//! file tools) is the PreToolUse hook's part; this part only sandboxes.

use crate::error::Refusal;
use crate::policy::{Approval, GateArgs, Mode, Overrides, SandboxMode, Tool};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The variable Claude Code reads its shell prefix from.
pub const VAR: &str = "CLAUDE_CODE_SHELL_PREFIX";

/// Whether this process is Claude Code's shell prefix: one argument, not an
/// option (`dcjail --version` inside a session stays dcjail's), and
/// `CLAUDE_CODE_SHELL_PREFIX` names this very binary.
pub fn invoked(args: &[OsString]) -> bool {
    args.len() == 2
        && !args[1].as_encoded_bytes().starts_with(b"-")
        && names_dcjail(std::env::var_os(VAR).as_deref())
}

/// Whether the prefix `value` is dcjail itself (the same file).
pub fn names_dcjail(value: Option<&OsStr>) -> bool {
    let Some(v) = value.filter(|v| !v.is_empty()) else {
        return false;
    };
    let (Ok(a), Some(b)) = (std::fs::canonicalize(v), crate::paths::own_exe()) else {
        return false;
    };
    std::fs::canonicalize(b).is_ok_and(|b| a == b)
}

/// The shell the line was built for: Claude Code's `CLAUDE_CODE_SHELL`,
/// else `SHELL` when it is bash or zsh (the shells Claude Code builds its
/// lines for), else bash.
fn shell() -> OsString {
    for var in ["CLAUDE_CODE_SHELL", "SHELL"] {
        if let Some(s) = std::env::var_os(var).filter(|s| !s.is_empty()) {
            let name = Path::new(&s).file_name().map(OsStr::to_os_string);
            if matches!(
                name.as_deref().and_then(OsStr::to_str),
                Some("bash" | "zsh")
            ) {
                return s;
            }
        }
    }
    OsString::from("bash")
}

/// `dcjail LINE` as the shell prefix: the exit status of the line under
/// dcjail, or a refusal's.
pub fn main(line: &OsStr) -> i32 {
    match overrides() {
        Ok(o) => crate::run::run(
            &o,
            None,
            None,
            vec![shell(), OsString::from("-c"), line.to_os_string()],
        ),
        Err(r) => {
            eprintln!("{}", r.line());
            r.exit_code()
        }
    }
}

/// The run's overrides: the hook's policy (`DCJAIL_POLICY`,
/// `DCJAIL_POLICY_FORMAT`), or with none the agent default (the project
/// writable, no network); the project as the workspace unless the policy
/// names one; and no gate but the sandbox's, since the hook decided.
fn overrides() -> Result<Overrides, Refusal> {
    let policy = super::policy_file(None)?;
    let format = super::policy_format_env()?;
    let mut o = Overrides {
        gate: GateArgs {
            policy: policy.clone(),
            mode: Some(Mode::BypassPermissions),
            plan_card: None,
        },
        policy_format: format,
        tool: Some(Tool::Bash),
        approval: Some(Approval::Granted),
        ..Overrides::default()
    };
    if policy.is_none() {
        o.sandbox_mode = Some(SandboxMode::WorkspaceWrite);
    }
    let (p, facts) = crate::run::load(&o, None)?;
    if p.sandbox.workspace.is_none() {
        let root = super::session::claude_project()?;
        super::session::inside(&facts.cwd, &root)?;
        o.workspace = Some(root);
    }
    Ok(o)
}

/// The value to give `CLAUDE_CODE_SHELL_PREFIX`: dcjail's own path.
pub fn value() -> Option<PathBuf> {
    crate::paths::own_exe()
}
