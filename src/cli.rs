//! The command line: the parsers of a run, `explain`, `doctor` and `help`,
//! and the dispatch to run / explain / doctor / worktree / hook / import /
//! setup / help. Flags only: each policy flag is defined once, in
//! `policy::Overrides`, and flattened in here; the pipeline is `run`.

use crate::error::Refusal;
use crate::policy::Overrides;
use crate::usage::parse;
use clap::{Args, Parser};
use std::ffi::OsString;
use std::path::PathBuf;

/// The policy options of a run and `explain`, and where the run's report goes.
#[derive(Args, Debug, Default)]
pub struct PolicyArgs {
    #[command(flatten)]
    pub overrides: Overrides,
    /// Write the run's JSON report to FILE
    ///
    /// For a refusal it holds the keys of `explain` (decision, reason, gate,
    /// message, backend, refusal_status, plan); for a run that completed also
    /// `exit_status` (the command's status), `network_denied` (the destinations
    /// the allowlist proxy refused, each as *host:port (why)*), and `denials`
    /// with `denials_total`, `denials_unlisted` and `denials_dropped` (see
    /// `DENIALS`). A report that cannot be written is a warning, never a failure
    /// of the run.
    #[arg(long, value_name = "FILE", display_order = crate::policy::NEXT_DISPLAY_ORDER)]
    pub report: Option<PathBuf>,
    /// Stream each denial as one JSON line to descriptor FD while the command runs
    ///
    /// Each denial is written as it happens: one JSON object per line, with the
    /// fields of `DENIALS` (`count` 1). *FD* must be open for writing, else a
    /// usage-error (125).
    #[arg(long, value_name = "FD", display_order = crate::policy::NEXT_DISPLAY_ORDER + 1)]
    pub events: Option<i32>,
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
    override_usage = "dcjail [OPTIONS] [--] COMMAND [ARG]...\n       dcjail explain [OPTIONS] [--] COMMAND [ARG]...\n       dcjail doctor [--json]\n       dcjail hook claude-code|codex [--policy FILE] [--policy-format FORMAT] [--ask] [--check] [--install] [--settings FILE]\n       dcjail import srt|claude-code|codex FILE\n       dcjail worktree enter [--base BRANCH] [--json] [--policy FILE] [--mode MODE] [--plan-card FILE]\n       dcjail worktree exit PATH [--json]\n       dcjail setup apparmor [--install]\n       dcjail help [SUBCOMMAND]",
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
    ///
    /// See `explain` under `SUBCOMMANDS`; no *COMMAND* is needed.
    #[arg(long, value_name = "REPORT", value_hint = clap::ValueHint::FilePath, display_order = crate::policy::NEXT_DISPLAY_ORDER + 2)]
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
        Some("hook") => crate::hook::main(&args[2..]),
        Some("import") => crate::import::main(&args[2..]),
        Some("setup") => crate::setup::main(&args[2..]),
        Some("help") => help_main(&args[2..]),
        #[cfg(target_os = "linux")]
        Some(crate::backend::bwrap::STAGE2) => crate::exec::stage2::main(&args),
        _ if crate::hook::prefix::invoked(&args) => crate::hook::prefix::main(&args[1]),
        _ => run_main(args),
    }
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

fn run_main(args: Vec<OsString>) -> i32 {
    let cli: RunCli = match parse(args) {
        Ok(c) => c,
        Err(code) => return code,
    };
    crate::run::run(
        &cli.policy.overrides,
        cli.policy.report,
        cli.policy.events,
        cli.command,
    )
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
    crate::run::explain(&cli.policy.overrides, cli.command)
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
