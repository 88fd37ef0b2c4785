//! What the plan protects, for crafted repositories and homes, without
//! running anything: git's files wherever git would find them, what the
//! configuration points at, PATH directories and symlinked home entries —
//! and what it must not do: read another user's files, block on a FIFO,
//! panic on a bad config, or protect less than it says when the work is
//! too large (it refuses instead).

#[path = "support/scratch.rs"]
mod scratch;

use dcjail::plan::{self, Facts, Plan};
use dcjail::policy::{Policy, SandboxMode};
use dcjail::protected::HostEnv;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fresh(tag: &str) -> PathBuf {
    scratch::fresh(&format!("planprot-{tag}-{}", std::process::id()))
}

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", "init"]);
}

fn plan_in(ws: &Path, home: Option<&Path>, env: &HostEnv) -> Result<Plan, dcjail::error::Refusal> {
    let mut policy = Policy::default();
    policy.sandbox.mode = SandboxMode::WorkspaceWrite;
    let facts = Facts {
        cwd: ws.to_path_buf(),
        home: home.map(Path::to_path_buf),
        tmpdir: None,
        exe: None,
        ..Default::default()
    };
    plan::build_with(&policy, vec!["true".into()], &facts, env)
}

/// The protected paths, and the home directory when it is held by class
/// (a workspace at the home directory): it covers every entry inside it.
fn protected(ws: &Path, home: Option<&Path>, env: &HostEnv) -> Vec<PathBuf> {
    let fs = plan_in(ws, home, env).unwrap().fs;
    fs.protected.into_iter().chain(fs.held).collect()
}

/// Whether `x` is protected: it, or a directory holding it, is in the list.
fn covered(list: &[PathBuf], x: &Path) -> bool {
    list.iter().any(|q| x.starts_with(q))
}

fn no_env() -> HostEnv {
    HostEnv {
        git_config_global: Some(PathBuf::from("/dev/null")),
        git_config_system: Some(PathBuf::from("/dev/null")),
        ..HostEnv::default()
    }
}

#[test]
fn a_main_repository_gets_every_git_dir_entry_present_or_missing() {
    let ws = fresh("main");
    repo(&ws);
    let p = protected(&ws, None, &no_env());
    for n in [
        "config",
        "config.worktree",
        "hooks",
        "commondir",
        "gitdir",
        "objects/info/alternates",
        "objects/info/http-alternates",
    ] {
        assert!(covered(&p, &ws.join(".git").join(n)), "{n} missing: {p:?}");
    }
    assert!(covered(&p, &ws.join(".bashrc")) && covered(&p, &ws.join(".claude/settings.json")));
    scratch::remove(&ws);
}

#[test]
fn a_commondir_naming_nothing_does_not_unprotect_the_repositorys_own_config() {
    let ws = fresh("badcommon");
    repo(&ws);
    std::fs::write(ws.join(".git/commondir"), "no such dir\n").unwrap();
    let p = protected(&ws, None, &no_env());
    for n in ["config", "hooks", "commondir", "objects/info/alternates"] {
        assert!(covered(&p, &ws.join(".git").join(n)), "{n} missing: {p:?}");
    }
    scratch::remove(&ws);
}

#[test]
fn what_the_configuration_points_at_inside_the_workspace_is_protected() {
    let ws = fresh("pointers");
    repo(&ws);
    let cfg = ws.join(".git/config");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(
        "[include]\n\tpath = ../team.inc\n\
         [includeIf \"gitdir:/nowhere/\"]\n\tpath = cond.inc\n\
         [core]\n\thooksPath = .husky/_\n\tfsmonitor = \"'tools/fs mon' --flag\"\n\tpager = less -R\n\
         [diff \"img\"]\n\ttextconv = ./bin/conv\n\
         [alias]\n\tst = !./scripts/st.sh\n\tlg = log --oneline\n\
         [init]\n\ttemplateDir = ~/tmpl\n",
    );
    std::fs::write(&cfg, text).unwrap();
    // An include of an include, relative to the including file.
    std::fs::write(ws.join("team.inc"), "[include]\n\tpath = more.inc\n").unwrap();
    let p = protected(&ws, Some(&ws), &no_env());
    for want in [
        ws.join("team.inc"),
        ws.join("more.inc"),
        ws.join(".git/cond.inc"),
        ws.join(".husky/_"),
        ws.join(".husky"),
        ws.join("tools/fs mon"),
        ws.join("bin/conv"),
        ws.join("scripts/st.sh"),
        ws.join("tmpl"),
    ] {
        assert!(covered(&p, &want), "{} missing: {p:?}", want.display());
    }
    assert!(!p.iter().any(|x| x.ends_with("less")));
    scratch::remove(&ws);
}

