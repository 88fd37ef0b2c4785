//! dcjail in real Docker containers: a Docker daemon of the test's own
//! (Debian's docker.io, vfs storage, no network set up), an image of a few
//! directories and symlinks with the host's /usr and /etc mounted read-only
//! into each container, and dcjail's binary mounted in. What
//! docs/containers.md says, run on the runtime instead of simulated:
//!
//! - the `landlock` recipe (`--user 65534:65534 --cap-drop ALL
//!   --security-opt no-new-privileges`, Docker's default profile): `auto`
//!   runs landlock, bwrap is named as refused by the profile; a write
//!   outside the workspace fails (the same command without the sandbox
//!   makes it); protected paths are refused by name;
//! - the `bwrap` recipe (a profile allowing namespaces and mounts, with
//!   the refusals of Docker 20.10's profile that dcjail meets — see
//!   `PROFILE` — and `systempaths=unconfined`): `doctor` says `status: ok`,
//!   `auto` runs bwrap, real work through the broker compared with the same
//!   work without the sandbox, and the protected paths and the workspace's
//!   edge attacked with controls;
//! - the same as root with `--cap-drop ALL` (CAP_SETFCAP named), and
//!   without `systempaths=unconfined` (the masked /proc named).
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use scratch::exe as bin;
use scratch::text;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A seccomp profile in Docker's format that allows every call but the
/// ones Docker 20.10's default profile refuses a container without
/// CAP_SYS_ADMIN and CAP_SYS_PTRACE *and* dcjail meets with the bwrap
/// recipe applied: keyctl, add_key, request_key, bpf, and
/// process_vm_readv (through which the broker read the command's paths
/// before it learned to read /proc/PID/mem) with its kin. Written here, not
/// taken from moby; the recipe itself (Docker's whole profile through the
/// `jq` line) was run by hand (docs/containers.md).
const PROFILE: &str = r#"{
  "defaultAction": "SCMP_ACT_ALLOW",
  "syscalls": [
    {
      "names": ["keyctl", "add_key", "request_key", "bpf", "kcmp", "pidfd_getfd",
                "process_madvise", "process_vm_readv", "process_vm_writev"],
      "action": "SCMP_ACT_ERRNO",
      "errnoRet": 1
    }
  ]
}"#;

/// The test's own Docker daemon, stopped (by its pid) and its files
/// removed when dropped.
struct Daemon {
    child: std::process::Child,
    /// The daemon's data: a scratch directory.
    data: scratch::Dir,
    /// Its sockets and run state: a short path (unix socket names are
    /// limited to 107 bytes), under /run.
    run: PathBuf,
    image: String,
}

