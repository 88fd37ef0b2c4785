//! The command line: flags defined once, here, with their docs; dispatch to
//! run / explain / doctor / worktree / hook / import / setup / help. `main`
//! is only this.

use crate::backend::{self, Choice, Launch};
use crate::error::{Reason, Refusal};
use crate::plan::{self, Facts, Plan};
use crate::policy::{
    Approval, BackendChoice, Mode, NetMode, Outcome, Overrides, Policy, PolicyFormat, SandboxMode,
    Tool, Verdict,
};
use clap::{Args, Parser};
use std::ffi::OsString;
use std::path::PathBuf;

/// Options shared by a run and `explain`: each overrides one policy field.
#[derive(Args, Debug, Default)]
pub struct PolicyArgs {
    /// Policy file (TOML or JSON); also from env DCJAIL_POLICY. Default: the embedded profile
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Read the policy from inherited descriptor N (3 or above) instead of a file
    #[arg(long, value_name = "N", conflicts_with = "policy")]
    pub policy_fd: Option<u32>,
    /// How to read the policy: dcjail, srt, claude-code, codex (another tool's settings)
    #[arg(long, value_name = "FORMAT")]
    pub policy_format: Option<PolicyFormat>,
    /// Agent mode: default, acceptEdits, plan, auto, dontAsk, bypassPermissions
    #[arg(long, value_name = "MODE")]
    pub mode: Option<Mode>,
    /// Kind of call: read, edit, write, bash, net
    #[arg(long, value_name = "KIND")]
    pub tool: Option<Tool>,
    /// Permission outcome: allow, ask, deny
    #[arg(long, value_name = "OUTCOME")]
    pub permission: Option<Outcome>,
    /// The permission rule that matched (quoted in messages)
    #[arg(long, value_name = "TEXT")]
    pub rule: Option<String>,
    /// The user's answer: none, granted, rejected
    #[arg(long, value_name = "ANSWER")]
    pub approval: Option<Approval>,
    /// Auto-mode classifier verdict: allow, soft_deny, hard_deny
    #[arg(long, value_name = "VERDICT")]
    pub classifier: Option<Verdict>,
    /// A path the call says it will touch (repeatable)
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<PathBuf>,
    /// Run inside this git worktree (it becomes the cwd)
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub worktree: Option<PathBuf>,
    /// Append plan-blocked calls to this file
    #[arg(long, value_name = "FILE")]
    pub plan_card: Option<PathBuf>,
    /// Turn the sandbox off (sandbox.enabled = false)
    #[arg(long)]
    pub no_sandbox: bool,
    /// Filesystem access: read-only, workspace-write, danger-full-access
    #[arg(long, value_name = "MODE")]
    pub sandbox_mode: Option<SandboxMode>,
    /// Sandbox backend: auto, bwrap, landlock, seatbelt
    #[arg(long, value_name = "NAME")]
    pub backend: Option<BackendChoice>,
    /// Workspace root (default: the current directory)
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub workspace: Option<PathBuf>,
    /// Re-allow reading P inside a deny_read path (repeatable)
    #[arg(long, value_name = "P")]
    pub allow_read: Vec<PathBuf>,
    /// Make P unreadable; globs allowed (repeatable)
    #[arg(long, value_name = "P")]
    pub deny_read: Vec<PathBuf>,
    /// Add P to the writable roots (repeatable)
    #[arg(long, value_name = "P")]
    pub allow_write: Vec<PathBuf>,
    /// Make P unwritable; globs allowed (repeatable)
    #[arg(long, value_name = "P")]
    pub deny_write: Vec<PathBuf>,
    /// Do not protect the built-in paths (.git/hooks, .bashrc, ...) inside writable roots
    #[arg(long)]
    pub no_protect_defaults: bool,
    /// Network: none, allowlist, full
    #[arg(long, value_name = "MODE")]
    pub net: Option<NetMode>,
    /// Allow this domain through the proxy (repeatable); without --net it means --net allowlist
    #[arg(long, value_name = "D")]
    pub allow_domain: Vec<String>,
    /// Deny this domain, checked first (repeatable)
    #[arg(long, value_name = "D")]
    pub deny_domain: Vec<String>,
    /// Let the command create unix sockets (ssh-agent, gpg-agent...): any socket file it sees is reachable
    #[arg(long)]
    pub allow_unix_sockets: bool,
    /// Kill the whole command tree after DURATION (exit 124): 1.5, 90s, 5m, 1h, 2d; 0 = none
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = crate::duration::parse,
        allow_hyphen_values = true
    )]
    pub timeout: Option<std::time::Duration>,
    /// Write the run's JSON report to FILE
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Stream each denial as one JSON line to descriptor FD while the command runs
    #[arg(long, value_name = "FD")]
    pub events: Option<i32>,
}

