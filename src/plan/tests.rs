//! `plan::build` on an in-memory filesystem: these run on every OS and
//! touch nothing on the machine.
#![cfg(test)]

use super::*;
use crate::error::{Gate, Reason};
use crate::protected::Collected;

fn facts(cwd: &str) -> Facts {
    Facts {
        cwd: PathBuf::from(cwd),
        home: Some(PathBuf::from("/home/u")),
        tmpdir: None,
        exe: None,
        ..Default::default()
    }
}

fn policy(mode: SandboxMode) -> Policy {
    let mut p = Policy::default();
    p.sandbox.enabled = true;
    p.sandbox.mode = mode;
    p
}

fn build_on(fs: &MemFs, p: &Policy, f: &Facts) -> Result<Plan> {
    build_in(p, vec!["true".into()], f, &HostEnv::default(), fs)
}

fn paths(v: &[&str]) -> Vec<PathBuf> {
    v.iter().map(PathBuf::from).collect()
}

/// The writable roots but the private cache directory (`caches`), which
/// every workspace-write plan with a home directory has last.
fn roots(plan: &Plan) -> Vec<PathBuf> {
    let cache = plan.fs.caches.as_ref().map(|c| c.root.clone());
    let mut v = plan.fs.writable.clone();
    if v.last() == cache.as_ref() {
        v.pop();
    }
    v
}

#[test]
fn a_read_only_plan_writes_nothing_and_runs_in_the_cwd() {
    let fs = MemFs::new().dir("/home/u/ws").dir("/tmp");
    let plan = build_on(&fs, &policy(SandboxMode::ReadOnly), &facts("/home/u/ws")).unwrap();
    assert!(plan.fs.writable.is_empty());
    assert_eq!(plan.cwd, PathBuf::from("/home/u/ws"));
    assert_eq!(plan.workspace, PathBuf::from("/home/u/ws"));
    assert!(plan.fs.protected.is_empty());
}

#[test]
fn workspace_write_roots_are_canonical_and_a_missing_extra_root_grants_nothing() {
    let fs = MemFs::new()
        .dir("/real/ws")
        .symlink("/home/u/ws", "/real/ws")
        .dir("/real/tmp")
        .symlink("/tmp", "real/tmp")
        .dir("/data/out")
        .symlink("/home/u/out", "/data/out");
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.sandbox.workspace = Some(PathBuf::from("~/ws"));
    p.sandbox.filesystem.allow_write = paths(&["~/out", "/nowhere", "/tmp"]);
    let plan = build_on(&fs, &p, &facts("/")).unwrap();
    assert_eq!(plan.workspace, PathBuf::from("/real/ws"));
    assert_eq!(
        roots(&plan),
        paths(&["/real/ws", "/data/out", "/real/tmp"]),
        "symlinks resolved, /nowhere skipped, /tmp once"
    );
}

#[test]
fn a_read_call_is_held_to_read_only_with_no_network() {
    let fs = MemFs::new().dir("/ws").dir("/tmp");
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.tool = Tool::Read;
    p.sandbox.network.mode = NetMode::Full;
    let plan = build_on(&fs, &p, &facts("/ws")).unwrap();
    assert_eq!(plan.fs.access, SandboxMode::ReadOnly);
    assert!(plan.fs.writable.is_empty());
    assert_eq!(plan.net.mode, NetMode::None);
}

#[test]
fn the_worktree_gate_needs_a_directory_with_a_git_entry() {
    let fs = MemFs::new()
        .dir("/repo/.git")
        .dir("/plain")
        .file("/afile", "")
        .file("/linked/.git", "gitdir: /repo/.git/worktrees/linked\n");
    let with_root = |root: &str| {
        let mut p = policy(SandboxMode::ReadOnly);
        p.worktree.root = Some(PathBuf::from(root));
        build_on(&fs, &p, &facts("/"))
    };
    for (root, why) in [
        ("/plain", "no .git at its top"),
        ("/afile", "not a directory"),
        ("/missing", "No such file"),
    ] {
        let r = with_root(root).unwrap_err();
        assert_eq!(r.reason, Reason::PolicyError, "{root}");
        assert_eq!(r.gate, Some(Gate::Worktree), "{root}");
        assert!(r.message.contains(why), "{root}: {}", r.message);
    }
    let plan = with_root("/linked").unwrap();
    assert_eq!(plan.cwd, PathBuf::from("/linked"));
    assert_eq!(plan.worktree, Some(PathBuf::from("/linked")));
}

