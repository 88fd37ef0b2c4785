//! The gate chain, gates 1–4: mode, permission, classifier and
//! approval. Pure: it reads the policy and nothing else, never the filesystem,
//! the environment or the kernel. Gates 5 (worktree) and 6 (sandbox) need the
//! filesystem and live in `plan` and `backend`.

use crate::error::{Gate, Reason, Refusal};
use crate::policy::{Approval, Mode, Outcome, Policy, Tool, Verdict};

/// The inputs of gates 1–4, so tests can enumerate every combination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    pub mode: Mode,
    pub tool: Tool,
    pub outcome: Outcome,
    pub approval: Approval,
    pub verdict: Option<Verdict>,
}

impl Call {
    pub fn of(p: &Policy) -> Call {
        Call {
            mode: p.mode,
            tool: p.tool,
            outcome: p.permission.outcome,
            approval: p.permission.approval,
            verdict: p.classifier.verdict,
        }
    }
}

/// Who has to say yes before the call may go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    Nobody,
    User,
    /// The auto-mode classifier soft-denied: the user decides.
    UserForClassifier,
}

/// Runs gates 1–4. `Ok(())` means the call goes on to the worktree and
/// sandbox gates; `bypassPermissions` always does.
pub fn gates(p: &Policy) -> Result<(), Refusal> {
    check(Call::of(p), &p.permission.rule, &p.classifier.reason).map_err(|mut r| {
        if r.reason == Reason::ApprovalRequired {
            r.message
                .push_str(&approval_hint(p.named_source().as_deref()));
        }
        r
    })
}

/// The gate of `worktree enter`: plan mode makes no worktree (mode is the
/// only gate a call that runs nothing meets).
pub fn enter_worktree(p: &Policy) -> Result<(), Refusal> {
    if p.mode == Mode::Plan {
        return Err(Refusal::new(
            Reason::PlanBlocked,
            Some(Gate::Mode),
            "cannot enter worktree in plan mode",
        ));
    }
    Ok(())
}

/// What to add for an approval, said where the policy came from: a policy
/// file or descriptor starts from the schema's `approval = "none"`, while
/// the embedded default (no policy named) takes the person who typed the
/// command as having approved it, which is why a first hand-written policy
/// meets this refusal.
fn approval_hint(source: Option<&str>) -> String {
    match source {
        Some(s) => format!(
            ": pass --approval granted, or set permission.approval = \"granted\" in {s} (a policy file starts from approval = \"none\"; only the embedded default, used when no policy is named, counts the person who typed the command as approving it)"
        ),
        None => ": pass --approval granted".to_string(),
    }
}

pub fn check(c: Call, rule: &str, classifier_reason: &str) -> Result<(), Refusal> {
    if c.mode == Mode::BypassPermissions {
        return Ok(());
    }
    // 1. mode
    if c.mode == Mode::Plan && c.tool.is_mutating() {
        return Err(Refusal::new(
            Reason::PlanBlocked,
            Some(Gate::Mode),
            format!("plan mode does not run `{}` calls", c.tool),
        ));
    }
    // 2. permission
    if c.outcome == Outcome::Deny {
        return Err(Refusal::new(
            Reason::PermissionDenied,
            Some(Gate::Permission),
            with_rule(
                format!("`{}` call denied by the permission rules", c.tool),
                rule,
            ),
        ));
    }
    // 3. classifier
    let mut need = Need::Nobody;
    if c.mode == Mode::Auto && c.tool.is_mutating() {
        match c.verdict {
            Some(Verdict::HardDeny) => {
                return Err(Refusal::new(
                    Reason::AutoHardDeny,
                    Some(Gate::Classifier),
                    with_reason(
                        "the auto-mode classifier refused this call",
                        classifier_reason,
                    ),
                ))
            }
            Some(Verdict::SoftDeny) | None => need = Need::UserForClassifier,
            Some(Verdict::Allow) => {}
        }
    }
    // 4. approval
    if need == Need::Nobody {
        need = match (c.mode, c.tool, c.outcome) {
            (Mode::DontAsk, _, Outcome::Ask) => {
                return Err(Refusal::new(
                    Reason::ModeDenied,
                    Some(Gate::Approval),
                    with_rule(
                        format!(
                            "dontAsk mode never asks, and this `{}` call needs approval",
                            c.tool
                        ),
                        rule,
                    ),
                ))
            }
            (Mode::DontAsk, _, _) => Need::Nobody,
            (_, Tool::Read | Tool::Net, Outcome::Allow) => Need::Nobody,
            (_, Tool::Read | Tool::Net, _) => Need::User,
            (Mode::AcceptEdits, Tool::Edit | Tool::Write, _) => Need::Nobody,
            (
                Mode::AcceptEdits | Mode::Auto,
                Tool::Bash | Tool::Edit | Tool::Write,
                Outcome::Allow,
            ) => Need::Nobody,
            _ => Need::User,
        };
    }
    match (need, c.approval) {
        (Need::Nobody, _) | (_, Approval::Granted) => Ok(()),
        (Need::User, Approval::Rejected) => Err(Refusal::new(
            Reason::UserRejected,
            Some(Gate::Approval),
            with_rule(format!("the user rejected this `{}` call", c.tool), rule),
        )),
        (Need::UserForClassifier, Approval::Rejected) => Err(Refusal::new(
            Reason::AutoSoftDenyUserRejected,
            Some(Gate::Approval),
            with_reason(
                &format!(
                    "the classifier asked and the user rejected this `{}` call",
                    c.tool
                ),
                classifier_reason,
            ),
        )),
        (_, Approval::None) => Err(Refusal::new(
            Reason::ApprovalRequired,
            Some(Gate::Approval),
            format!(
                "this `{}` call in {} mode needs the user's approval",
                c.tool, c.mode
            ),
        )),
    }
}

fn with_rule(msg: String, rule: &str) -> String {
    if rule.is_empty() {
        msg
    } else {
        format!("{msg} (rule: {rule})")
    }
}

fn with_reason(msg: &str, reason: &str) -> String {
    if reason.is_empty() {
        msg.to_string()
    } else {
        format!("{msg}: {reason}")
    }
}
