//! 200 dcjail runs at once (bwrap in workspace-write with the protected
//! paths on, landlock read-only, `--no-sandbox`), all on shared workspaces,
//! a shared `$TMPDIR` and the shared `/tmp`. Every run must succeed with its
//! own output, and afterwards nothing may be left: no process carrying the
//! runs' marker, no new mount, no protected name or temp file in the
//! workspaces, `$TMPDIR` or `/tmp`, no new descriptor in this process.
//!
//! Half the runs wait at a barrier so that all of them are inside their
//! sandboxes (holding their missing names) at once, then finish together;
//! the other half start and finish while those are held. Sandboxed runs with
//! an odd index leave a background job behind that dcjail must kill.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The dcjail the tests run: `scratch::exe` keeps it runnable wherever the
/// checkout lives (landlock refuses a dcjail inside a writable root).
use scratch::exe as bin;
const RUNS: usize = 200;

/// The tests here count this process's descriptors and the machine's
/// processes: they must not overlap each other.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The names `protect_defaults` keeps uncreatable in every writable root;
/// none may appear on the host, during a run or after it.
const PROTECTED: &[&str] = &[
    ".gitmodules",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".profile",
    ".mcp.json",
    ".vscode",
    ".idea",
    ".claude",
    ".dcjail",
    ".git",
];

/// Every path under `dir`, relative, with a trailing `/` on directories.
fn listing(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir {
                out.insert(format!("{rel}/"));
                walk(base, &p, out);
            } else {
                out.insert(rel);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// Mount points and sources, without the ids that change on remount.
fn mounts() -> BTreeSet<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .map(|l| l.split(' ').skip(3).collect::<Vec<_>>().join(" "))
        .collect()
}

/// Processes (other than this one) whose argv mentions `marker`.
fn marked_processes(marker: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(marker) {
            out.push(format!("{name}: {cmd}"));
        }
    }
    out
}

/// This process's descriptors, as `fd -> target`.
fn fds() -> BTreeSet<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let t = std::fs::read_link(e.path()).ok()?;
            Some(format!(
                "{} -> {}",
                e.file_name().to_string_lossy(),
                t.display()
            ))
        })
        // The read_dir handle itself.
        .filter(|s| !s.contains("/proc/") || !s.ends_with("/fd"))
        .collect()
}

/// Protected names present in /tmp (a writable root of every run).
fn tmp_protected() -> BTreeSet<String> {
    PROTECTED
        .iter()
        .filter(|n| Path::new("/tmp").join(n).symlink_metadata().is_ok())
        .map(|n| n.to_string())
        .collect()
}

/// /tmp entries that look like dcjail's own scratch files.
fn tmp_dcjail_entries() -> BTreeSet<String> {
    std::fs::read_dir("/tmp")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("dcjail") && !n.starts_with("dcjail-conc-keep"))
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Flavor {
    Bwrap,
    Landlock,
    NoSandbox,
}

/// The command each run executes (`sh -c SCRIPT MARKER I GO WAIT BG`).
const SCRIPT: &str = r#"
m=$0 i=$1 go=$2 wait=$3 bg=$4 kind=$5
if [ "$wait" = 1 ]; then
    n=0
    while [ ! -e "$go" ]; do
        n=$((n + 1)); [ $n -gt 1200 ] && { echo "barrier timeout" >&2; exit 99; }
        sleep 0.05
    done
fi
if [ "$bg" = 1 ]; then
    sh -c 'sleep 30; :' "$m-bg" </dev/null >/dev/null 2>&1 &
fi
case $kind in
landlock)
    (echo x > "ll-$i") 2>/dev/null && echo "WROTE ll-$i"
    cat seed
    ;;
*)
    echo "$i $m" > "out-$i" || exit 3
    t="$TMPDIR/t-$i"
    echo "$i" > "$t" || exit 4
    [ "$(cat "$t")" = "$i" ] || exit 5
    rm -f "$t"
    if [ "$kind" = bwrap ]; then
        (echo x >> .bashrc) 2>/dev/null && echo "WROTE .bashrc"
        (mkdir .vscode/x) 2>/dev/null && echo "MADE .vscode/x"
        (echo x > /tmp/.profile) 2>/dev/null && echo "WROTE /tmp/.profile"
    fi
    cat "out-$i"
    ;;
esac
echo "done $i"
"#;

