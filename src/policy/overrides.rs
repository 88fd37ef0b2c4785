//! The command-line overrides of the policy: each flag is defined here once,
//! with its docs, as the clap argument group that a run, `explain`, `hook`
//! and (for `GateArgs`) `worktree enter` parse into; merging them into a
//! policy is `Policy::apply`. `None`/empty means "not given".
//!
//! `display_order` keeps `--help` (and the completion scripts, which follow
//! it) in the order the options have always been listed, although the three
//! flags `worktree enter` shares sit in their own group.

use super::{
    Approval, BackendChoice, Mode, NetMode, Outcome, Policy, PolicyFormat, SandboxMode, Tool,
    Verdict,
};
use crate::error::{Refusal, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// What loading the policy and the plan-mode gate need: shared by a run,
/// `explain` and `worktree enter`.
#[derive(Args, Clone, Debug, Default)]
pub struct GateArgs {
    /// Policy file (TOML or JSON); also from env DCJAIL_POLICY. Default: the embedded profile
    #[arg(long, value_name = "FILE", display_order = 100)]
    pub policy: Option<PathBuf>,
    /// Agent mode: default, acceptEdits, plan, auto, dontAsk, bypassPermissions
    #[arg(long, value_name = "MODE", display_order = 103)]
    pub mode: Option<Mode>,
    /// Append plan-blocked calls to this file
    #[arg(long, value_name = "FILE", display_order = 111)]
    pub plan_card: Option<PathBuf>,
}

/// Options shared by a run and `explain`: each overrides one policy field.
#[derive(Args, Clone, Debug, Default)]
pub struct Overrides {
    #[command(flatten)]
    pub gate: GateArgs,
    /// Read the policy from inherited descriptor N (3 or above) instead of a file
    #[arg(long, value_name = "N", conflicts_with = "policy", display_order = 101)]
    pub policy_fd: Option<u32>,
    /// How to read the policy: dcjail, srt, claude-code, codex (another tool's settings)
    #[arg(long, value_name = "FORMAT", display_order = 102)]
    pub policy_format: Option<PolicyFormat>,
    /// Kind of call: read, edit, write, bash, net
    #[arg(long, value_name = "KIND", display_order = 104)]
    pub tool: Option<Tool>,
    /// Permission outcome: allow, ask, deny
    #[arg(long, value_name = "OUTCOME", display_order = 105)]
    pub permission: Option<Outcome>,
    /// The permission rule that matched (quoted in messages)
    #[arg(long, value_name = "TEXT", display_order = 106)]
    pub rule: Option<String>,
    /// The user's answer: none, granted, rejected
    #[arg(long, value_name = "ANSWER", display_order = 107)]
    pub approval: Option<Approval>,
    /// Auto-mode classifier verdict: allow, soft_deny, hard_deny
    #[arg(long, value_name = "VERDICT", display_order = 108)]
    pub classifier: Option<Verdict>,
    /// A path the call says it will touch (repeatable)
    #[arg(long = "path", value_name = "P", display_order = 109)]
    pub paths: Vec<PathBuf>,
    /// Run inside this git worktree (it becomes the cwd)
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath, display_order = 110)]
    pub worktree: Option<PathBuf>,
    /// Turn the sandbox off (sandbox.enabled = false)
    #[arg(long, display_order = 112)]
    pub no_sandbox: bool,
    /// Filesystem access: read-only, workspace-write, danger-full-access
    #[arg(long, value_name = "MODE", display_order = 113)]
    pub sandbox_mode: Option<SandboxMode>,
    /// Sandbox backend: auto, bwrap, landlock, seatbelt
    #[arg(long, value_name = "NAME", display_order = 114)]
    pub backend: Option<BackendChoice>,
    /// Workspace root (default: the current directory)
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath, display_order = 115)]
    pub workspace: Option<PathBuf>,
    /// Re-allow reading P inside a deny_read path (repeatable)
    #[arg(long, value_name = "P", display_order = 116)]
    pub allow_read: Vec<PathBuf>,
    /// Make P unreadable; globs allowed (repeatable)
    #[arg(long, value_name = "P", display_order = 117)]
    pub deny_read: Vec<PathBuf>,
    /// Add P to the writable roots (repeatable)
    #[arg(long, value_name = "P", display_order = 118)]
    pub allow_write: Vec<PathBuf>,
    /// Make P unwritable; globs allowed (repeatable)
    #[arg(long, value_name = "P", display_order = 119)]
    pub deny_write: Vec<PathBuf>,
    /// Do not protect the built-in paths (.git/hooks, .bashrc, ...) inside writable roots
    #[arg(long, display_order = 120)]
    pub no_protect_defaults: bool,
    /// Network: none, allowlist, full
    #[arg(long, value_name = "MODE", display_order = 121)]
    pub net: Option<NetMode>,
    /// Allow this domain through the proxy (repeatable); without --net it means --net allowlist
    #[arg(long = "allow-domain", value_name = "D", display_order = 122)]
    pub allow_domains: Vec<String>,
    /// Deny this domain, checked first (repeatable)
    #[arg(long = "deny-domain", value_name = "D", display_order = 123)]
    pub deny_domains: Vec<String>,
    /// Let the command create unix sockets (ssh-agent, gpg-agent...): any socket file it sees is reachable
    #[arg(long, display_order = 124)]
    pub allow_unix_sockets: bool,
    /// Kill the whole command tree after DURATION (exit 124): 1.5, 90s, 5m, 1h, 2d; 0 = none
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = crate::duration::parse,
        allow_hyphen_values = true,
        display_order = 125
    )]
    pub timeout: Option<Duration>,
    /// Let the command inherit variable NAME (a glob allowed) although it looks like a credential (repeatable)
    #[arg(long, value_name = "NAME", display_order = 126)]
    pub env_pass: Vec<String>,
    /// Remove variable NAME (a glob allowed) from the command's environment; beats --env-pass (repeatable)
    #[arg(long, value_name = "NAME", display_order = 127)]
    pub env_deny: Vec<String>,
}