#[test]
fn a_global_config_include_and_a_relative_global_hooks_path_are_followed() {
    let root = fresh("global");
    let ws = root.join("ws");
    repo(&ws);
    let g = root.join("global.gitconfig");
    std::fs::write(
        &g,
        format!(
            "[include]\n\tpath = {}/shared.inc\n[core]\n\thooksPath = .githooks\n",
            ws.display()
        ),
    )
    .unwrap();
    let env = HostEnv {
        git_config_global: Some(g),
        git_config_system: Some(PathBuf::from("/dev/null")),
        ..HostEnv::default()
    };
    let p = protected(&ws, None, &env);
    assert!(covered(&p, &ws.join("shared.inc")), "{p:?}");
    assert!(covered(&p, &ws.join(".githooks")), "{p:?}");
    scratch::remove(&root);
}

#[test]
fn submodules_are_protected_by_name_cloned_or_not() {
    let root = fresh("subs");
    let lib = root.join("lib");
    repo(&lib);
    let ws = root.join("ws");
    repo(&ws);
    git(
        &ws,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib.to_str().unwrap(),
            "sub",
        ],
    );
    // A second one named in .gitmodules but never cloned.
    let mut gm = std::fs::read_to_string(ws.join(".gitmodules")).unwrap();
    gm.push_str("[submodule \"later\"]\n\tpath = deps/later\n\turl = ../lib\n[submodule \"../evil\"]\n\tpath = ../../etc\n");
    std::fs::write(ws.join(".gitmodules"), gm).unwrap();
    let p = protected(&ws, None, &no_env());
    for want in [
        ws.join(".git/modules/sub/config"),
        ws.join(".git/modules/sub/hooks"),
        ws.join(".git/modules/sub/commondir"),
        ws.join("sub/.git"),
        ws.join("sub/.gitmodules"),
        ws.join(".git/modules/later/config"),
        ws.join("deps/later/.git"),
    ] {
        assert!(covered(&p, &want), "{} missing: {p:?}", want.display());
    }
    assert!(!p
        .iter()
        .any(|x| x.to_string_lossy().contains("evil") || x.starts_with("/etc")));
    scratch::remove(&root);
}

#[test]
fn a_linked_worktrees_submodules_live_in_its_own_git_dir() {
    let root = fresh("wtsubs");
    let lib = root.join("lib");
    repo(&lib);
    let main = root.join("main");
    repo(&main);
    git(
        &main,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib.to_str().unwrap(),
            "sub",
        ],
    );
    git(&main, &["commit", "-q", "-m", "sub"]);
    let wt = root.join("wt");
    git(
        &main,
        &["worktree", "add", "-q", "-b", "w", wt.to_str().unwrap()],
    );
    let p = protected(&wt, None, &no_env());
    let admin = main.join(".git/worktrees/wt");
    for want in [
        admin.join("modules/sub/config"),
        admin.join("modules/sub/hooks"),
        wt.join("sub/.git"),
    ] {
        assert!(covered(&p, &want), "{} missing: {p:?}", want.display());
    }
    scratch::remove(&root);
}

#[test]
fn a_submodule_checkout_as_the_workspace_gets_its_module_git_dir() {
    let root = fresh("subws");
    let lib = root.join("lib");
    repo(&lib);
    let sup = root.join("super");
    repo(&sup);
    git(
        &sup,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib.to_str().unwrap(),
            "sub",
        ],
    );
    let ws = sup.join("sub");
    let plan = plan_in(&ws, None, &no_env()).unwrap();
    let m = sup.join(".git/modules/sub");
    assert!(plan.fs.writable.contains(&m), "{:?}", plan.fs.writable);
    assert!(plan.writable(&m.join("index")));
    assert!(plan.writable(&m.join("objects/ab/cd")));
    assert!(!plan.writable(&m.join("config")));
    assert!(!plan.writable(&m.join("hooks/pre-commit")));
    assert!(!plan.writable(&ws.join(".git")));
    assert!(!plan.writable(&sup.join("file")));
    scratch::remove(&root);
}

#[test]
fn path_directories_inside_a_root_but_not_the_root_itself() {
    let ws = fresh("path");
    std::fs::create_dir_all(ws.join("node_modules/.bin")).unwrap();
    std::os::unix::fs::symlink("/usr/bin", ws.join("tools")).unwrap();
    let path = std::env::join_paths([
        ws.join("node_modules/.bin"),
        ws.join("tools"),
        ws.join("not/yet"),
        ws.clone(),
        PathBuf::from("relative/bin"),
        PathBuf::from("/usr/bin"),
    ])
    .unwrap();
    let env = HostEnv {
        path: Some(path),
        ..no_env()
    };
    let p = protected(&ws, None, &env);
    assert!(covered(&p, &ws.join("node_modules/.bin")), "{p:?}");
    // A PATH entry that is a symlink inside the root: the link itself, or
    // the command could point it at a directory of its own.
    assert!(covered(&p, &ws.join("tools")), "{p:?}");
    assert!(covered(&p, &ws.join("not/yet")), "{p:?}");
    assert!(!covered(&p, &ws), "the root itself must stay writable");
    scratch::remove(&ws);
}

