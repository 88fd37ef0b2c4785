//! A hard link between two writable roots on one filesystem works as
//! without dcjail (issue 28): bwrap mounts each root apart and the kernel
//! refuses a link across two mounts (EXDEV), so the broker makes it through
//! the host's mount of the roots. What a kept file, a denied file or a file
//! outside the roots must not get — a new writable or readable name — is
//! attacked here beside it, each attack first shown to work without dcjail.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use scratch::text;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Links `f` of the workspace into the root `$1` with `ln` and with
/// Python's `os.link`, and says what the three names share.
const LINKS: &str = r#"set -e
echo data > f
ln f "$1/g"
python3 -c 'import os, sys; os.link("f", sys.argv[1] + "/p"); print(os.stat("f").st_nlink)' "$1"
[ "$(stat -c %i f)" = "$(stat -c %i "$1/g")" ] && echo same-g
[ "$(stat -c %i f)" = "$(stat -c %i "$1/p")" ] && echo same-p
cat "$1/g"
echo "under=${DCJAIL_BACKEND:-none}" >&2
"#;

/// A workspace (a git repository with a hook and a `.bashrc`) and a
/// second root beside it, owned by the user the command runs as.
struct Roots {
    top: PathBuf,
    ws: PathBuf,
    aw: PathBuf,
}

impl Roots {
    fn new(name: &str, nobody: bool) -> Roots {
        let top = scratch::fresh(name);
        let (ws, aw) = (top.join("ws"), top.join("aw"));
        std::fs::create_dir(&ws).unwrap();
        std::fs::create_dir(&aw).unwrap();
        let git = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&ws)
            .output()
            .expect("git");
        assert!(git.status.success(), "{}", text(&git));
        std::fs::write(ws.join(".bashrc"), "echo original bashrc\n").unwrap();
        std::fs::write(ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::write(ws.join("secret"), "the-secret-text\n").unwrap();
        std::fs::create_dir(top.join("outside")).unwrap();
        std::fs::write(top.join("outside/file"), "outside original\n").unwrap();
        if nobody {
            let o = std::process::Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(&top)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", text(&o));
        }
        Roots { top, ws, aw }
    }

    fn aw(&self) -> &str {
        self.aw.to_str().unwrap()
    }

    /// dcjail on `be` in workspace-write with the second root writable,
    /// then `extra` options, then the command.
    fn dcjail<'a>(&'a self, be: &'a str, extra: &[&'a str], cmd: &[&'a str]) -> Vec<&'a str> {
        let mut argv = vec![scratch::exe(), "--backend", be];
        argv.extend([
            "--sandbox-mode",
            "workspace-write",
            "--allow-write",
            self.aw(),
        ]);
        argv.extend(extra);
        argv.push("--");
        argv.extend(cmd);
        argv
    }

    /// The content of every file an attack aims at, and their names.
    fn kept(&self) -> Vec<(PathBuf, Vec<u8>)> {
        [".git/config", ".bashrc", ".git/hooks/pre-commit", "secret"]
            .iter()
            .map(|n| self.ws.join(n))
            .chain([self.top.join("outside/file")])
            .map(|p| {
                let c = std::fs::read(&p).unwrap();
                (p, c)
            })
            .collect()
    }
}

fn ino(p: &Path) -> (u64, u64) {
    let m = std::fs::symlink_metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    (m.dev(), m.ino())
}

fn under(o: &std::process::Output, be: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    let want = if be == "auto" {
        "under=bwrap"
    } else {
        &*format!("under={be}")
    };
    assert!(err.contains(want), "not run under dcjail {be}: {}", text(o));
}

/// `argv` (a dcjail command line) in `r`'s workspace as the user: it must
/// exit 0, run under `be`, and print exactly `want`.
fn jailed(r: &Roots, nobody: bool, be: &str, argv: &[&str], want: &str) -> std::process::Output {
    let o = scratch::run_as(&r.ws, nobody, argv);
    assert!(o.status.success(), "{be}: {}", text(&o));
    under(&o, be);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        want,
        "{be}: {}",
        text(&o)
    );
    o
}

