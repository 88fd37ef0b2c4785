//! The home directory as a writable root (the workspace is `$HOME`): it
//! stays read-only by class, except what `allow_write` names inside it, so
//! a file nobody listed is held too; and a tool's trust store stays
//! read-only wherever a writable root holds it. Each attack plants what a
//! real program run later, without a sandbox, executes — gdb's
//! `~/.gdbinit`, a `.pth` file python loads at start, less's `~/.lesskey`
//! (in no table), direnv's allow list — and first runs without dcjail,
//! where the later program must run it, so the test can fail. Under dcjail
//! (bwrap, landlock and auto; the caller and uid 65534) the command runs
//! and the later program runs nothing of it, or the backend refuses the
//! whole run (landlock cannot subtract writes inside a writable root). A
//! workspace above the home directory writes beside it and not in it.
//!
//! Beside them, real work with `$HOME` as the workspace and the project
//! named by `--allow-write`: `npm install` and a venv's `pip install`
//! print and leave exactly what they do without dcjail, never write the
//! host's `~/.npm` or `~/.cache/pip`, and use a cache of their own that a
//! second run finds again.

#[path = "support/realwork.rs"]
mod realwork;
#[path = "support/scratch.rs"]
mod scratch;

use realwork::{give, users, Env, Tree, User};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[derive(Clone, Copy, Debug, PartialEq)]
enum How {
    Direct,
    Jail(&'static str),
}

const JAILS: &[How] = &[How::Jail("bwrap"), How::Jail("landlock"), How::Jail("auto")];

/// `sh -c script` in `cwd` as `user`, under `how`, with `env` only.
fn run(how: How, user: User, env: &Env, cwd: &Path, opts: &[String], script: &str) -> Output {
    let mut words: Vec<OsString> = Vec::new();
    if user == User::Nobody {
        for a in [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ] {
            words.push(a.into());
        }
    }
    if let How::Jail(b) = how {
        words.push(realwork::bin().into());
        for a in ["--backend", b, "--sandbox-mode", "workspace-write"] {
            words.push(a.into());
        }
        words.extend(opts.iter().map(OsString::from));
        words.push("--".into());
    }
    for a in ["sh", "-c", script] {
        words.push(a.into());
    }
    let mut c = Command::new(&words[0]);
    c.args(&words[1..]).current_dir(cwd).stdin(Stdio::null());
    env.apply(&mut c);
    scratch::output_within(c, 120)
}

fn out(o: &Output) -> String {
    scratch::text(o)
}

/// The marks a later program leaves when it ran what was planted: outside
/// the home directory and every writable root.
fn marks(t: &Tree) -> PathBuf {
    t.root.join("marks")
}

fn fresh_marks(t: &Tree, user: User) -> PathBuf {
    let m = marks(t);
    scratch::remove(&m);
    std::fs::create_dir_all(&m).unwrap();
    give(user, &m);
    m
}

/// Plants, in the home directory, what gdb, python and less run at their
/// next start; prints PLANTED-<n> for each write that succeeded.
fn plant_script(m: &Path) -> String {
    let m = m.display();
    format!(
        r#"echo COMMAND-RAN
printf 'shell touch {m}/gdb\n' > "$HOME/.gdbinit" && echo PLANTED-gdb
site=$(/usr/bin/python3 -c 'import site; print(site.getusersitepackages())')
mkdir -p "$site" && echo "import os; open('{m}/pth', 'w')" > "$site/zz.pth" && echo PLANTED-pth
printf '#env\nLESSOPEN=|touch {m}/less; cat %%s\n' > "$HOME/.lesskey" && echo PLANTED-less
mkdir -p "$HOME/.ipython/profile_default/startup" && echo "open('{m}/ipython', 'w')" > "$HOME/.ipython/profile_default/startup/0.py" && echo PLANTED-ipython
true
"#
    )
}

/// The later programs, run without a sandbox as the user.
const LATER: &str = r#"gdb -batch -ex quit >/dev/null 2>&1
/usr/bin/python3 -c pass
echo hello > "$TMPDIR/f"; less "$TMPDIR/f" >/dev/null
"#;

fn ran_marks(m: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(m)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_program_run_later_runs_nothing_a_sandboxed_command_left_in_a_writable_home() {
    for user in users() {
        let t = Tree::new("home-plant", user);
        let env = t.env();
        // Control: without dcjail every plant lands and every later program
        // runs it.
        let m = fresh_marks(&t, user);
        let o = run(How::Direct, user, &env, &t.home, &[], &plant_script(&m));
        let said = String::from_utf8_lossy(&o.stdout).into_owned();
        for w in ["gdb", "pth", "less", "ipython"] {
            assert!(
                said.contains(&format!("PLANTED-{w}")),
                "{user:?} control: {}",
                out(&o)
            );
        }
        let later = run(How::Direct, user, &env, &t.work, &[], LATER);
        assert_eq!(
            ran_marks(&m),
            ["gdb", "less", "pth"],
            "{user:?} control: {}",
            out(&later)
        );
        for &how in JAILS {
            t.reset(user);
            let m = fresh_marks(&t, user);
            let ws = t.home.display().to_string();
            let o = run(
                how,
                user,
                &env,
                &t.home,
                &["--workspace".into(), ws],
                &plant_script(&m),
            );
            let said = String::from_utf8_lossy(&o.stdout).into_owned();
            let what = format!("{user:?} {how:?}");
            if how == How::Jail("landlock") {
                // Landlock alone cannot keep a protected path read-only
                // inside a writable root (/tmp is one): the whole run is
                // refused, naming the path, and nothing of it ran.
                assert_eq!(o.status.code(), Some(122), "{what}: {}", out(&o));
                assert!(!said.contains("COMMAND-RAN"), "{what}");
            } else {
                assert!(said.contains("COMMAND-RAN"), "{what}: {}", out(&o));
                // The .pth may land: in the user site of the workspace's own
                // (PYTHONUSERBASE), which the later python below never loads.
                for p in ["PLANTED-gdb", "PLANTED-less", "PLANTED-ipython"] {
                    assert!(!said.contains(p), "{what}: {}", out(&o));
                }
            }
            let later = run(How::Direct, user, &env, &t.work, &[], LATER);
            assert!(
                ran_marks(&m).is_empty(),
                "{what}: {:?} {}",
                ran_marks(&m),
                out(&later)
            );
            for f in [".gdbinit", ".lesskey", ".local", ".ipython"] {
                assert!(!t.home.join(f).exists(), "{what}: {f} was made");
            }
        }
    }
}

#[test]
fn the_report_names_the_option_for_a_directory_of_the_home_and_no_option_for_its_files() {
    let t = Tree::new("home-report", User::Invoker);
    let env = t.env();
    let rep = t.root.join("report.json");
    let opts: Vec<String> = vec![
        "--workspace".into(),
        t.home.display().to_string(),
        "--report".into(),
        rep.display().to_string(),
    ];
    std::fs::create_dir_all(t.home.join("proj")).unwrap();
    let o = run(
        How::Jail("bwrap"),
        User::Invoker,
        &env,
        &t.home,
        &opts,
        "echo x > proj/new; echo x > .gdbinit; echo RAN",
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("RAN"),
        "{}",
        out(&o)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rep).unwrap()).unwrap();
    let list = r["denials"].as_array().unwrap();
    let of = |p: &Path| {
        list.iter()
            .find(|d| d["resolved"] == p.display().to_string())
            .unwrap_or_else(|| panic!("no denial of {}: {r}", p.display()))
    };
    let d = of(&t.home.join("proj/new"));
    assert_eq!(d["rule"], "home directory", "{d}");
    assert_eq!(d["allow"], "--allow-write ~/proj", "{d}");
    let d = of(&t.home.join(".gdbinit"));
    assert_eq!(d["rule"], "home directory", "{d}");
    assert!(d["allow"].is_null(), "{d}");
    assert!(
        d["why_not"]
            .as_str()
            .unwrap()
            .contains("--no-protect-defaults"),
        "{d}"
    );
    // Following the report: the rerun writes the project.
    let mut opts = opts;
    opts.extend(["--allow-write".into(), "~/proj".into()]);
    let o = run(
        How::Jail("bwrap"),
        User::Invoker,
        &env,
        &t.home,
        &opts,
        "echo x > proj/new",
    );
    assert!(o.status.success(), "{}", out(&o));
    assert!(t.home.join("proj/new").exists());
}

/// direnv's allow list is a trust store: `direnv allow` by the command
/// would let the user's next `cd` run an `.envrc` without asking.
#[test]
fn direnv_allow_by_the_command_does_not_make_the_next_cd_run_the_envrc() {
    let direnv = Path::new("/usr/bin/direnv");
    assert!(
        direnv.exists(),
        "direnv is missing: scripts/test.sh installs it (apt-get install direnv)"
    );
    for user in users() {
        let t = Tree::new("direnv", user);
        let env = t.env();
        let m = marks(&t);
        let prepare = |t: &Tree| {
            let m = fresh_marks(t, user);
            let sub = t.work.join("sub");
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(sub.join(".envrc"), format!("touch {}/envrc\n", m.display())).unwrap();
            std::fs::create_dir_all(t.home.join(".local/share")).unwrap();
            give(user, &t.root);
        };
        // The user's next interactive shell, with direnv's hook, enters sub.
        let later = format!(
            "bash --norc --noprofile -i 2>&1 <<'EOF'\neval \"$(direnv hook bash)\"\ncd {}/sub\ntrue\nexit\nEOF\n",
            t.work.display()
        );
        prepare(&t);
        let o = run(
            How::Direct,
            user,
            &env,
            &t.work,
            &[],
            "direnv allow sub && echo ALLOWED",
        );
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("ALLOWED"),
            "{}",
            out(&o)
        );
        let l = run(How::Direct, user, &env, &t.work, &[], &later);
        assert_eq!(ran_marks(&m), ["envrc"], "control: {}", out(&l));
        for &how in JAILS {
            t.reset(user);
            prepare(&t);
            let opts: Vec<String> = vec![
                "--workspace".into(),
                t.work.display().to_string(),
                "--allow-write".into(),
                "~/.local".into(),
            ];
            let o = run(
                how,
                user,
                &env,
                &t.work,
                &opts,
                "echo COMMAND-RAN; direnv allow sub && echo ALLOWED",
            );
            let said = String::from_utf8_lossy(&o.stdout).into_owned();
            let what = format!("{user:?} {how:?}");
            if how == How::Jail("landlock") {
                assert_eq!(o.status.code(), Some(122), "{what}: {}", out(&o));
                let err = String::from_utf8_lossy(&o.stderr);
                assert!(
                    err.contains("landlock cannot keep the protected path"),
                    "{what}: {err}"
                );
                assert!(!said.contains("COMMAND-RAN"), "{what}");
            } else {
                assert!(
                    said.contains("COMMAND-RAN") && !said.contains("ALLOWED"),
                    "{what}: {}",
                    out(&o)
                );
            }
            let l = run(How::Direct, user, &env, &t.work, &[], &later);
            assert!(ran_marks(&m).is_empty(), "{what}: {}", out(&l));
            assert!(
                String::from_utf8_lossy(&l.stdout).contains("is blocked"),
                "{what}: direnv should say the .envrc is blocked: {}",
                out(&l)
            );
        }
    }
}

