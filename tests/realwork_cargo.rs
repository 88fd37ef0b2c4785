//! cargo under dcjail: `cargo package` of a clean clone and `cargo test
//! --offline` of a crate with a registry dependency print exactly what they
//! print without dcjail, with the two cargo homes the README describes:
//! the user's own (read-only in workspace-write) and one in the workspace.
//!
//! What cargo needs of its home, found with strace: even with `--offline`
//! it opens `$CARGO_HOME/.package-cache`, `.package-cache-mutate` and
//! `.global-cache` read-write. On a read-only home those opens fail and
//! cargo goes on without the lock and the last-use record, so a build whose
//! dependencies are all unpacked in `registry/src` works; one that must
//! unpack a `.crate` fails ("failed to unpack package"): that needs a
//! writable home (in the workspace, or `--allow-write` on the real one).

#[path = "support/realwork.rs"]
mod realwork;
#[path = "support/scratch.rs"]
mod scratch;

use realwork::*;
use std::path::{Path, PathBuf};

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
    std::fs::write(origin.join(".gitignore"), "/target\n/.cargo-home\n").unwrap();
    git(&origin, env, &["init", "-q", "-b", "main"]);
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
    let tc = toolchain();
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
            normalize_times(&r.stdout),
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

fn cargo_users() -> Vec<User> {
    let tc = toolchain();
    users()
        .into_iter()
        .filter(|&u| {
            let ok = can_run(u, &[&tc.cargo, &tc.bin_dir.join("rustc")]);
            if !ok {
                eprintln!(
                    "NOTE: {} cannot run {} (it lives in a private home): its cargo runs are skipped",
                    u.label(),
                    tc.cargo.display()
                );
            }
            ok
        })
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
