//! Nothing the command starts outlives dcjail, also a chain of processes
//! that each fork a successor and exit (setsid each time), with CPU load
//! beside it: at the timeout, when dcjail is SIGKILLed and when the command
//! exits, on the landlock, bwrap and auto backends, as root and as uid
//! 65534. A control run without dcjail shows the chain outlives the
//! command that started it; a real-work test shows a dev server a call
//! starts is gone when the call ends and the call's output and status are
//! those of the run without dcjail.
//!
//! Machine safety: every process of these tests exits by itself (the chain
//! after a deadline and a generation count, the load after a deadline), and
//! every one runs in a pids cgroup of the test's own with a cap (a chain's
//! zombies, reaped slowly by some pid 1, can fill a machine's pid space),
//! removed at the end. These tests need root (the cgroup); they fail
//! without it.
#![cfg(target_os = "linux")]

#[path = "support/hook.rs"]
mod hook;
#[path = "support/scratch.rs"]
mod scratch;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The chain: each process forks a successor, which calls setsid; the
/// parent exits at once. It stops by itself at the deadline or after the
/// generation count; a fork refused (the cgroup's cap) is retried after
/// 10 ms. The first process says `started` on stdout first, and every
/// 100th generation says `gen`: a chain's progress, which a look at /proc
/// cannot show (each process lives for a moment).
const CHAIN: &str = "import os, sys, time
marker, deadline, gens = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
print('started', flush=True)
g = 0
while g < gens and time.time() < deadline:
    try:
        pid = os.fork()
    except OSError:
        time.sleep(0.01)
        continue
    if pid:
        os._exit(0)
    os.setsid()
    g += 1
    if g % 100 == 0:
        os.write(1, b'gen\\n')
os._exit(0)
";

/// CPU load: a busy loop until its deadline.
const LOAD: &str = "import sys, time
end = float(sys.argv[1])
while time.time() < end:
    pass
";

/// Chains started side by side by one command, and the generation cap.
const CHAINS: usize = 30;
const GENERATIONS: u64 = 2_000_000;
/// The pids cgroup's cap: room for the chains' zombies and the tests'
/// own processes, far from the machine's pid space.
const PIDS_MAX: u32 = 4000;
/// The bound SPEC §5 states: nothing is left 2 s after the deadline.
const BOUND: Duration = Duration::from_secs(2);

/// One attack at a time: the load beside each is the two busy loops, not
/// another test's 30 chains (the harness runs tests side by side).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn python() -> &'static str {
    let p = "/usr/bin/python3";
    assert!(
        Path::new(p).exists(),
        "{p} is needed (scripts/test.sh installs python3)"
    );
    p
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A pids cgroup of the test's own, with `pids.max` set; removed on drop
/// once its processes are gone (bounded wait).
struct PidsCap {
    dir: PathBuf,
}

