//! Package managers under dcjail install from a loopback index through
//! `--net allowlist` (the index's host:port named explicitly, SPEC §5) and
//! then run the project's tests, printing exactly what they print without
//! dcjail: a Python venv with `pip install` and a pytest run, and `npm
//! install` with `npm test`. Their caches live in the workspace (a home is
//! read-only in workspace-write). The indexes serve packages this test
//! builds, plus pytest's wheels that `scripts/test.sh` downloads at install
//! time: no test needs the internet.

#[path = "support/pkg_index.rs"]
mod pkg_index;
#[path = "support/realwork.rs"]
mod realwork;
#[path = "support/scratch.rs"]
mod scratch;

use pkg_index::*;
use realwork::*;

fn net_opts(server: &StaticServer) -> Vec<String> {
    vec![
        "--net".into(),
        "allowlist".into(),
        "--allow-domain".into(),
        format!("127.0.0.1:{}", server.port),
    ]
}

/// Runs `script` in `work` per mode for `user`, after `setup` rebuilt the
/// tree; compares what it printed (times normalized) and the files it left.
fn compare(
    workload: &str,
    user: User,
    server: &StaticServer,
    setup: &dyn Fn(&Tree, &mut Env),
    script: &str,
    skip_in_listing: &[&str],
) -> Vec<String> {
    let mut failures = Vec::new();
    let t = Tree::new(workload, user);
    let mut want: Option<(String, String)> = None;
    for mode in modes() {
        t.reset(user);
        let mut env = t.env();
        setup(&t, &mut env);
        give(user, &t.root);
        let before = server.count();
        let opts = if mode == Mode::Direct {
            vec![]
        } else {
            net_opts(server)
        };
        let r = sh(
            mode,
            user,
            &t.work,
            &t.work,
            &opts,
            &env,
            &format!("{STEP}{script}"),
        );
        let what = what(workload, user, mode, want.is_none());
        if mode == Mode::Jail(Backend::Landlock)
            && r.code == Some(122)
            && r.stderr.starts_with("dcjail: sandbox-unavailable: ")
        {
            // A backend that cannot enforce the allowlist says so and runs
            // nothing (SPEC §5); the suite covers the backends that can.
            eprintln!(
                "NOTE: {what}: landlock does not accept this policy: {}",
                r.stderr.trim()
            );
            continue;
        }
        record(workload, user, mode, r.secs);
        let printed = format!(
            "{}{}exit={:?}\n",
            normalize_times(&r.stdout),
            r.stderr,
            r.code
        );
        let left = listing(&t.work, skip_in_listing);
        if server.count() == before {
            failures.push(format!("{what}: the index saw no request:\n{}", r.stdout));
        }
        match &want {
            None => {
                if r.code != Some(0) {
                    failures.push(format!(
                        "{what}: the run without dcjail failed, the test is broken:\n{}",
                        r.stdout
                    ));
                }
                want = Some((printed, left));
            }
            Some((p, l)) => {
                if let Some(d) = diff(&format!("{what}: what it printed"), p, &printed) {
                    failures.push(d);
                }
                if let Some(d) = diff(&format!("{what}: the files it left"), l, &left) {
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
fn venv_pip_install_from_a_loopback_index_and_pytest_run_as_without_dcjail() {
    let (_index, server) = pip_index("pip-index");
    let url = format!("{}/simple/", server.url());
    let setup = |t: &Tree, env: &mut Env| {
        let tests = t.work.join("tests");
        std::fs::create_dir_all(&tests).unwrap();
        std::fs::write(
            tests.join("test_demo.py"),
            "import rwdemo\n\n\ndef test_add():\n    assert rwdemo.add(2, 3) == 5\n\n\n\
             def test_quad():\n    assert rwdemo.quad(3) == 12\n",
        )
        .unwrap();
        env.set(
            "PIP_CACHE_DIR",
            t.work.join(".pip-cache").display().to_string(),
        )
        .set("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .set("PIP_NO_INPUT", "1")
        .set("PIP_INDEX_URL", url.clone());
    };
    let script = format!(
        "step {PYTHON} -m venv .venv\n\
         step .venv/bin/python -m pip install --progress-bar off rwdemo pytest\n\
         step .venv/bin/python -m pip freeze --all\n\
         step .venv/bin/python -m pytest -q tests\n"
    );
    let mut failures = Vec::new();
    for user in users() {
        // The cache's and bytecode's contents vary between runs; their
        // presence is what counts, and the tree listing keeps that.
        failures.extend(compare(
            "pip-venv-pytest",
            user,
            &server,
            &setup,
            &script,
            &[],
        ));
    }
    print_timings("pip-venv-pytest");
    check(failures);
}

#[test]
fn npm_install_from_a_loopback_registry_and_npm_test_run_as_without_dcjail() {
    let (_reg, server) = npm_registry("npm-registry");
    let registry = format!("{}/", server.url());
    let setup = |t: &Tree, env: &mut Env| {
        std::fs::write(
            t.work.join("package.json"),
            r#"{"name":"rwapp","version":"1.0.0","private":true,"dependencies":{"rwleft":"^1.0.0"},"scripts":{"test":"node test.js"}}"#,
        )
        .unwrap();
        std::fs::write(
            t.work.join("test.js"),
            "const add = require('rwleft');\nif (add(2, 3) !== 5) process.exit(1);\nconsole.log('npm test ok');\n",
        )
        .unwrap();
        env.set(
            "npm_config_cache",
            t.work.join(".npm-cache").display().to_string(),
        )
        .set("npm_config_registry", registry.clone())
        .set("npm_config_update_notifier", "false")
        .set("npm_config_audit", "false")
        .set("npm_config_fund", "false");
    };
    let script = "step npm install\nstep npm test\nstep npm ls --all\nstep cat package-lock.json\n";
    let mut failures = Vec::new();
    for user in users() {
        // npm's cache holds logs named by time: only the rest is compared.
        failures.extend(compare(
            "npm-install-test",
            user,
            &server,
            &setup,
            script,
            &[".npm-cache"],
        ));
    }
    print_timings("npm-install-test");
    check(failures);
}
