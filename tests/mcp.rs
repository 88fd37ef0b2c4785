//! A stdio MCP server wrapped in dcjail, as `.mcp.json` would start it
//! (`"command": "dcjail", "args": ["--", …]`): a real JSON-RPC exchange
//! (initialize, tools/list, tools/call, shutdown by closing stdin) over
//! dcjail's stdin and stdout, on every launch path. stdout carries exactly
//! the server's messages, byte for byte; the sandbox holds (the server's
//! write is refused, and lands without the sandbox); SIGTERM sent to
//! dcjail reaches the server, and the server's exit status is dcjail's.

#[path = "support/scratch.rs"]
mod scratch;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::Duration;

use scratch::exe as bin;

fn server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/server.py")
}

/// The launch paths: each backend, and the sandbox off (dcjail becomes the
/// server with a plain execve).
const LAUNCHES: &[&[&str]] = &[
    &["--backend", "bwrap"],
    &["--backend", "landlock"],
    &["--no-sandbox"],
];

struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    /// Every byte read from stdout, in order.
    seen: Vec<u8>,
    /// The messages the protocol expects, in order, as they were read.
    expected: Vec<u8>,
    last: Vec<u8>,
}

impl Session {
    fn start(dir: &Path, flags: &[&str], env: &[(&str, &str)]) -> Session {
        let mut c = Command::new(bin());
        c.args(flags)
            .arg("--")
            .arg("/usr/bin/python3")
            .arg(server())
            .current_dir(dir)
            .env("PYTHONIOENCODING", "utf-8")
            // stdout buffered whatever the caller's environment says: the
            // server's SIGTERM note must hold there too (a handler that
            // wrote to it mid-flush failed with a reentrant call).
            .env_remove("PYTHONUNBUFFERED")
            .env_remove("DCJAIL_POLICY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().unwrap();
        let stdin = child.stdin.take();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = channel();
        std::thread::spawn(move || loop {
            let mut line = Vec::new();
            match out.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            }
        });
        Session {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            expected: Vec::new(),
            last: Vec::new(),
        }
    }

    fn send(&mut self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).unwrap();
        line.push(b'\n');
        let w = self.stdin.as_mut().unwrap();
        w.write_all(&line).unwrap();
        w.flush().unwrap();
    }

    /// The next line the server wrote, parsed; it must be one whole JSON
    /// message ending in a newline.
    fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|e| {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let err = stderr_of(&mut self.child);
                match e {
                    RecvTimeoutError::Timeout => {
                        panic!("no answer from the server within 20 s; stderr: {err}")
                    }
                    RecvTimeoutError::Disconnected => panic!(
                        "the server's stdout reached its end before an answer; stderr: {err}"
                    ),
                }
            });
        self.seen.extend_from_slice(&line);
        assert_eq!(
            line.last(),
            Some(&b'\n'),
            "a message not ending in a newline"
        );
        let v = serde_json::from_slice(&line)
            .unwrap_or_else(|e| panic!("not one JSON message ({e}): {line:?}"));
        self.last = line;
        v
    }

    /// A request and its response, which must carry the request's id.
    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let r = self.recv();
        assert_eq!(r["jsonrpc"], "2.0");
        assert_eq!(r["id"], id, "{r}");
        self.expected.extend_from_slice(&self.last.clone());
        r["result"].clone()
    }

    /// Closes stdin (MCP's stdio shutdown) and returns the exit status.
    fn shutdown(mut self) -> (Option<i32>, Vec<u8>, String) {
        drop(self.stdin.take());
        let status = wait(&mut self.child);
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.seen.extend(line);
        }
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        assert!(
            self.seen == self.expected,
            "stdout is not exactly the server's messages: {} bytes read, {} expected; after them: {:?}",
            self.seen.len(),
            self.expected.len(),
            String::from_utf8_lossy(self.seen.get(self.expected.len()..).unwrap_or(&[]))
        );
        (status, self.seen, err)
    }
}

/// What is left on the child's stderr, read for at most 5 s (a process
/// still holding it open does not hang the report of a failure).
fn stderr_of(child: &mut Child) -> String {
    let Some(mut e) = child.stderr.take() else {
        return String::new();
    };
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
        let _ = tx.send(err);
    });
    rx.recv_timeout(Duration::from_secs(5))
        .unwrap_or_else(|_| "(still open after 5 s)".into())
}