impl PolicyArgs {
    fn overrides(&self) -> Overrides {
        Overrides {
            mode: self.mode,
            tool: self.tool,
            permission: self.permission,
            rule: self.rule.clone(),
            approval: self.approval,
            classifier: self.classifier,
            paths: self.paths.clone(),
            worktree: self.worktree.clone(),
            plan_card: self.plan_card.clone(),
            no_sandbox: self.no_sandbox,
            sandbox_mode: self.sandbox_mode,
            backend: self.backend,
            workspace: self.workspace.clone(),
            allow_read: self.allow_read.clone(),
            deny_read: self.deny_read.clone(),
            allow_write: self.allow_write.clone(),
            deny_write: self.deny_write.clone(),
            net: self.net,
            allow_domains: self.allow_domain.clone(),
            deny_domains: self.deny_domain.clone(),
            no_protect_defaults: self.no_protect_defaults,
            allow_unix_sockets: self.allow_unix_sockets,
            timeout: self.timeout,
            policy_fd: self.policy_fd,
            policy_format: self.policy_format,
        }
    }
}

/// dcjail — run a command inside an OS sandbox chosen from a resolved policy.
///
/// Subcommands (as the first word): explain, doctor, worktree, hook, import,
/// setup, help. Anything else is the command to run; `--` before it is the
/// documented form (and the way to run a command named like a subcommand).
#[derive(Parser, Debug)]
#[command(
    name = "dcjail",
    version,
    about = "Run COMMAND inside an OS sandbox under a resolved agent policy",
    override_usage = "dcjail [OPTIONS] [--] COMMAND [ARG]...\n       dcjail explain [OPTIONS] [--] COMMAND [ARG]...\n       dcjail doctor [--json]\n       dcjail hook claude-code|codex [--policy FILE] [--policy-format FORMAT] [--ask] [--check]\n       dcjail import srt|claude-code|codex FILE\n       dcjail worktree enter [--base BRANCH] [--json] [--policy FILE] [--mode MODE] [--plan-card FILE]\n       dcjail worktree exit PATH [--json]\n       dcjail setup apparmor [--install]\n       dcjail help [SUBCOMMAND]",
    after_help = "explain, doctor, worktree, hook, import, setup and help are subcommands as the first word only; `dcjail -- help` runs a command named help.\n\nExit status: the command's own (128+N on signal N); 124 timeout; 120 refused; 121 approval required; 122 sandbox unavailable; 125 usage or policy error; 126 not executable; 127 not found."
)]
pub struct RunCli {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// The command and its arguments, passed byte-exact
    #[arg(
        value_name = "COMMAND",
        trailing_var_arg = true,
        allow_hyphen_values = false,
        required = true,
        num_args = 1..
    )]
    pub command: Vec<OsString>,
}

/// dcjail explain: print the decision and the enforcement plan; run nothing.
#[derive(Parser, Debug)]
#[command(
    name = "dcjail explain",
    override_usage = "dcjail explain [OPTIONS] [--] COMMAND [ARG]..."
)]
pub struct ExplainCli {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Print the smallest policy change that would have let the run of REPORT (a --report file) through
    #[arg(long, value_name = "REPORT", value_hint = clap::ValueHint::FilePath)]
    pub denials: Option<PathBuf>,
    #[arg(
        value_name = "COMMAND",
        trailing_var_arg = true,
        required_unless_present = "denials",
        num_args = 1..
    )]
    pub command: Vec<OsString>,
}

/// dcjail doctor: what this machine can enforce, backend by backend.
#[derive(Parser, Debug)]
#[command(name = "dcjail doctor")]
pub struct DoctorCli {
    /// Machine-readable output
    #[arg(long)]
    pub json: bool,
}

/// The words `main_with` takes as a subcommand (first word only).
pub const SUBCOMMANDS: &[&str] = &[
    "explain", "doctor", "worktree", "hook", "import", "setup", "help",
];

/// dcjail help: print the help of dcjail, or of one subcommand.
#[derive(Parser, Debug)]
#[command(name = "dcjail help", override_usage = "dcjail help [SUBCOMMAND]")]
pub struct HelpCli {
    /// The subcommand whose help to print: explain, doctor, worktree, hook, import, setup, help
    #[arg(value_name = "SUBCOMMAND", value_parser = clap::builder::PossibleValuesParser::new(SUBCOMMANDS))]
    pub subcommand: Option<String>,
    /// `worktree enter`, `setup apparmor`: the subcommand's own subcommand.
    #[arg(value_name = "NESTED", hide = true)]
    pub nested: Option<OsString>,
}

