//! Terminal programs under dcjail behave as without it (SPEC §5: the
//! command keeps the caller's controlling terminal, so job control and
//! full-screen programs work; TIOCSTI stays refused). Each session runs in
//! tmux on a private socket, once without dcjail and once per backend, as
//! the invoking user and as uid 65534; what each step showed is compared.

#[path = "support/realwork.rs"]
mod realwork;
#[path = "support/scratch.rs"]
mod scratch;
#[path = "support/tmux.rs"]
mod tmux;

use realwork::*;
use std::path::Path;
use tmux::{quote_all, Tmux};

/// One observation per step: what a person at the terminal would notice.
type Seen = Vec<(String, String)>;

/// The last line of `text` that contains `needle`, trimmed, or a note.
fn line_with(text: &str, needle: &str) -> String {
    text.lines()
        .rev()
        .find(|l| l.contains(needle))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| format!("(no line with {needle:?})"))
}

fn first_line(screen: &str) -> String {
    screen.lines().next().unwrap_or("").trim_end().to_string()
}

/// The session command: the program (behind dcjail when jailed), then its
/// exit status, then a bounded wait so the pane stays readable.
fn session(jail: &str, program: &str) -> String {
    format!("{jail} {program}; echo \"[EXITED $?]\"; exec sleep 600")
}

/// Keys reach less one at a time, without Enter.
fn less(start: &dyn Fn(&str) -> Tmux, jail: &str, _ws: &Path) -> Seen {
    let mut seen = Seen::new();
    let t = start(&session(jail, "less big.txt"));
    let (_, s) = t.wait_screen(8.0, |s| first_line(s) == "line 1");
    seen.push(("less shows the file".into(), first_line(&s)));
    t.keys(&["j", "j", "j"]);
    let (_, s) = t.wait_screen(6.0, |s| first_line(s) == "line 4");
    seen.push(("three j keys scroll three lines".into(), first_line(&s)));
    t.keys(&["G"]);
    let (_, s) = t.wait_screen(6.0, |s| s.contains("line 200"));
    seen.push(("G goes to the end".into(), line_with(&s, "line 200")));
    t.keys(&["q"]);
    let (_, h) = t.wait(6.0, |h| h.contains("[EXITED"));
    seen.push(("q quits".into(), line_with(&h, "[EXITED")));
    seen
}

/// vi edits a file and writes it. viminfo is off (`-i NONE`): vim cannot
/// write it in a read-only home, and says so on exit.
fn vi(start: &dyn Fn(&str) -> Tmux, jail: &str, ws: &Path) -> Seen {
    let mut seen = Seen::new();
    let t = start(&session(jail, "vi -u NONE -i NONE -N notes.txt"));
    let (_, s) = t.wait_screen(8.0, |s| s.contains("first line"));
    seen.push(("vi shows the file".into(), first_line(&s)));
    t.keys(&["G", "o"]);
    t.type_text("added in vi");
    t.keys(&["Escape"]);
    t.type_text(":wq");
    t.keys(&["Enter"]);
    let (_, h) = t.wait(5.0, |h| h.contains("[EXITED"));
    seen.push(("ZZ/:wq exits".into(), line_with(&h, "[EXITED")));
    seen.push((
        "the file afterwards".into(),
        std::fs::read_to_string(ws.join("notes.txt")).unwrap_or_else(|e| e.to_string()),
    ));
    seen
}

