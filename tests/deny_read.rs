//! `deny_read` denies the file, under every name dcjail can find at launch,
//! and nothing else: what the command creates stays readable wherever it
//! may write (SPEC §5). Each test attacks from inside, asserts the command
//! ran (a marker) and the effect did not happen, and runs the same command
//! without the sandbox, where the secret is read, so it can fail.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use scratch::exe as bin;

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// The tests that put a `.env` under /tmp run one at a time: a walk of
/// /tmp by one (bwrap masks every match it finds) must not meet another's
/// files, which vanish under it.
fn tmp_lock() -> std::sync::MutexGuard<'static, ()> {
    static TMP: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TMP.lock().unwrap_or_else(|e| e.into_inner())
}

/// Who runs dcjail: this user, and uid 65534 (`scratch::users`).
fn users() -> Vec<u32> {
    scratch::users()
        .iter()
        // SAFETY: getuid never fails.
        .map(|&nobody| {
            if nobody {
                65534
            } else {
                // SAFETY: getuid never fails.
                unsafe { libc::getuid() }
            }
        })
        .collect()
}

fn chown_tree(p: &Path, uid: u32) {
    // SAFETY: getuid never fails.
    if uid == unsafe { libc::getuid() } {
        return;
    }
    assert!(Command::new("chown")
        .args(["-R", "-h", &format!("{uid}:{uid}")])
        .arg(p)
        .status()
        .unwrap()
        .success());
}

/// A fresh scratch tree (outside /tmp), enterable by uid 65534.
use scratch::Dir as Scratch;

fn put(p: &Path, content: &str) -> PathBuf {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
    p.to_path_buf()
}

/// `dcjail ARGS…` (or, with `None` for dcjail, ARGS… alone) in `cwd` as
/// `uid`, with HOME and TMPDIR as given.
fn run_as(uid: u32, cwd: &Path, env: &[(&str, &Path)], dcjail: bool, args: &[&str]) -> Output {
    // SAFETY: getuid never fails.
    let nobody = uid != unsafe { libc::getuid() };
    assert!(
        !nobody || uid == 65534,
        "uid {uid}: only 65534 is switched to"
    );
    let (program, rest) = if dcjail {
        (bin(), args)
    } else {
        (args[0], &args[1..])
    };
    let mut c = scratch::user_command(nobody, program);
    c.args(rest);
    finish(c, cwd, env)
}