#[test]
fn links_between_two_writable_roots_work_as_without_dcjail() {
    for &nobody in scratch::users() {
        let tag = u8::from(nobody);
        let bare = Roots::new(&format!("links-bare-{tag}"), nobody);
        let want = scratch::run_as(&bare.ws, nobody, &["sh", "-c", LINKS, "sh", bare.aw()]);
        assert!(want.status.success(), "{}", text(&want));
        assert_eq!(
            String::from_utf8_lossy(&want.stdout),
            "3\nsame-g\nsame-p\ndata\n"
        );
        for be in ["bwrap", "landlock", "auto"] {
            let r = Roots::new(&format!("links-{be}-{tag}"), nobody);
            // landlock cannot keep protected names inside a root (it runs
            // no such policy); the link itself is the question here.
            let extra: &[&str] = if be == "landlock" {
                &["--no-protect-defaults"]
            } else {
                &[]
            };
            let argv = r.dcjail(be, extra, &["sh", "-c", LINKS, "sh", r.aw()]);
            let o = scratch::run_as(&r.ws, nobody, &argv);
            assert_eq!(o.status.code(), want.status.code(), "{be}: {}", text(&o));
            assert_eq!(o.stdout, want.stdout, "{be}: {}", text(&o));
            under(&o, be);
            let f = ino(&r.ws.join("f"));
            assert_eq!(ino(&r.aw.join("g")), f, "{be}");
            assert_eq!(ino(&r.aw.join("p")), f, "{be}");
            assert_eq!(std::fs::metadata(r.ws.join("f")).unwrap().nlink(), 3);
            scratch::remove(&r.top);
        }
        scratch::remove(&bare.top);
    }
}

/// The per-workspace cache directory (`~/.cache/dcjail/<name>-<hash>`) is
/// a writable root of its own: pnpm's and uv's stores live there and link
/// into the project. Run as root only: uid 65534 has no home of its own
/// here (HOME stays the caller's, which it cannot write), so dcjail gives it
/// no cache directory to link into.
#[test]
fn links_between_the_workspace_and_its_own_cache_work() {
    const INTO_CACHE: &str = r#"set -e
c=$(dirname "$UV_CACHE_DIR")
echo data > f
ln f "$c/linked-by-test"
python3 -c 'import os, sys; os.link("f", sys.argv[1] + "/py-linked-by-test")' "$c"
ln "$c/linked-by-test" back
[ "$(stat -c %i f)" = "$(stat -c %i "$c/py-linked-by-test")" ] && echo same
[ "$(stat -c %i f)" = "$(stat -c %i back)" ] && echo same-back
echo "$c" >&2
echo "under=${DCJAIL_BACKEND:-none}" >&2
"#;
    assert!(scratch::is_root(), "the cache test runs as root");
    for be in ["bwrap", "auto"] {
        let r = Roots::new(&format!("links-cache-{be}"), false);
        let argv = r.dcjail(be, &[], &["sh", "-c", INTO_CACHE]);
        let o = scratch::run_as(&r.ws, false, &argv);
        assert!(o.status.success(), "{be}: {}", text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "same\nsame-back\n");
        under(&o, be);
        let err = String::from_utf8_lossy(&o.stderr);
        let cache = PathBuf::from(err.lines().next().unwrap());
        assert!(
            cache.to_string_lossy().contains("/.cache/dcjail/"),
            "{}",
            cache.display()
        );
        let f = ino(&r.ws.join("f"));
        for n in ["linked-by-test", "py-linked-by-test"] {
            assert_eq!(ino(&cache.join(n)), f, "{be}");
            std::fs::remove_file(cache.join(n)).unwrap();
        }
        scratch::remove(&r.top);
    }
}