/// Everything under `dir`, as `path size` lines, leaving out names that
/// vary from run to run.
fn listing(dir: &Path) -> String {
    realwork::listing(dir, &[])
}

/// A small npm package as a tarball in `dir` (npm caches what it unpacks
/// from one): no test needs the network.
fn npm_dep(dir: &Path) {
    let src = dir.join("dep-src/package");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("package.json"),
        r#"{"name":"rw-dep","version":"1.0.0","main":"index.js","license":"MIT"}"#,
    )
    .unwrap();
    std::fs::write(src.join("index.js"), "module.exports = (a, b) => a + b;\n").unwrap();
    tar(dir, "rw-dep-1.0.0.tgz", &dir.join("dep-src"), "package");
}

/// `tar -czf dir/name -C from what`, with fixed times so every run packs
/// the same bytes.
fn tar(dir: &Path, name: &str, from: &Path, what: &str) {
    let ok = Command::new("tar")
        .args([
            "--mtime=2020-01-01",
            "--owner=0",
            "--group=0",
            "--sort=name",
            "-czf",
        ])
        .arg(dir.join(name))
        .arg("-C")
        .arg(from)
        .arg(what)
        .status()
        .unwrap()
        .success();
    assert!(ok, "tar {name}");
}

#[test]
fn npm_install_with_the_home_as_workspace_works_as_without_dcjail_with_a_cache_of_its_own() {
    for user in users() {
        let t = Tree::new("home-npm", user);
        let env = t.env();
        let script = r#"exec 2>&1
cd "$HOME/proj"
npm install --no-audit --no-fund --no-update-notifier "$HOME/rw-dep-1.0.0.tgz" >/dev/null; echo "npm rc=$?"
node -e 'console.log(require("rw-dep")(2, 3))'
"#;
        let setup = |t: &Tree| {
            npm_dep(&t.home);
            std::fs::create_dir_all(t.home.join("proj")).unwrap();
            std::fs::write(
                t.home.join("proj/package.json"),
                r#"{"name":"proj","version":"1.0.0","license":"MIT"}"#,
            )
            .unwrap();
            give(user, &t.root);
        };
        setup(&t);
        let want = run(How::Direct, user, &env, &t.home, &[], script);
        let want_files = listing(&t.home.join("proj"));
        assert!(
            String::from_utf8_lossy(&want.stdout).contains("npm rc=0\n5\n"),
            "control: {}",
            out(&want)
        );
        assert!(
            t.home.join(".npm").exists(),
            "control: npm keeps its cache in ~/.npm"
        );
        for how in [How::Jail("bwrap"), How::Jail("auto")] {
            t.reset(user);
            setup(&t);
            let opts: Vec<String> = vec![
                "--workspace".into(),
                t.home.display().to_string(),
                "--allow-write".into(),
                "~/proj".into(),
            ];
            let got = run(how, user, &env, &t.home, &opts, script);
            let what = format!("{user:?} {how:?}");
            assert_eq!(got.stdout, want.stdout, "{what}: {}", out(&got));
            assert_eq!(listing(&t.home.join("proj")), want_files, "{what}");
            assert!(
                !t.home.join(".npm").exists(),
                "{what}: the host's ~/.npm was written"
            );
            // The cache of its own, kept for the next call in this workspace.
            let own = t.home.join(".cache/dcjail");
            let caches: Vec<PathBuf> = std::fs::read_dir(&own)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            assert_eq!(caches.len(), 1, "{what}: {caches:?}");
            let npm = caches[0].join("npm");
            assert!(
                npm.join("_cacache").is_dir(),
                "{what}: npm did not use its own cache"
            );
            let before = listing(&npm.join("_cacache"));
            let again = run(
                how,
                user,
                &env,
                &t.home,
                &opts,
                "echo \"$npm_config_cache\"; ls \"$npm_config_cache/_cacache\"",
            );
            let said = String::from_utf8_lossy(&again.stdout).into_owned();
            assert!(
                said.starts_with(&format!("{}\n", npm.display())),
                "{what}: {}",
                out(&again)
            );
            assert!(
                said.contains("index-v5"),
                "{what}: the second call did not find the cache: {}",
                out(&again)
            );
            assert_eq!(listing(&npm.join("_cacache")), before, "{what}");
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&caches[0]).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{what}");
        }
    }
}

