//! The policy as a flat list of dotted fields (`sandbox.network.mode`):
//! what `dcjail import` prints as TOML, and what `explain` uses to say where
//! each field's value came from (`sources`). Pure: it only reads a policy
//! and the command-line overrides.

use crate::policy::{Overrides, Policy};
use std::path::PathBuf;

/// One field's value, as the schema writes it: what `import` prints as TOML
/// and what `explain` compares against the defaults.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// Not set (`version` absent).
    Absent,
    Str(String),
    Int(i64),
    Bool(bool),
    List(Vec<String>),
}

fn path_str(p: &Option<PathBuf>) -> FieldValue {
    FieldValue::Str(
        p.as_ref()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
    )
}

/// Whole seconds as the integer the schema has always taken; a fraction as
/// timeout(1)'s syntax, which reads back to the same duration.
fn duration(d: std::time::Duration) -> FieldValue {
    if d.subsec_nanos() == 0 {
        FieldValue::Int(i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    } else {
        FieldValue::Str(format!("{}s", d.as_secs_f64()))
    }
}

fn path_list(v: &[PathBuf]) -> FieldValue {
    FieldValue::List(v.iter().map(|p| p.to_string_lossy().into_owned()).collect())
}

impl Policy {
    /// Every leaf field of the schema with its dotted name, in the order of
    /// the schema (top-level keys, then each table).
    pub fn fields(&self) -> Vec<(&'static str, FieldValue)> {
        use FieldValue::*;
        let (fs, net) = (&self.sandbox.filesystem, &self.sandbox.network);
        vec![
            ("version", self.version.map(Int).unwrap_or(Absent)),
            ("mode", Str(self.mode.word().into())),
            ("tool", Str(self.tool.word().into())),
            ("paths", path_list(&self.paths)),
            (
                "permission.outcome",
                Str(self.permission.outcome.word().into()),
            ),
            ("permission.rule", Str(self.permission.rule.clone())),
            (
                "permission.approval",
                Str(self.permission.approval.word().into()),
            ),
            (
                "classifier.verdict",
                Str(self
                    .classifier
                    .verdict
                    .map(|v| v.word())
                    .unwrap_or("")
                    .into()),
            ),
            ("classifier.reason", Str(self.classifier.reason.clone())),
            ("worktree.root", path_str(&self.worktree.root)),
            ("plan.card", path_str(&self.plan.card)),
            ("sandbox.enabled", Bool(self.sandbox.enabled)),
            ("sandbox.mode", Str(self.sandbox.mode.word().into())),
            ("sandbox.backend", Str(self.sandbox.backend.word().into())),
            ("sandbox.workspace", path_str(&self.sandbox.workspace)),
            ("sandbox.timeout", duration(self.sandbox.timeout)),
            ("sandbox.filesystem.allow_read", path_list(&fs.allow_read)),
            ("sandbox.filesystem.deny_read", path_list(&fs.deny_read)),
            ("sandbox.filesystem.allow_write", path_list(&fs.allow_write)),
            ("sandbox.filesystem.deny_write", path_list(&fs.deny_write)),
            (
                "sandbox.filesystem.protect_defaults",
                Bool(fs.protect_defaults),
            ),
            ("sandbox.network.mode", Str(net.mode.word().into())),
            (
                "sandbox.network.allow_domains",
                FieldValue::List(net.allow_domains.clone()),
            ),
            (
                "sandbox.network.deny_domains",
                FieldValue::List(net.deny_domains.clone()),
            ),
            (
                "sandbox.network.allow_unix_sockets",
                Bool(net.allow_unix_sockets),
            ),
            (
                "sandbox.env.scrub_credentials",
                Bool(self.sandbox.env.scrub_credentials),
            ),
            (
                "sandbox.env.pass",
                FieldValue::List(self.sandbox.env.pass.clone()),
            ),
            (
                "sandbox.env.deny",
                FieldValue::List(self.sandbox.env.deny.clone()),
            ),
        ]
    }

    /// Where each field's value came from, for `explain`, given the policy
    /// as loaded (before `o` is applied): the command-line option that set
    /// it, the other tool's setting it was imported from, `from_file` (the
    /// file, the descriptor or the embedded profile) for a value that differs
    /// from the schema default, or `default`. A repeatable option adds to
    /// what the file said; any other replaces it.
    pub fn sources(&self, o: &Overrides, from_file: &str) -> Vec<(&'static str, String)> {
        let defaults = Policy::default().fields();
        let flags = o.flags();
        self.fields()
            .into_iter()
            .zip(defaults)
            .map(|((field, value), (_, default))| {
                let flag = flags
                    .iter()
                    .find(|(f, _)| *f == field)
                    .map(|(_, g)| g.as_str());
                let adds = matches!(value, FieldValue::List(_));
                let mut from: Vec<String> = Vec::new();
                if flag.is_none() || adds {
                    from.extend(
                        self.origins
                            .iter()
                            .filter(|o| o.field == field)
                            .map(|o| o.from.clone()),
                    );
                    if from.is_empty() && value != default {
                        from.push(from_file.to_string());
                    }
                }
                if let Some(flag) = flag {
                    from.push(flag.to_string());
                }
                if from.is_empty() {
                    from.push("default".into());
                }
                (field, from.join(" + "))
            })
            .collect()
    }
}

impl Overrides {
    /// The fields these overrides set, each with the option that sets it
    /// (its name taken from the option's one definition, `Overrides`).
    pub fn flags(&self) -> Vec<(&'static str, String)> {
        // (given, policy field, clap id of the option)
        let given: [(bool, &'static str, &str); 26] = [
            (self.gate.mode.is_some(), "mode", "mode"),
            (self.tool.is_some(), "tool", "tool"),
            (!self.paths.is_empty(), "paths", "paths"),
            (
                self.permission.is_some(),
                "permission.outcome",
                "permission",
            ),
            (self.rule.is_some(), "permission.rule", "rule"),
            (self.approval.is_some(), "permission.approval", "approval"),
            (
                self.classifier.is_some(),
                "classifier.verdict",
                "classifier",
            ),
            (self.worktree.is_some(), "worktree.root", "worktree"),
            (self.gate.plan_card.is_some(), "plan.card", "plan_card"),
            (self.no_sandbox, "sandbox.enabled", "no_sandbox"),
            (self.sandbox_mode.is_some(), "sandbox.mode", "sandbox_mode"),
            (self.backend.is_some(), "sandbox.backend", "backend"),
            (self.workspace.is_some(), "sandbox.workspace", "workspace"),
            (self.timeout.is_some(), "sandbox.timeout", "timeout"),
            (
                !self.allow_read.is_empty(),
                "sandbox.filesystem.allow_read",
                "allow_read",
            ),
            (
                !self.deny_read.is_empty(),
                "sandbox.filesystem.deny_read",
                "deny_read",
            ),
            (
                !self.allow_write.is_empty(),
                "sandbox.filesystem.allow_write",
                "allow_write",
            ),
            (
                !self.deny_write.is_empty(),
                "sandbox.filesystem.deny_write",
                "deny_write",
            ),
            (
                self.no_protect_defaults,
                "sandbox.filesystem.protect_defaults",
                "no_protect_defaults",
            ),
            (self.net.is_some(), "sandbox.network.mode", "net"),
            (
                self.net.is_none() && !self.allow_domains.is_empty(),
                "sandbox.network.mode",
                "allow_domains",
            ),
            (
                !self.allow_domains.is_empty(),
                "sandbox.network.allow_domains",
                "allow_domains",
            ),
            (
                !self.deny_domains.is_empty(),
                "sandbox.network.deny_domains",
                "deny_domains",
            ),
            (
                self.allow_unix_sockets,
                "sandbox.network.allow_unix_sockets",
                "allow_unix_sockets",
            ),
            (!self.env_pass.is_empty(), "sandbox.env.pass", "env_pass"),
            (!self.env_deny.is_empty(), "sandbox.env.deny", "env_deny"),
        ];
        let cmd = <Overrides as clap::Args>::augment_args(clap::Command::new("dcjail"));
        let long = |id: &str| {
            cmd.get_arguments()
                .find(|a| a.get_id() == id)
                .and_then(|a| a.get_long())
                .map(|l| format!("--{l}"))
                .unwrap_or_else(|| id.to_string())
        };
        given
            .into_iter()
            .filter(|(set, _, _)| *set)
            .map(|(_, field, id)| (field, long(id)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_an_option_sets_is_named_by_that_options_own_long_name() {
        let o = Overrides {
            gate: crate::policy::GateArgs {
                policy: None,
                mode: Some(crate::policy::Mode::Plan),
                plan_card: Some("c".into()),
            },
            tool: Some(crate::policy::Tool::Read),
            permission: Some(crate::policy::Outcome::Allow),
            rule: Some("r".into()),
            approval: Some(crate::policy::Approval::Granted),
            classifier: Some(crate::policy::Verdict::Allow),
            paths: vec!["p".into()],
            worktree: Some("w".into()),
            no_sandbox: true,
            sandbox_mode: Some(crate::policy::SandboxMode::ReadOnly),
            backend: Some(crate::policy::BackendChoice::Auto),
            workspace: Some("ws".into()),
            allow_read: vec!["a".into()],
            deny_read: vec!["d".into()],
            allow_write: vec!["a".into()],
            deny_write: vec!["d".into()],
            no_protect_defaults: true,
            net: Some(crate::policy::NetMode::Full),
            allow_domains: vec!["x.example".into()],
            deny_domains: vec!["y.example".into()],
            allow_unix_sockets: true,
            timeout: Some(std::time::Duration::from_secs(1)),
            ..Overrides::default()
        };
        let flags = o.flags();
        let fields: Vec<&str> = Policy::default().fields().iter().map(|f| f.0).collect();
        assert_eq!(flags.len(), 23, "{flags:?}");
        for (field, flag) in &flags {
            assert!(fields.contains(field), "{field}");
            assert!(flag.starts_with("--") && !flag.contains('_'), "{flag}");
        }
        assert!(flags.contains(&("plan.card", "--plan-card".to_string())));
        assert!(flags.contains(&(
            "sandbox.network.allow_domains",
            "--allow-domain".to_string()
        )));
    }
}