/// Links each kept file (the repository's config, a hook, `.bashrc`) into
/// the other root and writes through the new name, with `ln` and Python.
const KEPT: &str = r#"for s in .git/config .bashrc .git/hooks/pre-commit; do
  n=$(echo "$s" | tr / _)
  if ln "$s" "$1/$n" 2>/dev/null; then echo pwned >> "$1/$n"; echo "linked $s"; else echo "refused $s"; fi
done
python3 - "$1" <<'EOF'
import os, sys
try:
    os.link(".git/config", sys.argv[1] + "/py")
    open(sys.argv[1] + "/py", "a").write("[core]\n\tfsmonitor = pwned\n")
    print("linked py")
except OSError as e:
    print("refused py", e.errno)
EOF
echo "under=${DCJAIL_BACKEND:-none}" >&2
"#;

#[test]
fn a_kept_file_gets_no_writable_name_in_another_root() {
    for &nobody in scratch::users() {
        let tag = u8::from(nobody);
        let bare = Roots::new(&format!("links-kept-bare-{tag}"), nobody);
        let before = bare.kept();
        let c = scratch::run_as(&bare.ws, nobody, &["sh", "-c", KEPT, "sh", bare.aw()]);
        assert_eq!(
            String::from_utf8_lossy(&c.stdout),
            "linked .git/config\nlinked .bashrc\nlinked .git/hooks/pre-commit\nlinked py\n",
            "the attack must work without dcjail: {}",
            text(&c)
        );
        assert_ne!(bare.kept(), before, "the control wrote nothing");
        for be in ["bwrap", "auto"] {
            let r = Roots::new(&format!("links-kept-{be}-{tag}"), nobody);
            let before = r.kept();
            let argv = r.dcjail(be, &[], &["sh", "-c", KEPT, "sh", r.aw()]);
            jailed(&r, nobody, be, &argv, "refused .git/config\nrefused .bashrc\nrefused .git/hooks/pre-commit\nrefused py 18\n");
            assert_eq!(r.kept(), before, "{be}: a kept file changed");
            assert_eq!(std::fs::read_dir(&r.aw).unwrap().count(), 0, "{be}");
            scratch::remove(&r.top);
        }
        scratch::remove(&bare.top);
    }
}

/// The same attack with `--report`: every link dcjail did not make is in
/// the report (`linkat`, `EXDEV`, rule `link between roots`) and in the
/// terminal's summary line, though each call only failed as the kernel
/// fails a link across filesystems. Control: the links made between roots (the
/// real-work test's) leave no record.
#[test]
fn a_refused_link_between_roots_is_in_the_report() {
    for &nobody in scratch::users() {
        let tag = u8::from(nobody);
        let r = Roots::new(&format!("links-report-{tag}"), nobody);
        let rep = r.top.join("report.json");
        let rep_s = rep.to_str().unwrap().to_string();
        let before = r.kept();
        let argv = r.dcjail(
            "bwrap",
            &["--report", &rep_s],
            &["sh", "-c", KEPT, "sh", r.aw()],
        );
        let _ = jailed(
            &r,
            nobody,
            "bwrap",
            &argv,
            "refused .git/config\nrefused .bashrc\nrefused .git/hooks/pre-commit\nrefused py 18\n",
        );
        assert_eq!(r.kept(), before);
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&rep).unwrap()).unwrap();
        let links: Vec<&serde_json::Value> = report["denials"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["rule"] == "link between roots")
            .collect();
        let named: Vec<String> = links
            .iter()
            .map(|d| {
                assert_eq!(d["errno"], "EXDEV", "{d}");
                assert!(matches!(d["op"].as_str(), Some("link" | "linkat")), "{d}");
                assert!(d["fix"].is_null() && d["why_not"].is_string(), "{d}");
                d["resolved"].as_str().unwrap_or_default().to_string()
            })
            .collect();
        // `.bashrc` is a protected name in the other root too: that link
        // is refused for its name (EROFS, rule `protected`), the three
        // others for where they come from.
        let mut want: Vec<String> = [".git_config", ".git_hooks_pre-commit", "py"]
            .iter()
            .map(|n| r.aw.join(n).display().to_string())
            .collect();
        let mut named = named;
        named.sort();
        want.sort();
        assert_eq!(named, want, "{}", report["denials"]);
        scratch::remove(&r.top);

        // Control: links dcjail makes between roots leave no record.
        let ok = Roots::new(&format!("links-report-ok-{tag}"), nobody);
        std::fs::write(ok.ws.join("f"), "hello\n").unwrap();
        if nobody {
            let _ = std::process::Command::new("chown")
                .args(["65534:65534"])
                .arg(ok.ws.join("f"))
                .status();
        }
        let rep = ok.top.join("report.json");
        let rep_s = rep.to_str().unwrap().to_string();
        let argv = ok.dcjail(
            "bwrap",
            &["--report", &rep_s],
            &[
                "sh",
                "-c",
                "ln f \"$1/g\" && echo linked; echo \"under=${DCJAIL_BACKEND:-none}\" >&2",
                "sh",
                ok.aw(),
            ],
        );
        jailed(&ok, nobody, "bwrap", &argv, "linked\n");
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&rep).unwrap()).unwrap();
        assert_eq!(report["denials"], serde_json::json!([]), "{report}");
        scratch::remove(&ok.top);
    }
}