#[test]
fn relative_rules_start_at_the_worktree_and_missing_paths_resolve_leniently() {
    let fs = MemFs::new()
        .dir("/repo/.git")
        .dir("/repo/real-secrets")
        .symlink("/repo/secrets", "real-secrets");
    let mut p = policy(SandboxMode::ReadOnly);
    p.worktree.root = Some(PathBuf::from("/repo"));
    p.sandbox.filesystem.deny_read = paths(&["secrets/key", "gone/../x/y", "*.pem"]);
    let plan = build_on(&fs, &p, &facts("/elsewhere")).unwrap();
    let got: Vec<String> = plan
        .fs
        .deny_read
        .iter()
        .map(|r| match r {
            PathRule::Literal(l) => l.display().to_string(),
            PathRule::Glob(g) => g.pattern.clone(),
        })
        .collect();
    assert_eq!(got, ["/repo/real-secrets/key", "/repo/x/y", "/repo/*.pem"]);
}

#[test]
fn the_policy_file_and_the_plan_card_inside_a_writable_root_are_protected() {
    let fs = MemFs::new().dir("/ws/.dcjail").file("/ws/p.toml", "");
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.source = Some(PathBuf::from("p.toml"));
    p.plan.card = Some(PathBuf::from(".dcjail/card.jsonl"));
    let plan = build_on(&fs, &p, &facts("/ws")).unwrap();
    assert_eq!(roots(&plan), paths(&["/ws"]), "no /tmp on this fs");
    assert_eq!(
        plan.fs.protected,
        paths(&["/ws/p.toml", "/ws/.dcjail/card.jsonl"])
    );
    assert!(!plan.writable(Path::new("/ws/p.toml")));
    assert!(plan.writable(Path::new("/ws/src/main.rs")));
}

#[test]
fn the_audit_adds_its_grants_to_the_writable_roots_and_its_paths_to_the_protected() {
    let mut fs = MemFs::new().dir("/ws").dir("/repo/.git");
    fs.audit = Some(Collected {
        protected: paths(&["/ws/.git/hooks"]),
        grants: paths(&["/repo/.git", "/ws"]),
        checkouts: paths(&["/ws"]),
    });
    let plan = build_on(&fs, &policy(SandboxMode::WorkspaceWrite), &facts("/ws")).unwrap();
    assert_eq!(roots(&plan), paths(&["/ws", "/repo/.git"]));
    assert_eq!(plan.fs.protected, paths(&["/ws/.git/hooks"]));
    assert_eq!(plan.fs.git_checkouts, paths(&["/ws"]));
}