#[test]
fn pip_install_with_the_home_as_workspace_works_as_without_dcjail_and_leaves_the_host_cache_alone()
{
    for user in users() {
        let t = Tree::new("home-pip", user);
        let env = t.env();
        // A local sdist pip must build (without the `wheel` package, as
        // setup.py install: nothing reaches the wheel cache offline here;
        // the npm test shows a cache kept between calls).
        let script = r#"exec 2>&1
cd "$HOME/proj"
/usr/bin/python3 -m venv venv && echo venv-ok
venv/bin/pip install --disable-pip-version-check --no-index --no-build-isolation -q "$HOME/rwpkg-1.0.tar.gz" && echo pip-ok
venv/bin/python -c 'import rwpkg; print(rwpkg.VALUE)'
"#;
        let setup = |t: &Tree| {
            let pkg = t.root.join("sdist/rwpkg-1.0");
            std::fs::create_dir_all(pkg.join("rwpkg")).unwrap();
            std::fs::write(pkg.join("rwpkg/__init__.py"), "VALUE = 42\n").unwrap();
            std::fs::write(
                pkg.join("setup.py"),
                "from setuptools import setup\nsetup(name='rwpkg', version='1.0', packages=['rwpkg'])\n",
            )
            .unwrap();
            tar(
                &t.home,
                "rwpkg-1.0.tar.gz",
                &t.root.join("sdist"),
                "rwpkg-1.0",
            );
            std::fs::create_dir_all(t.home.join("proj")).unwrap();
            give(user, &t.root);
        };
        setup(&t);
        let want = run(How::Direct, user, &env, &t.home, &[], script);
        assert!(
            String::from_utf8_lossy(&want.stdout).ends_with("pip-ok\n42\n"),
            "control: {}",
            out(&want)
        );
        let want_pkgs = listing(&t.home.join("proj/venv/lib"));
        let dir = run(
            How::Direct,
            user,
            &env,
            &t.home,
            &[],
            "cd proj && venv/bin/pip cache dir",
        );
        let host_cache = t.home.join(".cache/pip").display().to_string();
        assert_eq!(
            String::from_utf8_lossy(&dir.stdout).trim(),
            host_cache,
            "control: {}",
            out(&dir)
        );
        for how in [How::Jail("bwrap"), How::Jail("auto")] {
            t.reset(user);
            setup(&t);
            let opts: Vec<String> = vec![
                "--workspace".into(),
                t.home.display().to_string(),
                "--allow-write".into(),
                "~/proj".into(),
            ];
            let got = run(how, user, &env, &t.home, &opts, script);
            let what = format!("{user:?} {how:?}");
            assert_eq!(got.stdout, want.stdout, "{what}: {}", out(&got));
            assert_eq!(listing(&t.home.join("proj/venv/lib")), want_pkgs, "{what}");
            assert!(
                !t.home.join(".cache/pip").exists(),
                "{what}: the host's ~/.cache/pip was written"
            );
            let own: Vec<PathBuf> = std::fs::read_dir(t.home.join(".cache/dcjail"))
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            assert_eq!(own.len(), 1, "{what}");
            // pip's own word for where its cache is, in this call and the next.
            let dir = run(
                how,
                user,
                &env,
                &t.home,
                &opts,
                "cd proj && venv/bin/pip cache dir",
            );
            let mine = own[0].join("pip").display().to_string();
            assert_eq!(
                String::from_utf8_lossy(&dir.stdout).trim(),
                mine,
                "{what}: {}",
                out(&dir)
            );
            // `pip install --user` goes to a user base of the workspace's
            // own (PYTHONUSERBASE), which a later call's python loads and
            // the host's never: the host's ~/.local is not made.
            let u = run(how, user, &env, &t.home, &opts, "/usr/bin/python3 -m pip install --user --break-system-packages --disable-pip-version-check --no-index --no-build-isolation -q \"$HOME/rwpkg-1.0.tar.gz\"; echo rc=$?");
            assert!(
                String::from_utf8_lossy(&u.stdout).contains("rc=0"),
                "{what}: {}",
                out(&u)
            );
            let again = run(
                how,
                user,
                &env,
                &t.home,
                &opts,
                "/usr/bin/python3 -c 'import rwpkg; print(rwpkg.VALUE)'",
            );
            assert_eq!(
                String::from_utf8_lossy(&again.stdout).trim(),
                "42",
                "{what}: {}",
                out(&again)
            );
            assert!(!t.home.join(".local").exists(), "{what}");
        }
    }
}

