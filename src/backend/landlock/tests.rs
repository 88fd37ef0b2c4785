//! The layer spec from plans over real directories, and the layer applied
//! in a child.
#![cfg(test)]

use super::*;

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dcjail-ll-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::canonicalize(&d).unwrap()
}

#[test]
fn glob_prefix_is_the_literal_head() {
    assert_eq!(glob_prefix("/a/b/*.pem"), Some(PathBuf::from("/a/b")));
    assert_eq!(glob_prefix("/a/**/x"), Some(PathBuf::from("/a")));
    assert_eq!(glob_prefix("**/.env"), None);
}

/// A plan from the default policy, changed by `f`, with made-up facts
/// rooted in `ws` (no dcjail binary: its protection is tested apart).
fn plan_with(ws: &Path, f: impl FnOnce(&mut crate::policy::Policy)) -> Plan {
    let mut pol = crate::policy::Policy::default();
    f(&mut pol);
    let facts = crate::plan::Facts {
        cwd: ws.to_path_buf(),
        ..Default::default()
    };
    crate::plan::build(&pol, vec!["true".into()], &facts).unwrap()
}

#[test]
fn read_only_no_network_spec_reads_everything_writes_only_terminals() {
    let ws = tempdir("spec-ro");
    let s = layer_spec(&plan_with(&ws, |_| {})).unwrap();
    assert_eq!(s.abi, 6);
    assert_eq!(s.handled_fs, access::handled(6));
    // Everything is readable but /dev, which holds only what bwrap's
    // own /dev holds: `/` is split, every other top-level entry is
    // readable whole.
    let get = |p: &str| {
        s.fs_rules
            .iter()
            .find(|r| r.path == Path::new(p))
            .map(|r| r.access)
    };
    assert_eq!(get("/"), Some(access::READ_DIR));
    assert_eq!(get("/usr"), Some(access::READ));
    assert_eq!(get("/dev"), None);
    assert_eq!(get("/dev/pts"), None);
    let own: Vec<PathBuf> = Vec::new();
    let writers: Vec<&Path> = s
        .fs_rules
        .iter()
        .filter(|r| r.access & access::WRITE_FILE != 0)
        .map(|r| r.path.as_path())
        .collect();
    let mut want = vec![Path::new("/dev/null"), Path::new("/dev/tty")];
    want.extend(own.iter().map(PathBuf::as_path));
    assert_eq!(writers, want);
    assert!(s
        .fs_rules
        .iter()
        .all(|r| r.access & (access::MAKE_REG | access::REMOVE_FILE) == 0));
    assert!(s.restrict_tcp && s.tcp_connect_ports.is_empty());
    assert_eq!(
        s.sockets,
        SocketRules {
            unix: Unix::Named,
            inet: Inet::Deny
        }
    );
    assert_eq!(s.scopes, scope::SIGNAL | scope::ABSTRACT_UNIX_SOCKET);
    assert!(s.keep_fds.is_empty());
    std::fs::remove_dir_all(&ws).unwrap();
}

#[test]
fn full_network_spec_has_no_network_rules() {
    let ws = tempdir("spec-full");
    let s = layer_spec(&plan_with(&ws, |p| {
        p.sandbox.network.mode = NetMode::Full;
    }))
    .unwrap();
    assert!(!s.restrict_tcp);
    assert_eq!(s.sockets.inet, Inet::Allow);
    std::fs::remove_dir_all(&ws).unwrap();
}

#[test]
fn allowlist_restricts_tcp_and_allows_only_stream_sockets() {
    let ws = tempdir("spec-allow");
    let s = layer_spec(&plan_with(&ws, |p| {
        p.sandbox.network.mode = NetMode::Allowlist;
    }))
    .unwrap();
    assert!(s.restrict_tcp);
    assert_eq!(s.sockets.inet, Inet::StreamOnly);
    // The proxy's port is added at launch, once it is bound.
    assert!(s.tcp_connect_ports.is_empty());
    std::fs::remove_dir_all(&ws).unwrap();
}

#[test]
fn workspace_write_with_protected_paths_is_refused() {
    let ws = tempdir("spec-prot");
    let e = layer_spec(&plan_with(&ws, |p| {
        p.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
    }))
    .unwrap_err();
    assert!(e.contains("protect_defaults = false"), "{e}");
    std::fs::remove_dir_all(&ws).unwrap();
}

#[test]
fn workspace_write_without_protected_paths_grants_write_on_the_roots() {
    let ws = tempdir("spec-ww");
    let s = layer_spec(&plan_with(&ws, |p| {
        p.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
        p.sandbox.filesystem.protect_defaults = false;
    }))
    .unwrap();
    let tmp = std::fs::canonicalize("/tmp").unwrap();
    for root in [&ws, &tmp] {
        assert!(
            s.fs_rules.contains(&FsRule {
                path: root.clone(),
                access: access::WRITE
            }),
            "{}",
            root.display()
        );
    }
    std::fs::remove_dir_all(&ws).unwrap();
}

#[test]
fn under_mounts_protected_paths_leave_the_roots_writable() {
    let ws = tempdir("spec-mounts");
    let plan = plan_with(&ws, |p| {
        p.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
    });
    assert!(!plan.fs.protected.is_empty());
    let s = layer_spec_with(&plan, WriteSubtraction::ByMounts).unwrap();
    assert!(s.fs_rules.contains(&FsRule {
        path: ws.clone(),
        access: access::WRITE
    }));
    std::fs::remove_dir_all(&ws).unwrap();
}

