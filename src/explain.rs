//! What `dcjail explain` prints and `--report` writes: the decision and the
//! enforcement plan as JSON. It only renders (the pipeline that feeds it is
//! `run::explain`), and writes nothing but the report file it is given.

use crate::backend::{self, Choice};
use crate::error::Refusal;
use crate::plan::{PathRule, Plan};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The order of the top-level keys of `explain` and `--report`: the
/// decision first, then the result, then the plan and the launch detail,
/// which run to hundreds of lines. Other keys follow in name order.
pub const KEY_ORDER: &[&str] = &[
    "decision",
    "reason",
    "gate",
    "message",
    "backend",
    "refusal_status",
    "exit_status",
    "network_denied",
    "passed_over",
    "plan",
    "seatbelt",
    "launch",
    "sources",
];

/// `v` pretty-printed as serde_json does, with an object's top-level keys
/// in [`KEY_ORDER`] (serde_json's map is sorted by name, and its
/// order-keeping feature is not built in).
pub fn ordered_pretty(v: &Value) -> String {
    let Value::Object(m) = v else {
        return serde_json::to_string_pretty(v).unwrap_or_default();
    };
    if m.is_empty() {
        return "{}".to_string();
    }
    let rank = |k: &str| {
        KEY_ORDER
            .iter()
            .position(|o| *o == k)
            .unwrap_or(KEY_ORDER.len())
    };
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    let mut out = String::from("{\n");
    for (i, k) in keys.iter().enumerate() {
        let value = serde_json::to_string_pretty(&m[k.as_str()]).unwrap_or_default();
        out.push_str("  ");
        out.push_str(&serde_json::to_string(k).unwrap_or_default());
        out.push_str(": ");
        out.push_str(&value.replace('\n', "\n  "));
        out.push_str(if i + 1 < keys.len() { ",\n" } else { "\n" });
    }
    out.push('}');
    out
}

/// `sources`: for each policy field, where its value came from: an option,
/// an imported setting of another tool, the policy file (or descriptor, or
/// the embedded profile), or `default`.
pub fn sources_json(
    policy: &crate::policy::Policy,
    o: &crate::policy::Overrides,
    file: Option<&Path>,
) -> Value {
    let imported = o
        .policy_format
        .filter(|f| *f != crate::policy::PolicyFormat::Dcjail)
        .map(|f| format!("{f} import (dcjail's default: the call is taken as approved)"));
    let from = match (imported, file, o.policy_fd) {
        (Some(i), _, _) => i,
        (None, Some(f), _) => format!("policy file {}", f.display()),
        (None, None, Some(n)) => format!("policy descriptor {n}"),
        (None, None, None) => "embedded profile profiles/default.toml".to_string(),
    };
    let mut m = serde_json::Map::new();
    for (field, src) in policy.sources(o, &from) {
        m.insert(field.to_string(), Value::String(src));
    }
    Value::Object(m)
}

pub fn refusal_json(r: &Refusal) -> Value {
    json!({
        "decision": r.reason.decision(),
        "reason": r.reason.word(),
        "gate": r.gate.map(|g| g.word()),
        "message": r.message,
        "refusal_status": r.exit_code(),
        "backend": Value::Null,
        "plan": Value::Null,
    })
}

pub fn run_json(plan: &Plan, choice: &Choice) -> Value {
    let mut v = json!({
        "decision": "run",
        "reason": Value::Null,
        "gate": Value::Null,
        "message": if plan.sandboxed { format!("runs under the {} backend", choice.backend_name()) } else { "runs unsandboxed (sandbox.enabled = false)".to_string() },
        "refusal_status": Value::Null,
        "backend": choice.kind.map(|k| k.name()),
        "passed_over": choice.passed_over.iter().map(|u| json!({"backend": u.backend.name(), "why": u.message()})).collect::<Vec<_>>(),
        "plan": plan_json(plan),
        "launch": backend::describe(plan, choice),
        "layers": backend::layers(choice),
    });
    let t = backend::teardown(choice.kind.filter(|_| plan.sandboxed));
    v["launch"]["teardown"] = json!({
        "mechanism": t.mechanism,
        "bounded": t.bounded,
        "holds": t.words,
    });
    v["plan"]["filesystem"]["glob_walk"] =
        crate::walk::describe(choice.globs.as_ref(), choice.kind.map(|k| k.name()));
    v["plan"]["filesystem"]["hard_links"] = match &choice.links {
        Some(l) => l.describe(),
        None => Value::Null,
    };
    v
}

