//! A terminal for the real-work suite: one tmux server on a private socket
//! in a scratch dir, running as the test's user, with one detached session
//! whose screen the test reads and whose keys it types. The server is
//! killed when the value is dropped.
#![allow(dead_code)]

use crate::realwork::{Env, User};
use crate::scratch;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

pub struct Tmux {
    sock: PathBuf,
    user: User,
    env: Env,
    pid: Option<i32>,
}

/// Quotes one word for sh.
pub fn quote(w: &str) -> String {
    format!("'{}'", w.replace('\'', "'\\''"))
}

pub fn quote_all(words: &[OsString]) -> String {
    words
        .iter()
        .map(|w| quote(&w.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Tmux {
    /// A session of `cols`x`rows` in `cwd` running `command` (a shell
    /// command line). `dir` holds the socket and belongs to `user`.
    pub fn start(
        dir: &Path,
        user: User,
        env: &Env,
        cwd: &Path,
        cols: u16,
        rows: u16,
        command: &str,
    ) -> Tmux {
        let mut env = env.clone();
        env.set("SHELL", "/bin/sh");
        let mut t = Tmux {
            sock: dir.join("tmux.sock"),
            user,
            env,
            pid: None,
        };
        let o = t.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "rw",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            "-c",
            &cwd.display().to_string(),
            command,
        ]);
        assert!(
            o.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let pid = t.tmux(&["display-message", "-p", "#{pid}"]);
        t.pid = String::from_utf8_lossy(&pid.stdout).trim().parse().ok();
        t
    }

    fn tmux(&self, args: &[&str]) -> Output {
        let mut c = scratch::user_command(self.user == User::Nobody, "tmux");
        self.env.apply(&mut c);
        c.arg("-S")
            .arg(&self.sock)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Keys by tmux name (`j`, `Enter`, `C-z`, `Escape`), one at a time.
    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            let o = self.tmux(&["send-keys", "-t", "rw", k]);
            assert!(o.status.success(), "send-keys {k}");
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    /// Text typed as is.
    pub fn type_text(&self, text: &str) {
        let o = self.tmux(&["send-keys", "-t", "rw", "-l", text]);
        assert!(o.status.success(), "send-keys -l");
    }

    /// A command line and Enter.
    pub fn line(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "rw"]).stdout).into_owned()
    }

    /// The screen and its scrollback.
    pub fn history(&self) -> String {
        String::from_utf8_lossy(
            &self
                .tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", "rw"])
                .stdout,
        )
        .into_owned()
    }

    /// Polls the scrollback until `pred` holds; returns it either way, with
    /// whether it held.
    pub fn wait(&self, secs: f64, pred: impl Fn(&str) -> bool) -> (bool, String) {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        loop {
            let h = self.history();
            if pred(&h) {
                return (true, h);
            }
            if Instant::now() > end {
                return (false, h);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Polls the visible screen.
    pub fn wait_screen(&self, secs: f64, pred: impl Fn(&str) -> bool) -> (bool, String) {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        loop {
            let h = self.screen();
            if pred(&h) {
                return (true, h);
            }
            if Instant::now() > end {
                return (false, h);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn resize(&self, cols: u16, rows: u16) {
        let o = self.tmux(&[
            "resize-window",
            "-t",
            "rw",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ]);
        assert!(
            o.status.success(),
            "resize-window: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
        // The server's pane processes get SIGHUP from kill-server; the
        // server itself is killed by pid if it is still there.
        if let Some(pid) = self.pid {
            std::thread::sleep(Duration::from_millis(100));
            let ours = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(&*self.sock.to_string_lossy()))
                .unwrap_or(false);
            if ours {
                // SAFETY: kill(2) on our own server's pid, checked just above.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}