#[test]
fn a_writable_home_is_held_read_only_but_for_the_roots_inside_it() {
    let mut fs = MemFs::new()
        .dir("/home/u/.cargo")
        .dir("/home/u/proj")
        .dir("/tmp");
    fs.audit = Some(Collected {
        protected: paths(&[
            "/home/u/.bashrc",
            "/home/u/.cargo/bin",
            "/home/u/.cargo/registry",
        ]),
        grants: Vec::new(),
        checkouts: Vec::new(),
    });
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.sandbox.filesystem.allow_write = paths(&["~/.cargo"]);
    let plan = build_on(&fs, &p, &facts("/home/u")).unwrap();
    assert_eq!(plan.fs.held, paths(&["/home/u"]));
    for no in [
        "/home/u/.gdbinit",
        "/home/u/proj/x",
        "/home/u/.ipython/x",
        "/home/u",
    ] {
        assert!(!plan.writable(Path::new(no)), "{no}");
        assert_eq!(
            plan.held_at(Path::new(no)),
            Some(Path::new("/home/u")),
            "{no}"
        );
    }
    assert!(plan.writable(Path::new("/home/u/.cargo/x")));
    assert!(plan.writable(Path::new("/tmp/x")));
    let cache = &plan.fs.caches.as_ref().unwrap().root;
    assert!(cache.starts_with("/home/u/.cache/dcjail"));
    assert!(plan.writable(&cache.join("pip/wheels/x")));
    // The table's entries the held home covers cost nothing; the ones in
    // a root inside it stay.
    assert!(!plan
        .fs
        .protected
        .contains(&PathBuf::from("/home/u/.bashrc")));
    assert!(plan
        .fs
        .protected
        .contains(&PathBuf::from("/home/u/.cargo/bin")));
    assert!(!plan.writable(Path::new("/home/u/.cargo/bin/cargo")));
    assert!(!plan.writable(Path::new("/home/u/.cargo/registry/src/x/build.rs")));
}

#[test]
fn a_root_above_home_holds_it_and_one_inside_does_not() {
    let fs = MemFs::new().dir("/home/u/proj").dir("/tmp");
    let p = policy(SandboxMode::WorkspaceWrite);
    let above = build_on(&fs, &p, &facts("/home")).unwrap();
    assert_eq!(above.fs.held, paths(&["/home/u"]));
    assert!(above.writable(Path::new("/home/v/x")));
    assert!(!above.writable(Path::new("/home/u/x")));
    let inside = build_on(&fs, &p, &facts("/home/u/proj")).unwrap();
    assert!(inside.fs.held.is_empty());
    assert!(inside.writable(Path::new("/home/u/proj/x")));
    let mut off = policy(SandboxMode::WorkspaceWrite);
    off.sandbox.filesystem.protect_defaults = false;
    let off = build_on(&fs, &off, &facts("/home/u")).unwrap();
    assert!(
        off.fs.held.is_empty(),
        "--no-protect-defaults lifts the rule"
    );
    assert!(off.writable(Path::new("/home/u/.gdbinit")));
}

#[test]
fn a_declared_path_the_tool_cannot_use_is_refused_by_the_sandbox_gate() {
    let fs = MemFs::new().dir("/ws").dir("/etc");
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.tool = Tool::Edit;
    p.paths = paths(&["/etc/passwd"]);
    let r = build_on(&fs, &p, &facts("/ws")).unwrap_err();
    assert_eq!(r.reason, Reason::SandboxDenied);
    assert_eq!(r.gate, Some(Gate::Sandbox));
    assert!(r.message.contains("is not writable"), "{}", r.message);
    p.paths = paths(&["notes.txt"]);
    assert!(build_on(&fs, &p, &facts("/ws")).is_ok());
    // With the sandbox off nothing is pre-checked.
    p.paths = paths(&["/etc/passwd"]);
    p.sandbox.enabled = false;
    assert!(build_on(&fs, &p, &facts("/ws")).is_ok());
}

#[test]
fn a_linked_worktree_names_its_git_dir_and_common_dir() {
    let fs = MemFs::new()
        .file("/wt/.git", "gitdir: /repo/.git/worktrees/wt\n")
        .file("/repo/.git/worktrees/wt/commondir", "../..\n")
        .dir("/sub/.git");
    assert_eq!(
        git_dirs_in(&fs, Path::new("/wt/.git")),
        paths(&["/repo/.git/worktrees/wt", "/repo/.git"])
    );
    assert!(git_dirs_in(&fs, Path::new("/sub/.git")).is_empty());
    assert!(git_dirs_in(&fs, Path::new("/none/.git")).is_empty());
}

/// The rules of one list, as `explain` shows them.
fn shown(rules: &[PathRule]) -> Vec<String> {
    rules
        .iter()
        .map(|r| match r {
            PathRule::Literal(l) => l.display().to_string(),
            PathRule::Glob(g) => g.pattern.clone(),
        })
        .collect()
}