#[test]
fn two_hundred_runs_at_once_are_correct_and_leave_nothing_behind() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !scratch::bwrap_works() {
        return;
    }
    let root = scratch::Dir::new("dcjail-conc");
    let root_path = root.0.clone();
    let ws = |name: &str| {
        let p = root_path.join(name);
        std::fs::create_dir_all(&p).unwrap();
        p
    };
    let (ws_bwrap, ws_ll, ws_nosb, tmpdir) =
        (ws("ws-bwrap"), ws("ws-ll"), ws("ws-nosb"), ws("tmp"));
    std::fs::write(ws_ll.join("seed"), "seed\n").unwrap();
    let go = root_path.join("go");
    let marker = format!("dcjail-conc-{}-m", std::process::id());

    let before_root = listing(&root_path);
    let before_mounts = mounts();
    let before_fds = fds();
    let before_tmp = tmp_protected();
    let before_tmp_dcjail = tmp_dcjail_entries();
    assert!(marked_processes(&marker).is_empty());

    let start = Instant::now();
    let mut children: Vec<(usize, Flavor, Child)> = Vec::with_capacity(RUNS);
    for i in 0..RUNS {
        let flavor = match i % 5 {
            0 | 1 => Flavor::Bwrap,
            2 | 3 => Flavor::Landlock,
            _ => Flavor::NoSandbox,
        };
        let wait = i % 2 == 0;
        let bg = i % 2 == 1 && flavor != Flavor::NoSandbox;
        let mut c = Command::new(bin());
        let (dir, kind) = match flavor {
            Flavor::Bwrap => {
                c.args(["--backend", "bwrap", "--sandbox-mode", "workspace-write"]);
                (&ws_bwrap, "bwrap")
            }
            Flavor::Landlock => {
                c.args(["--backend", "landlock", "--sandbox-mode", "read-only"]);
                (&ws_ll, "landlock")
            }
            Flavor::NoSandbox => {
                c.arg("--no-sandbox");
                (&ws_nosb, "none")
            }
        };
        c.args(["--timeout", "90", "--", "sh", "-c", SCRIPT])
            .arg(&marker)
            .arg(i.to_string())
            .arg(&go)
            .arg(if wait { "1" } else { "0" })
            .arg(if bg { "1" } else { "0" })
            .arg(kind)
            .current_dir(dir)
            .env("TMPDIR", &tmpdir)
            .env_remove("DCJAIL_POLICY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        children.push((i, flavor, c.spawn().unwrap()));
    }
    let spawned = start.elapsed();
    // Open the barrier once every waiting run is inside its sandbox: each
    // waiting shell is a process whose argv has the marker and `1` as WAIT.
    let waiting = RUNS / 2;
    let deadline = Instant::now() + Duration::from_secs(45);
    loop {
        let at_barrier = format!(" {} 1 ", go.display());
        let n = marked_processes(&marker)
            .iter()
            .filter(|p| {
                let argv = p.split_once(": ").map(|x| x.1).unwrap_or("");
                argv.starts_with("sh -c ") && argv.contains(&at_barrier)
            })
            .count();
        if n >= waiting || Instant::now() > deadline {
            eprintln!(
                "barrier: {n} of {waiting} waiting runs inside at {:?}",
                start.elapsed()
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(&go, "").unwrap();

    let mut failures = Vec::new();
    let mut slowest = Duration::ZERO;
    for (i, flavor, child) in children {
        let o = child.wait_with_output().unwrap();
        slowest = slowest.max(start.elapsed());
        let out = String::from_utf8_lossy(&o.stdout);
        let want = match flavor {
            Flavor::Landlock => format!("seed\ndone {i}\n"),
            _ => format!("{i} {marker}\ndone {i}\n"),
        };
        if o.status.code() != Some(0) || out != want {
            failures.push(format!(
                "run {i} ({flavor:?}): status {:?}, stdout {out:?}, stderr {:?}",
                o.status.code(),
                String::from_utf8_lossy(&o.stderr)
            ));
        }
    }
    let total = start.elapsed();
    eprintln!(
        "{RUNS} runs: spawned in {spawned:?}, all finished in {total:?} (last exit seen at {slowest:?})"
    );
    // Go's file is ours; the rest of the root must be what the runs wrote.
    std::fs::remove_file(&go).unwrap();

    // Nothing of any run survives its dcjail.
    let left = marked_processes(&marker);
    let left = if left.is_empty() {
        left
    } else {
        // A process already killed may still be on its way out.
        std::thread::sleep(Duration::from_millis(500));
        marked_processes(&marker)
    };

    let after_root = listing(&root_path);
    let mut expected = before_root.clone();
    for i in 0..RUNS {
        match i % 5 {
            0 | 1 => expected.insert(format!("ws-bwrap/out-{i}")),
            4 => expected.insert(format!("ws-nosb/out-{i}")),
            _ => false,
        };
    }
    let extra: Vec<&String> = after_root.difference(&expected).collect();
    let gone: Vec<&String> = expected.difference(&after_root).collect();

    let new_mounts: Vec<String> = mounts().difference(&before_mounts).cloned().collect();
    let new_fds: Vec<String> = fds().difference(&before_fds).cloned().collect();

    // /tmp is shared with everything else on the machine (an older dcjail
    // or another tool may be making these names right now): give in-flight
    // runs elsewhere a moment before calling one ours.
    let mut tmp_left: Vec<String> = tmp_protected().difference(&before_tmp).cloned().collect();
    let t0 = Instant::now();
    while !tmp_left.is_empty() && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(200));
        tmp_left = tmp_protected().difference(&before_tmp).cloned().collect();
    }
    let tmp_dcjail: Vec<String> = tmp_dcjail_entries()
        .difference(&before_tmp_dcjail)
        .cloned()
        .collect();

    assert!(
        failures.is_empty(),
        "{} runs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(left.is_empty(), "processes left running: {left:#?}");
    assert!(
        extra.is_empty(),
        "left behind in the workspaces/TMPDIR: {extra:#?}"
    );
    assert!(gone.is_empty(), "outputs missing: {gone:#?}");
    assert!(new_mounts.is_empty(), "new mounts: {new_mounts:#?}");
    assert!(
        new_fds.is_empty(),
        "new descriptors in the test process: {new_fds:#?}"
    );
    assert!(
        tmp_left.is_empty(),
        "protected names left in /tmp: {tmp_left:?}"
    );
    assert!(
        tmp_dcjail.is_empty(),
        "dcjail files left in /tmp: {tmp_dcjail:?}"
    );
    assert!(total < Duration::from_secs(90), "took {total:?}");
}

/// Runs that start at the same moment on a fresh workspace all hold the
/// same missing names: none of them may leave one behind. (When dcjail
/// made host placeholders, a run that adopted one before its creator had
/// marked it kept it forever.)
#[test]
fn simultaneous_runs_on_a_fresh_workspace_leave_no_protected_name() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !scratch::bwrap_works() {
        return;
    }
    let root = scratch::Dir::new("dcjail-ph-race");
    let start = Instant::now();
    let (rounds, per_round) = (12, 20);
    let mut failures = Vec::new();
    for round in 0..rounds {
        let ws = root.0.join(format!("ws{round}"));
        std::fs::create_dir(&ws).unwrap();
        // All runs of a round wait on one lock the test holds, so they
        // start at the same moment once it lets go.
        let gate = root.0.join(format!("gate{round}"));
        let held = std::fs::File::create(&gate).unwrap();
        // SAFETY: a valid fd of ours.
        let locked = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&held), libc::LOCK_EX) };
        assert_eq!(locked, 0);
        let kids: Vec<Child> = (0..per_round)
            .map(|_| {
                Command::new("flock")
                    .args(["-s", "-o"])
                    .arg(&gate)
                    .arg(bin())
                    .args(["--backend", "bwrap", "--sandbox-mode", "workspace-write"])
                    .args(["--", "sh", "-c", "echo ok"])
                    .current_dir(&ws)
                    .env("TMPDIR", &ws)
                    .env_remove("DCJAIL_POLICY")
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let waiting = format!("flock -s -o {}", gate.display());
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) && marked_processes(&waiting).len() < per_round
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(held);
        for k in kids {
            let o = k.wait_with_output().unwrap();
            if o.status.code() != Some(0) || o.stdout != b"ok\n" {
                failures.push(format!(
                    "round {round}: status {:?}, stderr {:?}",
                    o.status.code(),
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
        }
        std::fs::remove_file(&gate).unwrap();
        let left = listing(&ws);
        if !left.is_empty() {
            failures.push(format!("round {round}: left behind {left:?}"));
        }
    }
    eprintln!(
        "{rounds} rounds of {per_round} simultaneous runs in {:?}",
        start.elapsed()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
