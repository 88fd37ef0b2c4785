//! Where an agent's session lives: the project root the agent was started
//! in, found from what the agent itself sets up (its own process, the
//! variables it puts in a hook's environment), never from a field of the
//! tool call, which the model writes (Codex passes the call's `workdir` as
//! the hook's `cwd`; a `cd` moves Claude Code's). It reads /proc and the
//! environment; it never decides.

use crate::error::{Gate, Reason, Refusal};
use std::path::{Path, PathBuf};

/// How many ancestors are looked at for the agent's own process: the
/// shell an agent starts a hook or a command with, and that shell's child.
const MAX_DEPTH: usize = 6;

/// The cwd of the nearest ancestor process whose executable is `exe`
/// (canonical): the agent that started this process, which never changes
/// its own directory while it runs a session.
pub fn ancestor_cwd(exe: &Path) -> Option<PathBuf> {
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..MAX_DEPTH {
        if pid <= 1 {
            return None;
        }
        let proc = PathBuf::from(format!("/proc/{pid}"));
        if std::fs::read_link(proc.join("exe")).ok().as_deref() == Some(exe) {
            return std::fs::read_link(proc.join("cwd")).ok();
        }
        pid = parent_of(pid)?;
    }
    None
}

/// The parent pid of `pid`, from /proc/PID/stat (the field after the
/// command name, which may itself hold spaces and parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// An absolute directory from the environment variable `name`, canonical.
pub fn env_dir(name: &str) -> Option<PathBuf> {
    let v = std::env::var_os(name).filter(|v| !v.is_empty())?;
    let p = PathBuf::from(v);
    if !p.is_absolute() {
        return None;
    }
    std::fs::canonicalize(p).ok()
}

/// The project Claude Code was started in. Its Bash calls (through the
/// shell prefix) carry `CLAUDE_CODE_EXECPATH`, and Claude Code itself is
/// their parent: its cwd is the project. Hooks and MCP servers get
/// `CLAUDE_PROJECT_DIR`, which Claude Code sets for them.
pub fn claude_project() -> Result<PathBuf, Refusal> {
    if let Some(exe) = std::env::var_os("CLAUDE_CODE_EXECPATH").filter(|v| !v.is_empty()) {
        let exe = std::fs::canonicalize(&exe).unwrap_or_else(|_| PathBuf::from(&exe));
        return ancestor_cwd(&exe).ok_or_else(|| {
            unknown(&format!(
                "no process above this one is Claude Code (`{}`)",
                exe.display()
            ))
        });
    }
    env_dir("CLAUDE_PROJECT_DIR")
        .ok_or_else(|| unknown("neither CLAUDE_CODE_EXECPATH nor CLAUDE_PROJECT_DIR is set"))
}

/// The project Codex was started in: Codex starts every hook in the
/// session's directory (its `--cd` included), whatever `workdir` the model
/// gave the call, which arrives as the input's `cwd` instead.
pub fn codex_project() -> Result<PathBuf, Refusal> {
    std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| {
            unknown(&format!(
                "the hook's directory: {}",
                crate::policy::io_words(&e)
            ))
        })
}

fn unknown(why: &str) -> Refusal {
    Refusal::policy(format!(
        "cannot tell which project the agent was started in ({why}); name it with `sandbox.workspace` in the policy"
    ))
}

/// The refusal for a call whose directory lies outside the session's
/// workspace: the model chose it, and it never widens what may be written.
pub fn outside(cwd: &Path, workspace: &Path) -> Refusal {
    Refusal::new(
        Reason::SandboxDenied,
        Some(Gate::Sandbox),
        format!(
            "the call's directory `{}` is outside the session's workspace `{}`",
            cwd.display(),
            workspace.display()
        ),
    )
}

/// `dir` (made canonical) when it lies inside `workspace`.
pub fn inside(dir: &Path, workspace: &Path) -> Result<PathBuf, Refusal> {
    let canon = std::fs::canonicalize(dir).map_err(|e| {
        Refusal::policy(format!(
            "the call's directory `{}`: {}",
            dir.display(),
            crate::policy::io_words(&e)
        ))
    })?;
    if canon.starts_with(workspace) {
        Ok(canon)
    } else {
        Err(outside(&canon, workspace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_of_a_process_is_read_past_a_name_with_parentheses() {
        let me = std::process::id();
        assert_eq!(parent_of(me), Some(std::os::unix::process::parent_id()));
    }

    #[test]
    fn an_ancestor_that_is_not_the_agent_is_not_found() {
        assert_eq!(ancestor_cwd(Path::new("/nonexistent/agent")), None);
    }
}