/// A denied file linked into the other root and read there; a file
/// outside every root linked in and written.
const DENIED_AND_OUTSIDE: &str = r#"if ln secret "$1/s" 2>/dev/null; then cat "$1/s"; else echo "refused secret"; fi
if ln "$2" "$1/o" 2>/dev/null; then echo pwned >> "$1/o"; echo "linked outside"; else echo "refused outside"; fi
echo "under=${DCJAIL_BACKEND:-none}" >&2
"#;

#[test]
fn a_denied_file_or_one_outside_the_roots_gets_no_name_in_a_root() {
    for &nobody in scratch::users() {
        let tag = u8::from(nobody);
        let bare = Roots::new(&format!("links-deny-bare-{tag}"), nobody);
        let out = bare.top.join("outside/file");
        let argv = [
            "sh",
            "-c",
            DENIED_AND_OUTSIDE,
            "sh",
            bare.aw(),
            out.to_str().unwrap(),
        ];
        let c = scratch::run_as(&bare.ws, nobody, &argv);
        assert_eq!(
            String::from_utf8_lossy(&c.stdout),
            "the-secret-text\nlinked outside\n",
            "the attack must work without dcjail: {}",
            text(&c)
        );
        for be in ["bwrap", "auto"] {
            let r = Roots::new(&format!("links-deny-{be}-{tag}"), nobody);
            let before = r.kept();
            let secret = r.ws.join("secret");
            let out = r.top.join("outside/file");
            let cmd = [
                "sh",
                "-c",
                DENIED_AND_OUTSIDE,
                "sh",
                r.aw(),
                out.to_str().unwrap(),
            ];
            let argv = r.dcjail(be, &["--deny-read", secret.to_str().unwrap()], &cmd);
            let o = jailed(&r, nobody, be, &argv, "refused secret\nrefused outside\n");
            assert!(!text(&o).contains("the-secret-text"), "{be}: {}", text(&o));
            assert_eq!(r.kept(), before, "{be}");
            assert_eq!(std::fs::read_dir(&r.aw).unwrap().count(), 0, "{be}");
            scratch::remove(&r.top);
        }
        // landlock runs no deny_read inside a root; a file outside every
        // root it keeps out by REFER.
        let r = Roots::new(&format!("links-deny-landlock-{tag}"), nobody);
        let before = r.kept();
        let out = r.top.join("outside/file");
        let cmd = [
            "sh",
            "-c",
            DENIED_AND_OUTSIDE,
            "sh",
            r.aw(),
            out.to_str().unwrap(),
        ];
        let argv = r.dcjail("landlock", &["--no-protect-defaults"], &cmd);
        let o = scratch::run_as(&r.ws, nobody, &argv);
        assert!(o.status.success(), "landlock: {}", text(&o));
        under(&o, "landlock");
        assert!(
            String::from_utf8_lossy(&o.stdout).ends_with("refused outside\n"),
            "landlock: {}",
            text(&o)
        );
        assert_eq!(r.kept()[4], before[4], "landlock: the outside file changed");
        assert!(std::fs::symlink_metadata(r.aw.join("o")).is_err());
        scratch::remove(&r.top);
        scratch::remove(&bare.top);
    }
}