fn finish(mut c: Command, cwd: &Path, env: &[(&str, &Path)]) -> Output {
    c.current_dir(cwd)
        .env_remove("DCJAIL_POLICY")
        .env_remove("DCJAIL_WALK_LIMIT")
        .env_remove("TMPDIR")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The agent policy of docs/agents.md (workspace-write, `~/.ssh`, `~/.aws`,
/// `**/.env` denied), one extra writable root, and the backend.
fn agent_policy(dir: &Path, backend: &str, extra: &Path, protect: bool) -> PathBuf {
    let p = dir.join("call.toml");
    std::fs::write(
        &p,
        format!(
            "mode = \"acceptEdits\"\ntool = \"bash\"\n\
             [permission]\noutcome = \"ask\"\nrule = \"Bash(cargo test:*)\"\napproval = \"granted\"\n\
             [sandbox]\nmode = \"workspace-write\"\nbackend = \"{backend}\"\ntimeout = 600\n\
             [sandbox.filesystem]\ndeny_read = [\"~/.ssh\", \"~/.aws\", \"**/.env\"]\n\
             allow_write = [{extra:?}]\nprotect_defaults = {protect}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    p
}

const SECRETS: [&str; 7] = [
    "SECRET-WS-ENV-1",
    "SECRET-WS-SUB-ENV-2",
    "SECRET-TMP-ENV-3",
    "SECRET-TMPDIR-ENV-4",
    "SECRET-EXTRA-ENV-5",
    "SECRET-SSH-6",
    "SECRET-AWS-7",
];

/// Every writable root with a `.env` in it and one level down: the
/// workspace, a directory in /tmp, $TMPDIR, an `allow_write` root.
struct AgentTree {
    s: Scratch,
    tmp: PathBuf,
    ws: PathBuf,
    home: PathBuf,
    tmpdir: PathBuf,
    extra: PathBuf,
}

impl AgentTree {
    fn new(tag: &str, uid: u32) -> AgentTree {
        let s = Scratch::new(tag);
        let tmp = scratch::fresh_in_tmp(&format!("{tag}-{}", std::process::id()), uid);
        let (ws, home, tmpdir, extra) = (
            s.0.join("ws"),
            s.0.join("home"),
            s.0.join("tmpdir"),
            s.0.join("extra"),
        );
        put(&ws.join(".env"), SECRETS[0]);
        put(&ws.join("sub/.env"), SECRETS[1]);
        put(&tmp.join("sub/.env"), SECRETS[2]);
        put(&tmpdir.join(".env"), SECRETS[3]);
        put(&extra.join(".env"), SECRETS[4]);
        put(&home.join(".ssh/id_ed25519"), SECRETS[5]);
        put(&home.join(".aws/credentials"), SECRETS[6]);
        for d in [&ws, &home, &tmpdir, &extra] {
            chown_tree(d, uid);
        }
        chown_tree(&tmp, uid);
        AgentTree {
            s,
            tmp,
            ws,
            home,
            tmpdir,
            extra,
        }
    }

    fn dirs(&self) -> Vec<PathBuf> {
        vec![
            self.ws.clone(),
            self.ws.join("sub"),
            self.tmp.clone(),
            self.tmp.join("sub"),
            self.tmpdir.clone(),
            self.extra.clone(),
        ]
    }

    /// Creates a file and a directory with a file in every writable
    /// directory and reads them back; `mktemp` in /tmp; then tries every
    /// secret.
    fn script(&self) -> String {
        // Names no earlier run (the control) left behind: only a file
        // created during this run shows the bug.
        let mut s = String::from("n=new-$$\n");
        for d in self.dirs() {
            let d = d.display();
            s.push_str(&format!(
                "echo made > '{d}/'$n.txt && cat '{d}/'$n.txt >/dev/null && echo 'READ-BACK {d}'\n\
                 mkdir -p '{d}/'$n.d && echo x > '{d}/'$n.d/f && cat '{d}/'$n.d/f >/dev/null && echo 'READ-BACK-DIR {d}'\n"
            ));
        }
        s.push_str(&format!(
            "t=$(mktemp -p '{}') && echo y > \"$t\" && cat \"$t\" >/dev/null && echo MKTEMP-READ-BACK\n",
            self.tmp.display()
        ));
        s.push_str(&format!(
            "cat .env sub/.env '{}/sub/.env' \"$TMPDIR/.env\" '{}/.env' ~/.ssh/id_ed25519 ~/.aws/credentials\n\
             echo CASE-RAN\n",
            self.tmp.display(),
            self.extra.display()
        ));
        s
    }

    fn env(&self) -> [(&str, &Path); 2] {
        [("HOME", &self.home), ("TMPDIR", &self.tmpdir)]
    }
}

impl Drop for AgentTree {
    fn drop(&mut self) {
        scratch::remove(&self.tmp);
    }
}

#[test]
fn new_files_stay_readable_in_every_writable_root_under_bwrap_with_the_agent_policy() {
    let _tmp = tmp_lock();
    for uid in users() {
        let t = AgentTree::new("agent-bwrap", uid);
        let script = t.script();
        // Control: without the sandbox every secret is read.
        let o = run_as(uid, &t.ws, &t.env(), false, &["sh", "-c", &script]);
        for secret in SECRETS {
            assert!(text(&o).contains(secret), "uid {uid} control: {}", text(&o));
        }
        let policy = agent_policy(&t.s.0, "bwrap", &t.extra, true);
        let o = run_as(
            uid,
            &t.ws,
            &t.env(),
            true,
            &[
                "--policy",
                policy.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                &script,
            ],
        );
        let out = text(&o);
        assert!(out.contains("CASE-RAN"), "uid {uid}: {out}");
        for d in t.dirs() {
            for what in ["READ-BACK", "READ-BACK-DIR"] {
                assert!(
                    out.contains(&format!("{what} {}\n", d.display())),
                    "uid {uid}: {what} {} missing: {out}",
                    d.display()
                );
            }
        }
        assert!(out.contains("MKTEMP-READ-BACK"), "uid {uid}: {out}");
        for secret in SECRETS {
            assert!(!out.contains(secret), "uid {uid}: {secret} leaked: {out}");
        }
    }
}

#[test]
fn landlock_refuses_a_deny_read_match_inside_a_writable_root_and_runs_one_outside() {
    let _tmp = tmp_lock();
    for uid in users() {
        let t = AgentTree::new("agent-landlock", uid);
        let policy = agent_policy(&t.s.0, "landlock", &t.extra, false);
        let marker = t.ws.join("ran");
        let o = run_as(
            uid,
            &t.ws,
            &t.env(),
            true,
            &[
                "--policy",
                policy.to_str().unwrap(),
                "--",
                "touch",
                marker.to_str().unwrap(),
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(122), "uid {uid}: {err}");
        assert_eq!(err.lines().count(), 1, "uid {uid}: {err}");
        assert!(err.starts_with("dcjail: sandbox-unavailable: "), "{err}");
        assert!(
            err.contains("/.env`") && err.contains("--backend bwrap"),
            "{err}"
        );
        assert!(!marker.exists(), "uid {uid}: the command ran");

        // deny_read outside the writable roots is enforced, and new files
        // in every writable root stay readable.
        let p = t.s.0.join("outside.toml");
        std::fs::write(
            &p,
            format!(
                "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                 [sandbox]\nmode = \"workspace-write\"\nbackend = \"landlock\"\n\
                 [sandbox.filesystem]\ndeny_read = [\"~/.ssh\", \"~/.aws\"]\n\
                 allow_write = [{:?}]\nprotect_defaults = false\n",
                t.extra
            ),
        )
        .unwrap();
        let o = run_as(
            uid,
            &t.ws,
            &t.env(),
            true,
            &[
                "--policy",
                p.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                &t.script(),
            ],
        );
        let out = text(&o);
        assert!(out.contains("CASE-RAN"), "uid {uid}: {out}");
        for d in t.dirs() {
            assert!(
                out.contains(&format!("READ-BACK {}\n", d.display())),
                "uid {uid}: {out}"
            );
        }
        assert!(
            !out.contains(SECRETS[5]) && !out.contains(SECRETS[6]),
            "{out}"
        );
        assert!(
            out.contains(SECRETS[0]),
            "uid {uid}: .env is not denied here: {out}"
        );
    }
}

/// A read-only policy denying `private/key`, run by `uid` under `backend`.
fn read_only(uid: u32, s: &Scratch, backend: Option<&str>, deny: &[&Path], script: &str) -> Output {
    let ws = s.0.join("ws");
    let home = s.0.join("home");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let mut args: Vec<String> = Vec::new();
    if let Some(b) = backend {
        args.extend(["--backend".into(), b.into()]);
        for d in deny {
            args.extend(["--deny-read".into(), d.display().to_string()]);
        }
        args.push("--".into());
    }
    args.extend(["sh".into(), "-c".into(), format!("{script}\necho CASE-RAN")]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run_as(uid, &ws, &[("HOME", &home)], backend.is_some(), &a)
}

#[test]
fn an_existing_hard_link_reads_nothing_on_either_backend() {
    for uid in users() {
        let s = Scratch::new("hardlink");
        let key = put(&s.join("private/key"), "HARD-LINKED-SECRET");
        // Another name in the workspace, one beside the secret, one in the
        // home directory.
        for other in ["ws/notes.txt", "private/alias", "home/backup"] {
            std::fs::create_dir_all(s.0.join(other).parent().unwrap()).unwrap();
            std::fs::hard_link(&key, s.0.join(other)).unwrap();
        }
        chown_tree(&s.0, uid);
        let script = format!(
            "cat notes.txt; cat '{p}/private/alias'; cat '{p}/home/backup'; cat '{p}/private/key'",
            p = s.0.display()
        );
        let o = read_only(uid, &s, None, &[], &script);
        assert_eq!(
            text(&o).matches("HARD-LINKED-SECRET").count(),
            4,
            "uid {uid} control: {}",
            text(&o)
        );
        for b in ["bwrap", "landlock"] {
            let o = read_only(uid, &s, Some(b), &[&key], &script);
            let out = text(&o);
            assert!(out.contains("CASE-RAN"), "{b} uid {uid}: {out}");
            assert!(!out.contains("HARD-LINKED-SECRET"), "{b} uid {uid}: {out}");
            // What the names are is said by explain.
            let v = explain(uid, &s, b, &key);
            let names = &v["plan"]["filesystem"]["hard_links"]["linked"][0]["names"];
            assert_eq!(names.as_array().map(Vec::len), Some(4), "{b}: {v}");
        }
    }
}

fn explain(uid: u32, s: &Scratch, backend: &str, deny: &Path) -> serde_json::Value {
    let o = run_as(
        uid,
        &s.0.join("ws"),
        &[("HOME", &s.0.join("home"))],
        true,
        &[
            "explain",
            "--backend",
            backend,
            "--deny-read",
            deny.to_str().unwrap(),
            "--",
            "true",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A directory on `key`'s filesystem that no hard-link search of dcjail's
/// covers (not under /tmp, /var/tmp, the workspace or the home): the
/// scratch tree itself, unless it lies under /var/tmp (a checkout under
/// /tmp puts it there), then one made in /var for the case (root only).
struct Far(PathBuf, bool);

impl Far {
    fn new(s: &Scratch, key: &Path) -> Option<Far> {
        if !s.0.starts_with("/var/tmp") && !s.0.starts_with("/tmp") {
            return Some(Far(s.0.join("elsewhere"), false));
        }
        // SAFETY: geteuid never fails.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = PathBuf::from(format!(
            "/var/dcjail-test-far-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir(&d).ok()?;
        use std::os::unix::fs::MetadataExt;
        let same = std::fs::metadata(&d).ok()?.dev() == std::fs::metadata(key).ok()?.dev();
        let far = Far(d, true);
        same.then_some(far)
    }
}

impl Drop for Far {
    fn drop(&mut self) {
        // Outside the scratch base: only the one link the case made, and
        // the empty directory, are removed; nothing is walked.
        if self.1 {
            let _ = std::fs::remove_file(self.0.join("hidden"));
            let _ = std::fs::remove_dir(&self.0);
        }
    }
}

#[test]
fn a_file_with_a_name_dcjail_cannot_find_is_refused_naming_it() {
    for uid in users() {
        let s = Scratch::new("lost-link");
        let key = put(&s.join("private/key"), "LOST-LINK-SECRET");
        let far = Far::new(&s, &key);
        if !scratch::require(
            far.is_some(),
            "a directory outside dcjail's link search on the scratch tree's filesystem",
            "run the tests as root (a checkout under /tmp needs one made in /var)",
        ) {
            return;
        }
        let far = far.unwrap();
        std::fs::create_dir_all(&far.0).unwrap();
        std::fs::hard_link(&key, far.0.join("hidden")).unwrap();
        chown_tree(&s.0, uid);
        chown_tree(&far.0, uid);
        let script = format!("cat '{}/hidden'", far.0.display());
        let o = read_only(uid, &s, None, &[], &script);
        assert!(
            text(&o).contains("LOST-LINK-SECRET"),
            "control: {}",
            text(&o)
        );
        for b in ["bwrap", "landlock"] {
            let o = read_only(uid, &s, Some(b), &[&key], &script);
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            assert_eq!(o.status.code(), Some(122), "{b} uid {uid}: {}", text(&o));
            assert!(!text(&o).contains("CASE-RAN"), "{b}: the command ran");
            assert!(err.starts_with("dcjail: sandbox-unavailable: "), "{err}");
            assert!(
                err.contains(&format!("`{}`", key.display()))
                    && err.contains("2 names")
                    && err.contains("found 1"),
                "{b}: {err}"
            );
            // Named in deny_read too, the other name is known: it runs.
            let o = read_only(uid, &s, Some(b), &[&key, &far.0.join("hidden")], &script);
            assert!(text(&o).contains("CASE-RAN"), "{b}: {}", text(&o));
            assert!(!text(&o).contains("LOST-LINK-SECRET"), "{b}: {}", text(&o));
        }
    }
}

/// Rules attach to inodes on landlock: a directory bound over a sibling of
/// the denied one is the denied directory, and granting it would grant the
/// denied path itself. Root only (mount).
#[test]
fn a_bind_mount_beside_a_denied_directory_opens_neither_on_landlock() {
    if !scratch::root("mount") {
        return;
    }
    let s = Scratch::new("bindmount");
    put(&s.join("srv/secret/key"), "BOUND-SECRET");
    std::fs::create_dir_all(s.0.join("srv/public")).unwrap();
    let (secret, public) = (s.0.join("srv/secret"), s.0.join("srv/public"));
    assert!(Command::new("mount")
        .arg("--bind")
        .args([&secret, &public])
        .status()
        .unwrap()
        .success());
    let script = format!(
        "cat '{}/key'; cat '{}/key'",
        secret.display(),
        public.display()
    );
    let o = read_only(0, &s, None, &[], &script);
    assert_eq!(text(&o).matches("BOUND-SECRET").count(), 2, "control");
    let o = read_only(0, &s, Some("landlock"), &[&secret], &script);
    let _ = Command::new("umount").arg(&public).status();
    let out = text(&o);
    assert!(out.contains("CASE-RAN"), "{out}");
    assert!(!out.contains("BOUND-SECRET"), "{out}");
}

/// In workspace-write a run could move or link a denied file to a new name
/// that the next run, same policy, reads. Under bwrap the masked names are
/// mount points, which can be neither renamed nor linked; landlock refuses
/// such a policy. Two runs, the second reading what the first left.
#[test]
fn a_denied_file_cannot_be_renamed_or_linked_away_for_the_next_run() {
    for uid in users() {
        let s = Scratch::new("launder");
        let ws = s.0.join("ws");
        put(&ws.join("secret.key"), "LAUNDER-FILE-SECRET");
        put(&ws.join("private/key"), "LAUNDER-DIR-SECRET");
        chown_tree(&s.0, uid);
        let p = s.0.join("ww.toml");
        let policy = |backend: &str| {
            std::fs::write(
                &p,
                format!(
                    "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                     [sandbox]\nmode = \"workspace-write\"\nbackend = \"{backend}\"\n\
                     [sandbox.filesystem]\nprotect_defaults = false\n\
                     deny_read = [\"secret.key\", \"private\"]\n"
                ),
            )
            .unwrap();
            p.to_str().unwrap().to_string()
        };
        let first = "mv secret.key moved.key; ln secret.key linked.key; \
                     mv private moved-private; ln private/key linked-dir-key; \
                     cp -al private copied-private 2>/dev/null; echo FIRST-RAN";
        let second = "cat moved.key linked.key moved-private/key linked-dir-key \
                      copied-private/key secret.key private/key; echo SECOND-RAN";
        let home = s.0.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let env = [("HOME", home.as_path())];
        // Control: without the sandbox the first run's names read the secret.
        let o = run_as(uid, &ws, &env, false, &["sh", "-c", first]);
        assert!(text(&o).contains("FIRST-RAN"));
        let o = run_as(uid, &ws, &env, false, &["sh", "-c", second]);
        assert!(
            text(&o).contains("LAUNDER-FILE-SECRET"),
            "control: {}",
            text(&o)
        );
        assert!(
            text(&o).contains("LAUNDER-DIR-SECRET"),
            "control: {}",
            text(&o)
        );
        // Put the tree back.
        for n in ["moved.key", "linked.key", "linked-dir-key"] {
            let _ = std::fs::remove_file(ws.join(n));
        }
        let _ = std::fs::remove_dir_all(ws.join("copied-private"));
        std::fs::rename(ws.join("moved-private"), ws.join("private")).unwrap();
        put(&ws.join("secret.key"), "LAUNDER-FILE-SECRET");
        chown_tree(&ws, uid);

        let pol = policy("bwrap");
        let o = run_as(
            uid,
            &ws,
            &env,
            true,
            &["--policy", &pol, "--", "sh", "-c", first],
        );
        assert!(
            text(&o).contains("FIRST-RAN"),
            "bwrap uid {uid}: {}",
            text(&o)
        );
        let o = run_as(
            uid,
            &ws,
            &env,
            true,
            &["--policy", &pol, "--", "sh", "-c", second],
        );
        let out = text(&o);
        assert!(out.contains("SECOND-RAN"), "bwrap uid {uid}: {out}");
        assert!(!out.contains("LAUNDER-"), "bwrap uid {uid}: {out}");
        assert_eq!(
            std::fs::read_to_string(ws.join("secret.key")).unwrap(),
            "LAUNDER-FILE-SECRET"
        );
        assert!(ws.join("private/key").exists() && !ws.join("moved.key").exists());

        let pol = policy("landlock");
        let o = run_as(
            uid,
            &ws,
            &env,
            true,
            &["--policy", &pol, "--", "sh", "-c", first],
        );
        assert_eq!(
            o.status.code(),
            Some(122),
            "landlock uid {uid}: {}",
            text(&o)
        );
        assert!(!text(&o).contains("FIRST-RAN"));
        assert!(text(&o).contains("secret.key") || text(&o).contains("private"));
    }
}

/// The parent of a denied file inside a writable root cannot be renamed
/// under bwrap: were it renamed (`mv sub sub2`), the next run's literal
/// `deny_read = ["sub/key"]` would name nothing and `sub2/key` would read
/// the secret. The directories on the way are pinned (mount points).
#[test]
fn bwrap_the_parent_of_a_denied_file_cannot_be_renamed_for_the_next_run() {
    let s = Scratch::new("parent-rename");
    let ws = s.0.join("ws");
    put(&ws.join("sub/key"), "PARENT-RENAME-SECRET");
    let home = s.0.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let p = s.0.join("ww.toml");
    std::fs::write(
        &p,
        "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
         [sandbox]\nmode = \"workspace-write\"\nbackend = \"bwrap\"\n\
         [sandbox.filesystem]\nprotect_defaults = false\ndeny_read = [\"sub/key\"]\n",
    )
    .unwrap();
    let env = [("HOME", home.as_path())];
    let pol = p.to_str().unwrap();
    let o = run_as(
        0,
        &ws,
        &env,
        true,
        &[
            "--policy",
            pol,
            "--",
            "sh",
            "-c",
            "mv sub sub2; echo FIRST-RAN",
        ],
    );
    assert!(text(&o).contains("FIRST-RAN"), "{}", text(&o));
    let o = run_as(
        0,
        &ws,
        &env,
        true,
        &[
            "--policy",
            pol,
            "--",
            "sh",
            "-c",
            "cat sub2/key; echo SECOND-RAN",
        ],
    );
    assert!(text(&o).contains("SECOND-RAN"), "{}", text(&o));
    assert!(!text(&o).contains("PARENT-RENAME-SECRET"), "{}", text(&o));
    assert!(ws.join("sub/key").exists(), "the parent was renamed");
}

/// Another user's files can never make this user's run refuse: on landlock
/// a `**/.env` match inside a writable root (`/tmp`) refuses, but another
/// user's `.env` in /tmp is not this user's file and is not matched; nor
/// does a directory of this user's that it cannot list make the walk fail.
/// The control: the same `.env`, owned by this user, is refused.
#[test]
fn another_users_files_in_tmp_never_make_a_run_refuse() {
    let _tmp = tmp_lock();
    if !scratch::root("make another user's files") {
        return;
    }
    for (uid, other) in [(0, 65534), (65534, 0)] {
        let s = Scratch::new("foreign");
        let ws = s.0.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        chown_tree(&s.0, uid);
        let p = s.0.join("ww.toml");
        std::fs::write(
            &p,
            "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
             [sandbox]\nmode = \"workspace-write\"\nbackend = \"landlock\"\n\
             [sandbox.filesystem]\nprotect_defaults = false\ndeny_read = [\"**/.env\"]\n",
        )
        .unwrap();
        let tag = format!("foreign-{}-{uid}", std::process::id());
        let theirs = scratch::fresh_in_tmp(&tag, other);
        put(&theirs.join("proj/.env"), "THEIR-ENV");
        chown_tree(&theirs, other);
        // A directory of this user's it cannot list (root lists anything).
        let unlistable = scratch::fresh_in_tmp(&format!("{tag}-closed"), uid);
        if uid != 0 {
            put(&unlistable.join("deep/.env"), "MY-HIDDEN-ENV");
            chown_tree(&unlistable, uid);
        }
        std::fs::set_permissions(&unlistable, std::fs::Permissions::from_mode(0o311)).unwrap();
        // Removed however the test ends, the closed one reopened first.
        let _guard = TmpDirs(vec![theirs.clone(), unlistable.clone()]);
        let run = || {
            run_as(
                uid,
                &ws,
                &[("HOME", s.0.as_path())],
                true,
                &[
                    "--policy",
                    p.to_str().unwrap(),
                    "--",
                    "sh",
                    "-c",
                    "echo CASE-RAN",
                ],
            )
        };
        let o = run();
        assert_eq!(o.status.code(), Some(0), "uid {uid}: {}", text(&o));
        assert!(text(&o).contains("CASE-RAN"));
        // Control: the same file, this user's, is a deny_read match inside
        // the writable /tmp, which landlock refuses.
        let mine = scratch::fresh_in_tmp(&format!("{tag}-mine"), uid);
        let _guard2 = TmpDirs(vec![mine.clone()]);
        put(&mine.join("proj/.env"), "MY-ENV");
        chown_tree(&mine, uid);
        let o = run();
        assert_eq!(
            o.status.code(),
            Some(122),
            "uid {uid} control: {}",
            text(&o)
        );
        assert!(text(&o).contains(&mine.join("proj/.env").display().to_string()));
    }
}

struct TmpDirs(Vec<PathBuf>);

impl Drop for TmpDirs {
    fn drop(&mut self) {
        for d in &self.0 {
            let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755));
            scratch::remove(d);
        }
    }
}