#[test]
fn every_spelling_of_a_path_rule_is_normalised_to_what_it_reads_as() {
    let fs = MemFs::new().dir("/ws/sub/deep").dir("/home/u");
    let cases: &[(&str, &str)] = &[
        ("sub/*.txt", "/ws/sub/*.txt"),
        ("./sub/*.txt", "/ws/sub/*.txt"),
        ("sub/./*.txt", "/ws/sub/*.txt"),
        ("sub//*.txt", "/ws/sub/*.txt"),
        (".//sub/./*.txt", "/ws/sub/*.txt"),
        ("/ws/./sub/*.txt", "/ws/sub/*.txt"),
        ("~/./k/*.pem", "/home/u/k/*.pem"),
        ("**/sub", "**/sub"),
        ("**/sub/", "**/sub"),
        ("**/sub/.", "**/sub"),
        ("**/sub/**", "**/sub"),
        ("**/.", "**"),
        ("**", "**"),
        // A leading `./` keeps a `**` glob in the workspace.
        ("./**/a.txt", "/ws/**/a.txt"),
        // A trailing `/**` is the directory: a literal rule on it.
        ("sub/**", "/ws/sub"),
        ("./sub/**/", "/ws/sub"),
        ("./**", "/ws"),
        ("~/k/**", "/home/u/k"),
        ("sub/a.txt", "/ws/sub/a.txt"),
        ("./sub/a.txt", "/ws/sub/a.txt"),
        ("sub/./a.txt", "/ws/sub/a.txt"),
        ("sub/", "/ws/sub"),
        ("sub/.", "/ws/sub"),
        (".", "/ws"),
        ("./", "/ws"),
        ("sub/deep/../a.txt", "/ws/sub/a.txt"),
    ];
    for (written, want) in cases {
        let mut p = policy(SandboxMode::ReadOnly);
        p.sandbox.filesystem.deny_read = paths(&[written]);
        let plan = build_on(&fs, &p, &facts("/ws")).unwrap();
        assert_eq!(shown(&plan.fs.deny_read), [*want], "{written}");
        if let PathRule::Glob(g) = &plan.fs.deny_read[0] {
            assert_eq!(g.written, *written, "what was written is kept");
        }
    }
}

#[test]
fn a_normalised_glob_covers_the_directory_and_what_is_below_it() {
    let fs = MemFs::new().dir("/ws/sub/deep");
    for written in ["**/sub/", "**/sub/.", "./sub/", "sub/**"] {
        let mut p = policy(SandboxMode::ReadOnly);
        p.sandbox.filesystem.deny_read = paths(&[written]);
        let plan = build_on(&fs, &p, &facts("/ws")).unwrap();
        for path in ["/ws/sub", "/ws/sub/a.txt", "/ws/sub/deep/b.txt"] {
            assert!(!plan.readable(Path::new(path)), "{written}: {path}");
        }
        assert!(plan.readable(Path::new("/ws/top.txt")), "{written}");
        assert!(plan.readable(Path::new("/ws/subway")), "{written}");
    }
}

#[test]
fn a_path_rule_without_a_clear_meaning_is_a_policy_error_naming_it() {
    let fs = MemFs::new().dir("/ws/sub");
    for (key, written) in [
        ("deny_read", ""),
        ("deny_write", "sub/../sub/*.txt"),
        ("allow_read", "../ws/*.txt"),
        ("deny_read", "**/.."),
        ("deny_read", "**/sub/../*.txt"),
    ] {
        let mut p = policy(SandboxMode::WorkspaceWrite);
        let f = &mut p.sandbox.filesystem;
        match key {
            "deny_read" => f.deny_read = paths(&[written]),
            "deny_write" => f.deny_write = paths(&[written]),
            _ => f.allow_read = paths(&[written]),
        }
        let r = build_on(&fs, &p, &facts("/ws")).unwrap_err();
        assert_eq!(r.reason, Reason::PolicyError, "{written}");
        assert_eq!(r.exit_code(), 125);
        assert!(
            r.message
                .starts_with(&format!("`sandbox.filesystem.{key}`: ")),
            "{written}: {}",
            r.message
        );
        if !written.is_empty() {
            assert!(r.message.contains(&format!("`{written}`")), "{}", r.message);
        } else {
            assert!(r.message.contains("empty"), "{}", r.message);
        }
    }
}