/// A child swaps the name `s` between a new plain file and a symlink to the
/// repository's config (each swap a rename, so `s` is always there) while
/// the parent links `s`, following the symlink, into the other root:
/// bounded, 2000 links, the swaps until they end (at most 200,000, the
/// child killed by its pid after the links).
const RACE: &str = r#"import ctypes, os, signal, sys, time
aw = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_SYMLINK_FOLLOW = -100, 0x400
open("s", "w").write("plain\n")
pid = os.fork()
if pid == 0:
    for i in range(200000):
        if i % 2:
            os.symlink(".git/config", "s.tmp")
        else:
            open("s.tmp", "w").write("plain\n")
        os.rename("s.tmp", "s")
    os._exit(0)
# The links start once the swaps run (at most 10 s), and yield between
# tries, so that even on a loaded machine the two interleave.
for _ in range(10000):
    if os.path.islink("s"):
        break
    time.sleep(0.001)
made = 0
for j in range(2000):
    os.sched_yield()
    # linkat itself: Python's os.link does not follow a final symlink.
    dst = ("%s/r%d" % (aw, j)).encode()
    if libc.linkat(AT_FDCWD, b"s", AT_FDCWD, dst, AT_SYMLINK_FOLLOW) == 0:
        made += 1
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
print("made", made > 0)
sys.stderr.write("under=%s\n" % os.environ.get("DCJAIL_BACKEND", "none"))
"#;

/// How many names in the other root are the config, and how many a plain
/// file the swapper wrote.
fn raced(r: &Roots) -> (usize, usize) {
    let config = ino(&r.ws.join(".git/config"));
    let (mut to_config, mut to_plain) = (0, 0);
    for e in std::fs::read_dir(&r.aw).unwrap().flatten() {
        to_config += usize::from(ino(&e.path()) == config);
        to_plain += usize::from(std::fs::read(e.path()).unwrap() == b"plain\n");
    }
    (to_config, to_plain)
}

#[test]
fn a_symlink_swapped_under_the_source_never_links_a_kept_file() {
    for &nobody in scratch::users() {
        let tag = u8::from(nobody);
        let bare = Roots::new(&format!("links-race-bare-{tag}"), nobody);
        let c = scratch::run_as(
            &bare.ws,
            nobody,
            &["/usr/bin/python3", "-c", RACE, bare.aw()],
        );
        assert!(c.status.success(), "{}", text(&c));
        let (to_config, _) = raced(&bare);
        assert!(
            to_config > 0,
            "the race never linked the config without dcjail"
        );
        for be in ["bwrap", "auto"] {
            let r = Roots::new(&format!("links-race-{be}-{tag}"), nobody);
            let before = r.kept();
            let argv = r.dcjail(be, &[], &["/usr/bin/python3", "-c", RACE, r.aw()]);
            jailed(&r, nobody, be, &argv, "made True\n");
            let (to_config, to_plain) = raced(&r);
            assert_eq!(
                to_config, 0,
                "{be}: the config got a name in the other root"
            );
            assert!(to_plain > 0, "{be}");
            assert_eq!(r.kept(), before, "{be}");
            scratch::remove(&r.top);
        }
        scratch::remove(&bare.top);
    }
}

