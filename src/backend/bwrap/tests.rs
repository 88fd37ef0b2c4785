//! The renderer against a made-up host, and the trust rules for bwrap.
#![cfg(test)]

use super::find::{parse_version, trusted, without_symlinks};
use super::render::*;
use super::MIN_VERSION;
use crate::plan::{FsPlan, NetPlan, PathRule, Plan};
use crate::policy::{BackendChoice, Mode, Tool};
use crate::policy::{NetMode, SandboxMode};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

struct Fake(HashMap<PathBuf, Node>);
impl Host for Fake {
    fn node(&self, p: &Path) -> Node {
        self.0.get(p).copied().unwrap_or(Node::Missing)
    }
}
fn fake(entries: &[(&str, Node)]) -> Fake {
    Fake(
        entries
            .iter()
            .map(|(p, n)| (PathBuf::from(p), *n))
            .collect(),
    )
}

fn plan(access: SandboxMode, writable: &[&str], protected: &[&str]) -> Plan {
    Plan {
        argv: vec!["true".into()],
        cwd: "/ws".into(),
        workspace: "/ws".into(),
        worktree: None,
        mode: Mode::Default,
        tool: Tool::Bash,
        sandboxed: true,
        backend: BackendChoice::Bwrap,
        fs: FsPlan {
            access,
            writable: writable.iter().map(PathBuf::from).collect(),
            deny_read: vec![],
            allow_read: vec![],
            deny_write: vec![],
            protected: protected.iter().map(PathBuf::from).collect(),
            held: vec![],
            caches: None,
            git_checkouts: vec![],
        },
        net: NetPlan {
            mode: NetMode::None,
            allow: vec![],
            deny: vec![],
            allow_unix_sockets: Vec::new(),
            credentials: Vec::new(),
        },
        timeout: None,
        env: crate::policy::env::EnvRules::new(&Default::default()).unwrap(),
        policy_file: None,
        observe: false,
        report_fd: None,
        facts: crate::plan::Facts {
            uid: nix::unistd::getuid().as_raw(),
            euid: nix::unistd::geteuid().as_raw(),
            ..Default::default()
        },
    }
}