#[test]
fn a_symlinked_home_entry_is_protected_where_it_points() {
    let root = fresh("dotfiles");
    let home = root.join("home");
    let ws = root.join("dotfiles");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(ws.join("config/git")).unwrap();
    std::fs::write(ws.join("bashrc"), "# mine\n").unwrap();
    std::os::unix::fs::symlink(ws.join("bashrc"), home.join(".bashrc")).unwrap();
    std::os::unix::fs::symlink(ws.join("config"), home.join(".config")).unwrap();
    let p = protected(&ws, Some(&home), &no_env());
    assert!(covered(&p, &ws.join("bashrc")), "{p:?}");
    assert!(covered(&p, &ws.join("config/git")), "{p:?}");
    // With the home directory elsewhere, its own names are not in a root.
    assert!(!p.iter().any(|x| x.starts_with(&home)), "{p:?}");
    scratch::remove(&root);
}

#[test]
fn home_entries_are_protected_inside_an_allow_write_root() {
    let root = fresh("cargo");
    let home = root.join("home");
    std::fs::create_dir_all(home.join(".cargo/registry")).unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut policy = Policy::default();
    policy.sandbox.mode = SandboxMode::WorkspaceWrite;
    policy.sandbox.filesystem.allow_write = vec![home.join(".cargo")];
    let facts = Facts {
        cwd: ws.clone(),
        home: Some(home.clone()),
        tmpdir: None,
        exe: None,
        ..Default::default()
    };
    let plan = plan::build_with(&policy, vec!["true".into()], &facts, &no_env()).unwrap();
    assert!(plan.writable(&home.join(".cargo/other/x")));
    // The registry is a cache a later build runs (build.rs): held.
    assert!(!plan.writable(&home.join(".cargo/registry/x")));
    for n in [
        ".cargo/bin",
        ".cargo/env",
        ".cargo/config.toml",
        ".cargo/config",
    ] {
        assert!(!plan.writable(&home.join(n)), "{n} writable");
    }
    assert!(!plan.fs.protected.contains(&home.join(".bashrc")));
    scratch::remove(&root);
}