/// A host with `/proc`, `/sys`, a devtmpfs `/dev` (tmpfs's type, its own
/// device) and a tmpfs `/dev/shm` of another device.
fn host_with_pseudo_fs() -> MemFs {
    const TMPFS: u64 = 0x0102_1994;
    MemFs::new()
        .dir("/home/u/ws")
        .dir("/tmp")
        .mount("/proc", 0x9fa0, 2)
        .mount("/sys", 0x6265_6572, 3)
        .mount("/sys/fs/cgroup", 0x6367_7270, 4)
        .mount("/dev", TMPFS, 5)
        .dir("/dev/net")
        .mount("/dev/shm", TMPFS, 6)
        .mount("/dev/pts", 0x1cd1, 7)
        .symlink("/home/u/to-proc", "/proc")
}

fn refusal_text(r: Result<Plan>) -> String {
    match r {
        Ok(p) => panic!("built: {:?}", p.fs.writable),
        Err(e) => {
            assert_eq!(e.reason, Reason::PolicyError, "{e}");
            e.to_string()
        }
    }
}

#[test]
fn a_workspace_on_a_kernel_interface_is_refused_in_every_mode_even_through_a_link() {
    let fs = host_with_pseudo_fs();
    for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
        for (ws, kind) in [
            ("/proc", "proc"),
            ("/proc/sys/kernel", "proc"),
            ("/home/u/to-proc", "proc"),
            ("/sys/fs/cgroup", "cgroup2"),
            ("/dev", "device directory"),
            ("/dev/net", "device directory"),
            ("/dev/pts", "devpts"),
        ] {
            let mut p = policy(mode);
            p.sandbox.workspace = Some(PathBuf::from(ws));
            let t = refusal_text(build_on(&fs, &p, &facts("/home/u/ws")));
            assert!(t.contains(ws) && t.contains(kind), "{ws}: {t}");
        }
    }
    // The cwd as the workspace, too.
    let t = refusal_text(build_on(
        &fs,
        &policy(SandboxMode::ReadOnly),
        &facts("/proc"),
    ));
    assert!(t.contains("/proc"), "{t}");
    // Unsandboxed, nothing is enforced and nothing is refused.
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.sandbox.enabled = false;
    assert!(build_on(&fs, &p, &facts("/proc")).is_ok());
}

#[test]
fn writable_roots_on_a_kernel_interface_are_refused_but_dev_shm_is_storage() {
    let fs = host_with_pseudo_fs();
    for root in ["/sys", "/home/u/to-proc", "/dev", "/dev/pts"] {
        let mut p = policy(SandboxMode::WorkspaceWrite);
        p.sandbox.filesystem.allow_write = vec![PathBuf::from(root)];
        let t = refusal_text(build_on(&fs, &p, &facts("/home/u/ws")));
        assert!(t.contains("allow_write") && t.contains(root), "{t}");
    }
    let mut f = facts("/home/u/ws");
    f.tmpdir = Some(PathBuf::from("/home/u/to-proc"));
    let t = refusal_text(build_on(&fs, &policy(SandboxMode::WorkspaceWrite), &f));
    assert!(t.contains("TMPDIR"), "{t}");
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.sandbox.filesystem.allow_write = vec![PathBuf::from("/dev/shm")];
    let plan = build_on(&fs, &p, &facts("/home/u/ws")).unwrap();
    assert!(plan.fs.writable.contains(&PathBuf::from("/dev/shm")));
    // danger-full-access writes `/`, which is storage.
    assert!(build_on(
        &fs,
        &policy(SandboxMode::DangerFullAccess),
        &facts("/home/u/ws")
    )
    .is_ok());
}
