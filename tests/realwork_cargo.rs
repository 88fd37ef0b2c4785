//! cargo under dcjail: `cargo package` of a clean clone and `cargo test
//! --offline` of a crate with a registry dependency print exactly what they
//! print without dcjail, with the two cargo homes docs/filesystem.md describes:
//! the user's own (read-only in workspace-write) and one in the workspace.
//!
//! What cargo needs of its home, found with strace: even with `--offline`
//! it opens `$CARGO_HOME/.package-cache`, `.package-cache-mutate` and
//! `.global-cache` read-write. On a read-only home those opens fail and
//! cargo goes on without the lock and the last-use record, so a build whose
//! dependencies are all unpacked in `registry/src` works; one that must
//! unpack a `.crate` fails ("failed to unpack package"): that needs a
//! writable home (in the workspace, or `--allow-write` on the real one).
//!
//! With the defaults (no `CARGO_HOME` set) cargo's home is the workspace's
//! own, fed at launch from the user's warm `~/.cargo`: a build of what it
//! holds works offline, and adding a crate it lacks downloads it from a
//! registry on loopback, as without dcjail; `~/.cargo` is left byte for
//! byte, and an attack on it through every name the command has fails.

#[path = "support/realwork.rs"]
mod realwork;
#[path = "support/scratch.rs"]
mod scratch;