/// Entry point: returns the exit status (unless the command was exec'd).
pub fn main() -> i32 {
    main_with(std::env::args_os().collect())
}

/// `main` with argv given (the binary takes it from the C runtime).
pub fn main_with(args: Vec<OsString>) -> i32 {
    let first = args.get(1).map(|a| a.as_os_str());
    match first.and_then(|a| a.to_str()) {
        Some("explain") => explain_main(&args),
        Some("doctor") => doctor_main(&args),
        Some("worktree") => crate::worktree::main(&args[2..]),
        Some("hook") => crate::hook::main(&args[2..], decide_and_plan),
        Some("import") => crate::import::main(&args[2..]),
        Some("setup") => crate::setup::main(&args[2..]),
        Some("help") => help_main(&args[2..]),
        #[cfg(target_os = "linux")]
        Some(crate::backend::bwrap::STAGE2) => crate::backend::bwrap::stage2_main(&args),
        _ => run_main(args),
    }
}

/// Parses with clap; help/version print and exit 0, errors are one line
/// naming what is wrong and ending with the usage, 125.
pub(crate) fn parse<T: Parser>(args: impl IntoIterator<Item = OsString>) -> Result<T, i32> {
    match T::try_parse_from(args) {
        Ok(v) => Ok(v),
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    Err(0)
                }
                _ => {
                    let line = usage_message(&e, &T::command());
                    eprintln!("{}", Refusal::usage(line).line());
                    Err(125)
                }
            }
        }
    }
}

/// A clap error as one line: what is missing or wrong (clap's own words,
/// a missing argument by its name, a close option for a mistyped one),
/// then the command's usage. Refusals are one line, so the usage rides on
/// the same line instead of clap's paragraphs.
fn usage_message(e: &clap::Error, cmd: &clap::Command) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let what = match (e.kind(), e.get(ContextKind::InvalidArg)) {
        (ErrorKind::MissingRequiredArgument, Some(ContextValue::Strings(v))) => {
            let names: Vec<String> = v
                .iter()
                .map(|a| a.trim_matches(|c| "<>[]. ".contains(c)).to_string())
                .collect();
            format!(
                "{} {} missing",
                names.join(" and "),
                if names.len() > 1 { "are" } else { "is" }
            )
        }
        (ErrorKind::UnknownArgument, Some(ContextValue::String(arg))) => {
            let text = clap_words(e, false);
            match closest_option(arg, cmd) {
                Some(s) => format!("{text} (did you mean `{s}`?)"),
                None => clap_words(e, true),
            }
        }
        _ => clap_words(e, true),
    };
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("Usage:")
        .trim();
    format!("{what}; usage: {usage}")
}

/// The lines of clap's message before its usage, joined; with `tips`, its
/// hints too (`tip: …`, the list of possible values).
fn clap_words(e: &clap::Error, tips: bool) -> String {
    let text = e.render().to_string();
    let words: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:"))
        .map(|l| l.trim().trim_start_matches("error: "))
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
        .filter(|l| tips || !l.starts_with("tip:"))
        .collect();
    if words.is_empty() {
        "invalid command line".to_string()
    } else {
        words.join(" ")
    }
}

/// The option of `cmd` a mistyped `--name` most likely meant: the nearest
/// by edit distance, when it is close (a third of the length, at least one
/// edit), or the only option the word starts.
fn closest_option(typed: &str, cmd: &clap::Command) -> Option<String> {
    let name = typed.strip_prefix("--")?;
    let name = name.split('=').next().unwrap_or(name);
    let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    let prefixed: Vec<&&str> = longs.iter().filter(|l| l.starts_with(name)).collect();
    if let ([only], false) = (prefixed.as_slice(), name.is_empty()) {
        return Some(format!("--{only}"));
    }
    let limit = (name.chars().count() / 3).max(1);
    longs
        .iter()
        .map(|l| (edit_distance(name, l), *l))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, l)| format!("--{l}"))
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

/// `dcjail help [SUBCOMMAND [ITS SUBCOMMAND]]`: the same text as `--help`
/// there, exit 0.
fn help_main(args: &[OsString]) -> i32 {
    let mut a = vec![OsString::from("dcjail help")];
    a.extend(args.iter().cloned());
    let cli: HelpCli = match parse(a) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut argv = vec![OsString::from("dcjail")];
    match (cli.subcommand.as_deref(), cli.nested) {
        (None | Some("help"), None) => {}
        (Some(sub @ ("worktree" | "setup")), nested) => {
            argv.push(sub.into());
            argv.extend(nested);
        }
        (Some(sub), None) => argv.push(sub.into()),
        (sub, Some(n)) => {
            let r = Refusal::usage(format!(
                "`{}` has no subcommand `{}`; usage: dcjail help [SUBCOMMAND]",
                sub.unwrap_or("help"),
                crate::error::one_line(&n.to_string_lossy())
            ));
            eprintln!("{}", r.line());
            return r.exit_code();
        }
    }
    argv.push("--help".into());
    main_with(argv)
}

