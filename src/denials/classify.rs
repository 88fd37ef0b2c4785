//! What refused a recorded call, judged against the plan, and the smallest
//! option that would allow it — or why nothing can. Pure: it reads the
//! filesystem only to find which directories exist (for the suggestion).

use crate::inside::denial_wire::{Fact, LEXICAL, SOURCE_BROKER, SOURCE_FILTER};
use crate::plan::Plan;
use crate::policy::SandboxMode;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// What a policy change would be, field by field (merged by `advice`).
/// Advice is data: each value is one word (an option's value as an argv
/// element), never text for a shell; `advice::shell_line` quotes the words
/// wherever they are joined into a line. A value names only the one
/// directory the denial needs (`suggest`) and is always `showable`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fix {
    pub workspace_write: bool,
    /// `~/x` or an absolute path.
    pub allow_write: Option<String>,
    /// A directory to make before the run (an allow_write root must
    /// exist), absolute.
    pub mkdir: Option<String>,
    /// A unix socket to name (`~/x` or absolute): the command then drives
    /// the program behind it.
    pub allow_unix_socket: Option<String>,
    /// What the option opens beyond what it seems to (a socket's server, a
    /// trust store, a directory of other projects, a whole repository).
    pub warning: Option<String>,
}

impl Fix {
    /// The options, as a caller types them: one argv element each.
    pub fn flags(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.workspace_write {
            v.extend(["--sandbox-mode".into(), "workspace-write".into()]);
        }
        if let Some(p) = &self.allow_write {
            v.extend(["--allow-write".into(), p.clone()]);
        }
        if let Some(p) = &self.allow_unix_socket {
            v.extend(["--allow-unix-socket".into(), p.clone()]);
        }
        v
    }

    /// The directory to make first, as the argv that makes it.
    pub fn mkdir_argv(&self) -> Option<Vec<String>> {
        self.mkdir.as_ref().map(|m| mkdir_argv([m.as_str()]))
    }
}

/// `mkdir -p -- DIR...`: the argv that makes `dirs` (no shell reads it).
pub fn mkdir_argv<'a>(dirs: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut v: Vec<String> = ["mkdir", "-p", "--"].map(String::from).into();
    v.extend(dirs.into_iter().map(String::from));
    v
}

/// Why a path whose name cannot be shown as it is gets no suggestion.
pub const UNSHOWABLE: &str = "the path's name holds characters that cannot be shown safely (control, bidirectional or invisible characters, or bytes that are not UTF-8), so no option is suggested for it; look at `resolved` and decide by hand";

/// One denial, judged.
#[derive(Clone, Debug)]
pub struct Denial {
    /// write | metadata | unix_socket | socket | setuid
    pub kind: &'static str,
    pub op: &'static str,
    pub path: Option<String>,
    pub resolved: Option<PathBuf>,
    pub pid: u32,
    pub program: String,
    pub errno: &'static str,
    /// Who saw it: broker (it answered), filter (seccomp refuses it),
    /// predicted (the kernel layer refuses it, as the rules say).
    pub seen_by: &'static str,
    /// outside the writable roots | protected | deny_write | device |
    /// setuid | unix socket not named | unix datagram | unix sockets off |
    /// network | refused
    pub rule: &'static str,
    /// The protected entry or deny_write pattern that matched.
    pub matched: Option<String>,
    pub fix: Option<Fix>,
    /// Why no option allows it, when none does.
    pub why_not: Option<String>,
    /// The call is a nested dcjail's launch check, by its look
    /// ([`is_launch_check`]): listed apart, never dropped.
    pub launch_check: bool,
}

/// The open flags of a nested dcjail's launch check, as it makes them.
pub use crate::backend::nested::LAUNCH_CHECK_FLAGS;

/// Whether a refused call looks like a nested dcjail's launch check: an
/// `open`/`openat` with [`LAUNCH_CHECK_FLAGS`], answered EROFS or EACCES
/// by the broker or the filter (not predicted: their answer is the call's,
/// so nothing was created). Any process can make the same call, the
/// command too: such a record is then listed as a launch check, still in
/// the report, and it created nothing either.
pub fn is_launch_check(f: &Fact<'_>, op: &str) -> bool {
    let flags = LAUNCH_CHECK_FLAGS as u64;
    matches!(op, "open" | "openat")
        && f.arg & flags == flags
        && f.arg & libc::O_ACCMODE as u64 == libc::O_WRONLY as u64
        && matches!(f.errno, libc::EROFS | libc::EACCES)
        && matches!(f.source, SOURCE_BROKER | SOURCE_FILTER)
}

