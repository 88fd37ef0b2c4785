//! Loopback package indexes for the real-work suite: a PEP 503 simple
//! index of wheels this suite builds (plus the wheels `scripts/test.sh`
//! downloads once), and an npm-registry-shaped directory for a tarball that
//! `npm pack` makes. The test files declare `mod realwork;` and
//! `mod scratch;` next to this one.
#![allow(dead_code)]

use crate::realwork::StaticServer;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The interpreter both users can run (a private pyenv would not do for
/// uid 65534).
pub const PYTHON: &str = "/usr/bin/python3";

pub fn wheelhouse() -> PathBuf {
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
pub const MAKE_WHEELS: &str = r#"
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
pub const MAKE_INDEX: &str = r#"
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

pub fn python(args: &[&str]) {
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

/// The index: our wheels and the wheelhouse's, served on loopback, in a
/// scratch directory named by `tag` (one per test: they run in parallel).
pub fn pip_index(tag: &str) -> (scratch_dir::Dir, StaticServer) {
    let d = scratch_dir::Dir::new(tag);
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

pub mod scratch_dir {
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

/// `npm pack` of a small package: its tarball, shasum and integrity.
pub struct Packed {
    pub tarball: PathBuf,
    pub shasum: String,
    pub integrity: String,
}

pub fn npm_pack(dir: &Path) -> Packed {
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

/// An npm-registry-shaped directory serving `rwleft` 1.0.0.
pub fn npm_registry(tag: &str) -> (scratch_dir::Dir, StaticServer) {
    let reg = scratch_dir::Dir::new(tag);
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
    (reg, server)
}
