//! Package managers with their defaults: no cache variable set by the
//! test, no `TMPDIR` (so `/tmp` is theirs), a home that already holds
//! caches of the user's own (`~/.cache/pip` owned by root, for root). Each
//! workload runs without dcjail, under each backend, and without dcjail
//! again, as root and as uid 65534, from loopback indexes this test starts:
//! pip building a local sdist with a C extension (gcc and Python's headers,
//! which `scripts/test.sh` installs), `uv sync`, `pnpm install`, `yarn
//! install`. Compared: exit status, what they print (times, pip's wheel
//! hash and the cache directory's path normalised, pnpm's `Progress:` lines
//! dropped: they count what finished at the moment of printing), the
//! files of the project, `git status --porcelain --ignored`, and what each
//! left in the host's `/tmp`. A jailed run must leave the home directory
//! as it found it but for dcjail's own `~/.cache/dcjail`, and its tool's
//! cache there must hold what it fetched.
//!
//! go (Debian's, from a `file://` proxy the test writes) runs the same way
//! with no go caches in the home, with warm ones (go's module store of the
//! workspace's own, fed from the host's download cache, which a jailed run
//! leaves byte for byte as it was), a `go get` of a module the host's store
//! lacks, and `GOPROXY=off` or `GOPRIVATE` (the host's store read); an
//! attack writes the host's store through every name the command has.
//!
//! pnpm (12, and 10 and 11 beside it), yarn 1 and uv are installed at
//! pinned versions by `scripts/test.sh` in `target/pkgtools` (or
//! `DCJAIL_TEST_PKGTOOLS`).

#[path = "support/pkg_index.rs"]
mod pkg_index;
#[path = "support/realwork.rs"]
mod realwork;
#[path = "support/scratch.rs"]
mod scratch;

use pkg_index::*;
use realwork::*;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The versions `scripts/test.sh` installs.
const PNPM: &str = "12.23.0";
/// pnpm 10 (which reads its store from `PNPM_HOME` only) and pnpm 11 (its
/// standalone build: pnpm 11 needs a newer node than Debian's).
const PNPM10: &str = "10.34.9";
const PNPM11: &str = "11.28.6";
const YARN: &str = "1.22.22";
const UV: &str = "0.13.9";

/// A test's setup under the one-run lock: the first `yarn --version` on a
/// machine makes `/tmp/v8-compile-cache-<uid>`, and `npm pack` and python
/// leave their own entries, which a workload running meanwhile would count
/// as its own (seen on a fresh Debian machine).
fn setup<T>(f: impl FnOnce() -> T) -> T {
    let _one = one_run();
    f()
}

/// The directories holding pnpm, yarn and uv, checked to run at the pinned
/// versions: a missing one fails the test.
fn tool_dirs() -> Vec<PathBuf> {
    let root = pkgtools();
    let dirs = vec![root.join("node_modules/.bin"), root.join("uv/bin")];
    for (tool, want, dir) in [
        ("pnpm", PNPM, &dirs[0]),
        ("yarn", YARN, &dirs[0]),
        ("uv", UV, &dirs[1]),
    ] {
        let out = Command::new(dir.join(tool))
            .arg("--version")
            .stdin(Stdio::null())
            .output();
        let got = out
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        assert!(
            got.contains(want),
            "{tool} {want} is not in {}: scripts/test.sh installs it \
             (npm install --prefix target/pkgtools pnpm@{PNPM} yarn@{YARN}; \
             python3 -m pip install --target target/pkgtools/uv uv=={UV}); got {got:?}",
            dir.display()
        );
    }
    for c in ["gcc", "node", "git"] {
        assert!(
            Command::new(c)
                .arg("--version")
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
            "{c} is missing: scripts/test.sh installs it"
        );
    }
    let wheels = names_in(&wheelhouse());
    assert!(
        wheels.iter().any(|w| w.starts_with("setuptools-")),
        "no setuptools wheel in the wheelhouse: scripts/test.sh downloads it"
    );
    let headers = Command::new(PYTHON)
        .args([
            "-c",
            "import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))",
        ])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        headers,
        "Python.h of {PYTHON} is missing: scripts/test.sh installs python3-dev"
    );
    dirs
}

fn pkgtools() -> PathBuf {
    std::env::var_os("DCJAIL_TEST_PKGTOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pkgtools"))
}

/// `tool_dirs` with the directory of pnpm `version` (in its own prefix,
/// `pnpm<major>`, but for `PNPM`) first on PATH, checked to run at that
/// version.
fn tool_dirs_with_pnpm(version: &str) -> Vec<PathBuf> {
    if version == PNPM {
        return tool_dirs();
    }
    let major = version.split('.').next().unwrap_or(version);
    let dir = pkgtools().join(format!("pnpm{major}/node_modules/.bin"));
    let got = Command::new(dir.join("pnpm"))
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    assert_eq!(
        got,
        version,
        "pnpm {version} is not in {}: scripts/test.sh installs it",
        dir.display()
    );
    let mut dirs = vec![dir];
    dirs.extend(tool_dirs());
    dirs
}

/// A difference the test expects under a backend, with its cause: the line
/// (a prefix) in the jailed output, and what the run without dcjail prints
/// in its place (`None`: nothing). Each is required where its condition
/// holds, so a fix that removes it shows here.
#[derive(Clone, Copy)]
struct Known {
    when: When,
    jailed: &'static str,
    direct: Option<&'static str>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    /// A hard link from the private cache into the workspace fails in this
    /// sandbox (probed: each writable root is its own bind mount under
    /// bwrap; issue #28 item 3 is making it work).
    NoCrossLink,
    /// The sandbox has its own network namespace (bwrap with `--net
    /// allowlist`): no interface but loopback.
    OwnNetns,
    /// go's module store is the workspace's own, fed from the host's: go
    /// says it downloads what it copies from the host's download cache.
    OwnGoStore,
    /// yarn 1 looks for a global folder it can write when it runs a
    /// script: `/usr/local` as root, else `~/.yarn`. Both are read-only in
    /// the sandbox; landlock does not answer `access(2)`, so as root under
    /// landlock yarn believes `/usr/local` writable and says nothing.
    YarnGlobalFolder,
}