/// Where the next option after the policy group goes in `--help` (`--report`).
pub const NEXT_DISPLAY_ORDER: usize = 128;

impl Overrides {
    /// Refuses options that contradict each other.
    pub fn check(&self) -> Result<()> {
        if let (Some(NetMode::None), Some(d)) = (self.net, self.allow_domains.first()) {
            return Err(Refusal::usage(format!(
                "`--allow-domain {}` with `--net none`: naming a domain to allow needs the allowlist; drop `--net none` (`--allow-domain` alone means `--net allowlist`) or the domain",
                crate::error::one_line(d)
            )));
        }
        Ok(())
    }
}

impl Policy {
    /// Applies command-line overrides: scalars replace, repeatable ones add.
    pub fn apply(&mut self, o: &Overrides) {
        if let Some(v) = o.gate.mode {
            self.mode = v;
        }
        if let Some(v) = o.tool {
            self.tool = v;
        }
        if let Some(v) = o.permission {
            self.permission.outcome = v;
        }
        if let Some(v) = &o.rule {
            self.permission.rule = v.clone();
        }
        if let Some(v) = o.approval {
            self.permission.approval = v;
        }
        if let Some(v) = o.classifier {
            self.classifier.verdict = Some(v);
        }
        self.paths.extend(o.paths.iter().cloned());
        if let Some(v) = &o.worktree {
            self.worktree.root = Some(v.clone());
        }
        if let Some(v) = &o.gate.plan_card {
            self.plan.card = Some(v.clone());
        }
        self.apply_sandbox(o);
    }

    fn apply_sandbox(&mut self, o: &Overrides) {
        if o.no_sandbox {
            self.sandbox.enabled = false;
        }
        if let Some(v) = o.sandbox_mode {
            self.sandbox.mode = v;
        }
        if let Some(v) = o.backend {
            self.sandbox.backend = v;
        }
        if let Some(v) = &o.workspace {
            self.sandbox.workspace = Some(v.clone());
        }
        let fs = &mut self.sandbox.filesystem;
        fs.allow_read.extend(o.allow_read.iter().cloned());
        fs.deny_read.extend(o.deny_read.iter().cloned());
        fs.allow_write.extend(o.allow_write.iter().cloned());
        fs.deny_write.extend(o.deny_write.iter().cloned());
        if o.no_protect_defaults {
            fs.protect_defaults = false;
        }
        let net = &mut self.sandbox.network;
        // Naming a domain to allow means the allowlist (`check` refuses
        // `--net none` beside it).
        match o.net {
            Some(v) => net.mode = v,
            None if !o.allow_domains.is_empty() => net.mode = NetMode::Allowlist,
            None => {}
        }
        if o.allow_unix_sockets {
            net.allow_unix_sockets = true;
        }
        net.allow_domains.extend(o.allow_domains.iter().cloned());
        net.deny_domains.extend(o.deny_domains.iter().cloned());
        if let Some(v) = o.timeout {
            self.sandbox.timeout = v;
        }
        let env = &mut self.sandbox.env;
        env.pass.extend(o.env_pass.iter().cloned());
        env.deny.extend(o.env_deny.iter().cloned());
    }
}