#[test]
fn another_users_repository_is_not_read_but_its_fixed_entries_are_held() {
    if !scratch::root("make another user's files") {
        return;
    }
    let ws = fresh("foreign");
    repo(&ws);
    let mut cfg = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    cfg.push_str("[include]\n\tpath = ../planted.inc\n");
    std::fs::write(ws.join(".git/config"), cfg).unwrap();
    let ok = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(ws.join(".git"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let p = protected(&ws, None, &no_env());
    assert!(covered(&p, &ws.join(".git/config")));
    assert!(covered(&p, &ws.join(".git/hooks")));
    assert!(
        !covered(&p, &ws.join("planted.inc")),
        "followed another user's config: {p:?}"
    );
    scratch::remove(&ws);
}

#[test]
fn an_included_file_is_followed_whoever_owns_it_as_git_does() {
    if !scratch::root("make another user's files") {
        return;
    }
    let ws = fresh("teaminc");
    repo(&ws);
    let mut cfg = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    cfg.push_str("[include]\n\tpath = ../team.inc\n");
    std::fs::write(ws.join(".git/config"), cfg).unwrap();
    std::fs::write(ws.join("team.inc"), "[core]\n\thooksPath = team-hooks\n").unwrap();
    let ok = Command::new("chown")
        .args(["65534:65534"])
        .arg(ws.join("team.inc"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let p = protected(&ws, None, &no_env());
    assert!(covered(&p, &ws.join("team.inc")), "{p:?}");
    assert!(covered(&p, &ws.join("team-hooks")), "{p:?}");
    scratch::remove(&ws);
}

#[test]
fn a_config_too_large_to_audit_is_refused() {
    let ws = fresh("bigcfg");
    repo(&ws);
    let mut cfg = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    cfg.push_str("[include]\n\tpath = ../big.inc\n");
    std::fs::write(ws.join(".git/config"), cfg).unwrap();
    let mut big = String::from("[user]\n");
    while big.len() <= 4 << 20 {
        big.push_str("\t# padding padding padding padding padding padding padding\n");
    }
    std::fs::write(ws.join("big.inc"), big).unwrap();
    let r = plan_in(&ws, None, &no_env()).unwrap_err();
    assert_eq!(r.exit_code(), 122, "{}", r.message);
    assert!(
        r.message
            .contains(&ws.join("big.inc").display().to_string()),
        "{}",
        r.message
    );
    scratch::remove(&ws);
}

#[test]
fn a_fifo_or_a_bad_config_neither_blocks_nor_breaks_the_launch() {
    let ws = fresh("fifo");
    repo(&ws);
    let mut cfg = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    cfg.push_str("[include]\n\tpath = ../pipe\n\tpath = ../bad.inc\n");
    std::fs::write(ws.join(".git/config"), cfg).unwrap();
    let ok = Command::new("mkfifo")
        .arg(ws.join("pipe"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
    std::fs::write(ws.join("bad.inc"), "[core\n\x00\u{fffd}\"").unwrap();
    let p = protected(&ws, None, &no_env());
    assert!(covered(&p, &ws.join("pipe")) && covered(&p, &ws.join("bad.inc")));
    scratch::remove(&ws);
}

#[test]
fn too_much_git_metadata_to_audit_is_refused_not_half_protected() {
    let ws = fresh("huge");
    repo(&ws);
    let wts = ws.join(".git/worktrees");
    for i in 0..4200 {
        std::fs::create_dir_all(wts.join(format!("w{i}"))).unwrap();
    }
    let r = plan_in(&ws, None, &no_env()).unwrap_err();
    assert_eq!(r.exit_code(), 122, "{}", r.message);
    assert!(r.message.contains("too large to audit"), "{}", r.message);
    assert!(
        r.message.contains(&ws.display().to_string()),
        "{}",
        r.message
    );
    // Without the table nothing is audited, and the launch goes on.
    let mut policy = Policy::default();
    policy.sandbox.mode = SandboxMode::WorkspaceWrite;
    policy.sandbox.filesystem.protect_defaults = false;
    let facts = Facts {
        cwd: ws.clone(),
        home: None,
        tmpdir: None,
        exe: None,
        ..Default::default()
    };
    assert!(plan::build_with(&policy, vec!["true".into()], &facts, &no_env()).is_ok());
    scratch::remove(&ws);
}

/// The walk for repositories below the roots: each one found is protected
/// like the workspace's own (a bare one too), and past its bounds the
/// launch is refused rather than half protected.
#[test]
fn repositories_below_the_roots_are_found_at_any_depth_and_bounded() {
    let ws = fresh("below");
    repo(&ws);
    repo(&ws.join("a/b/c/lib"));
    std::fs::create_dir_all(ws.join("x")).unwrap();
    git(&ws.join("x"), &["init", "-q", "--bare", "bare.git"]);
    let plan = plan_in(&ws, None, &no_env()).unwrap();
    let p = &plan.fs.protected;
    for f in [
        "a/b/c/lib/.git/config",
        "a/b/c/lib/.git/hooks",
        "x/bare.git/config",
        "x/bare.git/hooks",
        "x/bare.git/objects/info/alternates",
    ] {
        assert!(covered(p, &ws.join(f)), "{f} is not protected: {p:?}");
    }
    assert!(plan.fs.git_checkouts.contains(&ws));
    assert!(plan.fs.git_checkouts.contains(&ws.join("a/b/c/lib")));
    scratch::remove(&ws);

    let many = fresh("many");
    for i in 0..130 {
        let g = many.join(format!("c{i}/.git"));
        std::fs::create_dir_all(g.join("objects")).unwrap();
        std::fs::create_dir_all(g.join("refs")).unwrap();
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    }
    let r = plan_in(&many, None, &no_env()).unwrap_err();
    assert_eq!(r.exit_code(), 122, "{}", r.message);
    assert!(
        r.message.contains("more than 128 git repositories"),
        "{}",
        r.message
    );
    assert!(
        r.message.contains(&many.display().to_string()),
        "{}",
        r.message
    );
    let env = HostEnv {
        walk_limit: Some(50),
        ..no_env()
    };
    let r = plan_in(&many, None, &env).unwrap_err();
    assert_eq!(r.exit_code(), 122, "{}", r.message);
    assert!(
        r.message.contains("more than 50 directory entries"),
        "{}",
        r.message
    );
    // Without the table nothing is walked.
    let mut policy = Policy::default();
    policy.sandbox.mode = SandboxMode::WorkspaceWrite;
    policy.sandbox.filesystem.protect_defaults = false;
    let facts = Facts {
        cwd: many.clone(),
        home: None,
        tmpdir: None,
        exe: None,
        ..Default::default()
    };
    assert!(plan::build_with(&policy, vec!["true".into()], &facts, &env).is_ok());
    scratch::remove(&many);
}