use realwork::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A dependency the machine has fetched and unpacked (CI builds dcjail
/// first, so its own dependencies are there): name, version, the
/// registry's directory name, and the index cache entry's path.
struct Dep {
    name: String,
    version: String,
    registry: String,
    index_entry: String,
}

fn index_path(name: &str) -> String {
    match name.len() {
        1 => format!("1/{name}"),
        2 => format!("2/{name}"),
        3 => format!("3/{}/{name}", &name[..1]),
        _ => format!("{}/{}/{name}", &name[..2], &name[2..4]),
    }
}

fn find_dep(cargo_home: &Path) -> Dep {
    let reg = cargo_home.join("registry");
    for want in ["itoa", "memchr", "libc"] {
        let Ok(srcs) = std::fs::read_dir(reg.join("src")) else {
            break;
        };
        for r in srcs.flatten() {
            let registry = r.file_name().to_string_lossy().into_owned();
            let mut versions: Vec<String> = std::fs::read_dir(r.path())
                .map(|rd| {
                    rd.flatten()
                        .filter_map(|e| {
                            let n = e.file_name().to_string_lossy().into_owned();
                            let v = n.strip_prefix(&format!("{want}-"))?.to_string();
                            v.chars().next()?.is_ascii_digit().then_some(v)
                        })
                        .collect()
                })
                .unwrap_or_default();
            versions.sort();
            for version in versions.into_iter().rev() {
                let entry = index_path(want);
                let crate_file = reg
                    .join("cache")
                    .join(&registry)
                    .join(format!("{want}-{version}.crate"));
                let idx = reg
                    .join("index")
                    .join(&registry)
                    .join(".cache")
                    .join(&entry);
                if crate_file.is_file() && idx.is_file() {
                    return Dep {
                        name: want.into(),
                        version,
                        registry,
                        index_entry: entry,
                    };
                }
            }
        }
    }
    panic!(
        "no unpacked itoa, memchr or libc in {}: build dcjail first (cargo build) so its \
         dependencies are in the registry cache",
        reg.display()
    );
}

/// A cargo home holding only what resolving and unpacking `dep` offline
/// needs: its index entry and its `.crate`, nothing unpacked.
fn seed_home(home: &Path, real: &Path, dep: &Dep) {
    let idx = |h: &Path| h.join("registry/index").join(&dep.registry);
    let entry = idx(home).join(".cache").join(&dep.index_entry);
    std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
    std::fs::copy(idx(real).join(".cache").join(&dep.index_entry), &entry).unwrap();
    let cfg = idx(real).join("config.json");
    if cfg.is_file() {
        std::fs::copy(&cfg, idx(home).join("config.json")).unwrap();
    }
    let cache = home.join("registry/cache").join(&dep.registry);
    std::fs::create_dir_all(&cache).unwrap();
    let f = format!("{}-{}.crate", dep.name, dep.version);
    std::fs::copy(
        real.join("registry/cache").join(&dep.registry).join(&f),
        cache.join(&f),
    )
    .unwrap();
}

/// An origin repository with the crate and its lock file, and a clone of it
/// in `work/crate`: the clean clone cargo package must accept.
fn build(t: &Tree, env: &Env, dep: &Dep) -> PathBuf {
    build_with(t, env, dep, true)
}

/// `build`, with or without the lock file committed (without, cargo must
/// write it in the workspace).
fn build_with(t: &Tree, env: &Env, dep: &Dep, commit_lock: bool) -> PathBuf {
    let origin = t.work.join("origin");
    std::fs::create_dir_all(origin.join("src")).unwrap();
    std::fs::write(
        origin.join("Cargo.toml"),
        format!(
            "[package]\nname = \"rwcargo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
             description = \"real-work crate\"\nlicense = \"MIT\"\n\n\
             [dependencies]\n{} = \"={}\"\n",
            dep.name, dep.version
        ),
    )
    .unwrap();
    let body = match dep.name.as_str() {
        "itoa" => "itoa::Buffer::new().format(n).to_string()",
        "memchr" => "memchr::memchr(b'x', b\"abx\").map(|_| n.to_string()).unwrap_or_default()",
        _ => "{ let _ = libc::EINVAL; n.to_string() }",
    };
    std::fs::write(
        origin.join("src/lib.rs"),
        format!(
            "pub fn show(n: u32) -> String {{\n    {body}\n}}\n\n\
             #[cfg(test)]\nmod tests {{\n    #[test]\n    fn shows() {{\n        \
             assert_eq!(super::show(42), \"42\");\n    }}\n}}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        origin.join(".gitignore"),
        "/target\n/.cargo-home\n.env\n/Cargo.lock\n",
    )
    .unwrap();
    git(&origin, env, &["init", "-q", "-b", "main"]);
    if !commit_lock {
        git(&origin, env, &["add", "-A"]);
        git(&origin, env, &["commit", "-qm", "crate"]);
        let clone = t.work.join("crate");
        git(
            &t.work,
            env,
            &[
                "clone",
                "-q",
                origin.to_str().unwrap(),
                clone.to_str().unwrap(),
            ],
        );
        return clone;
    }
    std::fs::write(origin.join(".gitignore"), "/target\n/.cargo-home\n.env\n").unwrap();
    let lock = run(
        Mode::Direct,
        User::Invoker,
        &origin,
        &origin,
        &[],
        env,
        &["cargo", "generate-lockfile", "--offline"],
    );
    assert_eq!(lock.code, Some(0), "generate-lockfile: {}", lock.all());
    git(&origin, env, &["add", "-A"]);
    git(&origin, env, &["commit", "-qm", "crate"]);
    let clone = t.work.join("crate");
    git(
        &t.work,
        env,
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    clone
}

/// Durations, and cargo's note that it waited for another cargo's lock on
/// the real home (a run without dcjail shares it with every cargo on the
/// machine; a jailed run, whose home is read-only, takes no lock at all).
fn normalize_cargo(s: &str) -> String {
    normalize_times(s)
        .lines()
        .filter(|l| !l.trim_start().starts_with("Blocking waiting for file lock"))
        .map(|l| format!("{l}\n"))
        .collect()
}

const PACKAGE_AND_TEST: &str = "\
step git status --porcelain
step cargo package --list --offline
step cargo package --no-verify --offline
step sh -c 'tar tzf target/package/rwcargo-0.1.0.crate | sort'
step cargo test --offline
step git status --porcelain
";

const TEST_ONLY: &str = "\
step cargo test --offline
step git status --porcelain
";

fn compare(workload: &str, user: User, workspace_home: bool, script: &str) -> Vec<String> {
    let mut failures = Vec::new();
    let tc = toolchain_for(user);
    let dep = find_dep(&tc.cargo_home);
    let t = Tree::new(workload, user);
    let mut want: Option<(String, String)> = None;
    for mode in modes() {
        t.reset(user);
        let mut env = t.env();
        env.set("PATH", format!("{}:{SYS_PATH}", tc.bin_dir.display()))
            .set("CARGO_HOME", tc.cargo_home.display().to_string())
            .set("CARGO_TERM_COLOR", "never")
            .set("CARGO_TERM_PROGRESS_WHEN", "never");
        let dir = build(&t, &env, &dep);
        if workspace_home {
            let h = dir.join(".cargo-home");
            seed_home(&h, &tc.cargo_home, &dep);
            env.set("CARGO_HOME", h.display().to_string());
        }
        give(user, &t.root);
        let r = sh(
            mode,
            user,
            &dir,
            &dir,
            &[],
            &env,
            &format!("{STEP}{script}"),
        );
        let what = what(workload, user, mode, want.is_none());
        record(workload, user, mode, r.secs);
        let printed = format!(
            "{}{}exit={:?}\n",
            normalize_cargo(&r.stdout),
            r.stderr,
            r.code
        );
        let state = repo_state_skipping(&dir, &env, &["target", ".cargo-home"]);
        match &want {
            None => {
                if r.code != Some(0)
                    || r.stdout
                        .lines()
                        .any(|l| l.starts_with("rc=") && l != "rc=0")
                {
                    failures.push(format!(
                        "{what}: the run without dcjail failed, the test is broken:\n{}",
                        r.stdout
                    ));
                }
                want = Some((printed, state));
            }
            Some((p, s)) => {
                if let Some(d) = diff(&format!("{what}: what it printed"), p, &printed) {
                    failures.push(d);
                }
                if let Some(d) = diff(&format!("{what}: the repository afterwards"), s, &state) {
                    failures.push(d);
                }
            }
        }
    }
    failures
}

fn check(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} difference(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn cargo_package_and_test_with_the_users_read_only_cargo_home_as_without_dcjail() {
    let mut failures = Vec::new();
    for user in cargo_users() {
        failures.extend(compare("cargo-user-home", user, false, PACKAGE_AND_TEST));
    }
    print_timings("cargo-user-home");
    check(failures);
}

#[test]
fn cargo_test_with_a_cargo_home_in_the_workspace_unpacks_and_builds_as_without_dcjail() {
    let mut failures = Vec::new();
    for user in cargo_users() {
        failures.extend(compare("cargo-workspace-home", user, true, TEST_ONLY));
    }
    print_timings("cargo-workspace-home");
    check(failures);
}

/// With the agent policy of docs/agents.md (`deny_read` of `**/.env`, `~/.ssh`,
/// `~/.aws`) in a project that has `.env` files, and a `$TMPDIR` holding
/// one: what the command creates where it may write is readable, `mktemp`
/// works, and cargo writes its lock file and builds (SPEC §5: deny_read
/// "never makes anything else unreadable"). The `.env` files and `~/.ssh`
/// stay unreadable. A backend that cannot have both refuses naming the
/// path.
#[test]
fn the_readme_agent_policy_with_deny_read_leaves_new_files_mktemp_and_cargo_working() {
    let mut failures = Vec::new();
    for user in users() {
        let tc = toolchain_for(user);
        let dep = find_dep(&tc.cargo_home);
        let mut script = String::from(
            "step sh -c 'echo ok > new.txt && cat new.txt'\n\
             step sh -c 'mkdir -p made/deeper && echo x > made/deeper/f && cat made/deeper/f'\n\
             step sh -c 'mkdir -p sub/new && echo y > sub/new/g && cat sub/new/g && echo z > sub/h && cat sub/h'\n\
             step sh -c 't=$(mktemp) && echo tmp > \"$t\" && cat \"$t\" && rm \"$t\"'\n\
             step sh -c 'd=$(mktemp -d) && echo in > \"$d/f\" && cat \"$d/f\" && rm -r \"$d\"'\n",
        );
        script.push_str(
            "step cargo test --offline\nstep sh -c 'test -s Cargo.lock && echo LOCK-WRITTEN'\n",
        );
        script.push_str("step git status --porcelain\n");
        let t = Tree::new("deny-read", user);
        let mut want: Option<String> = None;
        for mode in modes() {
            t.reset(user);
            let mut env = t.env();
            env.set("PATH", format!("{}:{SYS_PATH}", tc.bin_dir.display()))
                .set("CARGO_HOME", tc.cargo_home.display().to_string())
                .set("CARGO_TERM_COLOR", "never");
            let dir = build_with(&t, &env, &dep, false);
            for (p, body) in [
                (dir.join(".env"), "SECRET=project\n"),
                (dir.join("sub/.env"), "SECRET=sub\n"),
                (t.tmpdir.join(".env"), "SECRET=tmpdir\n"),
                (t.home.join(".ssh/id_demo"), "SECRET=ssh\n"),
            ] {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, body).unwrap();
            }
            give(user, &t.root);
            let opts: Vec<String> = match mode {
                Mode::Jail(b) => vec![
                    "--policy".into(),
                    agent_policy_file(b).display().to_string(),
                ],
                Mode::Direct => vec![],
            };
            let what = what("deny-read", user, mode, want.is_none());
            let r = sh(
                mode,
                user,
                &dir,
                &dir,
                &opts,
                &env,
                &format!("{STEP}{script}"),
            );
            if let Mode::Jail(b) = mode {
                if r.code == Some(122) {
                    let named = r.stderr.contains(".env") || r.stderr.contains(".ssh");
                    eprintln!("NOTE: {what}: {} refused: {}", b.name(), r.stderr.trim());
                    if b == Backend::Bwrap || !named {
                        failures.push(format!(
                            "{what}: refused{}: {}",
                            if named {
                                ""
                            } else {
                                " without naming the denied path"
                            },
                            r.stderr.trim()
                        ));
                    }
                    continue;
                }
            }
            record("deny-read", user, mode, r.secs);
            let printed = format!(
                "{}{}exit={:?}\n",
                normalize_cargo(&r.stdout),
                r.stderr,
                r.code
            );
            match &want {
                None => {
                    if r.stdout
                        .lines()
                        .any(|l| l.starts_with("rc=") && l != "rc=0")
                    {
                        failures.push(format!(
                            "{what}: a step failed without dcjail, the test is broken:\n{}",
                            r.stdout
                        ));
                    }
                    want = Some(printed);
                }
                Some(w) => {
                    if let Some(d) = diff(&format!("{what}: what it printed"), w, &printed) {
                        failures.push(d);
                    }
                }
            }
            // The denial itself still holds (and the check can fail: it
            // reads them all without dcjail).
            let probe = sh(
                mode,
                user,
                &dir,
                &dir,
                &opts,
                &env,
                "cat .env sub/.env \"$TMPDIR/.env\" ~/.ssh/id_demo 2>/dev/null; echo PROBE-RAN",
            );
            let leaked = probe.stdout.matches("SECRET=").count();
            match mode {
                Mode::Direct if leaked != 4 => failures.push(format!(
                    "{what}: the secrets are not all readable without dcjail: the probe is broken: {}",
                    probe.all()
                )),
                Mode::Jail(_) if !probe.stdout.contains("PROBE-RAN") => failures.push(format!(
                    "{what}: the probe did not run: {}",
                    probe.all()
                )),
                Mode::Jail(_) if leaked != 0 => failures.push(format!(
                    "{what}: deny_read leaked {leaked} secret(s): {}",
                    probe.stdout
                )),
                _ => {}
            }
        }
    }
    print_timings("deny-read");
    check(failures);
}

/// A sparse cargo registry (`config.json`, index files, `.crate` files at
/// the `dl` address) with `rwbase` and `rwadd` at 1.0.0, for a loopback
/// server on `port`. The tarballs are made the same every time.
const MAKE_SPARSE_REGISTRY: &str = r##"
import gzip, hashlib, io, json, os, sys, tarfile
root, port = sys.argv[1], sys.argv[2]
with open(os.path.join(root, "config.json"), "w") as f:
    json.dump({"dl": "http://127.0.0.1:%s/crates" % port}, f)
def crate(name, body):
    files = {
        "Cargo.toml": '[package]\nname = "%s"\nversion = "1.0.0"\nedition = "2021"\n' % name,
        "src/lib.rs": body,
    }
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as t:
        for p in sorted(files):
            b = files[p].encode()
            i = tarfile.TarInfo("%s-1.0.0/%s" % (name, p))
            i.size, i.mtime, i.mode = len(b), 1577836800, 0o644
            t.addfile(i, io.BytesIO(b))
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=0) as g:
        g.write(tar.getvalue())
    data = gz.getvalue()
    d = os.path.join(root, "crates", name, "1.0.0")
    os.makedirs(d)
    with open(os.path.join(d, "download"), "wb") as f:
        f.write(data)
    line = {"name": name, "vers": "1.0.0", "deps": [], "features": {},
            "cksum": hashlib.sha256(data).hexdigest(), "yanked": False}
    d = os.path.join(root, name[:2], name[2:4])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        f.write(json.dumps(line) + "\n")
crate("rwbase", "pub const BASE: u32 = 40;\n")
crate("rwadd", "pub fn add(a: u32) -> u32 { a + 2 }\n")
"##;

/// A crate using `rwbase` from the loopback registry (crates.io replaced by
/// it in the project's `.cargo/config.toml`), committed in `dir`.
fn sparse_project(dir: &Path, env: &Env, url: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join(".cargo")).unwrap();
    for (p, text) in [
        (
            "Cargo.toml",
            "[package]\nname = \"rwnew\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nrwbase = \"=1.0.0\"\n"
                .to_string(),
        ),
        (
            ".cargo/config.toml",
            format!(
                "[source.crates-io]\nreplace-with = \"rw\"\n\n[source.rw]\nregistry = \"sparse+{url}/\"\n"
            ),
        ),
        (
            "src/main.rs",
            "fn main() {\n    println!(\"{}\", rwbase::BASE);\n}\n".to_string(),
        ),
        (".gitignore", "/target\n".to_string()),
    ] {
        std::fs::write(dir.join(p), text).unwrap();
    }
    git(dir, env, &["init", "-q", "-b", "main"]);
    git(dir, env, &["add", "-A"]);
    git(dir, env, &["commit", "-q", "-m", "crate"]);
}

/// Adds `rwadd` to the crate and builds it.
const ADD_A_CRATE: &str = "\
step cargo build --offline
printf 'rwadd = \"=1.0.0\"\\n' >> Cargo.toml
printf 'fn main() {\\n    println!(\"{}\", rwadd::add(rwbase::BASE));\\n}\\n' > src/main.rs
step cargo build
step cargo run -q
step git status --porcelain
";

/// The sandbox's `$CARGO_HOME`, `~/.cargo` and `tree_state` of it, for
/// the runs of one user.
fn host_cargo(t: &Tree) -> PathBuf {
    t.home.join(".cargo")
}

/// Serves `MAKE_SPARSE_REGISTRY`'s registry on loopback.
fn sparse_registry() -> (scratch::Dir, StaticServer) {
    let reg = scratch::Dir::new("cargo-sparse-registry");
    let server = StaticServer::start(&reg.0);
    let o = Command::new("python3")
        .args(["-c", MAKE_SPARSE_REGISTRY])
        .arg(&reg.0)
        .arg(server.port.to_string())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (reg, server)
}

/// `rwnew` in `t.work`, with the user's `~/.cargo` warmed (without dcjail,
/// cargo's default home) with `rwbase` and the lock file committed.
fn warm_project(t: &Tree, user: User, env: &Env, url: &str) -> PathBuf {
    let dir = t.work.join("rwnew");
    sparse_project(&dir, env, url);
    give(user, &t.root);
    let warm = sh(
        Mode::Direct,
        user,
        &dir,
        &dir,
        &[],
        env,
        "cargo build -q && git add Cargo.lock && git commit -qm lock && git clean -qfdx",
    );
    assert_eq!(warm.code, Some(0), "warming ~/.cargo:\n{}", warm.all());
    assert!(host_cargo(t).join("registry/cache").is_dir());
    dir
}

fn cargo_env(t: &Tree, tc: &Toolchain) -> Env {
    let mut env = t.env();
    env.set("PATH", format!("{}:{SYS_PATH}", tc.bin_dir.display()))
        .set("CARGO_TERM_COLOR", "never")
        .set("CARGO_TERM_PROGRESS_WHEN", "never");
    env
}

/// With the user's `~/.cargo/registry` warm and no `CARGO_HOME` set, cargo
/// gets the workspace's own home, fed at launch from the user's: a build of
/// what the registry holds works offline, and adding a crate it lacks
/// downloads it, each printing what it prints without dcjail (`$CARGO_HOME`
/// aside), with the same lock file and files; the user's `~/.cargo` is
/// left byte for byte as it was (every file's mode, size, time and bytes).
#[test]
fn adding_a_crate_with_a_warm_host_registry_works_with_the_defaults() {
    let (_reg, server) = sparse_registry();
    let mut failures = Vec::new();
    for user in cargo_users() {
        let tc = toolchain_for(user);
        let t = Tree::new("cargo-add", user);
        let mut want: Option<(String, String)> = None;
        for mode in modes() {
            t.reset(user);
            let env = cargo_env(&t, &tc);
            let dir = warm_project(&t, user, &env, &server.url());
            let home_before = tree_state(&host_cargo(&t));
            let opts = index_net_opts(mode, server.port);
            let script = format!(
                "{STEP}echo \"home=${{CARGO_HOME:-default}}\"\n{ADD_A_CRATE}step cat Cargo.lock\n"
            );
            let r = sh(mode, user, &dir, &dir, &opts, &env, &script);
            let what = what("cargo-add", user, mode, want.is_none());
            let home = t.home.display().to_string();
            let printed = format!(
                "{}exit={:?}\n",
                normalize_cargo(&r.all().replace(&home, "~")),
                r.code
            );
            println!("{what}:\n{printed}");
            // The home cargo used is the only line that differs.
            let own = printed
                .lines()
                .find(|l| l.starts_with("home="))
                .unwrap_or("")
                .to_string();
            let printed = printed.replacen(&own, "home=…", 1);
            let state = repo_state_skipping(&dir, &env, &["target"]);
            match (mode, &want) {
                (Mode::Direct, _) if own != "home=default" => {
                    failures.push(format!("{what}: CARGO_HOME set without dcjail: {own}"));
                }
                (Mode::Jail(_), _) if !own.starts_with("home=~/.cache/dcjail/rwnew-") => {
                    failures.push(format!("{what}: not the workspace's own home: {own}"));
                }
                (Mode::Jail(_), _) => {
                    // `explain`, as the same user, names the home the
                    // command got.
                    let exe = bin().to_string();
                    let ws = dir.display().to_string();
                    let o = run(
                        Mode::Direct,
                        user,
                        &dir,
                        &dir,
                        &[],
                        &env,
                        &[
                            &exe,
                            "explain",
                            "--sandbox-mode",
                            "workspace-write",
                            "--workspace",
                            &ws,
                            "--",
                            "cargo",
                            "build",
                        ],
                    );
                    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap_or_default();
                    let named = v["plan"]["filesystem"]["own_caches"]["variables"]["CARGO_HOME"]
                        .as_str()
                        .map(|h| format!("home={}", h.replace(&home, "~")));
                    if named.as_deref() != Some(own.as_str()) {
                        failures.push(format!(
                            "{what}: explain names {named:?}, the command had {own}"
                        ));
                    }
                }
                _ => {}
            }
            if let Mode::Jail(_) = mode {
                if let Some(d) = diff(
                    &format!("{what}: ~/.cargo, every file's mode, size, time and bytes"),
                    &home_before,
                    &tree_state(&host_cargo(&t)),
                ) {
                    failures.push(d);
                }
            }
            match &want {
                None => {
                    if !printed.contains("== cargo run -q\n42\nrc=0\n")
                        || !printed.contains("Downloaded rwadd v1.0.0")
                    {
                        failures.push(format!("{what}: the control failed, the test is broken"));
                    }
                    want = Some((printed, state));
                }
                Some((p, st)) => {
                    if let Some(d) = diff(&format!("{what}: what it printed"), p, &printed) {
                        failures.push(d);
                    }
                    if let Some(d) = diff(&format!("{what}: the repository afterwards"), st, &state)
                    {
                        failures.push(d);
                    }
                }
            }
        }
    }
    check(failures);
}

/// Every way the command has to write the user's registry through the own
/// home's links: truncating a linked `.crate`, writing into and emptying a
/// linked source directory (through the link, a trailing `/`, `..` and
/// `/proc/self/root`), renaming inside it, a hard link to a linked file,
/// the host's git objects the own database borrows (the path its
/// `alternates` file names), a linked config file, and removing the own
/// home's registry whole (`cargo clean`-like). Run without dcjail against
/// the same fed home, it changes `~/.cargo` (the attack works); under each
/// backend it ran and `~/.cargo` is byte for byte as it was. With
/// `deny_read` of `~/.cargo/credentials.toml`, the linked credentials stay
/// unreadable too.
const ATTACK: &str = r#"
set +e
h="$CARGO_HOME"
reg=$(ls "$h/registry/src" | head -n 1)
src="$h/registry/src/$reg/rwbase-1.0.0"
true > "$h/registry/cache/$reg/rwbase-1.0.0.crate" 2>/dev/null
echo evil >> "$src/src/lib.rs" 2>/dev/null
echo evil > "$src/../rwbase-1.0.0/Cargo.toml" 2>/dev/null
echo evil > "/proc/self/root$src/.cargo-ok" 2>/dev/null
mv "$src/src" "$src/moved" 2>/dev/null
rm -rf "$src/" 2>/dev/null
ln "$h/registry/cache/$reg/rwbase-1.0.0.crate" ./linked.crate 2>/dev/null && echo evil > ./linked.crate
echo evil >> "$h/config.toml" 2>/dev/null
echo evil > "$h/git/db/repo-1/HEAD" 2>/dev/null
alt=$(cat "$h/git/db/repo-1/objects/info/alternates" 2>/dev/null)
[ -n "$alt" ] && echo evil > "$alt/planted" 2>/dev/null
rm -rf "$h/registry/src/$reg/"* 2>/dev/null
find -L "$h/registry" -type f -exec sh -c 'true > "$1"' _ {} \; 2>/dev/null
echo "secret: $(cat "$h/credentials.toml" 2>/dev/null)"
echo ATTACK-RAN
"#;

#[test]
fn the_users_registry_cannot_be_written_through_the_own_cargo_homes_links() {
    let (_reg, server) = sparse_registry();
    let mut failures = Vec::new();
    for user in cargo_users() {
        let tc = toolchain_for(user);
        let t = Tree::new("cargo-attack", user);
        for mode in modes() {
            t.reset(user);
            let env = cargo_env(&t, &tc);
            let dir = warm_project(&t, user, &env, &server.url());
            let host = host_cargo(&t);
            for (p, body) in [
                ("config.toml", "[net]\nretry = 2\n"),
                ("credentials.toml", "SECRET-TOKEN\n"),
                ("git/db/repo-1/HEAD", "ref: refs/heads/main\n"),
                ("git/db/repo-1/objects/info/packs", "\n"),
            ] {
                std::fs::create_dir_all(host.join(p).parent().unwrap()).unwrap();
                std::fs::write(host.join(p), body).unwrap();
            }
            give(user, &t.root);
            let before = tree_state(&host);
            let what = what("cargo-attack", user, mode, false);
            let backend = match mode {
                Mode::Jail(b) => b,
                Mode::Direct => backends()[0],
            };
            let policy = policy_with(
                backend,
                "cargo-creds",
                "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                 [sandbox]\nmode = \"workspace-write\"\n",
                "deny_read = [\"~/.cargo/credentials.toml\"]\n",
            );
            let opts = vec!["--policy".to_string(), policy.display().to_string()];
            let r = match mode {
                Mode::Jail(_) => sh(mode, user, &dir, &dir, &opts, &env, ATTACK),
                Mode::Direct => {
                    // The same names without dcjail: the home a jailed call
                    // fed, used as it is.
                    let fed = sh(
                        Mode::Jail(backend),
                        user,
                        &dir,
                        &dir,
                        &opts,
                        &env,
                        "printf %s \"$CARGO_HOME\"",
                    );
                    let mut env = env.clone();
                    env.set("CARGO_HOME", fed.stdout.clone());
                    if !fed.stdout.contains("/.cache/dcjail/") {
                        failures.push(format!("{what}: no own home was fed: {}", fed.all()));
                    }
                    sh(mode, user, &dir, &dir, &[], &env, ATTACK)
                }
            };
            if !r.stdout.contains("ATTACK-RAN") {
                failures.push(format!("{what}: the attack did not run: {}", r.all()));
                continue;
            }
            let after = tree_state(&host);
            let leaked = r.stdout.contains("SECRET-TOKEN");
            match mode {
                Mode::Direct => {
                    if after == before || !leaked {
                        failures.push(format!(
                            "{what}: without dcjail the attack left ~/.cargo as it was or \
                             could not read the credentials: the test is broken:\n{}",
                            r.all()
                        ));
                    }
                }
                Mode::Jail(_) => {
                    if let Some(d) = diff(
                        &format!("{what}: ~/.cargo after the attack"),
                        &before,
                        &after,
                    ) {
                        failures.push(d);
                    }
                    if leaked {
                        failures.push(format!("{what}: deny_read leaked through the link"));
                    }
                }
            }
        }
    }
    check(failures);
}

/// A git repository `gdep` at its first commit and a crate `gq` depending
/// on it through a `file://` URL, committed with its lock file after a
/// build without dcjail (which fills `~/.cargo/git`); then `gdep` gets a
/// second commit, which only `cargo update -p gdep` picks up.
fn git_dep_project(t: &Tree, user: User, env: &Env) -> PathBuf {
    let dep = t.work.join("gdep");
    std::fs::create_dir_all(dep.join("src")).unwrap();
    std::fs::write(
        dep.join("Cargo.toml"),
        "[package]\nname = \"gdep\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(dep.join("src/lib.rs"), "pub const G: u32 = 1;\n").unwrap();
    git(&dep, env, &["init", "-q", "-b", "main"]);
    git(&dep, env, &["add", "-A"]);
    git(&dep, env, &["commit", "-qm", "one"]);
    let dir = t.work.join("gq");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"gq\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\ngdep = {{ git = \"file://{}\" }}\n",
            dep.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("src/main.rs"),
        "fn main() {\n    println!(\"{}\", gdep::G);\n}\n",
    )
    .unwrap();
    std::fs::write(dir.join(".gitignore"), "/target\n").unwrap();
    git(&dir, env, &["init", "-q", "-b", "main"]);
    git(&dir, env, &["add", "-A"]);
    git(&dir, env, &["commit", "-qm", "crate"]);
    give(user, &t.root);
    let warm = sh(
        Mode::Direct,
        user,
        &dir,
        &dir,
        &[],
        env,
        "cargo build -q && git add Cargo.lock && git commit -qm lock && git clean -qfdx",
    );
    assert_eq!(warm.code, Some(0), "warming ~/.cargo/git:\n{}", warm.all());
    assert!(host_cargo(t).join("git/db").is_dir());
    std::fs::write(dep.join("src/lib.rs"), "pub const G: u32 = 2;\n").unwrap();
    git(&dep, env, &["commit", "-qam", "two"]);
    give(user, &t.root);
    dir
}

const GIT_DEP: &str = "\
step cargo build --offline
step cargo run -q --offline
step cargo update -p gdep
step cargo run -q
step git status --porcelain
step git diff
";

/// A git dependency the user's `~/.cargo/git` holds builds offline at its
/// locked revision as without dcjail, under each backend. `cargo update -p`
/// moving it to a new revision (fetched into the workspace home's own
/// database, which borrows the user's objects) then prints and locks what
/// it does without dcjail, under each backend, with a home outside every
/// git repository. With the home inside a repository's worktree (a home
/// kept in git: here a repository made at the tree's root), bwrap's
/// checkout of the new revision fails, because no `.git` may be made below
/// a repository's worktree (docs/filesystem.md), the workspace's cache
/// included. `~/.cargo` is left byte for byte as it was.
#[test]
fn a_git_dependency_builds_offline_and_updates_with_the_defaults() {
    let mut failures = Vec::new();
    for (user, inside_repo) in cargo_users()
        .into_iter()
        .flat_map(|u| [(u, false), (u, true)])
    {
        let tc = toolchain_for(user);
        let t = Tree::new_outside_repos(
            if inside_repo {
                "cargo-git-in-repo"
            } else {
                "cargo-git"
            },
            user,
        );
        if inside_repo {
            let ok = Command::new("git")
                .args(["init", "-q"])
                .arg(&t.root)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "git init {}", t.root.display());
            give(user, &t.root);
        }
        let mut want: Option<(String, String)> = None;
        for mode in modes() {
            t.reset(user);
            let env = cargo_env(&t, &tc);
            let dir = git_dep_project(&t, user, &env);
            let home_before = tree_state(&host_cargo(&t));
            let r = sh(
                mode,
                user,
                &dir,
                &dir,
                &[],
                &env,
                &format!("{STEP}{GIT_DEP}"),
            );
            let tag = if inside_repo {
                "cargo-git, home in a repository"
            } else {
                "cargo-git"
            };
            let what = what(tag, user, mode, want.is_none());
            let printed = format!(
                "{}exit={:?}\n",
                normalize_cargo(&r.all().replace(&t.home.display().to_string(), "~")),
                r.code
            );
            println!("{what}:\n{printed}");
            let state = repo_state_skipping(&dir, &env, &["target"]);
            if let Mode::Jail(_) = mode {
                if let Some(d) = diff(
                    &format!("{what}: ~/.cargo, every file's mode, size, time and bytes"),
                    &home_before,
                    &tree_state(&host_cargo(&t)),
                ) {
                    failures.push(d);
                }
            }
            match &want {
                None => {
                    if !printed.contains("== cargo run -q --offline\n1\nrc=0\n")
                        || !printed.contains("== cargo run -q\n2\nrc=0\n")
                    {
                        failures.push(format!("{what}: the control failed, the test is broken"));
                    }
                    want = Some((printed, state));
                }
                Some((p, _)) if inside_repo && mode == Mode::Jail(Backend::Bwrap) => {
                    let cut = |s: &str| s[..s.find("== cargo update").unwrap_or(0)].to_string();
                    if let Some(d) = diff(
                        &format!("{what}: what it printed before cargo update"),
                        &cut(p),
                        &cut(&printed),
                    ) {
                        failures.push(d);
                    }
                    let refused = printed.contains("/.git': Read-only file system")
                        && printed.contains("== cargo run -q\n1\nrc=0\n");
                    if !refused {
                        failures.push(format!("{what}: not the failure docs/filesystem.md names"));
                    }
                }
                Some((p, st)) => {
                    if let Some(d) = diff(&format!("{what}: what it printed"), p, &printed) {
                        failures.push(d);
                    }
                    if let Some(d) = diff(&format!("{what}: the repository afterwards"), st, &state)
                    {
                        failures.push(d);
                    }
                }
            }
        }
    }
    check(failures);
}