pub fn classify(plan: &Plan, f: &Fact<'_>, home: Option<&Path>) -> Denial {
    let op = op_name(f.nr);
    let named = (!f.named.is_empty()).then(|| String::from_utf8_lossy(f.named).into_owned());
    let resolved = (!f.resolved.is_empty())
        .then(|| host_path(Path::new(OsStr::from_bytes(f.resolved)), f.flags));
    let mut d = Denial {
        kind: "write",
        op,
        path: named,
        resolved: resolved.clone(),
        pid: f.pid,
        program: String::from_utf8_lossy(f.program).into_owned(),
        errno: errno_name(f.errno),
        seen_by: match f.source {
            SOURCE_BROKER => "broker",
            SOURCE_FILTER => "filter",
            _ => "predicted",
        },
        rule: "refused",
        matched: None,
        fix: None,
        why_not: None,
        launch_check: false,
    };
    d.launch_check = is_launch_check(f, op);
    if op == "socket" || op == "socketpair" {
        return socket(plan, f, d);
    }
    if op == "connect" && super::network::is_inet(f) {
        return super::network::judge(plan, f, d);
    }
    if op == "connect" {
        return connect(d, home);
    }
    if is_meta(op) {
        d.kind = "metadata";
    }
    let mode_arg = matches!(op, "chmod" | "fchmod" | "fchmodat" | "fchmodat2")
        || (matches!(op, "open" | "openat" | "creat" | "mknod" | "mknodat")
            && f.errno == libc::EPERM);
    if f.source == SOURCE_FILTER && f.errno == libc::EPERM && mode_arg && f.arg & 0o6000 != 0 {
        d.kind = "setuid";
        d.rule = "setuid";
        d.why_not = Some(
            "no file the command creates or changes may carry a setuid or setgid bit; no option allows it".into(),
        );
        return d;
    }
    if f.errno == libc::EXDEV && matches!(op, "link" | "linkat") {
        d.rule = "link between roots";
        d.why_not = Some(
            "each writable root is its own mount in the sandbox: a hard link from one into \
             another is made only for a regular file no protected path or mask covers, that the \
             command could open for writing, and only when the command has not restricted \
             itself; tools that get EXDEV copy the file instead"
                .into(),
        );
        return d;
    }
    let Some(p) = resolved else {
        return d;
    };
    path_rule(plan, &p, home, d)
}

fn path_rule(plan: &Plan, p: &Path, home: Option<&Path>, mut d: Denial) -> Denial {
    if let Some(q) = plan.fs.protected.iter().find(|q| p.starts_with(q)) {
        use crate::protected::Origin;
        d.rule = "protected";
        d.matched = Some(display(q, home));
        let origin = Origin::of(q, plan.policy_file.as_deref());
        let lift = match origin {
            Origin::PolicyFile | Origin::OwnBinary => "nothing lifts it".to_string(),
            _ => "only --no-protect-defaults lifts it, for every protected path at once".into(),
        };
        d.why_not = Some(format!(
            "{} stays read-only in every writable root and cannot be created ({}); {lift}",
            display(q, home),
            origin.describe()
        ));
        return d;
    }
    let in_checkout = |c: &PathBuf| p.starts_with(c);
    if p.file_name()
        .is_some_and(|n| n.as_encoded_bytes().eq_ignore_ascii_case(b".git"))
    {
        if let Some(top) = plan
            .fs
            .git_checkouts
            .iter()
            .filter(|c| in_checkout(c))
            .max()
        {
            d.rule = "protected";
            d.matched = Some(display(top, home));
            d.why_not = Some(format!(
                "no `.git` can be made inside the worktree of a repository found at launch ({}): \
                 a later git status there would enter a repository of the command's through a \
                 gitlink; clone or init it under /tmp, or outside the sandbox; only \
                 --no-protect-defaults lifts it",
                display(top, home)
            ));
            return d;
        }
    }
    if let Some(r) = plan.fs.deny_write.iter().find(|r| r.covers(p)) {
        d.rule = "deny_write";
        d.matched = Some(match r {
            crate::plan::PathRule::Literal(l) => display(l, home),
            crate::plan::PathRule::Glob(g) => g.written.clone(),
        });
        d.why_not = Some(
            "deny_write beats allow_write: only removing the entry from the policy allows it"
                .into(),
        );
        return d;
    }
    if d.kind == "metadata" && d.errno == "EPERM" && p.starts_with("/dev") {
        d.rule = "device";
        d.why_not = Some("the metadata of a device node never changes in the sandbox".into());
        return d;
    }
    if let Some(h) = plan.held_at(p) {
        // The class rule: the home directory is read-only but for what
        // allow_write names inside it; the entry the command wrote is the
        // narrowest such name.
        d.rule = "home directory";
        d.matched = Some(display(h, home));
        match suggest(plan, p, d.op, &d.program, home) {
            Ok(fix) => d.fix = Some(fix),
            Err(why) => {
                d.why_not = Some(format!(
                    "the home directory stays read-only when a writable root holds it, except what allow_write names inside it; {why}; --no-protect-defaults lifts the rule, with every protected path"
                ))
            }
        }
        return d;
    }
    if plan.writable(p) {
        return d;
    }
    d.rule = "outside the writable roots";
    match suggest(plan, p, d.op, &d.program, home) {
        Ok(fix) => d.fix = Some(fix),
        Err(why) => d.why_not = Some(why),
    }
    d
}