/// Everything before backend choice: policy, gates 1–5, plan, pre-check.
fn decide_and_plan(pa: &PolicyArgs, argv: Vec<OsString>) -> Result<Plan, Refusal> {
    decide_and_plan_sourced(pa, argv, None)
}

/// `decide_and_plan`, also saying in `sources` where each field came from.
fn decide_and_plan_sourced(
    pa: &PolicyArgs,
    argv: Vec<OsString>,
    sources: Option<&mut serde_json::Value>,
) -> Result<Plan, Refusal> {
    let file = pa.policy.clone().or_else(|| {
        std::env::var_os("DCJAIL_POLICY")
            .filter(|v| !v.is_empty() && pa.policy_fd.is_none())
            .map(PathBuf::from)
    });
    let overrides = pa.overrides();
    overrides.check()?;
    let mut policy = Policy::load_for(file.as_deref(), &overrides)?;
    if let Some(s) = sources {
        *s = crate::explain::sources_json(&policy, &overrides, file.as_deref());
    }
    policy.apply(&overrides);
    policy.validate()?;
    let facts = Facts::gather_for(&policy)?;
    if let Err(r) = crate::decide::gates(&policy) {
        if r.reason == Reason::PlanBlocked {
            return Err(crate::card::record(&policy, &argv, &facts, r));
        }
        return Err(r);
    }
    plan::build(&policy, argv, &facts)
}

fn run_main(args: Vec<OsString>) -> i32 {
    let cli: RunCli = match parse(args) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let events = match cli.policy.events.map(crate::denials::events_fd).transpose() {
        Ok(e) => e,
        Err(e) => return refuse(&Refusal::usage(e), cli.policy.report.as_deref()),
    };
    let mut plan = match decide_and_plan(&cli.policy, cli.command) {
        Ok(p) => p,
        Err(r) => return refuse(&r, cli.policy.report.as_deref()),
    };
    plan.observe = plan.sandboxed && crate::denials::wanted(cli.policy.report.is_some(), events);
    let choice = match backend::select(&plan) {
        Ok(c) => c,
        Err(r) => return refuse(&r, cli.policy.report.as_deref()),
    };
    if !plan.sandboxed && plan.worktree.is_none() && plan.mode == Mode::BypassPermissions {
        eprintln!("dcjail: warning: bypassPermissions with the sandbox off and no worktree: running unprotected");
    }
    let report = cli.policy.report.clone();
    let run_value = report
        .as_ref()
        .map(|_| crate::explain::run_json(&plan, &choice));
    let session = match observed(&plan, &choice, events) {
        Ok(s) => s,
        Err(r) => return refuse(&r, report.as_deref()),
    };
    let obs = session.as_ref().map(crate::denials::Session::fd);
    // A report is written after the command exits, so it needs a parent.
    let (status, denied) = launch(&plan, choice, report.is_some(), obs);
    let log = match session {
        Some(s) => {
            let log = s.finish();
            crate::denials::after_run(&log);
            log
        }
        None => crate::denials::Log::default(),
    };
    if let (Some(path), Some(mut v)) = (report, run_value) {
        v["exit_status"] = status.into();
        v["network_denied"] = denied.into();
        crate::denials::into_report(&log, &mut v);
        crate::explain::write_report(&path, &v);
    }
    status
}

/// The denial recording of a run, when it is wanted and the backend has a
/// broker to record with (the Linux ones).
fn observed(
    plan: &Plan,
    choice: &Choice,
    events: Option<i32>,
) -> Result<Option<crate::denials::Session>, Refusal> {
    #[cfg(target_os = "linux")]
    let brokered = matches!(choice.launch, Launch::Bwrap(_) | Launch::Landlock(_));
    #[cfg(not(target_os = "linux"))]
    let brokered = {
        let _ = (choice, events);
        false
    };
    if !plan.observe || !brokered {
        return Ok(None);
    }
    crate::denials::Session::start(plan, events)
        .map(Some)
        .map_err(Refusal::unavailable)
}

fn refuse(r: &Refusal, report: Option<&std::path::Path>) -> i32 {
    eprintln!("{}", r.line());
    if let Some(path) = report {
        crate::explain::write_report(path, &crate::explain::refusal_json(r));
    }
    r.exit_code()
}

