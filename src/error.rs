//! The errors of dcjail and the one place they are mapped: every refusal
//! carries a reason word from a closed set; the typed failures below the
//! gates (`Error`: what was missing or invalid, and where) are turned into a
//! refusal here, so which failure is "unavailable", "denied", a policy or a
//! usage error is decided once; and this module is the only place that maps
//! a reason to an exit status and to the `decision` word `explain` prints.

use std::fmt;
use std::path::PathBuf;

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

/// The longest line `one_line` prints, in characters (after escaping).
pub const LINE_MAX: usize = 1024;

/// The longest piece of a line (a path, a host name) a printer shows, in
/// characters: a longer one is cut, with how much was left out.
pub const FIELD_MAX: usize = 256;

/// Whether `c` may not reach a terminal (or a model) as it is: the C0 and
/// C1 controls and DEL (escape sequences, `\r`, `\n`), the line and
/// paragraph separators, the bidirectional marks, embeddings, overrides
/// and isolates (text shown in another order than it is), and the
/// invisible characters (zero-width spaces and joiners, word joiner,
/// invisible operators, the byte-order mark, soft hyphen, fillers,
/// variation selectors and tag characters, which hide text in plain
/// sight).
pub fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c as u32,
            0x00AD
                | 0x034F
                | 0x061C
                | 0x115F
                | 0x1160
                | 0x17B4
                | 0x17B5
                | 0x180B..=0x180F
                | 0x200B..=0x200F
                | 0x2028..=0x202E
                | 0x2060..=0x206F
                | 0x3164
                | 0xFE00..=0xFE0F
                | 0xFEFF
                | 0xFFA0
                | 0xFFF9..=0xFFFB
                | 0x1D173..=0x1D17A
                | 0xE0000..=0xE0FFF
        )
}

/// Whether `s` shows as it is: no character of it is `hidden`.
pub fn showable(s: &str) -> bool {
    !s.chars().any(hidden)
}

/// THE function every printer of dcjail passes text through before it
/// reaches a terminal, a log line or a model: every `hidden` character
/// escaped (`\n`, `\r`, `\t`, else `\u{202e}`), so that the text stays
/// one line and reads as it is stored, and the result cut at `max`
/// characters, the cut said (`…[+N characters]`). Idempotent: its output
/// holds nothing it would escape.
pub fn escaped(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max * 4) + 2);
    let mut shown = 0usize;
    for (i, c) in s.char_indices() {
        let piece = match c {
            '\n' => "\\n".to_string(),
            '\r' => "\\r".to_string(),
            '\t' => "\\t".to_string(),
            c if hidden(c) => format!("\\u{{{:x}}}", c as u32),
            c => c.to_string(),
        };
        let n = piece.chars().count();
        if shown + n > max {
            let left = s[i..].chars().count();
            out.push_str(&format!("…[+{left} characters]"));
            return out;
        }
        shown += n;
        out.push_str(&piece);
    }
    out
}

/// `escaped` to one line's length: text meant for one line stays on one.
pub fn one_line(s: &str) -> String {
    escaped(s, LINE_MAX)
}

/// Serialized JSON with every `hidden` character written as a `\uXXXX`
/// escape: the same JSON value, which a terminal shows as it is. (JSON
/// writers escape the C0 controls inside strings, and outside strings
/// JSON text is ASCII: its whitespace, `\n`, `\r` and `\t` included, is
/// left as it is.)
pub fn json_for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if hidden(c) && !matches!(c, '\n' | '\r' | '\t') {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{:04x}", u));
            }
        } else {
            out.push(c);
        }
    }
    out
}

pub type Result<T> = std::result::Result<T, Refusal>;