/// The option that makes `p` writable: workspace-write when it lies in a
/// root that mode grants, else an existing directory to add as a root.
fn suggest(
    plan: &Plan,
    p: &Path,
    op: &str,
    program: &str,
    home: Option<&Path>,
) -> Result<Fix, String> {
    let mut fix = Fix {
        workspace_write: plan.fs.access == SandboxMode::ReadOnly,
        ..Fix::default()
    };
    if fix.workspace_write {
        let granted = [plan.workspace.as_path(), Path::new("/tmp")];
        if granted.iter().any(|r| p.starts_with(r))
            || plan.worktree.as_ref().is_some_and(|w| p.starts_with(w))
        {
            return Ok(fix);
        }
    }
    if let Some(e) = home.and_then(|h| home_entry_holding(h, p)) {
        return Err(format!(
            "`~/{}` is protected wherever a writable root holds it (run by {}: {}), so no option allows it short of --no-protect-defaults; a package cache there is replaced by the command's own (docs/filesystem.md: package managers)",
            e.path, e.runs_it, e.why
        ));
    }
    let meant = super::narrow::meant(p, op, program, home, &plan.workspace)?;
    let root = meant.dir;
    // The suggestion carries a name the command chose: it must read
    // exactly as it is, or it is not made.
    let (Some(abs), shown) = (root.to_str(), display(&root, home)) else {
        return Err(UNSHOWABLE.into());
    };
    if !crate::error::showable(abs) || !crate::error::showable(&shown) {
        return Err(UNSHOWABLE.into());
    }
    // A root that does not exist grants nothing: it is made first, when it
    // is the directory the program was making (never a file's name).
    if !root.exists() {
        if !meant.made {
            return Err(format!(
                "`{shown}` does not exist and the program was not making it as a directory, so no directory is made for it"
            ));
        }
        fix.mkdir = Some(abs.to_string());
    }
    fix.allow_write = Some(shown);
    fix.warning = meant.warning;
    Ok(fix)
}

/// The protected table's home entry holding `p`: allowing its directory
/// would not make the rerun work, as the entry stays read-only in any root.
fn home_entry_holding(home: &Path, p: &Path) -> Option<&'static crate::protected::Entry> {
    use crate::protected::{Scope, TABLE};
    TABLE
        .iter()
        .filter(|e| matches!(e.scope, Scope::Home | Scope::Root))
        .find(|e| p.starts_with(home.join(e.path)))
}