struct Workload<'a> {
    name: &'a str,
    /// Writes the project's files (committed before the run).
    project: &'a dyn Fn(&Path),
    script: String,
    known: &'a [Known],
    /// The private cache's subdirectories the tool must have filled.
    cache_sub: &'a [&'a str],
    /// Fills the home's own caches before each run (run as the user,
    /// without dcjail, once the tree is the user's).
    warm: Option<&'a Warm<'a>>,
    /// Variables the caller sets (the command inherits them); `{home}` in a
    /// value is the run's home directory.
    vars: &'a [(&'a str, String)],
    /// Directories of the home a jailed run must leave byte for byte as
    /// they were (`tree_state`): the host's stores it reads.
    kept: &'a [&'a str],
    /// A second call right after the first, in the same mode, with what
    /// the first left (the project reset by the script itself): it must
    /// fetch no tarball from the index (its tool's store already has it).
    again: Option<&'a str>,
}

/// Fills a home's caches before a run: the tree, its user, the run's
/// environment.
type Warm<'a> = dyn Fn(&Tree, User, &Env) + 'a;

/// The caches a home already has before every run (the tools' defaults),
/// made by the run's user: root's own `~/.cache/pip` is the case that
/// failed before dcjail gave pip its own.
const HOME_CACHES: &[&str] = &[
    ".cache/pip/wheels",
    ".cache/uv",
    ".cache/yarn",
    ".cache/pnpm",
    ".local/share/pnpm/store",
    ".npm",
];

/// Names in `/tmp` these tools make (pip's build directories, uv's venv
/// locks, yarn 1's `yarn--<time>-<random>` script shims and its fallback
/// cache, pnpm's lock directories, node's compile cache): other entries
/// belong to other programs on a shared machine.
const TMP_PREFIXES: &[&str] = &[
    "pip-",
    "uv-",
    "yarn",
    ".yarn",
    "pnpm",
    ".pnpm",
    "npm-",
    "node-compile-cache",
    "v8-compile-cache",
    "go-build",
];

static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One workload at a time across processes too: what the tools leave in
/// `/tmp` is compared before and after, and another checkout's test run
/// (a second suite on the machine) writes the same names there. The lock
/// is a file in `/tmp` itself, held (flock) for the workload's run.
struct OneRun {
    _in_process: std::sync::MutexGuard<'static, ()>,
    _file: nix::fcntl::Flock<std::fs::File>,
}

fn one_run() -> OneRun {
    let guard = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/.dcjail-tests-pkg-managers.lock")
        .expect("open the lock file in /tmp");
    let file = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("flock the lock file in /tmp");
    OneRun {
        _in_process: guard,
        _file: file,
    }
}

/// The tools' entries in `/tmp` (by `TMP_PREFIXES`) with their owner and
/// inode, and for a directory the names in it (pnpm keeps lock files,
/// named by store, in directories it never removes).
type TmpState = BTreeMap<String, (u32, u64, Vec<String>)>;

fn tmp_state() -> TmpState {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir("/tmp").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !TMP_PREFIXES.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        if let Ok(md) = std::fs::symlink_metadata(e.path()) {
            let inside = if md.is_dir() {
                names_in(&e.path())
            } else {
                vec![]
            };
            m.insert(name, (md.uid(), md.ino(), inside));
        }
    }
    m
}

/// Times, random numbers and hashes in a name become `#`.
fn shown(name: &str) -> String {
    let mut out = String::new();
    for tok in name.split_inclusive(['-', '.', '_']) {
        let word = tok.trim_end_matches(['-', '.', '_']);
        let numeric = !word.is_empty()
            && word.chars().all(|c| c.is_ascii_hexdigit())
            && word.chars().any(|c| c.is_ascii_digit());
        if numeric {
            out.push('#');
            out.push_str(&tok[word.len()..]);
        } else {
            out.push_str(tok);
        }
    }
    out
}

/// What a run left in `/tmp`: the user's entries made since `before`, or
/// made inside one of the user's that was there before, names shown by
/// `shown`. What the run made is removed after (without following a
/// symlink or crossing a file system), so every run starts from the same
/// `/tmp`.
fn tmp_left(before: &TmpState, uid: u32) -> String {
    let mut out = Vec::new();
    let mut made = Vec::new();
    for (name, (owner, ino, inside)) in tmp_state() {
        if owner != uid {
            continue;
        }
        match before.get(&name) {
            Some((_, was, had)) if *was == ino => {
                for n in inside.iter().filter(|n| !had.contains(n)) {
                    out.push(format!("new /tmp/{}/{}", shown(&name), shown(n)));
                    made.push(Path::new("/tmp").join(&name).join(n));
                }
            }
            _ => {
                out.push(format!("new /tmp/{}", shown(&name)));
                made.push(Path::new("/tmp").join(&name));
            }
        }
    }
    for p in made {
        let _ = Command::new("rm")
            .args(["-rf", "--one-file-system", "--"])
            .arg(p)
            .status();
    }
    out.sort();
    out.dedup();
    out.join("\n") + "\n"
}

fn uid(user: User) -> u32 {
    match user {
        // SAFETY: geteuid never fails.
        User::Invoker => unsafe { libc::geteuid() },
        User::Nobody => 65534,
    }
}