fn wait(child: &mut Child) -> Option<i32> {
    for _ in 0..400 {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("dcjail did not exit");
}

fn initialize(s: &mut Session) {
    let r = s.call(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "dcjail-tests", "version": "0"},
        }),
    );
    assert_eq!(r["serverInfo"]["name"], "dcjail-test-server");
    assert_eq!(r["protocolVersion"], "2025-06-18");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
}

fn tool(s: &mut Session, id: u64, name: &str, args: Value) -> Value {
    s.call(id, "tools/call", json!({"name": name, "arguments": args}))
}

fn text(r: &Value) -> &str {
    r["content"][0]["text"].as_str().unwrap()
}

#[test]
fn an_mcp_exchange_through_dcjail_is_byte_clean_and_the_sandbox_holds() {
    let root = scratch::fresh("mcp-exchange");
    let target = root.join("written-by-server.txt");
    let odd =
        "quotes \" ' \\ and\nnewlines\ttabs, UTF-8 é ✓ 日本 \u{1f600}, a NUL \u{0} and \u{7f}";
    let big: String = "0123456789abcdef".repeat(16 * 1024);
    for flags in LAUNCHES {
        let mut s = Session::start(&root, flags, &[("MCP_EXIT_STATUS", "7")]);
        initialize(&mut s);
        let tools = s.call(2, "tools/list", json!({}));
        assert_eq!(tools["tools"].as_array().unwrap().len(), 3);
        assert_eq!(text(&tool(&mut s, 3, "echo", json!({"text": odd}))), odd);
        assert_eq!(text(&tool(&mut s, 4, "echo", json!({"text": big}))), big);
        let env = tool(&mut s, 5, "env", json!({}));
        let wrote = tool(&mut s, 6, "write", json!({"path": target}));
        let (status, seen, err) = s.shutdown();
        assert_eq!(
            status,
            Some(7),
            "{flags:?}: the server's status is dcjail's: {err}"
        );
        assert!(err.is_empty(), "{flags:?}: stderr: {err}");
        assert!(seen.iter().filter(|b| **b == b'\n').count() == 6);
        if flags[0] == "--no-sandbox" {
            // Control: without the sandbox the server's write lands.
            assert_eq!(text(&env), "DCJAIL=1 DCJAIL_NETWORK=full");
            assert_eq!(wrote["isError"], false, "{wrote}");
            assert!(target.exists());
        } else {
            assert_eq!(text(&env), "DCJAIL=1 DCJAIL_NETWORK=none", "{flags:?}");
            assert_eq!(wrote["isError"], true, "{flags:?}: {wrote}");
            assert!(
                !target.exists(),
                "{flags:?}: the sandboxed server wrote outside"
            );
        }
    }
    scratch::remove(&root);
}

#[test]
fn sigterm_to_dcjail_reaches_the_mcp_server_and_its_status_passes_through() {
    let root = scratch::fresh("mcp-sigterm");
    for flags in LAUNCHES {
        eprintln!("launch: {flags:?}");
        // The server handles SIGTERM: it says so on stdout, exits 42.
        let mut s = Session::start(&root, flags, &[]);
        initialize(&mut s);
        let pid = s.child.id() as i32;
        // SAFETY: a signal to our own child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let note = s.recv();
        assert_eq!(note["method"], "notifications/message", "{flags:?}");
        assert_eq!(note["params"]["data"], "got SIGTERM");
        let raw = s.last.clone();
        s.expected.extend(raw);
        let (status, _, err) = s.shutdown();
        assert_eq!(status, Some(42), "{flags:?}: {err}");

        // The server does not handle it: it dies of it, 128 + 15.
        let mut s = Session::start(&root, flags, &[("MCP_TERM", "default")]);
        initialize(&mut s);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) }, 0);
        // The signal alone ends the run: stdin stays open until dcjail has
        // exited, since a server that saw stdin close first would exit 0
        // before dcjail's forwarding (a moment later, under load) reached it.
        let ended = wait(&mut s.child);
        let (status, _, _) = s.shutdown();
        assert_eq!(status, ended);
        let want = if flags[0] == "--no-sandbox" {
            // dcjail became the server (plain execve): the caller sees the
            // signal itself, as without dcjail.
            None
        } else {
            Some(143)
        };
        assert_eq!(status, want, "{flags:?}");
    }
    scratch::remove(&root);
}