fn socket(plan: &Plan, f: &Fact<'_>, mut d: Denial) -> Denial {
    d.path = None;
    d.resolved = None;
    if f.arg & 0xffff_ffff == libc::AF_UNIX as u64 {
        let ty = (f.arg >> 32) & 0xf;
        d.kind = "unix_socket";
        if ty == libc::SOCK_STREAM as u64 || ty == libc::SOCK_SEQPACKET as u64 {
            d.rule = "unix sockets off";
            d.why_not = Some(
                "this sandbox runs inside another one whose broker holds the seccomp listener, so no connect could be checked and no unix socket is made; no option allows it (socketpair works)"
                    .into(),
            );
        } else {
            d.rule = "unix datagram";
            d.why_not = Some(
                "a unix datagram socket names its destination on every send, which dcjail cannot check; no option allows it (stream and seqpacket sockets work, and reach a socket the policy names)"
                    .into(),
            );
        }
    } else {
        let family = family_name(f.arg & 0xffff_ffff);
        d.kind = "socket";
        d.rule = "network";
        d.why_not = Some(match family {
            "AF_INET" | "AF_INET6" => format!(
                "the network is `{}` and this backend gives the command no network namespace of its own: an {family} socket would use the host's network (a server would listen on the host's loopback). The bwrap backend gives the command its own loopback, where local servers and their clients work with --net none and allowlist; connections out go through dcjail's proxy (--net allowlist --allow-domain D) or --net full",
                plan.net.mode.word()
            ),
            _ => format!(
                "the network is `{}`: an {family} socket is refused (only internet sockets, through dcjail's proxy with --net allowlist or to the command's own loopback under bwrap, or --net full, allow other sockets)",
                plan.net.mode.word()
            ),
        });
    }
    d
}

/// A unix socket's connect the broker refused: the socket is neither named
/// nor bound by the command. Naming it is suggested unless the program
/// does without it (`quiet_socket`).
fn connect(mut d: Denial, home: Option<&Path>) -> Denial {
    d.kind = "unix_socket";
    d.rule = "unix socket not named";
    let Some(p) = d.resolved.clone() else {
        d.why_not = Some("the socket's path could not be read".into());
        return d;
    };
    if let Some(why) = quiet_socket(&p) {
        d.why_not = Some(format!(
            "{why}: the program goes on without it, so naming it is not suggested"
        ));
        return d;
    }
    let shown = display(&p, home);
    match p.to_str() {
        Some(abs) if crate::error::showable(abs) && crate::error::showable(&shown) => {
            d.fix = Some(Fix {
                allow_unix_socket: Some(shown),
                ..Fix::default()
            });
        }
        _ => d.why_not = Some(UNSHOWABLE.into()),
    }
    d
}

/// Host services that programs try and do without when refused: glibc's
/// name service cache and systemd's user database (it falls back to
/// /etc/passwd), the system logger and the journal (the message is
/// dropped), D-Bus (a desktop notification, an accessibility bus).
/// Naming one of them would open the service to the command and change
/// nothing of the run.
pub fn quiet_socket(p: &Path) -> Option<&'static str> {
    let s = p.to_string_lossy();
    // /var/run is /run on every current system.
    let s = match s.strip_prefix("/var/run/") {
        Some(rest) => format!("/run/{rest}"),
        None => s.into_owned(),
    };
    const QUIET: &[(&str, &str)] = &[
        ("/run/nscd/", "glibc's name service cache (nscd)"),
        ("/run/systemd/userdb/", "systemd's user database"),
        ("/run/systemd/journal/", "the systemd journal"),
        ("/run/systemd/notify", "systemd's notify socket"),
        ("/run/dbus/", "the D-Bus system bus"),
        ("/dev/log", "the system logger"),
    ];
    // A directory (trailing `/`) holds any socket in it; else the one path.
    let hit = |q: &str| match q.strip_suffix('/') {
        Some(dir) => s.starts_with(q) || s == dir,
        None => s == q,
    };
    if let Some((_, why)) = QUIET.iter().find(|(q, _)| hit(q)) {
        return Some(why);
    }
    // The session bus: $XDG_RUNTIME_DIR/bus, /run/user/UID/bus.
    if s.starts_with("/run/user/") && (s.ends_with("/bus") || s.contains("/at-spi/")) {
        return Some("the D-Bus session bus");
    }
    None
}

/// The name of a socket family, for a person (Linux's numbers: the facts
/// come from Linux's seccomp filter).
fn family_name(f: u64) -> &'static str {
    match f {
        2 => "AF_INET",
        10 => "AF_INET6",
        16 => "AF_NETLINK",
        17 => "AF_PACKET",
        29 => "AF_CAN",
        30 => "AF_TIPC",
        31 => "AF_BLUETOOTH",
        38 => "AF_ALG",
        40 => "AF_VSOCK",
        44 => "AF_XDP",
        _ => "other-family",
    }
}