impl PidsCap {
    fn new(tag: &str) -> PidsCap {
        // SAFETY: geteuid never fails.
        assert_eq!(unsafe { libc::geteuid() }, 0, "the pids cgroup needs root");
        let base = pids_hierarchy();
        let dir = base.join(format!("dcjail-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).expect("make the test's pids cgroup");
        std::fs::write(dir.join("pids.max"), PIDS_MAX.to_string()).expect("set pids.max");
        PidsCap { dir }
    }

    /// `c` starts inside the cgroup (it moves itself before its exec).
    fn put(&self, c: &mut Command) {
        let procs =
            std::ffi::CString::new(self.dir.join("cgroup.procs").as_os_str().as_encoded_bytes())
                .unwrap();
        // SAFETY: only open, write and close between fork and exec.
        unsafe {
            c.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                let ok = fd >= 0 && libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                libc::close(fd);
                if ok {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }

    fn current(&self) -> u32 {
        std::fs::read_to_string(self.dir.join("pids.current"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for PidsCap {
    fn drop(&mut self) {
        // Everything in it exits by itself; zombies wait for their reaper.
        let t = Instant::now();
        while self.current() > 0 && t.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Where a pids cgroup can be made: the v2 root when it offers the pids
/// controller (enabled for its children here), else the v1 pids hierarchy.
fn pids_hierarchy() -> PathBuf {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mut v1 = None;
    for line in info.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let Some(dash) = f.iter().position(|x| *x == "-") else {
            continue;
        };
        let point = PathBuf::from(f[4]);
        match f.get(dash + 1).copied() {
            Some("cgroup2") if f[3] == "/" => {
                let ctl =
                    std::fs::read_to_string(point.join("cgroup.controllers")).unwrap_or_default();
                if ctl.split_whitespace().any(|c| c == "pids") {
                    let _ = std::fs::write(point.join("cgroup.subtree_control"), "+pids");
                    return point;
                }
            }
            Some("cgroup")
                if f.get(dash + 3)
                    .is_some_and(|o| o.split(',').any(|o| o == "pids")) =>
            {
                v1 = Some(point);
            }
            _ => {}
        }
    }
    v1.expect("no pids cgroup controller on this machine")
}

impl PidsCap {
    /// The processes in the cgroup that are not zombies, but `except`:
    /// the cgroup's own list, which a chain cannot slip past as it can a
    /// walk of /proc (its members live for a moment each).
    fn live(&self, except: &[u32]) -> Vec<u32> {
        let name = self.dir.file_name().unwrap().to_string_lossy().into_owned();
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        procs
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
            .filter(|p| !except.contains(p))
            // The list can hold a pid that exited and was reused outside
            // the cgroup before it is looked at (a chain uses pids fast).
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/cgroup"))
                    .is_ok_and(|c| c.lines().any(|l| l.ends_with(&format!("/{name}"))))
            })
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .ok()
                    .and_then(|st| st.rsplit(')').next().map(|r| r.trim_start().to_string()))
                    .is_some_and(|r| !r.starts_with('Z') && !r.starts_with('X'))
            })
            .collect()
    }

    /// Polls `live(except)` until it is empty or `limit` has passed, then
    /// reads it four more times 50 ms apart; what was left, with each
    /// process's command line.
    fn left_after(&self, except: &[u32], limit: Duration) -> Vec<String> {
        let t = Instant::now();
        while !self.live(except).is_empty() && t.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(20));
        }
        for _ in 0..4 {
            // A process that became a zombie between the two reads is gone
            // (pid 1 here reaps slowly): only one still running counts.
            let left: Vec<String> = self
                .live(except)
                .iter()
                .filter_map(|p| {
                    let c = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                    let st = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
                    let state = st.rsplit(')').next().map(str::trim_start).unwrap_or("");
                    if state.starts_with('Z') || state.starts_with('X') {
                        return None;
                    }
                    Some(format!(
                        "{p}: {} [{st}]",
                        String::from_utf8_lossy(&c).replace('\0', " ")
                    ))
                })
                .collect();
            if !left.is_empty() {
                return left;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Vec::new()
    }
}

/// How many `gen` lines the chains have written to `out`.
fn progress(out: &Path) -> usize {
    std::fs::read_to_string(out).map_or(0, |t| t.matches("gen").count())
}

/// Whether the chains make progress: more `gen` lines within `limit`.
fn advancing(out: &Path, limit: Duration) -> bool {
    let before = progress(out);
    let t = Instant::now();
    while t.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
        if progress(out) > before {
            return true;
        }
    }
    false
}

/// One scratch directory with the two scripts; removed on drop.
struct Setup {
    dir: PathBuf,
    marker: String,
}

impl Setup {
    fn new(tag: &str) -> Setup {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let dir = scratch::fresh(&format!("fork-chain-{tag}-{}-{n}", std::process::id()));
        std::fs::write(dir.join("chain.py"), CHAIN).unwrap();
        std::fs::write(dir.join("load.py"), LOAD).unwrap();
        std::fs::create_dir(dir.join("ws")).unwrap();
        // uid 65534's dev server writes its pid in the workspace.
        std::os::unix::fs::chown(dir.join("ws"), Some(65534), Some(65534)).unwrap();
        Setup {
            marker: format!("chainmark{}x{n}", std::process::id()),
            dir,
        }
    }

    /// Where the command's stdout goes: a file, not a pipe, which the
    /// chain would inherit and keep the test waiting until its deadline.
    fn out(&self) -> PathBuf {
        self.dir.join("out")
    }

    /// The shell line that starts the chains in the background and then
    /// runs `then`. Each chain stops by itself `life` seconds from now.
    fn script(&self, life: f64, then: &str) -> String {
        let one = format!(
            "{} {} {} {} {GENERATIONS}",
            python(),
            self.dir.join("chain.py").display(),
            self.marker,
            now() + life,
        );
        let mut s = String::new();
        for _ in 0..CHAINS {
            s.push_str(&one);
            s.push_str(" & ");
        }
        s.push_str(then);
        s
    }

    /// Two busy loops beside the test, in the cgroup, for `secs`.
    fn load(&self, cap: &PidsCap, secs: f64) -> Vec<Child> {
        (0..2)
            .map(|_| {
                let mut c = Command::new(python());
                c.arg(self.dir.join("load.py"))
                    .arg((now() + secs).to_string())
                    .stdout(Stdio::null());
                cap.put(&mut c);
                c.spawn().unwrap()
            })
            .collect()
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        scratch::remove(&self.dir);
    }
}

fn dcjail(backend: &str, extra: &[&str], script: &str, ws: &Path, nobody: bool) -> Command {
    let mut c = Command::new(scratch::exe());
    c.args(["--backend", backend])
        .args(extra)
        .args(["--", "sh", "-c", script])
        .current_dir(ws)
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null());
    if nobody {
        hook::as_nobody(&mut c);
    }
    c
}

/// Waits at most `limit` for `p` to hold `started`.
fn started(p: &Path, limit: Duration) -> bool {
    let has = || std::fs::read_to_string(p).is_ok_and(|t| t.contains("started"));
    let t = Instant::now();
    while !has() && t.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    has()
}

#[derive(Clone, Copy, Debug)]
enum End {
    Timeout,
    Killed,
    Exited,
}

/// Runs the chains under dcjail, ended by `end`, and asserts the chain ran
/// and nothing of it is alive `BOUND` after dcjail's end.
fn chain_under_dcjail(backend: &str, nobody: bool, end: End) {
    let tag = format!(
        "{backend}-{end:?}-{}",
        if nobody { "nobody" } else { "root" }
    );
    let _one = one_at_a_time();
    let s = Setup::new(&tag);
    let cap = PidsCap::new(&tag);
    let mut load = s.load(&cap, 20.0);
    let ws = s.dir.join("ws");
    let (extra, then): (&[&str], &str) = match end {
        End::Timeout => (&["--timeout", "4"], "sleep 60"),
        End::Killed => (&[], "sleep 60"),
        // The command exits while the chains run.
        End::Exited => (&[], "sleep 2"),
    };
    let mut c = dcjail(backend, extra, &s.script(20.0, then), &ws, nobody);
    c.stdout(std::fs::File::create(s.out()).unwrap())
        .stderr(std::fs::File::create(s.dir.join("err")).unwrap());
    cap.put(&mut c);
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut child = c.spawn().unwrap();
    if !started(&s.out(), Duration::from_secs(10)) {
        let _ = child.kill();
        let _ = child.wait();
        let said = std::fs::read_to_string(s.dir.join("err")).unwrap_or_default();
        panic!("{tag}: the chain never started: {said}");
    }
    let running = advancing(&s.out(), Duration::from_secs(5));
    if let End::Killed = end {
        child.kill().unwrap();
    }
    let status = child.wait().unwrap();
    let returned = Instant::now();
    let except: Vec<u32> = load.iter().map(|l| l.id()).collect();
    let left = cap.left_after(&except, BOUND);
    // Nothing of the chains writes any more.
    let still = advancing(&s.out(), Duration::from_secs(1));
    for l in &mut load {
        let _ = l.kill();
        let _ = l.wait();
    }
    let want = match end {
        End::Timeout => Some(124),
        End::Killed => None,
        End::Exited => Some(0),
    };
    let said = std::fs::read_to_string(s.dir.join("err")).unwrap_or_default();
    assert_eq!(status.code(), want, "{tag}: {said}");
    assert!(running, "{tag}: the chains made no progress before the end");
    assert!(
        !still,
        "{tag}: the chains still made progress after dcjail's end"
    );
    assert!(
        left.is_empty(),
        "{tag}: outlived dcjail by {BOUND:?}: {left:#?}"
    );
    if let End::Timeout = end {
        let late = returned.saturating_duration_since(deadline);
        assert!(
            late <= BOUND,
            "{tag}: dcjail returned {late:?} after the deadline"
        );
    }
}

fn every_end(backend: &str) {
    for nobody in [false, true] {
        for end in [End::Timeout, End::Killed, End::Exited] {
            chain_under_dcjail(backend, nobody, end);
        }
    }
}

#[test]
fn without_dcjail_a_fork_chain_outlives_the_command_that_started_it() {
    let _one = one_at_a_time();
    let s = Setup::new("control");
    let cap = PidsCap::new("control");
    let mut load = s.load(&cap, 12.0);
    let mut c = Command::new("sh");
    c.args(["-c", &s.script(12.0, "exit 0")])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(s.out()).unwrap())
        .stderr(Stdio::null());
    cap.put(&mut c);
    assert_eq!(c.status().unwrap().code(), Some(0));
    assert!(started(&s.out(), Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(1500));
    let except: Vec<u32> = load.iter().map(|l| l.id()).collect();
    let later = cap.live(&except);
    let seen = advancing(&s.out(), Duration::from_secs(5));
    // The chains end at their own deadline.
    let left = cap.left_after(&except, Duration::from_secs(30));
    for l in &mut load {
        let _ = l.kill();
        let _ = l.wait();
    }
    assert!(
        !later.is_empty() && seen,
        "the chain did not outlive its shell by 1.5 s: the attack shows nothing here \
         (in the cgroup: {later:?}; the chains advancing: {seen}; pids.current {})",
        cap.current()
    );
    // Under the full suite's load a chain process was seen still asleep
    // past its own deadline (in its retry after a fork the pids cap
    // refused): it is the test's own, in the test's own cgroup, so it is
    // killed by its pid here rather than left or failing the control,
    // whose point (the chain outlived its shell) is asserted above.
    if !left.is_empty() {
        eprintln!("control: killing what outlived its deadline: {left:?}");
        for p in cap.live(&except) {
            // SAFETY: SIGKILL to a pid read from the test's own cgroup.
            unsafe { libc::kill(p as libc::pid_t, libc::SIGKILL) };
        }
        assert!(
            cap.left_after(&except, Duration::from_secs(10)).is_empty(),
            "the control's chain survived SIGKILL"
        );
    }
}

#[test]
fn a_fork_chain_is_gone_with_dcjail_under_landlock() {
    every_end("landlock");
}

#[test]
fn a_fork_chain_is_gone_with_dcjail_under_bwrap() {
    every_end("bwrap");
}

#[test]
fn a_fork_chain_is_gone_with_dcjail_under_auto() {
    every_end("auto");
}

/// A dev server a call starts in the background answers during the call
/// and is gone when the call ends; the call's output and status are the
/// same as without dcjail.
fn dev_server_is_gone_when_the_call_ends(backend: &str, nobody: bool) {
    let tag = format!(
        "server-{backend}-{}",
        if nobody { "nobody" } else { "root" }
    );
    let _one = one_at_a_time();
    let s = Setup::new(&tag);
    let cap = PidsCap::new(&tag);
    let ws = s.dir.join("ws");
    std::fs::write(ws.join("index.txt"), "served\n").unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let script = format!(
        "{py} -m http.server --bind 127.0.0.1 {port} >/dev/null 2>&1 & echo $! > server.pid; \
         i=0; until {py} -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen(\"http://127.0.0.1:{port}/index.txt\").read().decode())' 2>/dev/null; \
         do i=$((i+1)); [ $i -gt 100 ] && break; sleep 0.1; done; echo err-line >&2; exit 7",
        py = python()
    );
    let server_alive = || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
    // Without dcjail: the same output and status, and the server stays.
    let mut bare = Command::new("sh");
    bare.args(["-c", &script])
        .current_dir(&ws)
        .stdin(Stdio::null());
    if nobody {
        hook::as_nobody(&mut bare);
    }
    cap.put(&mut bare);
    let b: Output = bare.output().unwrap();
    let stayed = server_alive();
    let pid: i32 = std::fs::read_to_string(ws.join("server.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: a plain kill of the server this test started.
    let killed = unsafe { libc::kill(pid, libc::SIGKILL) } == 0;
    let t = Instant::now();
    while server_alive() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // landlock cannot hold the protected paths inside a writable root.
    let args = [
        "--sandbox-mode",
        "workspace-write",
        "--no-protect-defaults",
        "--net",
        "full",
    ];
    let mut c = dcjail(backend, &args, &script, &ws, nobody);
    cap.put(&mut c);
    let o = c.output().unwrap();
    let after = server_alive();
    assert!(
        stayed,
        "{tag}: without dcjail the server did not outlive the call"
    );
    assert!(killed, "{tag}: the bare run's server was gone already");
    assert_eq!(String::from_utf8_lossy(&b.stdout), "served\n", "{tag}");
    assert_eq!(b.status.code(), Some(7), "{tag}");
    assert_eq!(o.stdout, b.stdout, "{tag}: {}", scratch::text(&o));
    assert_eq!(o.stderr, b.stderr, "{tag}: {}", scratch::text(&o));
    assert_eq!(o.status.code(), b.status.code(), "{tag}");
    assert!(!after, "{tag}: the dev server outlived the call");
}

#[test]
fn a_dev_server_a_call_starts_is_gone_when_it_ends_and_output_is_unchanged() {
    for backend in ["landlock", "bwrap", "auto"] {
        for nobody in [false, true] {
            dev_server_is_gone_when_the_call_ends(backend, nobody);
        }
    }
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let o = Command::new(scratch::exe())
        .args(args)
        .env_remove("DCJAIL_POLICY")
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", scratch::text(&o)))
}

#[test]
fn explain_and_doctor_say_which_teardown_holds() {
    for (args, mechanism, bounded) in [
        (
            &["--backend", "landlock"][..],
            "landlock-signal-scope",
            true,
        ),
        (&["--backend", "bwrap"][..], "pid-namespace", true),
        (&["--no-sandbox"][..], "process-walk", false),
    ] {
        let mut a = vec!["explain"];
        a.extend_from_slice(args);
        a.extend(["--", "true"]);
        let v = json_of(&a);
        let t = &v["launch"]["teardown"];
        assert_eq!(t["mechanism"], mechanism, "{args:?}: {v}");
        assert_eq!(t["bounded"], bounded, "{args:?}: {v}");
        assert!(
            t["holds"].as_str().is_some_and(|h| h.contains("chain")),
            "{t}"
        );
    }
    let d = json_of(&["doctor", "--json"]);
    let check = d["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "process-teardown")
        .cloned()
        .unwrap_or_else(|| panic!("no process-teardown check: {d}"));
    // Here bwrap and landlock both work, and both bound the teardown.
    assert_eq!(check["status"], "ok", "{check}");
    for b in d["backends"].as_array().unwrap() {
        let said = b["details"].to_string();
        if b["works"] == true {
            assert!(said.contains("process teardown"), "{b}");
        }
    }
}