/// A program that restricted itself (a nested dcjail, read-only) asks for
/// a link between the two roots: the broker's hands are held by that
/// program's own domain too, so it gets none; the same link without the
/// nested dcjail, in the same run, is made (the control).
#[test]
fn a_program_that_restricted_itself_gets_no_link_between_roots() {
    const NESTED: &str = r#"echo data > f
ln f "$1/outer" && echo outer-linked
"$2" --backend landlock --sandbox-mode read-only -- ln f "$1/inner" 2>/dev/null
echo "inner=$?"
echo "under=${DCJAIL_BACKEND:-none}" >&2
"#;
    for &nobody in scratch::users() {
        let tag = u8::from(nobody);
        for be in ["bwrap", "auto"] {
            let r = Roots::new(&format!("links-nested-{be}-{tag}"), nobody);
            let cmd = ["sh", "-c", NESTED, "sh", r.aw(), scratch::exe()];
            let argv = r.dcjail(be, &[], &cmd);
            jailed(&r, nobody, be, &argv, "outer-linked\ninner=1\n");
            assert_eq!(ino(&r.aw.join("outer")), ino(&r.ws.join("f")), "{be}");
            assert!(
                std::fs::symlink_metadata(r.aw.join("inner")).is_err(),
                "{be}"
            );
            scratch::remove(&r.top);
        }
    }
}

/// Writes `.git/config` through every directory descriptor of the given
/// processes (all of the sandbox's when none is given: the broker, its
/// shadows, the command's own): the broker holds the writable roots as the
/// host's mounts hold them, past the read-only mount over `.git/config`.
const THROUGH_FDS: &str = r#"import os, sys
pids = sys.argv[1:] or [p for p in os.listdir("/proc") if p.isdigit()]
hits = 0
for pid in pids:
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
    except OSError:
        continue
    for fd in fds:
        try:
            with open("/proc/%s/fd/%s/.git/config" % (pid, fd), "a") as f:
                f.write("[core]\n\tfsmonitor = pwned\n")
            hits += 1
        except OSError:
            pass
print("wrote", hits > 0)
sys.stderr.write("under=%s\n" % os.environ.get("DCJAIL_BACKEND", "none"))
"#;

#[test]
fn the_brokers_host_descriptors_are_out_of_the_commands_reach() {
    for &nobody in scratch::users() {
        let tag = u8::from(nobody);
        // The control: a process of the same user holding the workspace
        // open (as the broker holds each root); only its descriptors are
        // tried, never another process's on this machine.
        let bare = Roots::new(&format!("links-fds-bare-{tag}"), nobody);
        let ws = bare.ws.to_str().unwrap();
        let mut holder = scratch::command_as(
            &bare.ws,
            nobody,
            &["sh", "-c", "exec 7<\"$0\"; exec sleep 60", ws],
        )
        .spawn()
        .unwrap();
        let pid = holder.id().to_string();
        // The holder has opened it once its sleep runs.
        for _ in 0..100 {
            if std::fs::read_link(format!("/proc/{pid}/fd/7")).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let py = ["/usr/bin/python3", "-c", THROUGH_FDS, &pid];
        let c = scratch::run_as(&bare.ws, nobody, &py);
        let _ = holder.kill();
        let _ = holder.wait();
        assert_eq!(
            String::from_utf8_lossy(&c.stdout),
            "wrote True\n",
            "{}",
            text(&c)
        );
        let config = std::fs::read_to_string(bare.ws.join(".git/config")).unwrap();
        assert!(config.contains("pwned"), "the control wrote nothing");
        for be in ["bwrap", "auto"] {
            let r = Roots::new(&format!("links-fds-{be}-{tag}"), nobody);
            let before = r.kept();
            // A nested dcjail first: its landlock domain makes the broker
            // start shadows, which share the broker's descriptors.
            let cmd = [
                "sh",
                "-c",
                "\"$0\" --backend landlock --sandbox-mode read-only -- true; exec /usr/bin/python3 -c \"$1\"",
                scratch::exe(),
                THROUGH_FDS,
            ];
            let argv = r.dcjail(be, &[], &cmd);
            jailed(&r, nobody, be, &argv, "wrote False\n");
            assert_eq!(r.kept(), before, "{be}");
            scratch::remove(&r.top);
        }
        scratch::remove(&bare.top);
    }
}
