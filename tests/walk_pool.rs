//! The launch-time glob walk reads directories on several threads; these
//! tests hold it to the walk on the calling thread alone (what it does when
//! no thread can be started) and to what the generated tree holds by
//! construction: the same paths, the same entries examined, the same
//! directories reported unlisted, as root and as uid 65534, and when no
//! thread can be started at all.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use dcjail::walk::{compile, expand_on, Expansion};
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

fn touch(p: &Path) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, b"x").unwrap();
}

/// The tree under `top/root` (the walked root) and what `**/.env` must
/// find in it as root and as uid 65534; `top/outside` is reachable from the
/// root only through symlinks.
struct Tree {
    root: PathBuf,
    as_root: Vec<PathBuf>,
    as_nobody: Vec<PathBuf>,
    unlisted_as_nobody: Vec<PathBuf>,
}

fn build(top: &Path) -> Tree {
    let root = top.join("root");
    let outside = top.join("outside");
    let mut both = Vec::new();
    touch(&outside.join(".env"));
    touch(&outside.join("deep/.env"));
    touch(&outside.join("secret"));
    // Nesting: a chain twelve deep, a `.env` at every third level.
    let mut d = root.join("n0");
    for i in 1..12 {
        d = d.join(format!("n{i}"));
        touch(&d.join("f"));
        if i % 3 == 0 {
            touch(&d.join(".env"));
            both.push(d.join(".env"));
        }
    }
    // Many siblings: 400 directories side by side, each with a few files, a
    // `.env` in every seventh; one directory of 3000 files.
    for i in 0..400 {
        let s = root.join(format!("wide/s{i}"));
        for j in 0..3 {
            touch(&s.join(format!("f{j}")));
        }
        if i % 7 == 0 {
            touch(&s.join(".env"));
            both.push(s.join(".env"));
        }
        if i % 50 == 0 {
            touch(&s.join("sub/.env"));
            both.push(s.join("sub/.env"));
        }
    }
    for j in 0..3000 {
        touch(&root.join(format!("many/f{j}.txt")));
    }
    touch(&root.join("many/.env"));
    both.push(root.join("many/.env"));
    // Symlinks: to a directory outside (never followed), a loop, a `.env`
    // link to a file outside (reported as the link).
    symlink(&outside, root.join("out-link")).unwrap();
    symlink(&outside, root.join("wide/s3/out-link")).unwrap();
    fs::create_dir_all(root.join("loop/a")).unwrap();
    symlink(root.join("loop"), root.join("loop/a/back")).unwrap();
    fs::create_dir_all(root.join("linked")).unwrap();
    symlink(outside.join("secret"), root.join("linked/.env")).unwrap();
    both.push(root.join("linked/.env"));
    // Hard links: other names of a file outside and of one inside.
    fs::create_dir_all(root.join("hard/x")).unwrap();
    fs::hard_link(outside.join("secret"), root.join("hard/.env")).unwrap();
    fs::hard_link(root.join("many/.env"), root.join("hard/x/.env")).unwrap();
    both.push(root.join("hard/.env"));
    both.push(root.join("hard/x/.env"));
    // Directories uid 65534 cannot list: one it may enter (its `.env` is
    // looked up by name, the one deeper is out of reach), one it may not.
    touch(&root.join("xonly/.env"));
    touch(&root.join("xonly/deeper/.env"));
    touch(&root.join("xonly-leaf/.env"));
    touch(&root.join("closed/.env"));
    touch(&root.join("closed/in/.env"));
    for (d, mode) in [("xonly", 0o711), ("xonly-leaf", 0o711), ("closed", 0o700)] {
        fs::set_permissions(root.join(d), fs::Permissions::from_mode(mode)).unwrap();
    }
    let mut as_nobody = both.clone();
    as_nobody.push(root.join("xonly/.env"));
    as_nobody.push(root.join("xonly-leaf/.env"));
    let mut as_root = both;
    for p in [
        "xonly/.env",
        "xonly/deeper/.env",
        "xonly-leaf/.env",
        "closed/.env",
        "closed/in/.env",
    ] {
        as_root.push(root.join(p));
    }
    as_root.sort();
    as_nobody.sort();
    let mut unlisted_as_nobody = vec![root.join("xonly"), root.join("xonly-leaf")];
    unlisted_as_nobody.sort();
    Tree {
        root,
        as_root,
        as_nobody,
        unlisted_as_nobody,
    }
}

fn walk(root: &Path, threads: usize) -> Result<Expansion, String> {
    let g = compile("**/.env")?;
    expand_on(&[&g], &[root.to_path_buf()], 1_000_000, threads)
}