/// bash -i: the terminal, job control, Ctrl-C, window size, SIGWINCH.
fn bash_i(start: &dyn Fn(&str) -> Tmux, jail: &str, _ws: &Path) -> Seen {
    let mut seen = Seen::new();
    let t = start(&session(jail, "bash --norc --noprofile -i"));
    let prompt = |h: &str| h.lines().filter(|l| l.starts_with("rw$")).count();
    let (_, h) = t.wait(8.0, |h| prompt(h) >= 1);
    seen.push(("a prompt".into(), format!("{}", prompt(&h) >= 1)));
    // Types a command and returns the newest output line holding `marker`
    // (the typed line, after the prompt, does not count) once one more such
    // line has appeared. A session that stopped answering twice is not
    // waited on again.
    let count = |h: &str, marker: &str| {
        h.lines()
            .filter(|l| !l.starts_with("rw$") && l.contains(marker))
            .count()
    };
    let misses = std::cell::Cell::new(0);
    let ask = |cmd: &str, marker: &str, secs: f64| -> String {
        if misses.get() >= 2 {
            return "(the session stopped answering)".into();
        }
        let n = count(&t.history(), marker);
        t.line(cmd);
        let (ok, h) = t.wait(secs, |h| count(h, marker) > n);
        misses.set(if ok { 0 } else { misses.get() + 1 });
        h.lines()
            .rev()
            .find(|l| !l.starts_with("rw$") && l.contains(marker))
            .map(|l| {
                l[l.find(marker).unwrap_or(0)..]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_else(|| "(nothing)".into())
    };
    seen.push((
        "the job control state".into(),
        ask(
            "case $- in *m*) echo MONITOR-ON;; *) echo MONITOR-OFF;; esac",
            "MONITOR-",
            6.0,
        ),
    ));
    seen.push((
        "/dev/tty opens".into(),
        ask(
            "(exec 3</dev/tty) 2>/dev/null && echo DEVTTY-OPEN || echo DEVTTY-FAILS",
            "DEVTTY-",
            6.0,
        ),
    ));
    // Ctrl-Z stops the foreground job and gives the prompt back.
    let before = prompt(&t.history());
    t.line("sleep 300");
    std::thread::sleep(std::time::Duration::from_millis(400));
    t.keys(&["C-z"]);
    let (_, h) = t.wait(6.0, |h| h.contains("Stopped") && prompt(h) > before);
    seen.push(("Ctrl-Z stops sleep".into(), line_with(&h, "Stopped")));
    seen.push(("jobs".into(), ask("jobs; echo JOBS-DONE", "[1]", 6.0)));
    seen.push((
        "bg resumes it in the background".into(),
        ask("bg", "[1]", 6.0),
    ));
    seen.push((
        "jobs after bg".into(),
        ask(
            "jobs -l | sed 's/[0-9][0-9]* Running/PID Running/'; echo JOBS-DONE",
            "[1]",
            6.0,
        ),
    ));
    // fg brings it back; Ctrl-C kills it, not the shell.
    t.line("fg");
    std::thread::sleep(std::time::Duration::from_millis(400));
    t.keys(&["C-c"]);
    seen.push((
        "Ctrl-C kills the job, the shell lives".into(),
        ask("echo \"ALIVE $?\"", "ALIVE", 6.0),
    ));
    seen.push((
        "stty size".into(),
        ask("echo \"SIZE $(stty size)\"", "SIZE", 6.0),
    ));
    t.resize(100, 30);
    std::thread::sleep(std::time::Duration::from_millis(300));
    seen.push((
        "stty size after a resize".into(),
        ask("echo \"SIZE $(stty size)\"", "SIZE", 6.0),
    ));
    // SIGWINCH reaches a foreground program.
    t.line("sh winch.sh");
    let (_, _) = t.wait(6.0, |h| h.contains("WAITING-FOR-WINCH"));
    t.resize(90, 28);
    let (_, h) = t.wait(12.0, |h| h.contains("GOT-WINCH") || h.contains("NO-WINCH"));
    let got = if h.contains("GOT-WINCH") {
        "GOT-WINCH"
    } else if h.contains("NO-WINCH") {
        "NO-WINCH"
    } else {
        "(no answer)"
    };
    seen.push(("a resize sends SIGWINCH".into(), got.into()));
    let (_, _) = t.wait(6.0, |h| h.contains("WINCH-DONE"));
    t.line("exit");
    let (_, h) = t.wait(6.0, |h| h.contains("[EXITED"));
    seen.push(("exit leaves the shell".into(), line_with(&h, "[EXITED")));
    seen
}

/// TIOCSTI from an interactive shell's child: works without dcjail (the
/// attack is real here), refused with it. Its own session, so a broken job
/// control cannot hide the answer.
fn tiocsti(start: &dyn Fn(&str) -> Tmux, jail: &str, _ws: &Path) -> Seen {
    let mut seen = Seen::new();
    let t = start(&session(jail, "bash --norc --noprofile -i"));
    let (ok, _) = t.wait(8.0, |h| h.lines().any(|l| l.starts_with("rw$")));
    seen.push(("a prompt".into(), format!("{ok}")));
    t.line("/usr/bin/python3 tiocsti.py");
    // The injected byte is echoed in front of the answer.
    let (_, h) = t.wait(5.0, |h| h.contains("TIOCSTI-"));
    let answer = h
        .lines()
        .rev()
        .find_map(|l| l.find("TIOCSTI-").map(|i| l[i..].trim_end().to_string()))
        .unwrap_or_else(|| "(no answer)".into());
    seen.push(("tiocsti".into(), answer));
    t.keys(&["C-u"]);
    t.line("exit");
    seen
}

/// dcjail as a foreground job of the caller's interactive shell: Ctrl-Z
/// stops the command (its output stops), fg resumes it, Ctrl-C ends it.
fn outer_job(start: &dyn Fn(&str) -> Tmux, jail: &str, _ws: &Path) -> Seen {
    let mut seen = Seen::new();
    let t = start(&session("", "bash --norc --noprofile -i"));
    let (_, _) = t.wait(8.0, |h| h.lines().any(|l| l.starts_with("rw$")));
    let last_tick = |h: &str| {
        h.lines()
            .filter_map(|l| l.strip_prefix("TICK "))
            .filter_map(|n| n.trim().parse::<u32>().ok())
            .max()
            .unwrap_or(0)
    };
    t.line(&format!("{jail} sh ticker.sh"));
    let (ok, _) = t.wait(8.0, |h| last_tick(h) >= 3);
    seen.push(("the command prints".into(), format!("{ok}")));
    t.keys(&["C-z"]);
    let (_, h) = t.wait(6.0, |h| h.contains("Stopped"));
    seen.push((
        "Ctrl-Z: the shell says".into(),
        format!("{}", h.contains("Stopped")),
    ));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let a = last_tick(&t.history());
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let b = last_tick(&t.history());
    seen.push(("Ctrl-Z: the output stops".into(), format!("{}", a == b)));
    t.line("fg");
    let (ok, _) = t.wait(8.0, |h| last_tick(h) > b + 2);
    seen.push(("fg: the output resumes".into(), format!("{ok}")));
    t.keys(&["C-c"]);
    t.line("echo \"OUTER $?\"");
    let (_, h) = t.wait(6.0, |h| h.lines().any(|l| l.starts_with("OUTER")));
    seen.push(("Ctrl-C ends it".into(), line_with(&h, "OUTER")));
    let a = last_tick(&t.history());
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let b = last_tick(&t.history());
    seen.push(("nothing prints after Ctrl-C".into(), format!("{}", a == b)));
    t.line("exit");
    seen
}

const TICKER: &str =
    "i=0; while [ $i -lt 600 ]; do i=$((i+1)); echo \"TICK $i\"; sleep 0.2; done\n";
const WINCH: &str =
    "trap 'echo GOT-WINCH; echo WINCH-DONE; exit 0' WINCH\necho WAITING-FOR-WINCH\n\
    i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; echo NO-WINCH; echo WINCH-DONE\n";
const TIOCSTI: &str = "import fcntl, termios\n\
    try:\n    fcntl.ioctl(0, termios.TIOCSTI, b'#')\n    print('TIOCSTI-INJECTED')\n\
    except OSError as e:\n    print('TIOCSTI-REFUSED', e.errno)\n";

fn setup(work: &Path) {
    let big: String = (1..=200).map(|i| format!("line {i}\n")).collect();
    std::fs::write(work.join("big.txt"), big).unwrap();
    std::fs::write(work.join("notes.txt"), "first line\n").unwrap();
    std::fs::write(work.join("ticker.sh"), TICKER).unwrap();
    std::fs::write(work.join("winch.sh"), WINCH).unwrap();
    std::fs::write(work.join("tiocsti.py"), TIOCSTI).unwrap();
}

type Scenario = fn(&dyn Fn(&str) -> Tmux, &str, &Path) -> Seen;

/// Runs `scenario` without dcjail and under every backend, for every user;
/// what the run without dcjail saw must be `expect`.
fn compare(name: &str, scenario: Scenario, expect: &[(&str, &str)]) -> Vec<String> {
    let mut failures = Vec::new();
    for user in users() {
        let t = Tree::new(&format!("tty-{name}"), user);
        let mut want: Option<Seen> = None;
        let mut modes = vec![Mode::Direct];
        modes.extend(backends().into_iter().map(Mode::Jail));
        for mode in modes {
            t.reset(user);
            setup(&t.work);
            give(user, &t.root);
            let mut env = t.env();
            env.set("PS1", "rw$ ")
                .set("LESSHISTFILE", "-")
                .set("HISTFILE", "/dev/null");
            // The tmux server already runs as the user: no setpriv inside.
            let jail = quote_all(&prefix(mode, User::Invoker, &t.work, &[]));
            // tmux's socket, where a socket's path fits.
            let sock = scratch::socket_dir(&format!(
                "tmux-{name}-{}-{}",
                user.label(),
                std::process::id()
            ));
            give(user, &sock);
            let start = |cmd: &str| Tmux::start(&sock, user, &env, &t.work, 80, 24, cmd);
            let time = std::time::Instant::now();
            let seen = scenario(&start, &jail, &t.work);
            scratch::remove(&sock);
            record(
                &format!("tty-{name}"),
                user,
                mode,
                time.elapsed().as_secs_f64(),
            );
            let what = format!("{name} as {} under {}", user.label(), mode.label());
            let show = |s: &Seen| {
                s.iter()
                    .map(|(k, v)| format!("  {k}: {v}\n"))
                    .collect::<String>()
            };
            match &want {
                None => {
                    let got: Vec<(String, String)> = seen.clone();
                    for (k, v) in expect {
                        let found = got
                            .iter()
                            .find(|(gk, _)| gk == k)
                            .map(|(_, gv)| gv.as_str());
                        if found != Some(v) {
                            failures.push(format!(
                                "{what}: the session without dcjail did not go as expected at {k:?} \
                                 (wanted {v:?}, got {found:?}): the harness is broken here\n{}",
                                show(&seen)
                            ));
                        }
                    }
                    want = Some(seen);
                }
                Some(w) => {
                    let mut bad = String::new();
                    for ((k, a), (_, b)) in w.iter().zip(seen.iter()) {
                        if k == "tiocsti" {
                            if !b.starts_with("TIOCSTI-REFUSED") {
                                bad.push_str(&format!(
                                    "  TIOCSTI is not refused: {b:?} (without dcjail: {a:?})\n"
                                ));
                            }
                        } else if a != b {
                            bad.push_str(&format!(
                                "  {k}: without dcjail {a:?}, with dcjail {b:?}\n"
                            ));
                        }
                    }
                    if !bad.is_empty() {
                        failures.push(format!(
                            "{what}: differs from the session without dcjail:\n{bad}"
                        ));
                    }
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
fn less_takes_keys_one_at_a_time_as_without_dcjail() {
    check(compare(
        "less",
        less,
        &[
            ("less shows the file", "line 1"),
            ("three j keys scroll three lines", "line 4"),
            ("q quits", "[EXITED 0]"),
        ],
    ));
}

#[test]
fn vi_edits_and_writes_a_file_as_without_dcjail() {
    check(compare(
        "vi",
        vi,
        &[
            ("ZZ/:wq exits", "[EXITED 0]"),
            ("the file afterwards", "first line\nadded in vi\n"),
        ],
    ));
}

#[test]
fn bash_i_job_control_dev_tty_and_resize_work_as_without_dcjail() {
    check(compare(
        "bash-i",
        bash_i,
        &[
            ("the job control state", "MONITOR-ON"),
            ("/dev/tty opens", "DEVTTY-OPEN"),
            ("Ctrl-C kills the job, the shell lives", "ALIVE 130"),
            ("stty size", "SIZE 24 80"),
            ("stty size after a resize", "SIZE 30 100"),
            ("a resize sends SIGWINCH", "GOT-WINCH"),
            ("exit leaves the shell", "[EXITED 0]"),
        ],
    ));
}

#[test]
fn tiocsti_works_without_dcjail_and_stays_refused_with_it() {
    check(compare(
        "tiocsti",
        tiocsti,
        &[("a prompt", "true"), ("tiocsti", "TIOCSTI-INJECTED")],
    ));
}

#[test]
fn ctrl_z_fg_and_ctrl_c_of_dcjail_as_a_job_of_the_callers_shell() {
    check(compare(
        "outer-job",
        outer_job,
        &[
            ("the command prints", "true"),
            ("Ctrl-Z: the shell says", "true"),
            ("Ctrl-Z: the output stops", "true"),
            ("fg: the output resumes", "true"),
            ("Ctrl-C ends it", "OUTER 130"),
            ("nothing prints after Ctrl-C", "true"),
        ],
    ));
}
