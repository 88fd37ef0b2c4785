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
    ///
    /// A file whose first character is `{` is read as JSON, with the same keys
    /// as TOML. An empty `DCJAIL_POLICY` counts as unset.
    #[arg(long, value_name = "FILE", display_order = 100)]
    pub policy: Option<PathBuf>,
    /// Agent mode: default, acceptEdits, plan, auto, dontAsk, bypassPermissions
    ///
    /// The policy's `mode`.
    #[arg(long, value_name = "MODE", display_order = 103)]
    pub mode: Option<Mode>,
    /// Append plan-blocked calls to this file
    ///
    /// The policy's `plan.card`: each plan-blocked call is appended to *FILE* as
    /// one JSON line (the file is created with mode 0600).
    #[arg(long, value_name = "FILE", display_order = 111)]
    pub plan_card: Option<PathBuf>,
}

/// Options shared by a run and `explain`: each overrides one policy field.
#[derive(Args, Clone, Debug, Default)]
pub struct Overrides {
    #[command(flatten)]
    pub gate: GateArgs,
    /// Read the policy from inherited descriptor N (3 or above) instead of a file
    ///
    /// It is read to its end; dcjail then closes it, so the command does not
    /// inherit it. Not with `--policy`; `DCJAIL_POLICY` is then ignored. A
    /// descriptor that is not open, or a policy that does not parse, is a
    /// policy-error (125).
    #[arg(long, value_name = "N", conflicts_with = "policy", display_order = 101)]
    pub policy_fd: Option<u32>,
    /// How to read the policy: dcjail, srt, claude-code, codex (another tool's settings)
    ///
    /// The file or descriptor is read as dcjail's own schema (the default),
    /// Anthropic's sandbox runtime settings JSON, a Claude Code *settings.json*,
    /// or a Codex *config.toml*; see `OTHER TOOLS' SETTINGS`. With a format other
    /// than dcjail a policy must be named.
    #[arg(long, value_name = "FORMAT", display_order = 102)]
    pub policy_format: Option<PolicyFormat>,
    /// Kind of call: read, edit, write, bash, net
    ///
    /// The policy's `tool`: the kind of call this launch is.
    #[arg(long, value_name = "KIND", display_order = 104)]
    pub tool: Option<Tool>,
    /// Permission outcome: allow, ask, deny
    ///
    /// The policy's `permission.outcome`.
    #[arg(long, value_name = "OUTCOME", display_order = 105)]
    pub permission: Option<Outcome>,
    /// The permission rule that matched (quoted in messages)
    ///
    /// The policy's `permission.rule`, quoted in refusal messages.
    #[arg(long, value_name = "TEXT", display_order = 106)]
    pub rule: Option<String>,
    /// The user's answer: none, granted, rejected
    ///
    /// The policy's `permission.approval`: the user's answer, when one was
    /// asked.
    #[arg(long, value_name = "ANSWER", display_order = 107)]
    pub approval: Option<Approval>,
    /// Auto-mode classifier verdict: allow, soft_deny, hard_deny
    ///
    /// The policy's `classifier.verdict`, read only in mode auto.
    #[arg(long, value_name = "VERDICT", display_order = 108)]
    pub classifier: Option<Verdict>,
    /// A path the call says it will touch (repeatable)
    ///
    /// Adds to the policy's `paths`; each is pre-checked against the filesystem
    /// policy.
    #[arg(long = "path", value_name = "P", display_order = 109)]
    pub paths: Vec<PathBuf>,
    /// Run inside this git worktree (it becomes the cwd)
    ///
    /// The policy's `worktree.root`: it becomes the current directory and joins
    /// the readable and writable roots.
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath, display_order = 110)]
    pub worktree: Option<PathBuf>,
    /// Turn the sandbox off (sandbox.enabled = false)
    ///
    /// The only way to turn the sandbox off.
    #[arg(long, display_order = 112)]
    pub no_sandbox: bool,
    /// Filesystem access: read-only, workspace-write, danger-full-access
    ///
    /// The policy's `sandbox.mode`.
    #[arg(long, value_name = "MODE", display_order = 113)]
    pub sandbox_mode: Option<SandboxMode>,
    /// Sandbox backend: auto, bwrap, landlock, seatbelt
    ///
    /// The policy's `sandbox.backend`.
    #[arg(long, value_name = "NAME", display_order = 114)]
    pub backend: Option<BackendChoice>,
    /// Workspace root (default: the current directory)
    ///
    /// The policy's `sandbox.workspace`.
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath, display_order = 115)]
    pub workspace: Option<PathBuf>,
    /// Re-allow reading P inside a deny_read path (repeatable)
    ///
    /// Adds to the policy's `sandbox.filesystem.allow_read`.
    #[arg(long, value_name = "P", display_order = 116)]
    pub allow_read: Vec<PathBuf>,
    /// Make P unreadable; globs allowed (repeatable)
    ///
    /// Adds to the policy's `sandbox.filesystem.deny_read`.
    #[arg(long, value_name = "P", display_order = 117)]
    pub deny_read: Vec<PathBuf>,
    /// Add P to the writable roots (repeatable)
    ///
    /// Adds to the policy's `sandbox.filesystem.allow_write`.
    #[arg(long, value_name = "P", display_order = 118)]
    pub allow_write: Vec<PathBuf>,
    /// Make P unwritable; globs allowed (repeatable)
    ///
    /// Adds to the policy's `sandbox.filesystem.deny_write`.
    #[arg(long, value_name = "P", display_order = 119)]
    pub deny_write: Vec<PathBuf>,
    /// Do not protect the built-in paths (.git/hooks, .bashrc, ...) inside writable roots
    ///
    /// Sets `sandbox.filesystem.protect_defaults = false`: the built-in
    /// protected paths (see `PROTECTED PATHS`) are not kept read-only inside the
    /// writable roots (the policy file, the plan card and dcjail's own binary
    /// still are). This is what lets the landlock backend run `workspace-write`.
    #[arg(long, display_order = 120)]
    pub no_protect_defaults: bool,
    /// Network: none, allowlist, full
    ///
    /// The policy's `sandbox.network.mode`.
    #[arg(long, value_name = "MODE", display_order = 121)]
    pub net: Option<NetMode>,
    /// Allow this domain through the proxy (repeatable); without --net it means --net allowlist
    ///
    /// Adds to the policy's `sandbox.network.allow_domains`. Naming a domain to
    /// allow means the allowlist: without `--net` it sets `sandbox.network.mode`
    /// to `allowlist` (whatever the policy file says); with `--net none` it is a
    /// usage-error (125).
    #[arg(long = "allow-domain", value_name = "D", display_order = 122)]
    pub allow_domains: Vec<String>,
    /// Deny this domain, checked first (repeatable)
    ///
    /// Adds to the policy's `sandbox.network.deny_domains`. Enforced by the
    /// allowlist proxy: with `--net full`, which has no proxy, it is refused
    /// (125).
    #[arg(long = "deny-domain", value_name = "D", display_order = 123)]
    pub deny_domains: Vec<String>,
    /// Let the command connect to this unix socket, or to the sockets in this directory (repeatable): it then drives the program behind it (tmux runs commands)
    ///
    /// Adds to the policy's `sandbox.network.allow_unix_sockets` (ssh-agent,
    /// gpg-agent). The command then drives the program behind the socket with
    /// your rights: a terminal multiplexer's socket (tmux, screen) lets it run
    /// any command outside the sandbox, *docker.sock* start containers. Without a
    /// name, only the sockets the command binds itself are reachable, in every
    /// network mode, `full` included (see `UNIX SOCKETS`).
    #[arg(long = "allow-unix-socket", value_name = "PATH", display_order = 124)]
    pub allow_unix_sockets: Vec<PathBuf>,
    /// Kill the whole command tree after DURATION (exit 124): 1.5, 90s, 5m, 1h, 2d; 0 = none
    ///
    /// The policy's `sandbox.timeout`. *DURATION* is what `timeout`(1) takes:
    /// a number (a fraction and an exponent allowed) with an optional suffix `s`
    /// (seconds, the default), `m`, `h` or `d`. A negative value, anything else,
    /// and more than ten years are a usage-error (125) naming the value.
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = crate::duration::parse,
        allow_hyphen_values = true,
        display_order = 125
    )]
    pub timeout: Option<Duration>,
    /// Let the command inherit variable NAME (a glob allowed) although it looks like a credential (repeatable)
    ///
    /// Adds to the policy's `sandbox.env.pass`.
    #[arg(long, value_name = "NAME", display_order = 126)]
    pub env_pass: Vec<String>,
    /// Remove variable NAME (a glob allowed) from the command's environment; beats --env-pass (repeatable)
    ///
    /// Adds to the policy's `sandbox.env.deny`. A pattern that is empty or holds
    /// `=`, `/` or a blank is a policy error (125).
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
        net.allow_unix_sockets
            .extend(o.allow_unix_sockets.iter().cloned());
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