/// Starts the command as the chosen backend says; returns only on failure
/// or, when supervising, with the command's status and the destinations
/// the allowlist proxy refused.
fn launch(
    plan: &Plan,
    mut choice: Choice,
    keep_parent: bool,
    obs: Option<i32>,
) -> (i32, Vec<String>) {
    let argv = match crate::exec::c_argv(&plan.argv) {
        Ok(a) => a,
        Err(e) => return (refuse(&Refusal::usage(e), None), Vec::new()),
    };
    if let Err(e) = crate::exec::enter_cwd(&plan.cwd) {
        return (refuse(&Refusal::policy(e), None), Vec::new());
    }
    let net = match crate::net::start_for(plan, &mut choice.launch) {
        Ok(n) => n,
        Err(e) => return (refuse(&Refusal::unavailable(e), None), Vec::new()),
    };
    let envp = crate::net::strip_internal(crate::exec::environment(plan, &choice, &net.env), &net);
    let (status, mut later) = launch_with(plan, choice, argv, envp, keep_parent, obs);
    let mut denied = net.finish();
    denied.append(&mut later);
    (status, denied)
}

fn launch_with(
    plan: &Plan,
    choice: Choice,
    argv: Vec<std::ffi::CString>,
    envp: Vec<std::ffi::CString>,
    keep_parent: bool,
    obs: Option<i32>,
) -> (i32, Vec<String>) {
    #[cfg(not(target_os = "linux"))]
    let _ = obs;
    let path_var = std::env::var_os("PATH");
    // Only a fallback to another backend (its own proxy) adds denials here.
    let status = match choice.launch {
        Launch::Unsandboxed if plan.timeout.is_none() && !keep_parent => {
            crate::exec::exec_command(&argv, &envp, path_var.as_deref())
        }
        Launch::Unsandboxed => crate::exec::supervise(plan.timeout, || {
            crate::exec::exec_command(&argv, &envp, path_var.as_deref())
        }),
        #[cfg(target_os = "linux")]
        Launch::Bwrap(mut l) => {
            if let Some(fd) = obs {
                crate::backend::stub_format::set_report_fd(&mut l.program, fd);
            }
            match crate::backend::bwrap::launch(plan, &l, &argv, &envp) {
                Ok(status) => status,
                Err(e) => match backend::fallback(plan, choice.globs, backend::Kind::Bwrap, e) {
                    Ok(next) => return launch(plan, next, keep_parent, obs),
                    Err(r) => refuse(&r, None),
                },
            }
        }
        #[cfg(not(target_os = "linux"))]
        Launch::Bwrap(_) => refuse(&Refusal::unavailable("bwrap exists only on Linux"), None),
        #[cfg(target_os = "linux")]
        Launch::Landlock(spec) => {
            // The broker's program: the same rules, for the same checks.
            let program = if spec.fs.brokered() {
                match crate::backend::bwrap::stub_program(&spec, &[]) {
                    Ok(mut p) => {
                        if let Some(fd) = obs {
                            crate::backend::stub_format::set_report_fd(&mut p, fd);
                        }
                        Some(p)
                    }
                    Err(e) => return (refuse(&Refusal::unavailable(e), None), Vec::new()),
                }
            } else {
                None
            };
            let apply = |keep: Option<i32>| {
                let mut s = spec.clone();
                s.keep_fds.extend(keep);
                s.apply()
            };
            let exec = || crate::exec::exec_command(&argv, &envp, path_var.as_deref());
            crate::exec::supervise_watched(
                plan.timeout,
                crate::exec::WatchedStart {
                    apply: &apply,
                    exec: &exec,
                },
                program.as_deref(),
            )
        }
        Launch::Seatbelt(r) => backend::seatbelt::launch(plan, &r, &envp, keep_parent),
    };
    (status, Vec::new())
}

fn explain_main(args: &[OsString]) -> i32 {
    let mut a = vec![OsString::from("dcjail explain")];
    a.extend(args[2..].iter().cloned());
    let cli: ExplainCli = match parse(a) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Some(report) = &cli.denials {
        return crate::denials::advice::explain(report);
    }
    crate::explain::explain(&cli.policy, cli.command, decide_and_plan_sourced)
}

fn doctor_main(args: &[OsString]) -> i32 {
    let mut a = vec![OsString::from("dcjail doctor")];
    a.extend(args[2..].iter().cloned());
    let cli: DoctorCli = match parse(a) {
        Ok(c) => c,
        Err(code) => return code,
    };
    crate::doctor::doctor(cli.json)
}