/// Replaces the variable parts: durations (`14ms`, `1.05s.`), pip's wheel
/// size and hash (the built extension holds its random build directory),
/// and each cache's path (the host's default and dcjail's own alike) with
/// `<cache:SUB>`; drops pnpm's `Progress:` lines but the last (`…, done`:
/// what was reused and what downloaded), whose `reused` count is kept as
/// none or some: pnpm 12 counts a package its store held twice (`reused
/// 2` for one package) in some runs without dcjail and not in others (seen
/// in a clean-clone CI run, where the run without dcjail differed from
/// itself); `downloaded` stays exact, and the second call's registry
/// requests are counted apart.
fn normalize(s: &str, home: &Path) -> String {
    let home = home.display().to_string();
    // go test separates its words with tabs.
    let mut s = s.replace('\t', " ");
    // dcjail's own root first: `~/.cache/dcjail/<leaf>/<sub>`.
    let own = format!("{home}/.cache/dcjail/");
    while let Some(i) = s.find(&own) {
        let rest = s[i + own.len()..].to_string();
        let mut parts = rest.splitn(2, '/');
        let _leaf = parts.next();
        let after = parts.next().unwrap_or("");
        let end = after.find(['/', '\n', ' ', '"']).unwrap_or(after.len());
        s = format!("{}<cache:{}>{}", &s[..i], &after[..end], &after[end..]);
    }
    for (host, sub) in [
        (format!("{home}/.cache/pip"), "pip"),
        (format!("{home}/.cache/uv"), "uv"),
        (format!("{home}/.cache/yarn"), "yarn"),
        ("/usr/local/share/.cache/yarn".to_string(), "yarn"),
        (format!("{home}/.local/share/pnpm"), "pnpm-home"),
        (format!("{home}/.cache/pnpm"), "pnpm"),
    ] {
        s = s.replace(&host, &format!("<cache:{sub}>"));
    }
    let mut out = String::new();
    for line in s.lines() {
        if line.starts_with("Progress: resolved") && !line.ends_with(", done") {
            continue;
        }
        if line.starts_with("Progress: resolved") {
            let some = |w: &str| if w == "0," { "0," } else { "<some>," };
            let words: Vec<&str> = line.split(' ').collect();
            let line: Vec<&str> = words
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    if i > 0 && words[i - 1] == "reused" {
                        some(w)
                    } else {
                        w
                    }
                })
                .collect();
            out.push_str(&line.join(" "));
            out.push('\n');
            continue;
        }
        let words: Vec<String> = line
            .split(' ')
            .map(|w| {
                if w.starts_with("size=") {
                    return "size=<n>".into();
                }
                if w.starts_with("sha256=") {
                    return "sha256=<hash>".into();
                }
                time_word(w)
            })
            .collect();
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    out
}

/// Whether a hard link from the private cache into the workspace works
/// under `b`: a real `ln` run in the sandbox.
fn cross_link_works(b: Backend, user: User, opts: &[String]) -> bool {
    let t = Tree::new(&format!("pm-link-{}", b.name()), user);
    let env = t.env();
    let script = "set -e; d=$(dirname \"$PIP_CACHE_DIR\"); echo x > \"$d/link-probe\"; \
                  ln \"$d/link-probe\" ./linked; rm -f \"$d/link-probe\"";
    let r = sh(Mode::Jail(b), user, &t.work, &t.work, opts, &env, script);
    r.code == Some(0)
}

struct Outcome {
    printed: String,
    files: String,
    git: String,
    tmp: String,
}

