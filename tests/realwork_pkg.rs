//! Package managers under dcjail install from a loopback index through
//! `--net allowlist` (the index's host:port named explicitly, SPEC §5) and
//! then run the project's tests, printing exactly what they print without
//! dcjail: a Python venv with `pip install` and a pytest run, and `npm
//! install` with `npm test`. Their caches live in the workspace (a home is
//! read-only in workspace-write). The indexes serve packages this test
//! builds, plus pytest's wheels that `scripts/test.sh` downloads at install
//! time: no test needs the internet.

#[path = "support/realwork.rs"]
mod realwork;
#[path = "support/scratch.rs"]
mod scratch;

use realwork::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The interpreter both users can run (a private pyenv would not do for
/// uid 65534).
const PYTHON: &str = "/usr/bin/python3";

fn wheelhouse() -> PathBuf {
    let p = std::env::var_os("DCJAIL_TEST_WHEELHOUSE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/wheelhouse"));
    let has_pytest = std::fs::read_dir(&p)
        .map(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("pytest-"))
        })
        .unwrap_or(false);
    assert!(
        has_pytest,
        "no pytest wheels in {}: scripts/test.sh downloads them at install time \
         (python3 -m pip download --only-binary=:all: -d {} pytest)",
        p.display(),
        p.display()
    );
    p
}

/// Writes the wheels of two small projects (`rwdemo` needs `rwhelper`)
/// into `dir`: a wheel is a zip with a `.dist-info` holding METADATA,
/// WHEEL and RECORD.
const MAKE_WHEELS: &str = r#"
import base64, hashlib, sys, zipfile
out = sys.argv[1]
def wheel(name, version, files, requires=()):
    di = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: real-work demo\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = dict(files)
    files[f"{di}/METADATA"] = meta
    files[f"{di}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: dcjail-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for p, text in files.items():
        b = text.encode()
        h = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
        record.append(f"{p},sha256={h},{len(b)}")
    record.append(f"{di}/RECORD,,")
    files[f"{di}/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(f"{out}/{name}-{version}-py3-none-any.whl", "w") as z:
        for p, text in files.items():
            z.writestr(zipfile.ZipInfo(p, date_time=(2020, 1, 1, 0, 0, 0)), text)
wheel("rwhelper", "1.0", {"rwhelper/__init__.py": "def twice(x):\n    return 2 * x\n"})
wheel("rwdemo", "1.0", {"rwdemo/__init__.py": "from rwhelper import twice\n\ndef add(a, b):\n    return a + b\n\ndef quad(x):\n    return twice(twice(x))\n"}, ["rwhelper>=1.0"])
"#;

/// A PEP 503 simple index over every wheel in `files/`.
const MAKE_INDEX: &str = r#"
import hashlib, os, re, sys
root = sys.argv[1]
files = os.path.join(root, "files")
projects = {}
for f in sorted(os.listdir(files)):
    if f.endswith(".whl"):
        name = re.sub(r"[-_.]+", "-", f.split("-")[0]).lower()
        projects.setdefault(name, []).append(f)
os.makedirs(os.path.join(root, "simple"), exist_ok=True)
with open(os.path.join(root, "simple", "index.html"), "w") as o:
    o.write("<html><body>" + "".join(f'<a href="{n}/">{n}</a>' for n in projects) + "</body></html>")
for name, fs in projects.items():
    d = os.path.join(root, "simple", name)
    os.makedirs(d, exist_ok=True)
    links = []
    for f in fs:
        h = hashlib.sha256(open(os.path.join(files, f), "rb").read()).hexdigest()
        links.append(f'<a href="../../files/{f}#sha256={h}">{f}</a>')
    with open(os.path.join(d, "index.html"), "w") as o:
        o.write("<html><body>" + "".join(links) + "</body></html>")
"#;

fn python(args: &[&str]) {
    let o = Command::new(PYTHON)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{PYTHON} {:?}: {}",
        &args[..1],
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The index: our wheels and the wheelhouse's, served on loopback.
fn pip_index() -> (scratch_dir::Dir, StaticServer) {
    let d = scratch_dir::Dir::new("pip-index");
    let files = d.0.join("files");
    std::fs::create_dir_all(&files).unwrap();
    python(&["-c", MAKE_WHEELS, files.to_str().unwrap()]);
    for e in std::fs::read_dir(wheelhouse()).unwrap().flatten() {
        if e.file_name().to_string_lossy().ends_with(".whl") {
            std::fs::copy(e.path(), files.join(e.file_name())).unwrap();
        }
    }
    python(&["-c", MAKE_INDEX, d.0.to_str().unwrap()]);
    let server = StaticServer::start(&d.0);
    (d, server)
}

mod scratch_dir {
    use crate::scratch;
    use std::path::PathBuf;
    pub struct Dir(pub PathBuf);
    impl Dir {
        pub fn new(tag: &str) -> Dir {
            Dir(scratch::fresh(&format!("rw-{tag}-{}", std::process::id())))
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            scratch::remove(&self.0);
        }
    }
}

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
    let (_index, server) = pip_index();
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

/// `npm pack` of a small package: its tarball, shasum and integrity.
struct Packed {
    tarball: PathBuf,
    shasum: String,
    integrity: String,
}

fn npm_pack(dir: &Path) -> Packed {
    let pkg = dir.join("rwleft");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        r#"{"name":"rwleft","version":"1.0.0","main":"index.js","license":"MIT","description":"real-work demo"}"#,
    )
    .unwrap();
    std::fs::write(pkg.join("index.js"), "module.exports = (a, b) => a + b;\n").unwrap();
    let o = Command::new("npm")
        .args(["pack", "--json", "--pack-destination"])
        .arg(dir)
        .current_dir(&pkg)
        .env("npm_config_cache", dir.join("pack-cache"))
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "npm pack: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = &v[0];
    Packed {
        tarball: dir.join(e["filename"].as_str().unwrap()),
        shasum: e["shasum"].as_str().unwrap().to_string(),
        integrity: e["integrity"].as_str().unwrap().to_string(),
    }
}

#[test]
fn npm_install_from_a_loopback_registry_and_npm_test_run_as_without_dcjail() {
    let reg = scratch_dir::Dir::new("npm-registry");
    let packed = npm_pack(&reg.0);
    let root = reg.0.join("registry");
    let server = StaticServer::start(&root);
    let tgz_rel = "rwleft/-/rwleft-1.0.0.tgz";
    std::fs::create_dir_all(root.join("rwleft/-")).unwrap();
    std::fs::copy(&packed.tarball, root.join(tgz_rel)).unwrap();
    let packument = serde_json::json!({
        "name": "rwleft",
        "dist-tags": {"latest": "1.0.0"},
        "versions": {"1.0.0": {
            "name": "rwleft", "version": "1.0.0", "main": "index.js", "license": "MIT",
            "dist": {
                "tarball": format!("{}/{tgz_rel}", server.url()),
                "shasum": packed.shasum,
                "integrity": packed.integrity,
            }
        }}
    });
    std::fs::write(root.join("rwleft/index.json"), packument.to_string()).unwrap();
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
