//! The gate chain (SPEC §4, gates 1–4) over every combination of mode × tool
//! × outcome × approval × classifier verdict, against an independent table,
//! plus the invariants as properties.

use dcjail::decide::{check, Call};
use dcjail::error::Reason;
use dcjail::policy::{Approval, Mode, Outcome, Tool, Verdict};

/// The expected verdict, first matching row wins. `*` matches anything,
/// `a|b` either; verdict `none` means no classifier verdict.
const TABLE: &str = "
# mode               tool             outcome approval  verdict          expect
bypassPermissions    *                *       *         *                run
plan                 edit|write|bash  *       *         *                plan-blocked
*                    *                deny    *         *                permission-denied
auto                 edit|write|bash  *       *         hard_deny        auto-hard-deny
dontAsk              *                ask     *         *                mode-denied
dontAsk              *                allow   *         *                run
auto                 edit|write|bash  *       granted   soft_deny|none   run
auto                 edit|write|bash  *       rejected  soft_deny|none   auto-soft-deny-user-rejected
auto                 edit|write|bash  *       none      soft_deny|none   approval-required
*                    read|net         allow   *         *                run
acceptEdits          edit|write       *       *         *                run
acceptEdits|auto     edit|write|bash  allow   *         *                run
*                    *                *       granted   *                run
*                    *                *       rejected  *                user-rejected
*                    *                *       none      *                approval-required
";

fn verdict_word(v: Option<Verdict>) -> &'static str {
    v.map(|v| v.word()).unwrap_or("none")
}

fn cell(pattern: &str, word: &str) -> bool {
    pattern == "*" || pattern.split('|').any(|p| p == word)
}

fn expected(c: &Call) -> &'static str {
    for line in TABLE.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&'static str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 6, "bad table row: {line}");
        if cell(f[0], c.mode.word())
            && cell(f[1], c.tool.word())
            && cell(f[2], c.outcome.word())
            && cell(f[3], c.approval.word())
            && cell(f[4], verdict_word(c.verdict))
        {
            return f[5];
        }
    }
    panic!("no table row for {c:?}");
}

fn all_calls() -> Vec<Call> {
    let verdicts = [
        None,
        Some(Verdict::Allow),
        Some(Verdict::SoftDeny),
        Some(Verdict::HardDeny),
    ];
    let mut out = Vec::new();
    for &mode in Mode::ALL {
        for &tool in Tool::ALL {
            for &outcome in Outcome::ALL {
                for &approval in Approval::ALL {
                    for verdict in verdicts {
                        out.push(Call {
                            mode,
                            tool,
                            outcome,
                            approval,
                            verdict,
                        });
                    }
                }
            }
        }
    }
    out
}

fn actual(c: Call) -> Result<(), Reason> {
    check(c, "", "").map_err(|r| r.reason)
}

#[test]
fn every_combination_matches_the_decision_table() {
    let calls = all_calls();
    assert_eq!(calls.len(), 6 * 5 * 3 * 3 * 4);
    let mut wrong = Vec::new();
    for c in calls {
        let want = expected(&c);
        let got = match actual(c) {
            Ok(()) => "run",
            Err(r) => r.word(),
        };
        if want != got {
            wrong.push(format!("{c:?}: want {want}, got {got}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} mismatches:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn plan_mode_blocks_edit_write_bash_whatever_the_permission_says() {
    for c in all_calls() {
        if c.mode == Mode::Plan && c.tool.is_mutating() {
            assert_eq!(actual(c), Err(Reason::PlanBlocked), "{c:?}");
        }
    }
}

#[test]
fn plan_mode_lets_reads_and_net_through_to_the_permission_gate() {
    for c in all_calls() {
        if c.mode == Mode::Plan && !c.tool.is_mutating() {
            assert_ne!(actual(c), Err(Reason::PlanBlocked), "{c:?}");
        }
    }
}

#[test]
fn deny_wins_in_every_mode_but_bypass_permissions() {
    for c in all_calls() {
        if c.outcome != Outcome::Deny {
            continue;
        }
        let r = actual(c);
        match c.mode {
            Mode::BypassPermissions => assert_eq!(r, Ok(()), "{c:?}"),
            Mode::Plan if c.tool.is_mutating() => assert_eq!(r, Err(Reason::PlanBlocked)),
            _ => assert_eq!(r, Err(Reason::PermissionDenied), "{c:?}"),
        }
    }
}

#[test]
fn dont_ask_never_yields_approval_required() {
    for c in all_calls().into_iter().filter(|c| c.mode == Mode::DontAsk) {
        let r = actual(c);
        assert_ne!(r, Err(Reason::ApprovalRequired), "{c:?}");
        assert_ne!(r, Err(Reason::UserRejected), "{c:?}");
    }
}

#[test]
fn accept_edits_never_frees_bash_from_ask() {
    for c in all_calls() {
        if c.mode == Mode::AcceptEdits && c.tool == Tool::Bash && c.outcome == Outcome::Ask {
            let want = match c.approval {
                Approval::Granted => Ok(()),
                Approval::Rejected => Err(Reason::UserRejected),
                Approval::None => Err(Reason::ApprovalRequired),
            };
            assert_eq!(actual(c), want, "{c:?}");
        }
    }
}

#[test]
fn bypass_permissions_always_reaches_the_sandbox_gate() {
    for c in all_calls()
        .into_iter()
        .filter(|c| c.mode == Mode::BypassPermissions)
    {
        assert_eq!(actual(c), Ok(()), "{c:?}");
    }
}

#[test]
fn classifier_is_consulted_only_in_auto_mode_for_mutating_tools() {
    for c in all_calls() {
        if c.verdict == Some(Verdict::HardDeny) && actual(c) == Err(Reason::AutoHardDeny) {
            assert!(c.mode == Mode::Auto && c.tool.is_mutating(), "{c:?}");
        }
    }
}

#[test]
fn refusal_messages_quote_the_matching_rule() {
    let c = Call {
        mode: Mode::Default,
        tool: Tool::Bash,
        outcome: Outcome::Deny,
        approval: Approval::Granted,
        verdict: None,
    };
    let r = check(c, "Bash(rm -rf:*)", "").unwrap_err();
    assert!(r.message.contains("Bash(rm -rf:*)"), "{}", r.message);
    assert_eq!(r.exit_code(), 120);
}