/// Seconds as an integer when whole, else with the fraction.
fn secs(d: std::time::Duration) -> Value {
    if d.subsec_nanos() == 0 {
        d.as_secs().into()
    } else {
        d.as_secs_f64().into()
    }
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn paths(v: &[PathBuf]) -> Vec<String> {
    v.iter().map(|p| s(p)).collect()
}

fn rules(v: &[PathRule]) -> Vec<String> {
    v.iter()
        .map(|r| match r {
            PathRule::Literal(p) => s(p),
            PathRule::Glob(g) => g.pattern.clone(),
        })
        .collect()
}

pub fn plan_json(plan: &Plan) -> Value {
    json!({
        "argv": plan.argv.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        "cwd": s(&plan.cwd),
        "workspace": s(&plan.workspace),
        "worktree": plan.worktree.as_deref().map(s),
        "mode": plan.mode.word(),
        "tool": plan.tool.word(),
        "sandboxed": plan.sandboxed,
        "filesystem": {
            "access": plan.fs.access.word(),
            "writable": paths(&plan.fs.writable),
            "deny_read": rules(&plan.fs.deny_read),
            "allow_read": rules(&plan.fs.allow_read),
            "deny_write": rules(&plan.fs.deny_write),
            "protected": paths(&plan.fs.protected),
            "held_read_only": paths(&plan.fs.held),
            "own_caches": plan.fs.caches.as_ref().filter(|c| crate::exec::caches::would_work(c)).map(|c| json!({
                "directory": s(&c.root),
                "variables": crate::exec::caches::env_here(c, |k| plan.env.removes(k).is_some())
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), Value::from(without_userinfo(&v.to_string_lossy()))))
                    .collect::<serde_json::Map<String, Value>>(),
            })),
        },
        "network": {
            "mode": plan.effective_net().word(),
            "allow_domains": plan.net.allow.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            "deny_domains": plan.net.deny.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            "allow_unix_sockets": plan.net.allow_unix_sockets,
            "credentials": plan.net.credentials.iter().map(|b| json!({
                "domain": b.domain,
                "port": b.port,
                "header": b.header,
                "from": b.value.sources().iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "upstream_ca": b.upstream_ca,
                "plain_http": b.plain_http,
            })).collect::<Vec<_>>(),
        },
        "timeout": plan.timeout.map(secs),
        "environment": { "removed": removed_env(plan) },
    })
}

/// A variable's value as explain shows it: a URL's `user:password@` (a
/// `GOPROXY` may carry one) becomes `***@`.
fn without_userinfo(v: &str) -> String {
    let mut out = String::new();
    let mut rest = v;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail.find(['/', ',', '|']).unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(at) => {
                out.push_str("***");
                rest = &tail[at..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// The variables of dcjail's environment the command does not get, by name
/// with the reason: never a value.
fn removed_env(plan: &Plan) -> Vec<Value> {
    let mut v: Vec<(String, &str)> = std::env::vars_os()
        .filter_map(|(k, _)| {
            let k = k.to_string_lossy().into_owned();
            plan.env.removes(&k).map(|why| (k, why.word()))
        })
        .collect();
    v.sort();
    v.into_iter()
        .map(|(name, why)| json!({"name": name, "why": why}))
        .collect()
}

/// Writes a run report; a failure is said on stderr, never fatal.
pub fn write_report(path: &Path, v: &Value) {
    let text = ordered_pretty(v) + "\n";
    if let Err(e) = std::fs::write(path, text) {
        eprintln!(
            "dcjail: warning: cannot write report `{}`: {}",
            crate::error::one_line(&path.display().to_string()),
            crate::policy::io_words(&e)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_password_is_not_shown() {
        assert_eq!(
            without_userinfo(
                "file:///h/go/pkg/mod/cache/download,https://u:t@corp.example/p|direct"
            ),
            "file:///h/go/pkg/mod/cache/download,https://***@corp.example/p|direct"
        );
        assert_eq!(without_userinfo("/h/.cache/x"), "/h/.cache/x");
        assert_eq!(without_userinfo("https://a@b@c,x"), "https://***@c,x");
    }

    #[test]
    fn ordered_output_puts_the_decision_first_and_reads_back_the_same() {
        let v = json!({
            "plan": {"b": [1, 2], "a": {"x": null}},
            "launch": {"argv": ["bwrap", "--"]},
            "zeta": "last",
            "message": "runs\nunder \"bwrap\"",
            "decision": "run",
            "backend": "bwrap",
            "reason": null,
            "gate": null,
            "refusal_status": null,
            "passed_over": [],
            "alpha": {},
        });
        let text = ordered_pretty(&v);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
        let keys: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  \"") && !l.starts_with("   "))
            .map(|l| l.trim_start().split('"').nth(1).unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "decision",
                "reason",
                "gate",
                "message",
                "backend",
                "refusal_status",
                "passed_over",
                "plan",
                "launch",
                "alpha",
                "zeta"
            ]
        );
        assert_eq!(ordered_pretty(&json!({})), "{}");
        assert_eq!(ordered_pretty(&json!([1])), "[\n  1\n]");
    }
}