/// A failure below the gates, as data: what was missing or invalid, and
/// where. `Error::reason` is the one mapping to a reason word; the texts
/// of the lower layers (exec, net) are carried as they come.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The git metadata reachable from a writable root is more than the
    /// audit of the protected table reads (`at` is where it stopped).
    GitTooLarge { at: PathBuf, max_work: usize },
    /// The walk for git dirs under a writable root met more entries than
    /// its bound, or a directory it could not read (`why`).
    GitWalk { root: PathBuf, why: String },
    /// A git configuration file is larger than the audit reads.
    GitFileTooLarge { path: PathBuf, max_mib: u64 },
    /// An argument of the command cannot reach execve (a NUL byte).
    CommandArg(String),
    /// The directory the command starts in cannot be entered.
    StartDir(String),
    /// The run's network (proxy, namespace) could not be set up.
    Network(String),
    /// The landlock broker's second-stage program could not be built.
    BrokerProgram(String),
    /// The backend the launch names exists only on another OS.
    NotOnThisOs {
        backend: &'static str,
        os: &'static str,
    },
    /// There is no bubblewrap for `setup apparmor` to write a profile for.
    NoBwrap(String),
    /// A path that cannot be written into an AppArmor rule as it is.
    UnquotablePath(String),
    /// A program someone other than root could replace (`path`), so no
    /// profile may grant it anything.
    NotRootControlled {
        path: PathBuf,
        what: PathBuf,
        detail: String,
    },
    /// A path that cannot be inspected.
    Inspect { path: PathBuf, why: String },
    /// The current directory cannot be read.
    Cwd(String),
    /// `sandbox.workspace` names no directory that can be resolved.
    Workspace { written: PathBuf, why: String },
    /// A workspace or writable root (`key`, `written`) resolves to
    /// `resolved`, on a kernel interface filesystem (`kind`) rather than
    /// storage.
    NotStorage {
        key: &'static str,
        written: PathBuf,
        resolved: PathBuf,
        kind: &'static str,
    },
    /// `worktree.root` is not an existing git worktree (gate 5).
    WorktreeRoot { root: PathBuf, why: String },
    /// A policy path (`what`, quoted as written) starts with `~` and HOME
    /// is not set.
    HomeUnset { what: String },
    /// A policy path uses `~user`, which is not understood.
    TildeUser(PathBuf),
    /// A glob of the policy key `key` does not parse.
    BadGlob {
        key: String,
        glob: String,
        why: String,
    },
    /// A domain rule does not parse.
    Domain(String),
    /// A bad `[sandbox.env]` pattern.
    Env(String),
    /// A credential's secret cannot be read (names the variable or file,
    /// never a value), or the run's TLS for it cannot be made.
    Credential(String),
    /// `worktree enter` from inside a dcjail worktree.
    InsideWorktree(PathBuf),
    /// A directory that is not inside a git repository.
    NotInRepo(PathBuf),
    /// `--base` names no branch or commit.
    BadBase(String),
    /// The main checkout has no parent to put worktrees beside.
    NoPlaceBeside(PathBuf),
    /// `worktree exit` on what is not a dcjail worktree (`why`).
    NotDcjailWorktree { path: PathBuf, why: String },
    /// `worktree exit` on a worktree not on its own branch (`on`: where its
    /// HEAD is).
    OffOwnBranch {
        wt: PathBuf,
        on: String,
        own: String,
    },
    /// A path the call declares is not usable as the tool needs (`what`:
    /// readable, writable) under the sandbox policy (`call`: the call and
    /// the access), the first half of gate 6.
    NotUsable {
        path: PathBuf,
        what: &'static str,
        call: String,
    },
}

const NO_PROTECT_HINT: &str = "--no-protect-defaults (sandbox.filesystem.protect_defaults = false) runs without the protected table";

impl Error {
    /// Which refusal each failure is: the machine cannot enforce
    /// (`sandbox-unavailable`), or the caller gave what cannot run
    /// (`usage-error`, `policy-error`).
    pub fn reason(&self) -> Reason {
        match self {
            Error::CommandArg(_)
            | Error::InsideWorktree(_)
            | Error::NotInRepo(_)
            | Error::BadBase(_)
            | Error::NoPlaceBeside(_)
            | Error::NotDcjailWorktree { .. }
            | Error::OffOwnBranch { .. } => Reason::UsageError,
            Error::StartDir(_)
            | Error::Cwd(_)
            | Error::Workspace { .. }
            | Error::NotStorage { .. }
            | Error::WorktreeRoot { .. }
            | Error::HomeUnset { .. }
            | Error::TildeUser(_)
            | Error::BadGlob { .. }
            | Error::Domain(_)
            | Error::Env(_)
            | Error::Credential(_) => Reason::PolicyError,
            Error::NotUsable { .. } => Reason::SandboxDenied,
            Error::GitTooLarge { .. }
            | Error::GitWalk { .. }
            | Error::GitFileTooLarge { .. }
            | Error::Network(_)
            | Error::BrokerProgram(_)
            | Error::NotOnThisOs { .. }
            | Error::NoBwrap(_)
            | Error::UnquotablePath(_)
            | Error::NotRootControlled { .. }
            | Error::Inspect { .. } => Reason::SandboxUnavailable,
        }
    }
}

impl Error {
    /// The gate a failure belongs to, when it is one of the gates'.
    pub fn gate(&self) -> Option<Gate> {
        match self {
            Error::WorktreeRoot { .. } => Some(Gate::Worktree),
            _ => match self.reason() {
                Reason::SandboxUnavailable | Reason::SandboxDenied => Some(Gate::Sandbox),
                _ => None,
            },
        }
    }
}