#[test]
fn deny_write_inside_a_root_is_refused_and_a_root_inside_one_is_dropped() {
    let ws = tempdir("spec-dw");
    std::fs::create_dir_all(ws.join("keep")).unwrap();
    let e = layer_spec(&plan_with(&ws, |p| {
        p.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
        p.sandbox.filesystem.protect_defaults = false;
        p.sandbox.filesystem.deny_write = vec!["keep".into()];
    }))
    .unwrap_err();
    assert!(e.contains("deny_write"), "{e}");
    let s = layer_spec(&plan_with(&ws, |p| {
        p.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
        p.sandbox.filesystem.protect_defaults = false;
        p.sandbox.filesystem.deny_write = vec![ws.parent().unwrap().to_path_buf()];
    }))
    .unwrap();
    assert!(!s.fs_rules.iter().any(|r| r.path == ws));
    std::fs::remove_dir_all(&ws).unwrap();
}

fn sample() -> LayerSpec {
    LayerSpec {
        abi: 6,
        handled_fs: access::handled(6),
        fs_rules: vec![
            FsRule {
                path: PathBuf::from(std::ffi::OsString::from("/odd\n(path)")),
                access: access::READ,
            },
            FsRule {
                path: "/tmp".into(),
                access: access::WRITE,
            },
        ],
        restrict_tcp: true,
        tcp_connect_ports: vec![3128, 1080],
        scopes: scope::SIGNAL | scope::ABSTRACT_UNIX_SOCKET,
        sockets: SocketRules {
            unix: Unix::Named,
            inet: Inet::StreamOnly,
        },
        unix_sockets: vec!["/run/user/0/gnupg".into()],
        fs: FsRules::OPEN,
        keep_fds: vec![5, 9],
        host_roots: Vec::new(),
        without: Default::default(),
    }
}

#[test]
fn minimum_abi_names_what_is_missing() {
    let s = sample();
    let missing: Vec<&str> = s
        .needs()
        .into_iter()
        .filter(|(a, _)| *a > 3)
        .map(|(_, w)| w)
        .collect();
    assert!(missing.iter().any(|w| w.contains("scoping")));
    assert!(missing.iter().any(|w| w.contains("TCP")));
}

#[test]
fn handled_rights_follow_the_abi() {
    assert_eq!(access::handled(6) & access::IOCTL_DEV, access::IOCTL_DEV);
    assert_eq!(access::handled(4) & access::IOCTL_DEV, 0);
    assert_eq!(access::handled(1) & access::REFER, 0);
}

#[test]
fn a_held_home_is_not_granted_and_a_root_above_it_is_refused() {
    let home = tempdir("held-home");
    std::fs::create_dir_all(home.join("proj")).unwrap();
    let mut plan = plan_with(&home, |p| {
        p.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
        p.sandbox.filesystem.protect_defaults = false;
    });
    // The class rule as the plan states it, with no other protected path
    // (landlock refuses those on their own).
    plan.fs.writable = vec![home.clone(), home.join("proj")];
    plan.fs.held = vec![home.clone()];
    plan.fs.protected.clear();
    let s = layer_spec(&plan).unwrap();
    let writes: Vec<&Path> = s
        .fs_rules
        .iter()
        .filter(|r| r.access & access::MAKE_REG != 0)
        .map(|r| r.path.as_path())
        .collect();
    assert!(writes.contains(&home.join("proj").as_path()), "{writes:?}");
    assert!(!writes.contains(&home.as_path()), "{writes:?}");
    // A root holding the home directory strictly: no subtraction, refused.
    let parent = home.parent().unwrap().to_path_buf();
    plan.fs.writable = vec![parent];
    let e = layer_spec(&plan).unwrap_err();
    assert!(e.contains("cannot keep the home directory"), "{e}");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn landlock_alone_grants_the_terminal_the_facts_name_and_says_so() {
    let ws = tempdir("spec-tty");
    let mut plan = plan_with(&ws, |_| {});
    let terminal = |p: &Plan| {
        layer_spec(p)
            .unwrap()
            .fs_rules
            .iter()
            .any(|r| r.path == Path::new("/dev/full") && r.access == access::TERMINAL)
    };
    assert!(!terminal(&plan));
    assert_eq!(
        terminal_fact(&plan.facts.stdio),
        "terminal: none granted but /dev/tty and /dev/null, no standard descriptor is a \
         terminal found under /dev"
    );
    // A made-up terminal on stdout and stderr: the rule follows the facts.
    let tty = crate::plan::StdFd::Terminal {
        device: Some("/dev/full".into()),
    };
    plan.facts.stdio[1] = tty.clone();
    plan.facts.stdio[2] = tty;
    assert!(terminal(&plan));
    assert_eq!(
        terminal_fact(&plan.facts.stdio),
        "terminal: granted /dev/full (stdout, stderr), the terminal of the command's standard \
         descriptors"
    );
    std::fs::remove_dir_all(&ws).unwrap();
}

#[test]
fn where_bwrap_cannot_run_a_refusal_does_not_send_the_user_there() {
    let why = "inside another dcjail sandbox, whose seccomp filter refuses new namespaces";
    let note = format!("; bwrap, which would hold it, cannot run here: {why}");
    for (m, want) in [
        (
            "x inside a granted tree; --backend bwrap can, or move it out of the writable roots",
            "x inside a granted tree; move it out of the writable roots",
        ),
        (
            "x inside a granted tree; --backend bwrap can, or --no-protect-defaults (y)",
            "x inside a granted tree; --no-protect-defaults (y)",
        ),
        (
            "x (rights cannot be subtracted inside a granted tree); use --backend bwrap",
            "x (rights cannot be subtracted inside a granted tree)",
        ),
        (
            "x a later run reads; use --backend bwrap (which masks it with a mount), or move it",
            "x a later run reads; move it",
        ),
    ] {
        assert_eq!(without_bwrap(m.into(), why), format!("{want}{note}"));
    }
}