/// The path as the host names it: `..` and `.` taken out of a path that
/// was only joined, not resolved.
fn host_path(p: &Path, flags: u8) -> PathBuf {
    if flags & LEXICAL == 0 {
        return p.to_path_buf();
    }
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// `~/x` for a path under the home directory.
pub fn display(p: &Path, home: Option<&Path>) -> String {
    match home.and_then(|h| p.strip_prefix(h).ok()) {
        Some(rest) if !rest.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => p.display().to_string(),
    }
}

pub fn is_meta(op: &str) -> bool {
    op.contains("chmod") || op.contains("chown") || op.contains("utime") || op.contains("xattr")
}

fn errno_name(e: i32) -> &'static str {
    match e {
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::EROFS => "EROFS",
        libc::EBUSY => "EBUSY",
        libc::EXDEV => "EXDEV",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        libc::ECONNREFUSED => "ECONNREFUSED",
        _ => "other",
    }
}

#[cfg(not(target_os = "linux"))]
pub fn op_name(_nr: i32) -> &'static str {
    "syscall"
}

#[cfg(target_os = "linux")]
pub fn op_name(nr: i32) -> &'static str {
    use libc::*;
    #[cfg(target_arch = "x86_64")]
    const X86: &[(i64, &str)] = &[
        (SYS_open, "open"),
        (SYS_creat, "creat"),
        (SYS_mkdir, "mkdir"),
        (SYS_mknod, "mknod"),
        (SYS_symlink, "symlink"),
        (SYS_link, "link"),
        (SYS_rename, "rename"),
        (SYS_renameat, "renameat"),
        (SYS_unlink, "unlink"),
        (SYS_rmdir, "rmdir"),
        (SYS_chmod, "chmod"),
        (SYS_chown, "chown"),
        (SYS_lchown, "lchown"),
        (SYS_utime, "utime"),
        (SYS_utimes, "utimes"),
        (SYS_futimesat, "futimesat"),
    ];
    #[cfg(not(target_arch = "x86_64"))]
    const X86: &[(i64, &str)] = &[];
    const ALL: &[(i64, &str)] = &[
        (SYS_openat, "openat"),
        (SYS_mkdirat, "mkdirat"),
        (SYS_mknodat, "mknodat"),
        (SYS_symlinkat, "symlinkat"),
        (SYS_linkat, "linkat"),
        (SYS_renameat2, "renameat2"),
        (SYS_unlinkat, "unlinkat"),
        (SYS_truncate, "truncate"),
        (SYS_fchmod, "fchmod"),
        (SYS_fchmodat, "fchmodat"),
        (SYS_fchmodat2, "fchmodat2"),
        (SYS_fchown, "fchown"),
        (SYS_fchownat, "fchownat"),
        (SYS_utimensat, "utimensat"),
        (SYS_setxattr, "setxattr"),
        (SYS_lsetxattr, "lsetxattr"),
        (SYS_fsetxattr, "fsetxattr"),
        (SYS_removexattr, "removexattr"),
        (SYS_lremovexattr, "lremovexattr"),
        (SYS_fremovexattr, "fremovexattr"),
        (SYS_socket, "socket"),
        (SYS_socketpair, "socketpair"),
        (SYS_connect, "connect"),
        (SYS_bind, "bind"),
    ];
    X86.iter()
        .chain(ALL)
        .find(|(n, _)| *n == i64::from(nr))
        .map_or("syscall", |(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_programs_do_without_are_quiet_and_agents_are_not() {
        for p in [
            "/var/run/nscd/socket",
            "/run/nscd/socket",
            "/run/systemd/userdb/io.systemd.DynamicUser",
            "/run/systemd/journal/socket",
            "/run/systemd/journal/stdout",
            "/run/systemd/notify",
            "/dev/log",
            "/run/dbus/system_bus_socket",
            "/var/run/dbus/system_bus_socket",
            "/run/user/1000/bus",
            "/run/user/1000/at-spi/bus_0",
        ] {
            assert!(quiet_socket(Path::new(p)).is_some(), "{p}");
        }
        for p in [
            "/run/user/1000/gnupg/S.gpg-agent",
            "/tmp/tmux-1000/default",
            "/var/run/docker.sock",
            "/home/u/.ssh/agent.sock",
            "/run/user/1000/busy",
            "/dev/logs",
        ] {
            assert!(quiet_socket(Path::new(p)).is_none(), "{p}");
        }
    }

    #[test]
    fn a_socket_fix_is_one_option_and_its_path() {
        let f = Fix {
            allow_unix_socket: Some("~/.gnupg/S.gpg-agent".into()),
            ..Fix::default()
        };
        assert_eq!(f.flags(), ["--allow-unix-socket", "~/.gnupg/S.gpg-agent"]);
    }
}