impl Error {
    /// The texts of the git audit's refusals.
    fn fmt_git(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::GitTooLarge { at, max_work } => write!(
                f,
                "the git metadata reachable from `{}` is too large to audit (over {max_work} git dirs, \
                 config files and directory entries): dcjail cannot tell which files git would run, \
                 so no backend can keep them protected; {NO_PROTECT_HINT}",
                at.display()
            ),
            Error::GitWalk { root, why } => write!(
                f,
                "cannot finish the search for git repositories under the writable root `{}` ({why}): \
                 dcjail keeps every repository it can reach read-only in its config and hooks, and one it \
                 did not find would stay open; make the root smaller (--workspace, --allow-write), \
                 or {NO_PROTECT_HINT}",
                root.display()
            ),
            Error::GitFileTooLarge { path, max_mib } => write!(
                f,
                "`{}` is larger than {max_mib} MiB: dcjail does not audit a git configuration file that large, \
                 so it cannot tell what git would run from it and no backend can keep that protected; \
                 {NO_PROTECT_HINT}",
                path.display()
            ),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::GitTooLarge { .. } | Error::GitWalk { .. } | Error::GitFileTooLarge { .. } => {
                self.fmt_git(f)
            }
            Error::CommandArg(m)
            | Error::StartDir(m)
            | Error::Network(m)
            | Error::BrokerProgram(m)
            | Error::Domain(m)
            | Error::Env(m)
            | Error::Credential(m) => f.write_str(m),
            Error::NotOnThisOs { backend, os } => write!(f, "{backend} exists only on {os}"),
            Error::NoBwrap(m) => write!(f, "there is no bubblewrap to write a profile for: {m}"),
            Error::UnquotablePath(p) => write!(
                f,
                "cannot write an AppArmor rule for `{}`: only an absolute path of letters, digits and / . _ - + can be written as it is",
                one_line(p)
            ),
            Error::NotRootControlled { path, what, detail } => write!(
                f,
                "{} can be changed by someone other than root ({detail}): a profile granting user namespaces to {} would grant them to whatever is put there",
                path.display(),
                what.display()
            ),
            Error::Inspect { path, why } => write!(f, "cannot inspect {}: {why}", path.display()),
            Error::Cwd(why) => write!(f, "cannot read the current directory: {why}"),
            Error::Workspace { written, why } => {
                write!(f, "sandbox.workspace `{}`: {why}", written.display())
            }
            Error::WorktreeRoot { root, why } => {
                write!(f, "worktree.root `{}`: {why}", root.display())
            }
            Error::NotStorage {
                key,
                written,
                resolved,
                kind,
            } => not_storage(f, key, written, resolved, kind),
            Error::HomeUnset { what } => write!(f, "{what} uses ~ but HOME is not set"),
            Error::TildeUser(p) => write!(
                f,
                "`{}`: only `~` and `~/…` are understood, not `~user`",
                p.display()
            ),
            Error::BadGlob { key, glob, why } => write!(f, "`{key}`: bad glob `{glob}`: {why}"),
            Error::InsideWorktree(wt) => write!(
                f,
                "already inside worktree {}; run `dcjail worktree exit` on it first",
                wt.display()
            ),
            Error::NotInRepo(d) => write!(f, "`{}` is not inside a git repository", d.display()),
            Error::BadBase(b) => write!(
                f,
                "--base `{b}` is not a branch or commit of this repository"
            ),
            Error::NoPlaceBeside(m) => {
                write!(f, "cannot place a worktree beside `{}`", m.display())
            }
            Error::NotDcjailWorktree { path, why } => write!(
                f,
                "`{}` is not a dcjail worktree: {why}; nothing was changed",
                path.display()
            ),
            Error::OffOwnBranch { wt, on, own } => write!(
                f,
                "{} is on {on}, not its own branch `{own}`; switch back to it or commit yourself; nothing was changed",
                wt.display()
            ),
            Error::NotUsable { path, what, call } => write!(
                f,
                "`{}` is not {what} under the sandbox policy ({call})",
                path.display()
            ),
        }
    }
}

fn not_storage(
    f: &mut fmt::Formatter<'_>,
    key: &str,
    written: &std::path::Path,
    resolved: &std::path::Path,
    kind: &str,
) -> fmt::Result {
    let to = if written == resolved {
        String::new()
    } else {
        format!(" (resolves to `{}`)", resolved.display())
    };
    write!(
        f,
        "{key} `{}`{to} is on {kind}, a kernel interface rather than storage \
         (what is written there changes the host and outlives the run); \
         choose a directory on a disk or tmpfs",
        written.display()
    )
}