impl Daemon {
    fn start() -> Option<Daemon> {
        if !scratch::root("run a Docker daemon")
            || !scratch::need("dockerd")
            || !scratch::need("docker")
        {
            return None;
        }
        let data = scratch::Dir::new("dockerd");
        let run = PathBuf::from(format!("/run/dcjail-dk-{}", std::process::id()));
        remove_run(&run);
        std::fs::create_dir_all(&run).unwrap();
        let log = std::fs::File::create(data.0.join("dockerd.log")).unwrap();
        let child = Command::new("dockerd")
            .arg("--data-root")
            .arg(data.0.join("data"))
            .arg("--exec-root")
            .arg(run.join("x"))
            .arg("--pidfile")
            .arg(run.join("pid"))
            .arg("--host")
            .arg(format!("unix://{}", run.join("s").display()))
            .args([
                "--storage-driver",
                "vfs",
                "--iptables=false",
                "--ip6tables=false",
                "--bridge=none",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start dockerd");
        let mut d = Daemon {
            child,
            data,
            run,
            image: String::new(),
        };
        let mut up = false;
        for _ in 0..240 {
            if d.docker(&["version"]).status.success() {
                up = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
        assert!(
            up,
            "dockerd did not answer within 60 s: {}",
            std::fs::read_to_string(d.data.0.join("dockerd.log")).unwrap_or_default()
        );
        d.image = d.import();
        Some(d)
    }

    /// `docker ARGS` against this daemon.
    fn docker(&self, args: &[&str]) -> Output {
        let mut c = Command::new("docker");
        c.arg("--host")
            .arg(format!("unix://{}", self.run.join("s").display()))
            .args(args)
            .stdin(Stdio::null());
        scratch::output_within(c, 120)
    }

    /// An image of directories and the merged-/usr symlinks; the host's
    /// /usr and /etc are mounted into each container.
    fn import(&self) -> String {
        let root = self.data.0.join("rootfs");
        for d in [
            "usr", "etc", "proc", "sys", "dev", "tmp", "work", "opt", "home",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.join("tmp"), std::fs::Permissions::from_mode(0o1777))
            .unwrap();
        for (l, t) in [
            ("bin", "usr/bin"),
            ("lib", "usr/lib"),
            ("lib64", "usr/lib64"),
            ("sbin", "usr/sbin"),
        ] {
            std::os::unix::fs::symlink(t, root.join(l)).unwrap();
        }
        let tar = self.data.0.join("rootfs.tar");
        let ok = Command::new("tar")
            .arg("-C")
            .arg(&root)
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .status()
            .unwrap()
            .success();
        assert!(ok);
        let name = "dcjail-test-mini:1";
        let o = self.docker(&["import", tar.to_str().unwrap(), name]);
        assert!(o.status.success(), "docker import: {}", text(&o));
        name.to_string()
    }

    /// `docker run` of `argv` with `opts` (user, capabilities, security
    /// options), the workspace `ws` as /work, a directory beside it that
    /// anyone may write as /outside (`outside(ws)`), dcjail as
    /// /opt/dcjail.
    fn run(&self, opts: &[&str], ws: &Path, argv: &[&str]) -> Output {
        let mut args: Vec<String> = vec![
            "run".into(),
            "--rm".into(),
            "--network".into(),
            "none".into(),
        ];
        args.extend(opts.iter().map(|s| s.to_string()));
        for (from, to) in [
            ("/usr".to_string(), "/usr"),
            ("/etc".to_string(), "/etc"),
            (bin().to_string(), "/opt/dcjail"),
        ] {
            args.push("-v".into());
            args.push(format!("{from}:{to}:ro"));
        }
        let outside = outside(ws);
        let _ = std::fs::create_dir(&outside);
        let _ = Command::new("chmod").arg("0777").arg(&outside).status();
        args.extend([
            "-v".into(),
            format!("{}:/outside", outside.display()),
            "-v".into(),
            format!("{}:/work", ws.display()),
            "-w".into(),
            "/work".into(),
            "-e".into(),
            "HOME=/tmp".into(),
            self.image.clone(),
        ]);
        args.extend(argv.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.docker(&refs)
    }
}

/// Unmounts whatever is mounted below `run`, then removes it without
/// crossing into another filesystem.
fn remove_run(run: &Path) {
    if !run.starts_with("/run") || run == Path::new("/run") {
        return;
    }
    if let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") {
        let mut points: Vec<&str> = info
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|m| Path::new(m).starts_with(run))
            .collect();
        points.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for m in points {
            let _ = Command::new("umount").arg("-l").arg(m).status();
        }
    }
    let _ = Command::new("rm")
        .args(["-rf", "--one-file-system", "--"])
        .arg(run)
        .status();
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // SIGTERM first, so that the daemon stops its containerd and
        // unmounts what it mounted.
        let pid = self.child.id() as i32;
        // SAFETY: kill(2) on the pid of the daemon this test started and
        // has not yet waited for (so the pid is still its own).
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let mut gone = false;
        for _ in 0..80 {
            if let Ok(Some(_)) = self.child.try_wait() {
                gone = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
        if !gone {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        remove_run(&self.run);
    }
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A workspace the container's user owns, with a git repository.
fn workspace(d: &scratch::Dir, name: &str, uid: u32) -> PathBuf {
    let ws = d.0.join(name);
    std::fs::create_dir_all(&ws).unwrap();
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let ok = Command::new("chown")
        .args(["-R", &format!("{uid}:{uid}")])
        .arg(&ws)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    ws
}

/// The directory mounted as /outside in the containers of `ws`.
fn outside(ws: &Path) -> PathBuf {
    ws.with_extension("outside")
}

const ATTACK: &str = "echo pwned > .envrc; echo '[core]' >> .git/config; \
                      echo x > /outside/marker; echo ran";

const WORK: &str = "echo hi > new.txt && mkdir d && echo x > d/f && mv d/f d/g && \
                    ln -s new.txt link && cat new.txt d/g link && ls -1";

#[test]
fn the_container_recipes_on_a_real_docker() {
    let Some(dk) = Daemon::start() else {
        return;
    };
    let d = scratch::Dir::new("docker-ws");
    let profile = d.0.join("profile.json");
    std::fs::write(&profile, PROFILE).unwrap();
    let seccomp = format!("seccomp={}", profile.display());
    let nobody = ["--user", "65534:65534", "--cap-drop", "ALL"];

    // The landlock recipe: Docker's default profile.
    let landlock: Vec<&str> = nobody
        .iter()
        .copied()
        .chain(["--security-opt", "no-new-privileges"])
        .collect();
    let ws = workspace(&d, "ll", 65534);
    let o = dk.run(&landlock, &ws, &["/opt/dcjail", "doctor"]);
    let t = out(&o);
    assert!(
        t.contains("bwrap: does not work") && t.contains("landlock: works"),
        "{t}"
    );
    assert!(
        t.contains("a seccomp filter refuses namespace creation: unshare with CLONE_NEWUSER failed with EPERM, before the kernel saw it (this runs inside a docker container)"),
        "{t}"
    );
    assert!(t.contains("status: degraded"), "{t}");
    let o = dk.run(&landlock, &ws, &["/opt/dcjail", "explain", "--", "true"]);
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["backend"], "landlock", "{v}");
    // Control, then the sandboxed run: the write outside lands only bare.
    let o = dk.run(
        &landlock,
        &ws,
        &["/opt/dcjail", "--no-sandbox", "--", "sh", "-c", ATTACK],
    );
    assert!(out(&o).contains("ran"), "{}", text(&o));
    assert!(ws.join(".envrc").exists(), "control: {}", text(&o));
    assert!(
        outside(&ws).join("marker").exists(),
        "control: {}",
        text(&o)
    );
    std::fs::remove_file(ws.join(".envrc")).unwrap();
    std::fs::remove_file(outside(&ws).join("marker")).unwrap();
    let o = dk.run(
        &landlock,
        &ws,
        &[
            "/opt/dcjail",
            "--sandbox-mode",
            "workspace-write",
            "--no-protect-defaults",
            "--",
            "sh",
            "-c",
            "echo x > /outside/marker; echo in > in.txt; cat in.txt; echo ran",
        ],
    );
    assert_eq!(out(&o), "in\nran\n", "{}", text(&o));
    assert!(!outside(&ws).join("marker").exists(), "{}", text(&o));
    // Protected paths need bwrap: refused by name, nothing run.
    let o = dk.run(
        &landlock,
        &ws,
        &[
            "/opt/dcjail",
            "--sandbox-mode",
            "workspace-write",
            "--",
            "sh",
            "-c",
            "echo ran",
        ],
    );
    assert_eq!(o.status.code(), Some(122), "{}", text(&o));
    assert!(!out(&o).contains("ran"));
    assert!(
        text(&o).contains("landlock cannot keep the protected path"),
        "{}",
        text(&o)
    );

    // The bwrap recipe, as uid 65534.
    let bwrap: Vec<&str> = nobody
        .iter()
        .copied()
        .chain([
            "--security-opt",
            seccomp.as_str(),
            "--security-opt",
            "systempaths=unconfined",
        ])
        .collect();
    let ws = workspace(&d, "bw", 65534);
    let twin = workspace(&d, "bw-twin", 65534);
    let o = dk.run(&bwrap, &ws, &["/opt/dcjail", "doctor"]);
    assert!(out(&o).contains("status: ok"), "{}", text(&o));
    let o = dk.run(
        &bwrap,
        &ws,
        &[
            "/opt/dcjail",
            "explain",
            "--sandbox-mode",
            "workspace-write",
            "--",
            "true",
        ],
    );
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["backend"], "bwrap", "{v}");
    let jailed = dk.run(
        &bwrap,
        &ws,
        &[
            "/opt/dcjail",
            "--sandbox-mode",
            "workspace-write",
            "--",
            "sh",
            "-c",
            WORK,
        ],
    );
    let bare = dk.run(
        &bwrap,
        &twin,
        &["/opt/dcjail", "--no-sandbox", "--", "sh", "-c", WORK],
    );
    assert!(jailed.status.success(), "{}", text(&jailed));
    assert_eq!(out(&jailed), out(&bare), "{}", text(&jailed));
    assert_eq!(out(&jailed), "hi\nx\nhi\nd\nlink\nnew.txt\n");
    for f in ["new.txt", "d/g", "link"] {
        assert_eq!(
            std::fs::read(ws.join(f)).unwrap(),
            std::fs::read(twin.join(f)).unwrap(),
            "{f}"
        );
    }
    let config = std::fs::read(ws.join(".git/config")).unwrap();
    let o = dk.run(
        &bwrap,
        &twin,
        &["/opt/dcjail", "--no-sandbox", "--", "sh", "-c", ATTACK],
    );
    assert!(out(&o).contains("ran"), "control: {}", text(&o));
    assert!(twin.join(".envrc").exists(), "control");
    assert!(outside(&twin).join("marker").exists(), "control");
    assert_ne!(
        std::fs::read(twin.join(".git/config")).unwrap(),
        config,
        "control"
    );
    let o = dk.run(
        &bwrap,
        &ws,
        &[
            "/opt/dcjail",
            "--sandbox-mode",
            "workspace-write",
            "--",
            "sh",
            "-c",
            ATTACK,
        ],
    );
    assert_eq!(out(&o), "ran\n", "{}", text(&o));
    assert!(text(&o).contains("Read-only file system"), "{}", text(&o));
    assert!(!ws.join(".envrc").exists(), "{}", text(&o));
    assert!(!outside(&ws).join("marker").exists(), "{}", text(&o));
    assert_eq!(std::fs::read(ws.join(".git/config")).unwrap(), config);

    // The same as root with every capability dropped: CAP_SETFCAP named.
    let root: Vec<&str> = ["--user", "0:0", "--cap-drop", "ALL"]
        .into_iter()
        .chain([
            "--security-opt",
            seccomp.as_str(),
            "--security-opt",
            "systempaths=unconfined",
        ])
        .collect();
    let o = dk.run(&root, &ws, &["/opt/dcjail", "doctor"]);
    assert!(
        out(&o).contains("user-namespaces (fail): uid 0 without CAP_SETFCAP cannot map itself into a new user namespace"),
        "{}",
        text(&o)
    );
    let o = dk.run(
        &root,
        &ws,
        &[
            "/opt/dcjail",
            "--backend",
            "bwrap",
            "--",
            "sh",
            "-c",
            "echo ran",
        ],
    );
    assert_eq!(o.status.code(), Some(122), "{}", text(&o));
    assert!(!out(&o).contains("ran"));

    // Without systempaths=unconfined: the masked /proc named.
    let masked: Vec<&str> = nobody
        .iter()
        .copied()
        .chain(["--security-opt", seccomp.as_str()])
        .collect();
    let o = dk.run(&masked, &ws, &["/opt/dcjail", "doctor"]);
    assert!(
        out(&o).contains("the kernel refuses a new /proc inside a user namespace while paths of the /proc above are covered by other mounts"),
        "{}",
        text(&o)
    );
    assert!(out(&o).contains("systempaths=unconfined"), "{}", text(&o));
}