#[test]
fn cargo_build_with_the_home_as_workspace_works_as_without_dcjail_with_a_home_of_its_own() {
    for user in realwork::cargo_users() {
        let tc = realwork::toolchain_for(user);
        let t = Tree::new("home-cargo", user);
        let mut env = t.env();
        env.set(
            "PATH",
            format!("{}:{}", tc.bin_dir.display(), realwork::SYS_PATH),
        )
        .set("CARGO_TERM_COLOR", "never")
        .set("CARGO_TERM_PROGRESS_WHEN", "never");
        let script = r#"exec 2>&1
cd "$HOME/proj" && cargo build --offline; echo "cargo rc=$?"
cargo run --offline -q
"#;
        let setup = |t: &Tree| {
            let p = t.home.join("proj");
            std::fs::create_dir_all(p.join("src")).unwrap();
            std::fs::write(
                p.join("Cargo.toml"),
                "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            )
            .unwrap();
            std::fs::write(
                p.join("src/main.rs"),
                "fn main() { println!(\"built {}\", 6 * 7); }\n",
            )
            .unwrap();
            give(user, &t.root);
        };
        setup(&t);
        let want = run(How::Direct, user, &env, &t.home, &[], script);
        let want_out = realwork::normalize_times(&String::from_utf8_lossy(&want.stdout));
        assert!(
            want_out.ends_with("cargo rc=0\nbuilt 42\n"),
            "control: {}",
            out(&want)
        );
        assert!(
            t.home.join(".cargo").exists(),
            "control: cargo keeps its home in ~/.cargo"
        );
        let want_files = listing(&t.home.join("proj/src"));
        for how in [How::Jail("bwrap"), How::Jail("auto")] {
            t.reset(user);
            setup(&t);
            let opts: Vec<String> = vec![
                "--workspace".into(),
                t.home.display().to_string(),
                "--allow-write".into(),
                "~/proj".into(),
            ];
            let got = run(how, user, &env, &t.home, &opts, script);
            let what = format!("{user:?} {how:?}");
            let got_out = realwork::normalize_times(&String::from_utf8_lossy(&got.stdout));
            assert_eq!(got_out, want_out, "{what}: {}", out(&got));
            assert_eq!(listing(&t.home.join("proj/src")), want_files, "{what}");
            assert!(t.home.join("proj/target").is_dir(), "{what}");
            // No ~/.cargo/registry here: cargo gets a home of its own.
            assert!(
                !t.home.join(".cargo").exists(),
                "{what}: the host's ~/.cargo was written"
            );
            let own: Vec<PathBuf> = std::fs::read_dir(t.home.join(".cache/dcjail"))
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            assert_eq!(own.len(), 1, "{what}");
            let again = run(how, user, &env, &t.home, &opts, "echo \"$CARGO_HOME\"");
            assert_eq!(
                String::from_utf8_lossy(&again.stdout).trim(),
                own[0].join("cargo").display().to_string(),
                "{what}: {}",
                out(&again)
            );
        }
    }
}

#[test]
fn a_workspace_above_the_home_directory_writes_beside_it_and_not_in_it() {
    for user in users() {
        let t = Tree::new("home-above", user);
        let env = t.env();
        let m = fresh_marks(&t, user);
        let script = plant_script(&m) + "echo x > \"$HOME/../work/beside\" && echo BESIDE\n";
        // Control: both land.
        let o = run(How::Direct, user, &env, &t.root, &[], &script);
        let said = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            said.contains("PLANTED-gdb") && said.contains("BESIDE"),
            "control: {}",
            out(&o)
        );
        for &how in JAILS {
            t.reset(user);
            let m = fresh_marks(&t, user);
            let script = plant_script(&m) + "echo x > \"$HOME/../work/beside\" && echo BESIDE\n";
            let ws = t.root.display().to_string();
            let o = run(
                how,
                user,
                &env,
                &t.root,
                &["--workspace".into(), ws],
                &script,
            );
            let said = String::from_utf8_lossy(&o.stdout).into_owned();
            let what = format!("{user:?} {how:?}");
            if how == How::Jail("landlock") {
                // Keeping the home directory read-only inside a granted
                // tree is a subtraction landlock cannot make.
                assert_eq!(o.status.code(), Some(122), "{what}: {}", out(&o));
                assert!(!said.contains("COMMAND-RAN"), "{what}");
                continue;
            }
            assert!(
                said.contains("COMMAND-RAN") && said.contains("BESIDE"),
                "{what}: {}",
                out(&o)
            );
            // The .pth may land: in the user site of the workspace's own
            // (PYTHONUSERBASE), which the later python below never loads.
            for p in ["PLANTED-gdb", "PLANTED-less", "PLANTED-ipython"] {
                assert!(!said.contains(p), "{what}: {}", out(&o));
            }
            assert!(t.work.join("beside").exists(), "{what}");
            let later = run(How::Direct, user, &env, &t.work, &[], LATER);
            assert!(ran_marks(&m).is_empty(), "{what}: {}", out(&later));
        }
    }
}