impl From<Error> for Refusal {
    fn from(e: Error) -> Refusal {
        Refusal::new(e.reason(), e.gate(), e.to_string())
    }
}

/// How a subcommand that acts on the machine ended: a refusal before it
/// acted, or a failure of what it ran (git, apparmor_parser) after.
#[derive(Clone, Debug)]
pub enum Failure {
    Refused(Refusal),
    /// The one line said after the tool's own output, and whose line it is
    /// (`worktree`, `setup apparmor`).
    Tool {
        who: &'static str,
        message: String,
    },
}

impl From<Refusal> for Failure {
    fn from(r: Refusal) -> Self {
        Failure::Refused(r)
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Refused(e.into())
    }
}

/// Says how a subcommand ended on stderr and returns its exit status.
pub fn finish(result: std::result::Result<(), Failure>) -> i32 {
    match result {
        Ok(()) => SUCCESS,
        Err(Failure::Refused(r)) => {
            eprintln!("{}", r.line());
            r.exit_code()
        }
        Err(Failure::Tool { who, message }) => {
            eprintln!("dcjail: {who}: {}", one_line(&message));
            SUBCOMMAND_FAILED
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_text_holds_no_control_bidi_or_invisible_character_and_is_bounded() {
        let hostile = "a\u{1b}]52;c;aGk=\u{7}b\u{1b}[2J\r\ndcjail: ok\u{9b}\u{7f}\u{202e}txt.exe\u{2066}\u{200b}\u{feff}\u{e0041}\u{2028}";
        let out = one_line(hostile);
        assert!(showable(&out), "{out:?}");
        assert!(!out.contains('\u{1b}') && !out.contains('\n') && !out.contains('\r'));
        assert!(out.contains("\\u{202e}") && out.contains("\\u{200b}") && out.contains("\\r\\n"));
        // Idempotent: escaping twice changes nothing.
        assert_eq!(one_line(&out), out);
        // Bounded, the cut said.
        let long = "x".repeat(5000);
        let cut = escaped(&long, FIELD_MAX);
        assert!(cut.chars().count() < FIELD_MAX + 30, "{}", cut.len());
        assert!(
            cut.ends_with(&format!("…[+{} characters]", 5000 - FIELD_MAX)),
            "{cut}"
        );
        assert!(one_line(&long).chars().count() < LINE_MAX + 30);
        // Ordinary text, accents and emoji included, passes unchanged.
        for ok in ["/home/u/.npm", "café ☕ 日本", "it's \\n literally"] {
            assert_eq!(one_line(ok), ok);
            assert!(showable(ok));
        }
    }

    #[test]
    fn json_for_terminal_is_the_same_value_with_nothing_hidden() {
        let v = serde_json::json!({"p": "a\u{202e}b\u{7f}\u{9b}\u{e0041}\n", "q": ["x"]});
        let text = json_for_terminal(&serde_json::to_string_pretty(&v).unwrap());
        assert!(text.chars().all(|c| !hidden(c) || c == '\n'), "{text:?}");
        assert!(
            text.contains("\\u202e") && text.contains("\\udb40\\udc41"),
            "{text}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn each_failure_maps_to_one_reason_gate_and_status() {
        let cases: Vec<(Error, Reason, Option<Gate>, i32)> = vec![
            (Error::CommandArg("a".into()), Reason::UsageError, None, 125),
            (Error::StartDir("a".into()), Reason::PolicyError, None, 125),
            (
                Error::TildeUser("~x".into()),
                Reason::PolicyError,
                None,
                125,
            ),
            (
                Error::WorktreeRoot {
                    root: "/r".into(),
                    why: "w".into(),
                },
                Reason::PolicyError,
                Some(Gate::Worktree),
                125,
            ),
            (
                Error::NotUsable {
                    path: "/p".into(),
                    what: "writable",
                    call: "edit call, read-only".into(),
                },
                Reason::SandboxDenied,
                Some(Gate::Sandbox),
                120,
            ),
            (
                Error::GitTooLarge {
                    at: "/r".into(),
                    max_work: 1,
                },
                Reason::SandboxUnavailable,
                Some(Gate::Sandbox),
                122,
            ),
            (
                Error::Network("n".into()),
                Reason::SandboxUnavailable,
                Some(Gate::Sandbox),
                122,
            ),
        ];
        for (e, reason, gate, status) in cases {
            let r = Refusal::from(e.clone());
            assert_eq!(
                (r.reason, r.gate, r.exit_code()),
                (reason, gate, status),
                "{e:?}"
            );
            assert_eq!(r.message, e.to_string());
        }
    }
}