fn words(r: &Rendered) -> Vec<String> {
    r.args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

fn pos(w: &[String], seq: &[&str]) -> usize {
    w.windows(seq.len())
        .position(|win| win.iter().zip(seq).all(|(a, b)| a == b))
        .unwrap_or_else(|| panic!("{seq:?} not in {w:?}"))
}

#[test]
fn read_only_renders_root_ro_dev_proc_and_every_namespace() {
    let r = render(&plan(SandboxMode::ReadOnly, &[], &[]), &fake(&[])).unwrap();
    let w = words(&r);
    assert_eq!(
        &w[..7],
        &["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    );
    for ns in [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--unshare-net",
        "--die-with-parent",
    ] {
        assert!(w.contains(&ns.to_string()), "{ns} missing");
    }
    // The caller's terminal stays the command's (job control works);
    // TIOCSTI is refused by the seccomp layer instead.
    assert!(!w.contains(&"--new-session".to_string()));
    pos(&w, &["--cap-drop", "ALL"]);
    assert!(!w.contains(&"--bind".to_string()));
    assert!(r.guards.is_empty());
}

#[test]
fn full_network_keeps_the_host_network_namespace_only() {
    let mut p = plan(SandboxMode::ReadOnly, &[], &[]);
    p.net.mode = NetMode::Full;
    let w = words(&render(&p, &fake(&[])).unwrap());
    assert!(!w.contains(&"--unshare-net".to_string()));
    assert!(w.contains(&"--unshare-pid".to_string()));
}

#[test]
fn protected_paths_are_bound_read_only_after_the_writable_root_with_the_git_dir_pinned() {
    let p = plan(
        SandboxMode::WorkspaceWrite,
        &["/ws"],
        &["/ws/.git/hooks", "/ws/.git/config", "/ws/.bashrc"],
    );
    let host = fake(&[
        ("/ws", Node::Dir),
        ("/ws/.git", Node::Dir),
        ("/ws/.git/hooks", Node::Dir),
        ("/ws/.git/config", Node::File),
        ("/ws/.bashrc", Node::File),
    ]);
    let r = render(&p, &host).unwrap();
    let w = words(&r);
    let root = pos(&w, &["--bind", "/ws", "/ws"]);
    // Held entries are bound with -try: one that vanished before bwrap
    // mounts it is skipped (its guard keeps it uncreatable).
    let pin = pos(&w, &["--bind-try", "/ws/.git", "/ws/.git"]);
    let hooks = pos(&w, &["--ro-bind-try", "/ws/.git/hooks", "/ws/.git/hooks"]);
    let config = pos(&w, &["--ro-bind-try", "/ws/.git/config", "/ws/.git/config"]);
    let rc = pos(&w, &["--ro-bind-try", "/ws/.bashrc", "/ws/.bashrc"]);
    assert!(pos(&w, &["--ro-bind", "/", "/"]) < root);
    assert!(root < pin && pin < hooks && pin < config && root < rc);
    assert!(!r.missing);
}

#[test]
fn a_missing_protected_path_is_guarded_at_its_first_missing_component_and_nothing_is_mounted() {
    let p = plan(
        SandboxMode::WorkspaceWrite,
        &["/ws"],
        &[
            "/ws/.claude/commands",
            "/ws/.claude/agents",
            "/ws/.mcp.json",
            "/ws/.git/hooks",
        ],
    );
    let host = fake(&[("/ws", Node::Dir)]);
    let r = render(&p, &host).unwrap();
    let w = words(&r);
    let g = |d: &str, n: &str| Guard {
        dir: d.into(),
        name: n.into(),
    };
    assert_eq!(
        r.guards,
        vec![g("/ws", ".claude"), g("/ws", ".mcp.json"), g("/ws", ".git")]
    );
    // A mount would need a placeholder on the host: there is none.
    for m in ["/ws/.claude", "/ws/.mcp.json", "/ws/.git"] {
        assert!(!w.contains(&m.to_string()), "{m} mounted: {w:?}");
    }
}

#[test]
fn a_missing_name_inside_an_existing_git_dir_is_guarded_in_it() {
    let p = plan(
        SandboxMode::WorkspaceWrite,
        &["/ws"],
        &["/ws/.git/hooks", "/ws/.git/config"],
    );
    let host = fake(&[
        ("/ws", Node::Dir),
        ("/ws/.git", Node::Dir),
        ("/ws/.git/config", Node::File),
    ]);
    let r = render(&p, &host).unwrap();
    let g = |d: &str, n: &str| Guard {
        dir: d.into(),
        name: n.into(),
    };
    // The missing hooks, and every name on the way to a protected path
    // (should one vanish during the run, it cannot come back).
    assert_eq!(
        r.guards,
        vec![
            g("/ws", ".git"),
            g("/ws/.git", "hooks"),
            g("/ws/.git", "config")
        ]
    );
    assert!(r.missing);
    // The directory holding the guard is pinned, so it cannot be
    // renamed away and recreated unguarded.
    pos(&words(&r), &["--bind-try", "/ws/.git", "/ws/.git"]);
}

#[test]
fn a_gitdir_pointer_file_is_held_read_only_itself() {
    let p = plan(SandboxMode::WorkspaceWrite, &["/ws"], &["/ws/.git/hooks"]);
    let host = fake(&[("/ws", Node::Dir), ("/ws/.git", Node::File)]);
    let r = render(&p, &host).unwrap();
    pos(&words(&r), &["--ro-bind-try", "/ws/.git", "/ws/.git"]);
    assert!(!r.missing);
}

#[test]
fn a_symlinked_protected_path_inside_a_writable_root_is_refused() {
    let p = plan(SandboxMode::WorkspaceWrite, &["/ws"], &["/ws/.bashrc"]);
    let host = fake(&[("/ws", Node::Dir), ("/ws/.bashrc", Node::Symlink)]);
    let e = render(&p, &host).unwrap_err();
    assert!(e.contains("symlink"), "{e}");
}

#[test]
fn another_users_symlink_in_a_sticky_tmp_needs_no_mount_and_is_no_refusal() {
    let p = plan(SandboxMode::WorkspaceWrite, &["/tmp"], &["/tmp/.bashrc"]);
    let host = fake(&[("/tmp", Node::Dir), ("/tmp/.bashrc", Node::Foreign)]);
    let r = render(&p, &host).unwrap();
    assert!(!words(&r).contains(&"/tmp/.bashrc".to_string()));
    assert!(r.guards.is_empty());
}

#[test]
fn protected_paths_outside_every_writable_root_need_no_mount() {
    let p = plan(
        SandboxMode::WorkspaceWrite,
        &["/ws"],
        &["/elsewhere/.git/hooks"],
    );
    let r = render(&p, &fake(&[("/ws", Node::Dir)])).unwrap();
    assert!(!words(&r).iter().any(|w| w.starts_with("/elsewhere")));
}

#[test]
fn deny_read_masks_and_allow_read_reopens_inside_then_remounts_read_only() {
    let mut p = plan(SandboxMode::WorkspaceWrite, &["/ws"], &[]);
    p.fs.deny_read = vec![
        PathRule::Literal("/ws/secret".into()),
        PathRule::Literal("/ws/key".into()),
    ];
    p.fs.allow_read = vec![PathRule::Literal("/ws/secret/public".into())];
    let host = fake(&[
        ("/ws", Node::Dir),
        ("/ws/secret", Node::Dir),
        ("/ws/secret/public", Node::Dir),
        ("/ws/key", Node::File),
    ]);
    let w = words(&render(&p, &host).unwrap());
    let mask = pos(&w, &["--tmpfs", "/ws/secret"]);
    let file = pos(&w, &["--ro-bind", "/dev/null", "/ws/key"]);
    let reopen = pos(
        &w,
        &["--bind-try", "/ws/secret/public", "/ws/secret/public"],
    );
    let remount = pos(&w, &["--remount-ro", "/ws/secret"]);
    assert!(pos(&w, &["--bind", "/ws", "/ws"]) < mask);
    assert!(file > 0 && mask < reopen && reopen < remount);
}

#[test]
fn deny_write_beats_a_writable_root_it_names() {
    let mut p = plan(SandboxMode::WorkspaceWrite, &["/ws", "/ws/out"], &[]);
    p.fs.deny_write = vec![PathRule::Literal("/ws/out".into())];
    let host = fake(&[("/ws", Node::Dir), ("/ws/out", Node::Dir)]);
    let w = words(&render(&p, &host).unwrap());
    pos(&w, &["--ro-bind", "/ws/out", "/ws/out"]);
    assert!(!w.windows(3).any(|x| x[0] == "--bind" && x[1] == "/ws/out"));
}

#[test]
fn danger_full_access_binds_the_root_writable_but_keeps_protected_paths_read_only() {
    let p = plan(
        SandboxMode::DangerFullAccess,
        &["/"],
        &["/usr/local/bin/dcjail"],
    );
    let host = fake(&[
        ("/usr", Node::Dir),
        ("/usr/local", Node::Dir),
        ("/usr/local/bin", Node::Dir),
        ("/usr/local/bin/dcjail", Node::File),
    ]);
    let r = render(&p, &host).unwrap();
    let w = words(&r);
    assert_eq!(&w[..3], &["--bind", "/", "/"]);
    pos(
        &w,
        &[
            "--ro-bind-try",
            "/usr/local/bin/dcjail",
            "/usr/local/bin/dcjail",
        ],
    );
    // Nothing is missing: no broker for creations.
    assert!(!r.missing);
}

#[test]
fn the_directories_on_the_way_to_a_masked_file_in_a_writable_root_are_pinned() {
    let mut p = plan(SandboxMode::WorkspaceWrite, &["/ws"], &[]);
    p.fs.deny_read = vec![PathRule::Literal("/ws/sub/deeper/key".into())];
    let host = fake(&[
        ("/ws", Node::Dir),
        ("/ws/sub", Node::Dir),
        ("/ws/sub/deeper", Node::Dir),
        ("/ws/sub/deeper/key", Node::File),
    ]);
    let w = words(&render(&p, &host).unwrap());
    let sub = pos(&w, &["--bind-try", "/ws/sub", "/ws/sub"]);
    let deeper = pos(&w, &["--bind-try", "/ws/sub/deeper", "/ws/sub/deeper"]);
    let mask = pos(&w, &["--ro-bind", "/dev/null", "/ws/sub/deeper/key"]);
    assert!(sub < deeper && deeper < mask);
}

#[test]
fn the_allowlist_keeps_a_private_network_namespace() {
    let mut p = plan(SandboxMode::ReadOnly, &[], &[]);
    p.net.mode = NetMode::Allowlist;
    let w = words(&render(&p, &fake(&[])).unwrap());
    assert!(w.contains(&"--unshare-net".to_string()));
}

#[test]
fn globs_are_refused_not_dropped() {
    let mut p = plan(SandboxMode::ReadOnly, &[], &[]);
    p.fs.deny_read = vec![PathRule::Glob(crate::plan::Glob {
        pattern: "**/.env".into(),
        written: "**/.env".into(),
        matcher: globset::Glob::new("**/.env").unwrap().compile_matcher(),
    })];
    assert!(render(&p, &fake(&[])).unwrap_err().contains("**/.env"));
}

#[test]
fn a_bwrap_planted_in_a_writable_root_is_never_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("dcjail-trust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = std::fs::canonicalize(&dir).unwrap();
    let fake_bwrap = dir.join("bwrap");
    std::fs::write(&fake_bwrap, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&fake_bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut p = plan(SandboxMode::WorkspaceWrite, &[dir.to_str().unwrap()], &[]);
    p.workspace = dir.clone();
    p.cwd = dir.clone();
    assert!(!trusted(&fake_bwrap, Some(&p), p.facts.uid));
    p.fs.writable.clear();
    assert!(
        !trusted(&fake_bwrap, Some(&p), p.facts.uid),
        "inside the workspace"
    );
    p.workspace = "/elsewhere".into();
    p.cwd = "/elsewhere".into();
    assert!(trusted(&fake_bwrap, Some(&p), p.facts.uid));
    std::fs::set_permissions(&fake_bwrap, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(
        !trusted(&fake_bwrap, Some(&p), p.facts.uid),
        "world-writable"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bwrap_reached_through_a_symlinked_directory_in_the_workspace_is_never_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let ws = std::env::temp_dir().join(format!("dcjail-trust-link-{}", std::process::id()));
    let out = std::env::temp_dir().join(format!("dcjail-trust-out-{}", std::process::id()));
    std::fs::create_dir_all(ws.join("real")).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let ws = std::fs::canonicalize(&ws).unwrap();
    let out = std::fs::canonicalize(&out).unwrap();
    let fake_bwrap = ws.join("real").join("bwrap");
    std::fs::write(&fake_bwrap, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&fake_bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A path outside the workspace whose directory is a symlink into it.
    let link = out.join("bin");
    std::os::unix::fs::symlink(ws.join("real"), &link).unwrap();
    let via_link = link.join("bwrap");
    assert!(
        without_symlinks(&via_link).is_none(),
        "a symlinked path is not its own canonical path"
    );
    assert!(without_symlinks(&fake_bwrap).is_some());
    let mut p = plan(SandboxMode::ReadOnly, &[], &[]);
    p.workspace = ws.clone();
    p.cwd = ws.clone();
    assert!(
        !trusted(&via_link, Some(&p), p.facts.uid),
        "resolves into the workspace"
    );
    std::fs::remove_file(&link).unwrap();
    std::fs::remove_dir(&out).unwrap();
    std::fs::remove_dir_all(&ws).unwrap();
}

#[test]
fn versions_parse() {
    assert_eq!(parse_version("bubblewrap 0.8.0\n"), Some((0, 8, 0)));
    assert_eq!(parse_version("bubblewrap 0.11"), Some((0, 11, 0)));
    assert_eq!(parse_version("nope"), None);
    assert!(parse_version("bubblewrap 0.3.3").unwrap() < MIN_VERSION);
}

#[test]
fn a_held_home_is_mounted_read_only_and_the_roots_inside_it_writable_on_top() {
    let mut p = plan(
        SandboxMode::WorkspaceWrite,
        &["/home/u", "/home/u/.cargo", "/tmp"],
        &["/home/u/.cargo/bin"],
    );
    p.fs.held = vec![PathBuf::from("/home/u")];
    let host = fake(&[
        ("/home/u", Node::Dir),
        ("/home/u/.cargo", Node::Dir),
        ("/home/u/.cargo/bin", Node::Dir),
        ("/tmp", Node::Dir),
    ]);
    let r = render(&p, &host).unwrap();
    let w = words(&r);
    let home = pos(&w, &["--ro-bind", "/home/u", "/home/u"]);
    let cargo = pos(&w, &["--bind", "/home/u/.cargo", "/home/u/.cargo"]);
    let bin = pos(
        &w,
        &["--ro-bind-try", "/home/u/.cargo/bin", "/home/u/.cargo/bin"],
    );
    assert!(home < cargo && cargo < bin, "{w:?}");
    assert!(
        !w.windows(3).any(|x| x == ["--bind", "/home/u", "/home/u"]),
        "{w:?}"
    );
    assert!(r.held.contains(&PathBuf::from("/home/u")));
    // Above the home directory: the root writable, the home held inside it.
    let mut above = plan(SandboxMode::WorkspaceWrite, &["/home"], &[]);
    above.fs.held = vec![PathBuf::from("/home/u")];
    let w = words(
        &render(
            &above,
            &fake(&[("/home", Node::Dir), ("/home/u", Node::Dir)]),
        )
        .unwrap(),
    );
    let root = pos(&w, &["--bind", "/home", "/home"]);
    let held = pos(&w, &["--ro-bind-try", "/home/u", "/home/u"]);
    assert!(root < held, "{w:?}");
}