/// Applies the expected differences to a jailed run's output (each required
/// where its condition holds) and returns the failures.
fn apply_known(
    what: &str,
    printed: &mut String,
    known: &[Known],
    holds: &dyn Fn(When) -> bool,
) -> Vec<String> {
    let mut failures = Vec::new();
    for k in known.iter().filter(|k| holds(k.when)) {
        let mut seen = false;
        let mut out = String::new();
        for line in printed.lines() {
            if line.starts_with(k.jailed) {
                seen = true;
                if let Some(d) = k.direct {
                    out.push_str(d);
                    out.push('\n');
                }
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        if seen {
            println!("{what}: the expected difference {:?}", k.jailed);
        } else {
            failures.push(format!(
                "{what}: the expected difference {:?} is gone: the test and README's \
                 package-manager table must say so",
                k.jailed
            ));
        }
        *printed = out;
    }
    failures
}

/// Rebuilds the project (committed) and the home (with `HOME_CACHES`) for
/// the next run; returns its environment: the tools on PATH, no `TMPDIR`.
fn prepare(w: &Workload, t: &Tree, user: User, path: &str) -> Env {
    t.reset(user);
    (w.project)(&t.work);
    let mut env = t.env();
    env.vars.remove("TMPDIR");
    // Where every tool caches by default, but for root's yarn 1, whose
    // default is the machine's `/usr/local/share/.cache`.
    env.set("PATH", path).set(
        "XDG_CACHE_HOME",
        t.home.join(".cache").display().to_string(),
    );
    for (k, v) in w.vars {
        env.set(k, v.replace("{home}", &t.home.display().to_string()));
    }
    git(&t.work, &env, &["init", "-q", "-b", "main"]);
    git(&t.work, &env, &["add", "-A"]);
    git(&t.work, &env, &["commit", "-q", "-m", "project"]);
    for c in HOME_CACHES {
        std::fs::create_dir_all(t.home.join(c)).unwrap();
    }
    give(user, &t.root);
    if let Some(warm) = w.warm {
        warm(t, user, &env);
    }
    env
}

/// The network a run needs: none for an index read from files (`None`).
fn net_opts(mode: Mode, server: Option<&StaticServer>) -> Vec<String> {
    server.map_or_else(Vec::new, |s| index_net_opts(mode, s.port))
}

/// What a jailed run must show beyond the comparison: the expected
/// differences where they hold (taken out of `printed`), the home as it
/// was but for dcjail's own caches, and the tool's own cache filled.
#[allow(clippy::too_many_arguments)]
fn jailed_checks(
    w: &Workload,
    t: &Tree,
    b: Backend,
    user: User,
    opts: &[String],
    what: &str,
    printed: &mut String,
    home_before: &str,
) -> Vec<String> {
    let no_link =
        w.known.iter().any(|k| k.when == When::NoCrossLink) && !cross_link_works(b, user, opts);
    let holds = |c: When| match c {
        When::NoCrossLink => no_link,
        When::OwnNetns => b == Backend::Bwrap,
        When::OwnGoStore => true,
        When::YarnGlobalFolder => b == Backend::Bwrap || !(user == User::Invoker && is_root()),
    };
    let mut failures = apply_known(what, printed, w.known, &holds);
    let own_root = t.home.join(".cache/dcjail");
    let home_after = listing(&t.home, &[".cache/dcjail"]);
    let home_before = home_before
        .lines()
        .filter(|l| !l.ends_with(" .cache/dcjail"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    if let Some(d) = diff(
        &format!("{what}: the home directory"),
        &home_before,
        &home_after,
    ) {
        failures.push(d);
    }
    let own = names_in(&own_root);
    for sub in w.cache_sub {
        let filled = own.len() == 1 && !names_in(&own_root.join(&own[0]).join(sub)).is_empty();
        if !filled {
            failures.push(format!(
                "{what}: dcjail's own cache has no {sub}: {:?}",
                listing(&own_root, &[])
            ));
        }
    }
    failures
}

/// Runs `w` in every mode as every user and compares. `server` is the
/// loopback index it must fetch from; `None` for one read from files (go's
/// `GOPROXY=file://`), where the tool's own cache shows the fetch.
fn run_workload(w: &Workload, server: Option<&StaticServer>, tools: &[PathBuf]) -> Vec<String> {
    let mut failures = Vec::new();
    let path = tools
        .iter()
        .map(|d| d.display().to_string())
        .chain([SYS_PATH.to_string()])
        .collect::<Vec<_>>()
        .join(":");
    for user in users() {
        let t = Tree::new(&format!("pm-{}", w.name), user);
        let mut want: Option<Outcome> = None;
        for mode in modes() {
            // One run at a time in this binary, its preparation included
            // (go's warm-up build keeps its work in /tmp): each reads, and
            // removes, what the tools leave in /tmp.
            let _one = one_run();
            let env = prepare(w, &t, user, &path);
            let home_before = listing(&t.home, &[]);
            let kept_before: Vec<String> =
                w.kept.iter().map(|d| tree_state(&t.home.join(d))).collect();
            let opts = net_opts(mode, server);
            let before_tmp = tmp_state();
            let before_req = server.map(|s| s.count());
            let fetched = |s: &StaticServer| tarball_requests(s).len();
            let before_tgz = server.map(fetched);
            let r = sh(mode, user, &t.work, &t.work, &opts, &env, &w.script);
            let what = what(w.name, user, mode, want.is_none());
            record(w.name, user, mode, r.secs);
            let mut printed = format!("{}exit={:?}\n", normalize(&r.all(), &t.home), r.code);
            if server.map(|s| s.count()) == before_req && before_req.is_some() {
                failures.push(format!("{what}: the index saw no request:\n{printed}"));
            }
            if let Some(again) = w.again {
                let before = server.map(fetched);
                // The count works: the first call fetched its tarball.
                if before == before_tgz {
                    failures.push(format!("{what}: the first call fetched no tarball"));
                }
                let r2 = sh(mode, user, &t.work, &t.work, &opts, &env, again);
                printed.push_str(&format!(
                    "-- again\n{}exit={:?}\n",
                    normalize(&r2.all(), &t.home),
                    r2.code
                ));
                if server.map(fetched) != before {
                    failures.push(format!(
                        "{what}: the second call fetched a tarball again: {:?}",
                        server.map(tarball_requests)
                    ));
                }
            }
            let tmp = tmp_left(&before_tmp, uid(user));
            if let Mode::Jail(b) = mode {
                for (d, before) in w.kept.iter().zip(&kept_before) {
                    if let Some(d) = diff(
                        &format!("{what}: ~/{d}, every file's mode, size, time and bytes"),
                        before,
                        &tree_state(&t.home.join(d)),
                    ) {
                        failures.push(d);
                    }
                }
                failures.extend(jailed_checks(
                    w,
                    &t,
                    b,
                    user,
                    &opts,
                    &what,
                    &mut printed,
                    &home_before,
                ));
            }
            let files = listing(&t.work, &[".git"]);
            if files.contains(".pnpm-store") {
                failures.push(format!("{what}: a pnpm store inside the project:\n{files}"));
            }
            let got = Outcome {
                printed,
                files,
                git: git_any(&t.work, &env, &["status", "--porcelain", "--ignored"]),
                tmp,
            };
            match &want {
                None => {
                    if r.code != Some(0) {
                        failures.push(format!(
                            "{what}: the run without dcjail failed, the test is broken:\n{}",
                            got.printed
                        ));
                    }
                    println!("{what}: printed\n{}left in /tmp:\n{}", got.printed, got.tmp);
                    want = Some(got);
                }
                Some(o) => failures.extend(compare(&what, o, &got)),
            }
        }
    }
    print_timings(w.name);
    failures
}

/// The tarball downloads the index saw (request lines naming a `.tgz`).
fn tarball_requests(s: &StaticServer) -> Vec<String> {
    s.requests
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains(".tgz "))
        .cloned()
        .collect()
}

fn compare(what: &str, want: &Outcome, got: &Outcome) -> Vec<String> {
    [
        ("what it printed", &want.printed, &got.printed),
        ("the files of the project", &want.files, &got.files),
        ("git status --porcelain --ignored", &want.git, &got.git),
        ("what it left in /tmp", &want.tmp, &got.tmp),
    ]
    .into_iter()
    .filter_map(|(label, a, b)| diff(&format!("{what}: {label}"), a, b))
    .collect()
}

fn check(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} difference(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// An sdist of `rwcext`: a package with a C extension, built by
/// setuptools (which pip fetches from the index for its isolated build).
const MAKE_SDIST: &str = r##"
import io, sys, tarfile
out = sys.argv[1]
files = {
    "PKG-INFO": "Metadata-Version: 2.1\nName: rwcext\nVersion: 1.0\n",
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n[project]\nname = "rwcext"\nversion = "1.0"\n',
    "setup.py": 'from setuptools import Extension, setup\nsetup(packages=["rwcext"], ext_modules=[Extension("rwcext._fast", ["rwcext/_fast.c"])])\n',
    "rwcext/__init__.py": "from ._fast import add\n",
    "rwcext/_fast.c": """#define PY_SSIZE_T_CLEAN
#include <Python.h>
static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
    return PyLong_FromLong(a + b);
}
static PyMethodDef M[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, M};
PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&D); }
""",
}
with tarfile.open(out, "w:gz") as t:
    for p, text in files.items():
        b = text.encode()
        i = tarfile.TarInfo("rwcext-1.0/" + p)
        i.size, i.mtime, i.mode = len(b), 1577836800, 0o644
        t.addfile(i, io.BytesIO(b))
"##;

#[test]
fn pip_builds_a_local_sdist_with_a_c_extension_as_root_with_an_existing_cache() {
    let (tools, (_index, server)) = setup(|| (tool_dirs(), pip_index("pm-pip-index")));
    let sdist_dir = scratch_dir::Dir::new("pm-sdist");
    let sdist = sdist_dir.0.join("rwcext-1.0.tar.gz");
    python(&["-c", MAKE_SDIST, sdist.to_str().unwrap()]);
    let project = |w: &Path| {
        std::fs::copy(&sdist, w.join("rwcext-1.0.tar.gz")).unwrap();
        std::fs::write(w.join(".gitignore"), ".venv/\n").unwrap();
        std::fs::write(
            w.join("pip.conf"),
            format!(
                "[global]\nindex-url = {}/simple/\ndisable-pip-version-check = true\n",
                server.url()
            ),
        )
        .unwrap();
    };
    let script = format!(
        "{STEP}export PIP_CONFIG_FILE=$PWD/pip.conf\n\
         step {PYTHON} -m venv .venv\n\
         step .venv/bin/pip cache dir\n\
         step .venv/bin/pip install --progress-bar off ./rwcext-1.0.tar.gz\n\
         step .venv/bin/python -c 'import rwcext; print(rwcext.add(2, 3))'\n\
         step .venv/bin/pip list --format=freeze\n"
    );
    check(run_workload(
        &Workload {
            name: "pip-sdist-cext",
            project: &project,
            script,
            known: &[],
            cache_sub: &["pip"],
            warm: None,
            vars: &[],
            kept: &[],
            again: None,
        },
        Some(&server),
        &tools,
    ));
}

#[test]
fn uv_sync_from_a_loopback_index_as_without_dcjail() {
    let (tools, (_index, server)) = setup(|| (tool_dirs(), pip_index("pm-uv-index")));
    let project = |w: &Path| {
        std::fs::write(
            w.join("pyproject.toml"),
            format!(
                "[project]\nname = \"rwapp\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\n\
                 dependencies = [\"rwdemo\"]\n\n[[tool.uv.index]]\nurl = \"{}/simple/\"\ndefault = true\n",
                server.url()
            ),
        )
        .unwrap();
    };
    let script = format!(
        "{STEP}step uv sync --python {PYTHON}\n\
         step uv run python -c 'import rwdemo; print(rwdemo.quad(3))'\n\
         step cat uv.lock\n"
    );
    let known = [
        Known {
            when: When::NoCrossLink,
            jailed: "warning: Failed to hardlink files; falling back to full copy.",
            direct: None,
        },
        Known {
            when: When::NoCrossLink,
            jailed: "         If the cache and target directories are on different filesystems",
            direct: None,
        },
        Known {
            when: When::NoCrossLink,
            jailed: "         If this is intentional, set `export UV_LINK_MODE=copy`",
            direct: None,
        },
    ];
    check(run_workload(
        &Workload {
            name: "uv-sync",
            project: &project,
            script,
            known: &known,
            cache_sub: &["uv"],
            warm: None,
            vars: &[],
            kept: &[],
            again: None,
        },
        Some(&server),
        &tools,
    ));
}

/// A node project depending on `rwleft`, its registry in `.npmrc`.
fn node_project(w: &Path, registry: &str) {
    std::fs::write(
        w.join("package.json"),
        r#"{"name":"rwapp","version":"1.0.0","private":true,"license":"MIT","dependencies":{"rwleft":"^1.0.0"},"scripts":{"test":"node test.js"}}"#,
    )
    .unwrap();
    std::fs::write(
        w.join("test.js"),
        "const add = require('rwleft');\nif (add(2, 3) !== 5) process.exit(1);\nconsole.log('test ok');\n",
    )
    .unwrap();
    std::fs::write(w.join(".npmrc"), format!("registry={registry}/\n")).unwrap();
    std::fs::write(w.join(".gitignore"), "node_modules/\n").unwrap();
}

/// `pnpm install` from the loopback registry with pnpm `version` first on
/// PATH, then a second call installing again from the store the first one
/// filled (no tarball fetched: `reused 1, downloaded 0`). `vars`: what the
/// caller sets.
fn pnpm_install(version: &str, tag: &str, vars: &[(&str, String)]) {
    let (tools, (_reg, server)) = setup(|| {
        (
            tool_dirs_with_pnpm(version),
            npm_registry(&format!("pm-pnpm{version}{tag}-registry")),
        )
    });
    let url = server.url();
    let project = |w: &Path| node_project(w, &url);
    let script = format!(
        "{STEP}step pnpm --version\nstep pnpm install\nstep pnpm test\nstep pnpm store path\n\
         step pnpm list\nstep cat pnpm-lock.yaml\n\
         step stat -c '%h links' node_modules/.pnpm/rwleft@1.0.0/node_modules/rwleft/index.js\n"
    );
    // The project as committed (no node_modules, no lockfile), installed
    // again: from the store alone.
    let again = format!("{STEP}step git clean -fdxq\nstep pnpm install\nstep pnpm store path\n");
    let known = [
        Known {
            when: When::NoCrossLink,
            jailed: "Packages are copied from the content-addressable store to the virtual store.",
            direct: Some(
                "Packages are hard linked from the content-addressable store to the virtual store.",
            ),
        },
        Known {
            when: When::NoCrossLink,
            jailed: "1 links",
            direct: Some("2 links"),
        },
    ];
    // pnpm 10 says nothing about linking; where it cannot link into its
    // home it picks a store inside the project, which the test refuses.
    let known: &[Known] = if version.starts_with("10.") {
        &known[1..]
    } else {
        &known
    };
    check(run_workload(
        &Workload {
            name: &format!("pnpm{version}-install{tag}"),
            project: &project,
            script,
            known,
            cache_sub: &["pnpm-home"],
            warm: None,
            vars,
            kept: &[".local/share/pnpm"],
            again: Some(&again),
        },
        Some(&server),
        &tools,
    ));
}

#[test]
fn pnpm_install_from_a_loopback_registry_keeps_its_store_out_of_the_project() {
    pnpm_install(PNPM, "", &[]);
}

/// pnpm 10 reads no `pnpm_config_store_dir`: its store is the one in
/// `PNPM_HOME`, the workspace's own.
#[test]
fn pnpm10_install_uses_the_workspaces_own_store_through_pnpm_home() {
    pnpm_install(PNPM10, "", &[]);
}

/// The caller's `PNPM_HOME` (as `pnpm setup` leaves it) is the host's
/// store, read-only in the sandbox: pnpm 10 gets the workspace's own.
#[test]
fn pnpm10_install_with_the_callers_pnpm_home_uses_the_workspaces_own_store() {
    let vars = [("PNPM_HOME", "{home}/.local/share/pnpm".to_string())];
    pnpm_install(PNPM10, "-caller-home", &vars);
}

#[test]
fn pnpm11_install_uses_the_workspaces_own_store() {
    pnpm_install(PNPM11, "", &[]);
}

/// `explain` names pnpm's home and store, the workspace's own, also when
/// the caller has a `PNPM_HOME` of its own (`pnpm setup` sets one).
#[test]
fn explain_shows_pnpms_own_home_and_store() {
    let t = Tree::new("pm-pnpm-explain", User::Invoker);
    let home = t.home.canonicalize().unwrap();
    let own_root = home.join(".cache/dcjail");
    for caller in [None, Some(home.join(".local/share/pnpm"))] {
        let mut env = t.env();
        if let Some(h) = &caller {
            env.set("PNPM_HOME", h.display().to_string());
        }
        let mut c = Command::new(bin());
        env.apply(&mut c);
        let o = c
            .args([
                "explain",
                "--sandbox-mode",
                "workspace-write",
                "--workspace",
            ])
            .arg(&t.work)
            .args(["--", "pnpm", "install"])
            .current_dir(&t.work)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let v = &v["plan"]["filesystem"]["own_caches"]["variables"];
        let pnpm_home = v["PNPM_HOME"].as_str().unwrap_or_default();
        assert!(
            pnpm_home.starts_with(&own_root.display().to_string())
                && pnpm_home.ends_with("/pnpm-home"),
            "caller's PNPM_HOME {caller:?}: {v}"
        );
        assert_eq!(
            v["pnpm_config_store_dir"],
            serde_json::json!(format!("{pnpm_home}/store")),
            "{v}"
        );
    }
    assert_eq!(names_in(&own_root).len(), 0, "explain makes nothing");
}

#[test]
fn yarn_install_from_a_loopback_registry_keeps_its_cache_out_of_tmp() {
    let (tools, (_reg, server)) = setup(|| (tool_dirs(), npm_registry("pm-yarn-registry")));
    let url = server.url();
    let project = |w: &Path| node_project(w, &url);
    let script = format!(
        "{STEP}step yarn install\nstep yarn test\nstep yarn cache dir\nstep cat yarn.lock\n"
    );
    let known = [
        Known {
            when: When::OwnNetns,
            jailed: "warning You don't appear to have an internet connection.",
            direct: None,
        },
        Known {
            when: When::YarnGlobalFolder,
            jailed: "warning Cannot find a suitable global folder.",
            direct: None,
        },
    ];
    check(run_workload(
        &Workload {
            name: "yarn-install",
            project: &project,
            script,
            known: &known,
            cache_sub: &["yarn"],
            warm: None,
            vars: &[],
            kept: &[],
            again: None,
        },
        Some(&server),
        &tools,
    ));
}

/// A Go module proxy in the layout `GOPROXY` reads (`<module>/@v/list`,
/// `.info`, `.mod`, and a `.zip` whose entries start `<module>@<version>/`)
/// serving `example.com/dep` and `example.com/extra` at v1.0.0.
const MAKE_GOPROXY: &str = r##"
import json, os, sys, zipfile
root = sys.argv[1]
def module(path, ver, files):
    d = os.path.join(root, path, "@v")
    os.makedirs(d, exist_ok=True)
    gomod = "module %s\n\ngo 1.19\n" % path
    with open(os.path.join(d, "list"), "w") as f:
        f.write(ver + "\n")
    with open(os.path.join(d, ver + ".info"), "w") as f:
        json.dump({"Version": ver, "Time": "2020-01-02T03:04:05Z"}, f)
    with open(os.path.join(d, ver + ".mod"), "w") as f:
        f.write(gomod)
    files = dict(files, **{"go.mod": gomod})
    with zipfile.ZipFile(os.path.join(d, ver + ".zip"), "w") as z:
        for name in sorted(files):
            z.writestr(zipfile.ZipInfo("%s@%s/%s" % (path, ver, name), (2020, 1, 2, 3, 4, 6)), files[name])
module("example.com/dep", "v1.0.0", {"dep.go": "package dep\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n"})
module("example.com/extra", "v1.0.0", {"extra.go": "package extra\n\n// Word is a word.\nconst Word = \"extra\"\n"})
"##;

/// The proxy's directory, for `GOPROXY=file://…`. Not served over
/// loopback: go never sends a loopback address through `HTTP_PROXY` (its
/// `net/http` excludes them), so under bwrap's own network namespace a
/// loopback `GOPROXY` is the sandbox's loopback, where nothing listens.
fn go_proxy(tag: &str) -> scratch_dir::Dir {
    let dir = scratch_dir::Dir::new(tag);
    python(&["-c", MAKE_GOPROXY, dir.0.to_str().unwrap()]);
    dir
}

/// A module `example.com/app` requiring `example.com/dep`, with a test;
/// its `go.sum` is written by the first build (`-mod=mod`).
fn go_project(w: &Path) {
    for (name, text) in [
        (
            "go.mod",
            "module example.com/app\n\ngo 1.19\n\nrequire example.com/dep v1.0.0\n",
        ),
        (
            "main.go",
            "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\n\
             func main() { fmt.Println(\"sum\", dep.Add(2, 3)) }\n",
        ),
        (
            "main_test.go",
            "package main\n\nimport (\n\t\"testing\"\n\n\t\"example.com/dep\"\n)\n\n\
             func TestAdd(t *testing.T) {\n\tif dep.Add(2, 3) != 5 {\n\t\tt.Fatal(\"sum\")\n\t}\n}\n",
        ),
        (".gitignore", "/app\n"),
    ] {
        std::fs::write(w.join(name), text).unwrap();
    }
}

/// go's settings for the test's proxy, nothing about its caches: the
/// proxy, no checksum database (it is not on this machine), `go.sum`
/// written as needed, and the installed go whatever `go.mod` says; as the
/// caller sets them (dcjail sees them).
fn go_vars(proxy: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("GOPROXY", format!("file://{}", proxy.display())),
        ("GOSUMDB", "off".into()),
        ("GOFLAGS", "-mod=mod".into()),
        ("GOTOOLCHAIN", "local".into()),
    ]
}

/// The same as `export` lines of a script.
fn go_exports(proxy: &Path) -> String {
    go_vars(proxy)
        .into_iter()
        .map(|(k, v)| format!("export {k}={v}\n"))
        .collect()
}

/// Fills the home's `~/go/pkg/mod` (with `example.com/dep`) and
/// `~/.cache/go-build` as the user, without dcjail: a build of the project
/// in a copy under the tree's `tmpdir`. With `env_file`, the proxy settings
/// then go to go's env file (`go env -w`, as a user keeps them), where
/// dcjail reads the proxy list it feeds the own store ahead of.
fn go_warm(t: &Tree, user: User, env: &Env, proxy: &Path, env_file: bool) {
    let copy = t.tmpdir.join("warm");
    std::fs::create_dir_all(&copy).unwrap();
    go_project(&copy);
    // Its work directory out of `/tmp`, which other runs clean; the
    // modules fetched as the caller's private ones were (from the proxy).
    let work = t.tmpdir.join("warm-work");
    std::fs::create_dir_all(&work).unwrap();
    give(user, &t.tmpdir);
    let mut script = format!(
        "{}export GOTMPDIR={}\nunset GOPRIVATE\ngo build -buildvcs=false -o /dev/null . && go env GOMODCACHE GOCACHE",
        go_exports(proxy),
        work.display()
    );
    if env_file {
        script.push_str(&format!(
            " && go env -w GOPROXY=file://{} GOSUMDB=off GOFLAGS=-mod=mod",
            proxy.display()
        ));
    }
    let r = sh(Mode::Direct, user, &copy, &copy, &[], env, &script);
    assert_eq!(r.code, Some(0), "warming go's caches:\n{}", r.all());
    let home = t.home.display().to_string();
    assert_eq!(
        r.stdout,
        format!(
            "go: downloading example.com/dep v1.0.0\n{home}/go/pkg/mod\n{home}/.cache/go-build\n"
        ),
        "go's default caches"
    );
    scratch::remove(&copy);
    scratch::remove(&work);
    for c in [
        "go/pkg/mod/example.com/dep@v1.0.0",
        "go/pkg/mod/cache/download/example.com/dep/@v",
        ".cache/go-build",
    ] {
        assert!(!names_in(&t.home.join(c)).is_empty(), "{c} was not filled");
    }
    if env_file {
        assert!(
            t.home.join(".config/go/env").is_file(),
            "go env -w wrote no ~/.config/go/env"
        );
    }
}

/// The go workloads run here: the tree's project is the same, the home
/// holds no go caches (`Cold`) or the user's warm ones (`Warm`: the proxy
/// list in go's env file; `NewModule`: the proxy list in the caller's
/// `GOPROXY`, the script adding a module the host's store lacks).
#[derive(Clone, Copy, PartialEq, Eq)]
enum GoCase {
    Cold,
    Warm,
    NewModule,
    /// Warm, with the caller's `GOPROXY=off`, or `GOPRIVATE` naming the
    /// modules: no proxy can feed an own store, so the host's is read,
    /// read-only, as before.
    Off,
    Private,
}

/// `go build`, the program, `go test` (never a cached result: the home's
/// build cache differs between runs), and the `go.sum` the build wrote.
const GO_SCRIPT: &str = "step go list -m all\nstep go build -o app .\nstep ./app\n\
     step go test -count=1 ./...\nstep cat go.sum\n";

/// `go get` of `example.com/extra`, which the host's store lacks, then a
/// build and what the module files became.
const GO_GET_SCRIPT: &str = "step go get example.com/extra@v1.0.0\nstep go build -o app .\n\
     step ./app\nstep cat go.mod\nstep cat go.sum\n";

/// A go workload (`GoCase`). With a warm host store, the jailed run's go
/// fills its own store from the host's download cache and says
/// `go: downloading example.com/dep v1.0.0`, which the run without dcjail
/// (reading the host's store) does not; the host's `~/go` must be left
/// byte for byte as it was.
fn go_workload(name: &str, case: GoCase) -> Vec<String> {
    if !scratch::need("go") {
        return vec![];
    }
    let proxy = go_proxy(&format!("pm-{name}-proxy"));
    let project = |w: &Path| go_project(w);
    let env_file = case == GoCase::Warm;
    let warm_fn = |t: &Tree, user: User, env: &Env| go_warm(t, user, env, &proxy.0, env_file);
    let mut vars = match case {
        GoCase::Warm => vec![("GOTOOLCHAIN", "local".to_string())],
        _ => go_vars(&proxy.0),
    };
    match case {
        GoCase::Off => vars[0].1 = "off".into(),
        GoCase::Private => vars.push(("GOPRIVATE", "example.com".into())),
        _ => {}
    }
    let hosts_store = matches!(case, GoCase::Off | GoCase::Private);
    let known = [Known {
        when: When::OwnGoStore,
        jailed: "go: downloading example.com/dep v1.0.0",
        direct: None,
    }];
    let w = Workload {
        name,
        project: &project,
        script: format!(
            "{STEP}{}",
            if case == GoCase::NewModule {
                GO_GET_SCRIPT
            } else {
                GO_SCRIPT
            }
        ),
        known: if case == GoCase::Cold || hosts_store {
            &[]
        } else {
            &known
        },
        cache_sub: if hosts_store {
            &["go-build"]
        } else {
            &["go-build", "go-mod"]
        },
        warm: if case == GoCase::Cold {
            None
        } else {
            Some(&warm_fn)
        },
        vars: &vars,
        kept: if case == GoCase::Cold { &[] } else { &["go"] },
        again: None,
    };
    run_workload(&w, None, &[])
}

#[test]
fn go_build_and_test_with_caches_of_the_workspaces_own() {
    check(go_workload("go-cold", GoCase::Cold));
}

#[test]
fn go_build_and_test_with_a_warm_host_store_fill_their_own_from_it_and_never_write_it() {
    check(go_workload("go-warm", GoCase::Warm));
}

#[test]
fn go_get_of_a_module_the_warm_host_store_lacks_works_as_without_dcjail() {
    check(go_workload("go-new-module", GoCase::NewModule));
}

#[test]
fn go_with_downloads_off_or_private_modules_reads_the_warm_host_store() {
    let mut failures = go_workload("go-off", GoCase::Off);
    failures.extend(go_workload("go-private", GoCase::Private));
    check(failures);
}

/// `dcjail explain` of a workspace-write call shows the variables the
/// command gets: go's own store and the proxy list fed from the host's
/// download cache (a password in the caller's list shown as `***`), and
/// neither when the caller turned go's downloads off.
#[test]
fn explain_shows_gos_own_store_and_the_proxy_list_it_gets() {
    let t = Tree::new("pm-go-explain", User::Invoker);
    std::fs::create_dir_all(t.home.join("go/pkg/mod/cache/download")).unwrap();
    let home = t.home.canonicalize().unwrap();
    let explain = |goproxy: &str| -> serde_json::Value {
        let mut env = t.env();
        env.set("GOPROXY", goproxy);
        let mut c = Command::new(bin());
        env.apply(&mut c);
        let o = c
            .args([
                "explain",
                "--sandbox-mode",
                "workspace-write",
                "--workspace",
            ])
            .arg(&t.work)
            .args(["--", "go", "build"])
            .current_dir(&t.work)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["plan"]["filesystem"]["own_caches"]["variables"].clone()
    };
    let v = explain("https://u:secret@corp.example/go,direct");
    let own = names_in(&home.join(".cache/dcjail"));
    assert_eq!(own.len(), 0, "explain makes nothing");
    assert!(
        v["GOMODCACHE"]
            .as_str()
            .is_some_and(|m| m.ends_with("/go-mod")
                && m.starts_with(&home.join(".cache/dcjail").display().to_string())),
        "{v}"
    );
    assert_eq!(
        v["GOPROXY"],
        serde_json::json!(format!(
            "file://{}/go/pkg/mod/cache/download,https://***@corp.example/go,direct",
            home.display()
        )),
        "{v}"
    );
    let v = explain("off");
    assert!(v["GOMODCACHE"].is_null() && v["GOPROXY"].is_null(), "{v}");
    assert!(v["GOCACHE"].is_string(), "{v}");
}

/// What the attack tries on the host's store, through every name the
/// command has for it: `~/go/pkg/mod`, the path in the `file://` proxy
/// dcjail puts first in `GOPROXY`, a path relative to the project, and
/// `/proc/self/root`: add a version to the list go reads, replace a zip
/// and a `.mod`, change an unpacked source (made writable first, as its
/// owner can), add a module and a symlink, then `go clean -modcache`.
const GO_STORE_ATTACK: &str = r#"feed=${GOPROXY%%,*}; feed=${feed#file://}; feed=${feed%/cache/download}
case "$feed" in /*) ;; *) feed=$HOME/go/pkg/mod ;; esac
echo "feed=$feed"
for s in "$HOME/go/pkg/mod" "$feed" ../home/go/pkg/mod "/proc/self/root$HOME/go/pkg/mod"; do
  d=$s/cache/download/example.com/dep/@v
  echo v9.9.9 >> "$d/list"
  printf 'not a zip' > "$d/v1.0.0.zip"
  mv "$d/v1.0.0.mod" "$d/v1.0.0.mod.moved"
  chmod -R u+w "$s/example.com/dep@v1.0.0"
  printf 'package dep\n\nfunc Add(a, b int) int { return 0 }\n' > "$s/example.com/dep@v1.0.0/dep.go"
  mkdir -p "$s/cache/download/example.com/evil/@v"
  ln -s / "$s/evil-link"
done 2>/dev/null
GOMODCACHE=$feed go clean -modcache 2>/dev/null
echo ran
"#;

#[test]
fn the_hosts_go_store_fed_to_the_command_cannot_be_written_through_any_name() {
    if !scratch::need("go") {
        return;
    }
    let proxy = go_proxy("pm-go-attack-proxy");
    let project = |w: &Path| go_project(w);
    let warm_fn = |t: &Tree, user: User, env: &Env| go_warm(t, user, env, &proxy.0, true);
    let w = Workload {
        name: "go-store-attack",
        project: &project,
        script: String::new(),
        known: &[],
        cache_sub: &[],
        warm: Some(&warm_fn),
        vars: &[],
        kept: &[],
        again: None,
    };
    let mut failures = Vec::new();
    for user in users() {
        let t = Tree::new("pm-go-attack", user);
        for mode in modes().into_iter().take(modes().len() - 1) {
            let _one = one_run();
            let env = prepare(&w, &t, user, SYS_PATH);
            let before = tree_state(&t.home.join("go"));
            let r = sh(mode, user, &t.work, &t.work, &[], &env, GO_STORE_ATTACK);
            let after = tree_state(&t.home.join("go"));
            let what = format!(
                "the go store attack as {} under {}",
                user.label(),
                mode.label()
            );
            println!("{what}:\n{}", r.all());
            if r.code != Some(0) || !r.stdout.ends_with("ran\n") {
                failures.push(format!("{what}: the command did not run:\n{}", r.all()));
            }
            match mode {
                Mode::Direct => {
                    if before == after {
                        failures.push(format!(
                            "{what}: the control changed nothing, the test is broken"
                        ));
                    }
                }
                Mode::Jail(_) => {
                    let feed = t.home.canonicalize().unwrap().join("go/pkg/mod");
                    if !r.stdout.starts_with(&format!("feed={}\n", feed.display())) {
                        failures.push(format!(
                            "{what}: GOPROXY does not name the host's store:\n{}",
                            r.all()
                        ));
                    }
                    if let Some(d) = diff(&format!("{what}: the host's ~/go"), &before, &after) {
                        failures.push(d);
                    }
                }
            }
        }
    }
    check(failures);
}
