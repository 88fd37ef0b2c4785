//! The one error type of dcjail: every refusal carries a reason word from a
//! closed set, and this module is the only place that maps a reason to an
//! exit status and to the `decision` word `explain` prints.

use std::fmt;

/// Why dcjail refused. The words are part of the contract (the man page's
/// EXIT STATUS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    PlanBlocked,
    ModeDenied,
    PermissionDenied,
    AutoHardDeny,
    UserRejected,
    AutoSoftDenyUserRejected,
    ApprovalRequired,
    SandboxDenied,
    SandboxUnavailable,
    PolicyError,
    UsageError,
}

impl Reason {
    pub const ALL: &'static [Reason] = &[
        Reason::PlanBlocked,
        Reason::ModeDenied,
        Reason::PermissionDenied,
        Reason::AutoHardDeny,
        Reason::UserRejected,
        Reason::AutoSoftDenyUserRejected,
        Reason::ApprovalRequired,
        Reason::SandboxDenied,
        Reason::SandboxUnavailable,
        Reason::PolicyError,
        Reason::UsageError,
    ];

    pub fn word(self) -> &'static str {
        match self {
            Reason::PlanBlocked => "plan-blocked",
            Reason::ModeDenied => "mode-denied",
            Reason::PermissionDenied => "permission-denied",
            Reason::AutoHardDeny => "auto-hard-deny",
            Reason::UserRejected => "user-rejected",
            Reason::AutoSoftDenyUserRejected => "auto-soft-deny-user-rejected",
            Reason::ApprovalRequired => "approval-required",
            Reason::SandboxDenied => "sandbox-denied",
            Reason::SandboxUnavailable => "sandbox-unavailable",
            Reason::PolicyError => "policy-error",
            Reason::UsageError => "usage-error",
        }
    }

    pub fn exit_code(self) -> i32 {
        match self {
            Reason::ApprovalRequired => 121,
            Reason::SandboxUnavailable => 122,
            Reason::PolicyError | Reason::UsageError => 125,
            _ => 120,
        }
    }

    /// The `decision` word of `dcjail explain`.
    pub fn decision(self) -> &'static str {
        match self {
            Reason::ApprovalRequired => "ask",
            Reason::SandboxUnavailable => "unavailable",
            Reason::PolicyError | Reason::UsageError => "error",
            _ => "deny",
        }
    }
}

/// The gate that refused, when one did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gate {
    Mode,
    Permission,
    Classifier,
    Approval,
    Worktree,
    Sandbox,
}

impl Gate {
    pub fn word(self) -> &'static str {
        match self {
            Gate::Mode => "mode",
            Gate::Permission => "permission",
            Gate::Classifier => "classifier",
            Gate::Approval => "approval",
            Gate::Worktree => "worktree",
            Gate::Sandbox => "sandbox",
        }
    }
}

/// A refusal: nothing is started, one line goes to stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub reason: Reason,
    pub gate: Option<Gate>,
    pub message: String,
}

impl Refusal {
    pub fn new(reason: Reason, gate: Option<Gate>, message: impl Into<String>) -> Self {
        Refusal {
            reason,
            gate,
            message: message.into(),
        }
    }

    pub fn policy(message: impl Into<String>) -> Self {
        Refusal::new(Reason::PolicyError, None, message)
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Refusal::new(Reason::UsageError, None, message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Refusal::new(Reason::SandboxUnavailable, Some(Gate::Sandbox), message)
    }

    pub fn exit_code(&self) -> i32 {
        self.reason.exit_code()
    }

    /// The single stderr line. Control characters in the message (a path with
    /// a newline, say) are escaped so the refusal stays exactly one line.
    pub fn line(&self) -> String {
        format!(
            "dcjail: {}: {}",
            self.reason.word(),
            one_line(&self.message)
        )
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.line())
    }
}

/// Escapes control characters so that text meant for one line stays on one.
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

pub type Result<T> = std::result::Result<T, Refusal>;

/// Exit status of a subcommand (or `--help`) that did what it was asked.
pub const SUCCESS: i32 = 0;

/// Exit status of a hook that failed: both agents read 2 as "block this
/// call", while any other status would let the original command run.
pub const HOOK_BLOCK: i32 = 2;

/// Exit status of a subcommand that started acting on the machine and
/// failed (`setup apparmor --install` when apparmor_parser refuses): not a
/// refusal of a run, so no reason word; its own one line says what failed.
pub const SUBCOMMAND_FAILED: i32 = 1;

/// Writes `text` to stdout. A reader that went away (`dcjail explain | head`)
/// is not an error of dcjail's: `println!` would panic there, since dcjail
/// ignores SIGPIPE.
pub fn print_out(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