/// Runs `f` as uid/gid 65534 in a forked child, which exits with `f`'s
/// code (0: passed).
fn as_nobody(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: the child only runs `f` and `_exit`s.
    match unsafe { nix::unistd::fork() }.unwrap() {
        nix::unistd::ForkResult::Child => {
            let ok = nix::unistd::setgroups(&[]).is_ok()
                && nix::unistd::setgid(nix::unistd::Gid::from_raw(65534)).is_ok()
                && nix::unistd::setuid(nix::unistd::Uid::from_raw(65534)).is_ok();
            let code = if ok { f() } else { 99 };
            // SAFETY: the forked child ends here without running destructors.
            unsafe { libc::_exit(code) };
        }
        nix::unistd::ForkResult::Parent { child } => match nix::sys::wait::waitpid(child, None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, c)) => c,
            other => panic!("child: {other:?}"),
        },
    }
}

#[test]
fn the_parallel_walk_finds_what_the_sequential_one_does() {
    let top = scratch::fresh("walk-pool-same");
    let t = build(&top);
    let seq = walk(&t.root, 1).unwrap();
    assert_eq!(seq.paths, t.as_root, "the sequential walk itself");
    // Enough threads that several read at once, whatever the machine.
    for threads in [2, 4, 8] {
        for _ in 0..5 {
            assert_eq!(walk(&t.root, threads).unwrap(), seq, "{threads} threads");
        }
    }
    // A glob of the same meaning whose last component is no literal name
    // reads every directory whole (none is only looked up by name), and
    // finds the same.
    let class = compile("**/.e[n]v").unwrap();
    let whole = expand_on(&[&class], std::slice::from_ref(&t.root), 1_000_000, 4).unwrap();
    assert_eq!(whole.paths, seq.paths);
    assert!(
        whole.entries > seq.entries,
        "{} {}",
        whole.entries,
        seq.entries
    );
    // The control: the walk does see a change in the tree.
    touch(&t.root.join("wide/s399/sub/.env"));
    assert_ne!(walk(&t.root, 4).unwrap().paths, seq.paths);
    fs::remove_file(t.root.join("wide/s399/sub/.env")).unwrap();
    if scratch::root("walk as uid 65534") {
        let (root, want, unlisted) = (t.root.clone(), t.as_nobody.clone(), t.unlisted_as_nobody);
        let code = as_nobody(|| {
            let (Ok(seq), Ok(par)) = (walk(&root, 1), walk(&root, 4)) else {
                return 2;
            };
            if seq.paths != want {
                return 3;
            }
            if seq.skipped.unlisted != unlisted {
                return 4;
            }
            if par != seq {
                return 5;
            }
            let Ok(class) = compile("**/.e[n]v") else {
                return 6;
            };
            // Such a glob spells no name out to look up in the directories
            // this user may enter but not list.
            let mut by_name: Vec<PathBuf> = seq.paths.clone();
            by_name.retain(|p| !seq.skipped.unlisted.iter().any(|u| p.parent() == Some(u)));
            match expand_on(&[&class], std::slice::from_ref(&root), 1_000_000, 4) {
                Ok(w) if w.paths == by_name && w.skipped == seq.skipped => 0,
                _ => 7,
            }
        });
        assert_eq!(code, 0, "as uid 65534");
    }
    fix_modes(&t.root);
    scratch::remove(&top);
}

/// When no thread can be started (uid 65534 at its process limit) the walk
/// is the sequential one: no refusal, no panic, the same paths.
#[test]
fn no_thread_to_start_is_the_sequential_walk() {
    if !scratch::root("switch to uid 65534") {
        return;
    }
    let top = scratch::fresh("walk-pool-nothreads");
    let t = build(&top);
    let (root, want) = (t.root.clone(), t.as_nobody.clone());
    let code = as_nobody(|| {
        let seq = match walk(&root, 1) {
            Ok(s) => s,
            Err(_) => return 2,
        };
        let lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: plain setrlimit on a valid struct.
        if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &lim) } != 0 {
            return 3;
        }
        // The control: a thread can no longer be started here.
        if std::thread::Builder::new().spawn(|| {}).is_ok() {
            return 4;
        }
        match walk(&root, 4) {
            Ok(par) if par == seq && par.paths == want => 0,
            Ok(_) => 5,
            Err(_) => 6,
        }
    });
    assert_eq!(code, 0);
    fix_modes(&t.root);
    scratch::remove(&top);
}

fn fix_modes(root: &Path) {
    for d in ["xonly", "xonly-leaf", "closed"] {
        let _ = fs::set_permissions(root.join(d), fs::Permissions::from_mode(0o755));
    }
}
