//! Credentials the proxy adds on the wire (`[[sandbox.network.credentials]]`),
//! through the real binary on bwrap (landlock refuses the allowlist): a
//! loopback HTTPS origin with its own test CA (the policy's `upstream_ca`)
//! records every request head it gets; the command makes real requests
//! with curl and python's urllib, and they arrive with the credential,
//! while nothing the command can see — its environment, /proc/self/environ,
//! the CA bundle, the responses, the secret file — holds the secret. Each
//! attack runs first without the feature or without dcjail (it works
//! there), then under dcjail (it does not).
#![cfg(target_os = "linux")]

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

#[path = "support/pkg_index.rs"]
mod pkg_index;
#[path = "support/realwork.rs"]
mod realwork;
#[path = "support/scratch.rs"]
mod scratch;
use scratch::Dir;

const SECRET: &str = "s3cr3t-7b1e9c04d2aa5f60";
const FILE_SECRET: &str = "f1le-9d2c4b7a0e13";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A test CA and a leaf for `localhost` and 127.0.0.1 signed by it.
struct Pki {
    ca_pem: String,
    leaf: CertificateDer<'static>,
    key: Vec<u8>,
}

fn pki() -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name = rcgen::DistinguishedName::new();
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "dcjail credentials test CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    leaf.distinguished_name = rcgen::DistinguishedName::new();
    leaf.distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    let leaf = leaf.signed_by(&key, &ca, &ca_key).unwrap();
    Pki {
        ca_pem: pem(ca.der()),
        leaf: leaf.der().clone(),
        key: key.serialize_der(),
    }
}

fn pem(der: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::new();
    for c in der.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            b64.push(if i <= c.len() {
                T[((n >> (18 - 6 * i)) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for l in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(l).unwrap());
        out.push('\n');
    }
    out + "-----END CERTIFICATE-----\n"
}

/// A loopback origin (HTTPS with `pki`, or plain HTTP): answers every
/// request head it reads on a connection (pipelined ones too, until one
/// says `Connection: close`) with `ORIGIN-OK <path>`, and records each head.
struct Origin {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Origin {
    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
    fn head_for(&self, path: &str) -> Option<String> {
        self.heads().into_iter().find(|h| {
            h.starts_with(&format!("GET {path} ")) || h.starts_with(&format!("POST {path} "))
        })
    }
}

fn origin(tls: Option<&Pki>) -> Origin {
    origin_serving(tls, Serve::Echo)
}

/// What an origin answers with.
#[derive(Clone)]
enum Serve {
    /// `ORIGIN-OK <path>`, to every request.
    Echo,
    /// `git http-backend` over the bare repositories under the directory.
    Git(PathBuf),
    /// The files under the directory (`index.html` for a directory).
    Files(PathBuf),
}

/// [`origin`], answering as `how` says; `Git` and `Files` only to requests
/// carrying `Authorization: Basic base64(USER:SECRET)` (401 otherwise).
fn origin_serving(tls: Option<&Pki>, how: Serve) -> Origin {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let h2 = heads.clone();
    let cfg = tls.map(|p| {
        Arc::new(
            rustls::ServerConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![p.leaf.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(p.key.clone())),
            )
            .unwrap(),
        )
    });
    thread::spawn(move || {
        for s in l.incoming().take(200) {
            let Ok(s) = s else { continue };
            let h3 = h2.clone();
            let cfg = cfg.clone();
            let how = how.clone();
            thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                match cfg {
                    Some(c) => {
                        let Ok(conn) = rustls::ServerConnection::new(c) else {
                            return;
                        };
                        serve(rustls::StreamOwned::new(conn, s), &h3, &how);
                    }
                    None => serve(s, &h3, &how),
                }
            });
        }
    });
    Origin { port, heads }
}

fn serve(mut s: impl Read + Write, heads: &Mutex<Vec<String>>, how: &Serve) {
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    for _ in 0..16 {
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match s.read(&mut b) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&b[..n]),
            }
        };
        let head = text(&buf[..end]);
        buf.drain(..end);
        let len: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
            .unwrap_or(0);
        while buf.len() < len {
            match s.read(&mut b) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&b[..n]),
            }
        }
        let body: Vec<u8> = buf.drain(..len).collect();
        heads.lock().unwrap().push(head.clone());
        let answer = match how {
            Serve::Echo => None,
            _ if !authorized(&head) => Some(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"t\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()),
            Serve::Git(root) => Some(git_backend(root, &head, &body)),
            Serve::Files(root) => Some(file(root, &head)),
        };
        if let Some(a) = answer {
            let _ = s.write_all(&a);
            let _ = s.flush();
            return;
        }
        let path = head.split(' ').nth(1).unwrap_or("").to_string();
        // `/302/HOST:PORT/REST` redirects to https://HOST:PORT/REST.
        if let Some(to) = path.strip_prefix("/302/") {
            let _ = write!(
                s,
                "HTTP/1.1 302 Found\r\nLocation: https://{to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = s.flush();
            return;
        }
        let body = format!("ORIGIN-OK {path}\n");
        let close = head.to_ascii_lowercase().contains("connection: close");
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{}\r\n{body}",
            body.len(),
            if close { "Connection: close\r\n" } else { "" }
        );
        let _ = s.flush();
        if close {
            return;
        }
    }
}

/// One request through `git http-backend` (CGI), as an HTTP/1.1 response
/// that ends at close.
fn git_backend(root: &Path, head: &str, body: &[u8]) -> Vec<u8> {
    let mut first = head.lines().next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("GET");
    let target = first.next().unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let header = |n: &str| {
        head.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(n).then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    };
    let mut child = Command::new("git")
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REMOTE_USER", "agent")
        .env("REQUEST_METHOD", method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "safe.directory")
        .env("GIT_CONFIG_VALUE_0", "*")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap().stdout;
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    let split = split.or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let (i, n) = split.unwrap_or((0, 0));
    let cgi = text(&out[..i]);
    let mut status = "200 OK".to_string();
    let mut resp = String::new();
    for l in cgi.lines() {
        match l.split_once(':') {
            Some((k, v)) if k.eq_ignore_ascii_case("status") => status = v.trim().to_string(),
            Some((k, v)) => resp.push_str(&format!("{k}:{v}\r\n")),
            None => {}
        }
    }
    let mut r = format!("HTTP/1.1 {status}\r\n{resp}Connection: close\r\n\r\n").into_bytes();
    r.extend_from_slice(&out[i + n..]);
    r
}

/// Basic authentication with the secret as the password (any user name).
fn authorized(head: &str) -> bool {
    ["x-access-token", "__token__"].iter().any(|user| {
        head.contains(&format!(
            "Authorization: Basic {}\r\n",
            b64(format!("{user}:{SECRET}").as_bytes())
        ))
    })
}

/// A file under `root` (a directory's `index.html`), or 404.
fn file(root: &Path, head: &str) -> Vec<u8> {
    let target = head.split(' ').nth(1).unwrap_or("/");
    let rel = target
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .trim_start_matches('/');
    let mut p = root.join(rel);
    if p.is_dir() {
        p = p.join("index.html");
    }
    match std::fs::read(&p) {
        Ok(b) if !rel.contains("..") => {
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                if p.extension().is_some_and(|e| e == "html") {
                    "text/html"
                } else {
                    "application/octet-stream"
                },
                b.len()
            )
            .into_bytes();
            r.extend_from_slice(&b);
            r
        }
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    }
}

fn b64(data: &[u8]) -> String {
    let p = pem(data);
    p.lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<String>()
}

/// The scratch tree of one test: the test CA file, the secret file and
/// the policy, readable by uid 65534.
struct Setup {
    dir: Dir,
    ca: PathBuf,
    secret_file: PathBuf,
}

fn setup(pki: &Pki) -> Setup {
    let dir = Dir::new("creds");
    let ca = dir.join("test-ca.pem");
    std::fs::write(&ca, &pki.ca_pem).unwrap();
    let secret_file = dir.join("api-key");
    std::fs::write(&secret_file, format!("{FILE_SECRET}\n")).unwrap();
    Setup {
        dir,
        ca,
        secret_file,
    }
}

/// A policy binding `Authorization: Bearer ${env:TEST_API_TOKEN}` (also
/// on plain HTTP) and `X-Api-Key: ${file:…}` to `localhost` (any port), with `localhost` and
/// 127.0.0.1 allowed; `pass` tries to keep the variable (it must not).
fn policy(s: &Setup, with_credentials: bool) -> PathBuf {
    let mut p = String::from(
        "[permission]\napproval = \"granted\"\n[sandbox.network]\nmode = \"allowlist\"\nallow_domains = [\"localhost\", \"127.0.0.1\"]\n",
    );
    if with_credentials {
        p.push_str(&format!(
            "[[sandbox.network.credentials]]\ndomain = \"localhost\"\nheader = \"Authorization\"\nvalue = \"Bearer ${{env:TEST_API_TOKEN}}\"\nupstream_ca = \"{}\"\nplain_http = true\n\n[[sandbox.network.credentials]]\ndomain = \"localhost\"\nheader = \"X-Api-Key\"\nvalue = \"${{file:{}}}\"\nupstream_ca = \"{}\"\n",
            s.ca.display(),
            s.secret_file.display(),
            s.ca.display()
        ));
    }
    p.push_str("[sandbox.env]\npass = [\"TEST_API_TOKEN\"]\n");
    let f = s.dir.join(if with_credentials {
        "creds.toml"
    } else {
        "plain.toml"
    });
    std::fs::write(&f, p).unwrap();
    f
}

/// `dcjail --policy P --backend B -- sh -c SCRIPT` with the secret in
/// dcjail's environment (twice: under its bound name and a copy).
fn run(s: &Setup, policy: &Path, backend: &str, script: &str, nobody: bool) -> Output {
    let mut cmd = scratch::user_command(nobody, scratch::exe());
    cmd.args(["--policy"])
        .arg(policy)
        .args(["--backend", backend, "--", "sh", "-c", script])
        .current_dir(s.dir.path())
        .env_remove("DCJAIL_POLICY")
        .env("HOME", "/nonexistent")
        .env("TEST_API_TOKEN", SECRET)
        .env("INNOCENT_LOOKING", SECRET)
        .stdin(Stdio::null());
    for k in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
        "SSL_CERT_FILE",
    ] {
        cmd.env_remove(k);
    }
    scratch::output_within(cmd, 120)
}

fn ready() -> bool {
    scratch::bwrap_works() && scratch::need("curl") && scratch::need("python3")
}

const CURL: &str = "curl -sS --noproxy '' --max-time 20";

fn assert_no_secret(what: &str, out: &Output) {
    for (name, stream) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let t = text(stream);
        assert!(!t.contains(SECRET), "{what}: the secret is in {name}:\n{t}");
        assert!(
            !t.contains(FILE_SECRET),
            "{what}: the file secret is in {name}:\n{t}"
        );
    }
}

#[test]
fn curl_and_python_get_the_credential_upstream_and_never_see_it() {
    if !ready() {
        return;
    }
    let pki = pki();
    for &nobody in scratch::users() {
        let s = setup(&pki);
        let https = origin(Some(&pki));
        let http = origin(None);
        let p = policy(&s, true);
        let script = format!(
            "{CURL} https://localhost:{hp}/curl; \
             {CURL} -d 'payload=1' https://localhost:{hp}/curl-post; \
             {CURL} http://localhost:{pp}/plain; \
             {CURL} -x \"$ALL_PROXY\" https://localhost:{hp}/socks; \
             {CURL} -X TRACE https://localhost:{hp}/trace; \
             {CURL} -X TRACE http://localhost:{pp}/trace-plain; \
             python3 -c 'import urllib.request as u; print(u.urlopen(\"https://localhost:{hp}/py\").read().decode().strip())'; \
             echo ENV-BEGIN; env; echo ENV-END; \
             tr '\\0' '\\n' < /proc/self/environ; \
             echo BUNDLE \"$SSL_CERT_FILE\"; cat \"$SSL_CERT_FILE\"; \
             ls -A \"$(dirname \"$SSL_CERT_FILE\")\"; \
             for v in NODE_EXTRA_CA_CERTS REQUESTS_CA_BUNDLE PIP_CERT CARGO_HTTP_CAINFO GIT_SSL_CAINFO CURL_CA_BUNDLE; do \
               eval \"test \\\"\\${{$v}}\\\" = \\\"$SSL_CERT_FILE\\\"\" && echo \"same $v\"; done; \
             cat {secret} 2>/dev/null || echo 'secret file unreadable'",
            hp = https.port,
            pp = http.port,
            secret = s.secret_file.display()
        );
        let out = run(&s, &p, "bwrap", &script, nobody);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "nobody={nobody}: {}\n{stdout}",
            text(&out.stderr)
        );
        for want in [
            "ORIGIN-OK /curl\n",
            "ORIGIN-OK /curl-post\n",
            "ORIGIN-OK /plain\n",
            "ORIGIN-OK /socks\n",
            "TRACE would echo the credential back",
            "ORIGIN-OK /trace-plain\n",
            "ORIGIN-OK /py\n",
            "secret file unreadable",
        ] {
            assert!(
                stdout.contains(want),
                "nobody={nobody}: no `{want}` in\n{stdout}"
            );
        }
        for v in [
            "NODE_EXTRA_CA_CERTS",
            "REQUESTS_CA_BUNDLE",
            "PIP_CERT",
            "CARGO_HTTP_CAINFO",
            "GIT_SSL_CAINFO",
            "CURL_CA_BUNDLE",
        ] {
            assert!(stdout.contains(&format!("same {v}\n")), "{v}: {stdout}");
        }
        assert_no_secret("inside", &out);
        assert!(!stdout.contains("TEST_API_TOKEN="), "{stdout}");
        assert!(!stdout.contains("INNOCENT_LOOKING="), "{stdout}");
        assert!(!stdout.contains("PRIVATE KEY"), "{stdout}");
        // TRACE, which answers with the request, never carries it: refused
        // over TLS, sent without it over plain HTTP.
        assert!(
            https.heads().iter().all(|h| !h.starts_with("TRACE")),
            "{:?}",
            https.heads()
        );
        let trace = http
            .heads()
            .into_iter()
            .find(|h| h.starts_with("TRACE /trace-plain"))
            .unwrap();
        assert!(!trace.contains(SECRET), "{trace}");
        // The bundle's directory holds the bundle alone, and is gone after.
        let bundle = stdout
            .lines()
            .find_map(|l| l.strip_prefix("BUNDLE "))
            .unwrap()
            .to_string();
        assert!(stdout.contains("ca-bundle.pem\n"), "{stdout}");
        assert!(!Path::new(&bundle).exists(), "{bundle} left behind");
        // Upstream, each request carried both bound headers.
        for (o, path) in [
            (&https, "/curl"),
            (&https, "/curl-post"),
            (&http, "/plain"),
            (&https, "/socks"),
            (&https, "/py"),
        ] {
            let h = o
                .head_for(path)
                .unwrap_or_else(|| panic!("{path} never arrived: {:?}", o.heads()));
            assert!(
                h.contains(&format!("Authorization: Bearer {SECRET}\r\n")),
                "{path}: {h}"
            );
            // `plain_http` is set for the first binding only: the second
            // never goes in clear.
            if path == "/plain" {
                assert!(!h.contains(FILE_SECRET), "{path}: {h}");
            } else {
                assert!(
                    h.contains(&format!("X-Api-Key: {FILE_SECRET}\r\n")),
                    "{path}: {h}"
                );
            }
        }
    }
}

/// A client in python speaking to the proxy itself: CONNECT to `host`,
/// TLS trusting `$SSL_CERT_FILE` (or `ca`), then `payload` sent in one
/// write; prints what came back.
fn raw_tls_script(
    host: &str,
    port: u16,
    ca: Option<&Path>,
    via_proxy: bool,
    payload: &str,
) -> String {
    let ca = ca.map_or("os.environ['SSL_CERT_FILE']".to_string(), |c| {
        format!("'{}'", c.display())
    });
    format!(
        r#"python3 - <<'EOF'
import os, socket, ssl, base64, urllib.parse
host, port = '{host}', {port}
if {via_proxy}:
    u = urllib.parse.urlparse(os.environ['HTTPS_PROXY'])
    s = socket.create_connection((u.hostname, u.port), timeout=20)
    auth = base64.b64encode(f'{{u.username}}:{{u.password}}'.encode()).decode()
    s.sendall(f'CONNECT {{host}}:{{port}} HTTP/1.1\r\nHost: {{host}}:{{port}}\r\nProxy-Authorization: Basic {{auth}}\r\n\r\n'.encode())
    head = b''
    while b'\r\n\r\n' not in head:
        head += s.recv(1)
else:
    s = socket.create_connection((host, port), timeout=20)
ctx = ssl.create_default_context(cafile={ca})
t = ctx.wrap_socket(s, server_hostname=host)
t.sendall({payload:?}.encode())
out = b''
try:
    while True:
        d = t.recv(65536)
        if not d: break
        out += d
except Exception as e:
    out += f'[{{type(e).__name__}}]'.encode()
print(out.decode(errors='replace'))
EOF"#,
        via_proxy = if via_proxy { "True" } else { "False" },
    )
}

#[test]
fn a_pipelined_second_request_never_reaches_the_origin() {
    if !ready() {
        return;
    }
    let pki = pki();
    let s = setup(&pki);
    let o = origin(Some(&pki));
    let payload = |p: u16| {
        format!(
            "GET /first HTTP/1.1\r\nHost: localhost:{p}\r\n\r\nGET /second HTTP/1.1\r\nHost: localhost:{p}\r\nConnection: close\r\n\r\n"
        )
    };
    // Without dcjail the origin answers both.
    let control = Command::new("sh")
        .args([
            "-c",
            &raw_tls_script("localhost", o.port, Some(&s.ca), false, &payload(o.port)),
        ])
        .output()
        .unwrap();
    assert!(
        text(&control.stdout).contains("ORIGIN-OK /second"),
        "{}",
        text(&control.stdout)
    );
    assert!(o.head_for("/second").is_some());
    for &nobody in scratch::users() {
        let o = origin(Some(&pki));
        let out = run(
            &s,
            &policy(&s, true),
            "bwrap",
            &raw_tls_script("localhost", o.port, None, true, &payload(o.port)),
            nobody,
        );
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(stdout.contains("ORIGIN-OK /first"), "{stdout}");
        assert!(!stdout.contains("/second"), "{stdout}");
        let first = o.head_for("/first").expect("the first request arrived");
        assert!(
            first.contains(&format!("Authorization: Bearer {SECRET}")),
            "{first}"
        );
        assert!(o.head_for("/second").is_none(), "{:?}", o.heads());
        assert_no_secret("pipelined", &out);
    }
}

#[test]
fn a_host_header_naming_another_host_is_refused_on_a_bound_connection() {
    if !ready() {
        return;
    }
    let pki = pki();
    let s = setup(&pki);
    let o = origin(Some(&pki));
    let script = |p: u16| {
        format!("{CURL} -w ' code=%{{http_code}}\\n' -H 'Host: 127.0.0.1:{p}' https://localhost:{p}/other-host")
    };
    // Without the credential feature the tunnel is the client's own: the
    // origin gets the request with the other Host.
    let out = run(
        &s,
        &policy(&s, false),
        "bwrap",
        &format!("{} --cacert {}", script(o.port), s.ca.display()),
        false,
    );
    assert!(
        text(&out.stdout).contains("ORIGIN-OK /other-host"),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let h = o.head_for("/other-host").unwrap();
    assert!(h.contains("Host: 127.0.0.1"), "{h}");
    assert!(!h.contains(SECRET));
    for &nobody in scratch::users() {
        // With it, the proxy refuses the request before it leaves.
        let o = origin(Some(&pki));
        let out = run(&s, &policy(&s, true), "bwrap", &script(o.port), nobody);
        let stdout = text(&out.stdout);
        assert!(stdout.contains("code=421"), "{stdout}{}", text(&out.stderr));
        assert!(stdout.contains("is not localhost:"), "{stdout}");
        assert!(o.heads().is_empty(), "{:?}", o.heads());
        assert_no_secret("host header", &out);
    }
}

#[test]
fn an_allowed_but_unbound_destination_is_tunnelled_without_the_credential() {
    if !ready() {
        return;
    }
    let pki = pki();
    let s = setup(&pki);
    for &nobody in scratch::users() {
        let o = origin(Some(&pki));
        // 127.0.0.1 is allowed and not bound: a plain tunnel, the command's
        // own TLS to the origin (so the test CA, not the run's), no credential.
        let script = format!(
            "{CURL} --cacert {} https://127.0.0.1:{p}/unbound; {CURL} https://localhost:{p}/bound",
            s.ca.display(),
            p = o.port
        );
        let out = run(&s, &policy(&s, true), "bwrap", &script, nobody);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(stdout.contains("ORIGIN-OK /unbound"), "{stdout}");
        assert!(stdout.contains("ORIGIN-OK /bound"), "{stdout}");
        let unbound = o.head_for("/unbound").unwrap();
        assert!(
            !unbound.contains(SECRET) && !unbound.contains(FILE_SECRET),
            "{unbound}"
        );
        assert!(o.head_for("/bound").unwrap().contains(SECRET));
    }
}

#[test]
fn an_origin_with_an_unknown_certificate_is_refused_with_a_502() {
    if !ready() {
        return;
    }
    let trusted = pki();
    let unknown = pki();
    let s = setup(&trusted);
    let o = origin(Some(&unknown));
    // Without dcjail the origin works for a client that trusts its CA.
    let ca2 = s.dir.join("unknown-ca.pem");
    std::fs::write(&ca2, &unknown.ca_pem).unwrap();
    let control = Command::new("sh")
        .args([
            "-c",
            &format!(
                "{CURL} --cacert {} https://localhost:{}/direct",
                ca2.display(),
                o.port
            ),
        ])
        .output()
        .unwrap();
    assert!(
        text(&control.stdout).contains("ORIGIN-OK /direct"),
        "{}",
        text(&control.stderr)
    );
    for &nobody in scratch::users() {
        let before = o.heads().len();
        let script = format!(
            "{CURL} -w ' code=%{{http_code}}\\n' https://localhost:{}/x",
            o.port
        );
        let out = run(&s, &policy(&s, true), "bwrap", &script, nobody);
        let stdout = text(&out.stdout);
        assert!(stdout.contains("code=502"), "{stdout}{}", text(&out.stderr));
        assert!(stdout.contains("TLS to the origin failed"), "{stdout}");
        assert_eq!(stdout.lines().count(), 2, "{stdout}");
        assert_eq!(o.heads().len(), before, "{:?}", o.heads());
        assert_no_secret("unknown CA", &out);
    }
}

#[test]
fn the_run_ca_key_is_nowhere_the_command_can_read() {
    if !ready() {
        return;
    }
    let pki = pki();
    let s = setup(&pki);
    // The search works: it finds a key where there is one.
    std::fs::write(
        s.dir.join("decoy.pem"),
        "-----BEGIN PRIVATE KEY-----\nAAAA\n",
    )
    .unwrap();
    let script = format!(
        "grep -rlI -e '-----BEGIN [A-Z ]*PRIVATE KEY' {} \"$(dirname \"$SSL_CERT_FILE\")\" /tmp/dcjail-ca.* /dev/shm 2>/dev/null; \
         echo searched",
        s.dir.path().display()
    );
    for &nobody in scratch::users() {
        let out = run(&s, &policy(&s, true), "bwrap", &script, nobody);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let found: Vec<&str> = stdout.lines().filter(|l| *l != "searched").collect();
        assert_eq!(
            found,
            vec![s.dir.join("decoy.pem").to_str().unwrap()],
            "{stdout}"
        );
    }
}

#[test]
fn a_missing_secret_refuses_the_run_naming_it_and_nothing_starts() {
    let pki = pki();
    let s = setup(&pki);
    let p = policy(&s, true);
    let mut cmd = Command::new(scratch::exe());
    cmd.arg("--policy")
        .arg(&p)
        .args(["--backend", "bwrap", "--", "touch", "ran"])
        .current_dir(s.dir.path())
        .env_remove("TEST_API_TOKEN")
        .env_remove("DCJAIL_POLICY");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("TEST_API_TOKEN"),
        "{}",
        text(&out.stderr)
    );
    assert!(!s.dir.join("ran").exists());
    // An unreadable secret file: named, nothing started.
    std::fs::remove_file(&s.secret_file).unwrap();
    let out = run(&s, &p, "bwrap", "touch ran", false);
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(s.secret_file.to_str().unwrap()),
        "{}",
        text(&out.stderr)
    );
    assert!(!s.dir.join("ran").exists());
    assert_no_secret("refusal", &out);
}

#[test]
fn bad_credential_entries_are_policy_errors_naming_the_field() {
    let s = Dir::new("creds-bad");
    let cases = [
        (
            "domain = \"*.example.com\"\nheader = \"A\"\nvalue = \"${env:T}\"",
            "credentials[0].domain",
        ),
        (
            "domain = \"example.com\"\nheader = \"Host\"\nvalue = \"${env:T}\"",
            "credentials[0].header",
        ),
        (
            "domain = \"example.com\"\nheader = \"A\"\nvalue = \"Bearer literal\"",
            "credentials[0].value",
        ),
        (
            "domain = \"example.com\"\nheader = \"A\"\nvalue = \"${env:T}\"\ncolour = 1",
            "colour",
        ),
        (
            "domain = \"other.example\"\nheader = \"A\"\nvalue = \"${env:T}\"",
            "credentials[0].domain",
        ),
    ];
    for (entry, want) in cases {
        let f = s.join("p.toml");
        std::fs::write(
            &f,
            format!("[permission]\napproval = \"granted\"\n[sandbox.network]\nallow_domains = [\"example.com\"]\n[[sandbox.network.credentials]]\n{entry}\n"),
        )
        .unwrap();
        let out = scratch::dcjail(s.path(), &["--policy", f.to_str().unwrap(), "--", "true"]);
        assert_eq!(
            out.status.code(),
            Some(125),
            "{entry}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(want),
            "{entry}: {}",
            text(&out.stderr)
        );
    }
    // Credentials with no proxy to add them.
    let f = s.join("p.toml");
    std::fs::write(
        &f,
        "[permission]\napproval = \"granted\"\n[sandbox.network]\nmode = \"none\"\n[[sandbox.network.credentials]]\ndomain = \"example.com\"\nheader = \"A\"\nvalue = \"${env:T}\"\n",
    )
    .unwrap();
    let out = scratch::dcjail(s.path(), &["--policy", f.to_str().unwrap(), "--", "true"]);
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("allowlist"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn explain_names_the_bindings_and_never_a_value() {
    let pki = pki();
    let s = setup(&pki);
    let p = policy(&s, true);
    let mut cmd = Command::new(scratch::exe());
    cmd.arg("explain")
        .arg("--policy")
        .arg(&p)
        .args(["--", "true"])
        .current_dir(s.dir.path())
        .env("TEST_API_TOKEN", SECRET)
        .env_remove("DCJAIL_POLICY");
    let out = cmd.output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("${env:TEST_API_TOKEN}"), "{stdout}");
    assert!(
        stdout.contains("read by sandbox.network.credentials"),
        "{stdout}"
    );
    assert_no_secret("explain", &out);
}

#[test]
fn git_clones_and_pushes_over_https_with_the_token_the_proxy_adds() {
    if !ready() || !scratch::need("git") {
        return;
    }
    let pki = pki();
    let s = setup(&pki);
    let srv = s.dir.join("srv");
    let sh = |script: &str| {
        let o = Command::new("sh")
            .args(["-c", script])
            .current_dir(s.dir.path())
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", s.dir.path())
            .output()
            .unwrap();
        (o.status.success(), text(&o.stdout) + &text(&o.stderr))
    };
    let (ok, out) = sh(&format!(
        "git init -q --bare -b main {srv}/remote.git && git init -q -b main seed && \
         git -C seed -c user.name=t -c user.email=t@t commit -q --allow-empty -m init && \
         git -C seed push -q {srv}/remote.git main",
        srv = srv.display()
    ));
    assert!(ok, "{out}");
    let o = origin_serving(Some(&pki), Serve::Git(srv.clone()));
    let url = format!("https://localhost:{}/remote.git", o.port);
    // Without the credential the origin refuses the clone.
    let (ok, out) = sh(&format!(
        "GIT_SSL_CAINFO={} git clone -q {url} direct",
        s.ca.display()
    ));
    assert!(
        !ok && (out.contains("401") || out.contains("Username")),
        "{out}"
    );
    let before = o.heads().len();
    let policy = s.dir.join("git.toml");
    std::fs::write(
        &policy,
        format!(
            "[permission]\napproval = \"granted\"\n[sandbox]\nmode = \"workspace-write\"\n\
             [sandbox.network]\nallow_domains = [\"localhost\"]\n\
             [[sandbox.network.credentials]]\ndomain = \"localhost\"\nheader = \"Authorization\"\n\
             value = \"Basic ${{base64:x-access-token:${{env:TEST_API_TOKEN}}}}\"\nupstream_ca = \"{}\"\n",
            s.ca.display()
        ),
    )
    .unwrap();
    let script = format!(
        "export GIT_TERMINAL_PROMPT=0; d=$(mktemp -d) && echo CLONE $d && export HOME=$d/home && \
         mkdir $HOME && git clone -q {url} $d/w && cd $d/w && \
         git -c user.name=a -c user.email=a@a commit -q --allow-empty -m from-sandbox && \
         git push -q origin HEAD:main && echo PUSHED; env; cat .git/config"
    );
    let out = run(&s, &policy, "bwrap", &script, false);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("PUSHED"), "{stdout}{}", text(&out.stderr));
    let (ok, log) = sh(&format!(
        "git --git-dir {}/remote.git log -1 --format=%s main",
        srv.display()
    ));
    assert!(ok && log.trim() == "from-sandbox", "{log}");
    assert_no_secret("git", &out);
    let basic = b64(format!("x-access-token:{SECRET}").as_bytes());
    assert!(!stdout.contains(&basic), "{stdout}");
    // A repository may not be made inside the workspace: the clone went
    // to a directory of its own under the temporary directory.
    let clone = stdout
        .lines()
        .find_map(|l| l.strip_prefix("CLONE "))
        .unwrap()
        .to_string();
    let (_, found) = sh(&format!(
        "grep -rlF -e {SECRET} -e {basic} {clone} 2>/dev/null; true"
    ));
    let (_, listed) = sh(&format!("ls {clone}/w/.git/config"));
    scratch::remove(Path::new(&clone));
    assert!(listed.contains("config"), "{listed}");
    assert_eq!(found.trim(), "", "the secret was written to {found}");
    let heads = o.heads()[before..].to_vec();
    assert!(
        heads
            .iter()
            .any(|h| h.starts_with("POST /remote.git/git-receive-pack")),
        "{heads:?}"
    );
    assert!(heads.iter().all(|h| h.contains(&basic)), "{heads:?}");
}

#[test]
fn landlock_refuses_credentials_as_it_refuses_the_allowlist() {
    let pki = pki();
    let s = setup(&pki);
    let out = run(&s, &policy(&s, true), "landlock", "touch ran", false);
    assert_eq!(out.status.code(), Some(122), "{}", text(&out.stderr));
    assert!(!s.dir.join("ran").exists());
    assert_no_secret("landlock", &out);
}

#[test]
fn pip_installs_from_a_private_index_with_the_token_the_proxy_adds() {
    if !ready() {
        return;
    }
    let pki = pki();
    let s = setup(&pki);
    let index = s.dir.join("index");
    let files = index.join("files");
    std::fs::create_dir_all(&files).unwrap();
    pkg_index::python(&["-c", pkg_index::MAKE_WHEELS, files.to_str().unwrap()]);
    pkg_index::python(&["-c", pkg_index::MAKE_INDEX, index.to_str().unwrap()]);
    let o = origin_serving(Some(&pki), Serve::Files(index.clone()));
    let url = format!("https://localhost:{}/simple/", o.port);
    let pip = |cert: &Path, target: &str| {
        format!(
            "{} -m pip install -q --no-cache-dir --disable-pip-version-check --no-input \
             --cert {} --index-url {url} --target {target} rwdemo",
            pkg_index::PYTHON,
            cert.display()
        )
    };
    // Without the token the index refuses pip.
    let control = Command::new("sh")
        .args(["-c", &pip(&s.ca, s.dir.join("direct").to_str().unwrap())])
        .env("HOME", s.dir.path())
        // requests prefers these to pip's --cert.
        .env_remove("REQUESTS_CA_BUNDLE")
        .env_remove("CURL_CA_BUNDLE")
        .env_remove("PIP_FIND_LINKS")
        .output()
        .unwrap();
    assert!(!control.status.success(), "{}", text(&control.stdout));
    let asked = o.heads();
    assert!(!asked.is_empty(), "{}", text(&control.stderr));
    assert!(
        asked.iter().all(|h| !h.contains("Authorization")),
        "{asked:?}"
    );
    let before = asked.len();
    let policy = s.dir.join("pip.toml");
    std::fs::write(
        &policy,
        format!(
            "[permission]\napproval = \"granted\"\n[sandbox]\nmode = \"workspace-write\"\n\
             [sandbox.network]\nallow_domains = [\"localhost\"]\n\
             [[sandbox.network.credentials]]\ndomain = \"localhost\"\nheader = \"Authorization\"\n\
             value = \"Basic ${{base64:__token__:${{env:TEST_API_TOKEN}}}}\"\nupstream_ca = \"{}\"\n",
            s.ca.display()
        ),
    )
    .unwrap();
    // pip inside trusts the run's CA through PIP_CERT, as any pip would.
    let script = format!(
        "export HOME=\"$PWD\"; unset PIP_FIND_LINKS; {} -m pip install -q --no-cache-dir --disable-pip-version-check \
         --no-input --index-url {url} --target \"$PWD/site\" rwdemo && \
         PYTHONPATH=\"$PWD/site\" {} -c 'import rwdemo; print(\"quad\", rwdemo.quad(3))'; \
         env; grep -rlF {SECRET} site; true",
        pkg_index::PYTHON,
        pkg_index::PYTHON
    );
    let out = run(&s, &policy, "bwrap", &script, false);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("quad 12\n"),
        "{stdout}{}",
        text(&out.stderr)
    );
    assert_no_secret("pip", &out);
    let heads = o.heads()[before..].to_vec();
    let basic = b64(format!("__token__:{SECRET}").as_bytes());
    assert!(heads.len() >= 4, "{heads:?}");
    assert!(heads.iter().all(|h| h.contains(&basic)), "{heads:?}");
}

/// Node's own `fetch` and `https` ignore the proxy variables before Node 24,
/// so a Node program reaches a bound host only when it opens the tunnel
/// itself; its TLS then trusts the run's CA through NODE_EXTRA_CA_CERTS.
const NODE_CONNECT: &str = r#"
const http = require('http'), tls = require('tls');
const [host, port] = [process.argv[2], process.argv[3]];
const u = new URL(process.env.HTTPS_PROXY);
const auth = 'Basic ' + Buffer.from(decodeURIComponent(u.username) + ':' + decodeURIComponent(u.password)).toString('base64');
const req = http.request({ host: u.hostname, port: u.port, method: 'CONNECT', path: `${host}:${port}`,
  headers: { 'Proxy-Authorization': auth, Host: `${host}:${port}` } });
req.on('connect', (res, socket) => {
  if (res.statusCode !== 200) { console.log('ERR CONNECT ' + res.statusCode); return; }
  const s = tls.connect({ socket, servername: host }, () => {
    s.write(`GET /node HTTP/1.1\r\nHost: ${host}:${port}\r\nConnection: close\r\n\r\n`);
  });
  let out = '';
  s.on('data', (d) => (out += d));
  s.on('end', () => console.log(out.split('\r\n\r\n').slice(1).join('')));
  s.on('error', (e) => console.log('ERR ' + e.message));
});
req.on('error', (e) => console.log('ERR ' + e.message));
req.end();
"#;

#[test]
fn node_trusts_the_run_ca_through_node_extra_ca_certs() {
    if !ready() || !scratch::need("node") {
        return;
    }
    let pki = pki();
    let s = setup(&pki);
    std::fs::write(s.dir.join("connect.js"), NODE_CONNECT).unwrap();
    for &nobody in scratch::users() {
        let o = origin(Some(&pki));
        let script = format!(
            "node connect.js localhost {p}; \
             env -u NODE_EXTRA_CA_CERTS -u SSL_CERT_FILE -u SSL_CERT_DIR node connect.js localhost {p}",
            p = o.port
        );
        let out = run(&s, &policy(&s, true), "bwrap", &script, nobody);
        let stdout = text(&out.stdout);
        // With dcjail's variables node trusts the run's CA (a node with
        // its own CA store, as nodesource's, through NODE_EXTRA_CA_CERTS;
        // Debian's, which uses the system's OpenSSL store, through
        // SSL_CERT_FILE); without them (the control) the same leaf is
        // refused.
        let mut lines = stdout.lines().filter(|l| !l.is_empty());
        assert_eq!(
            lines.next(),
            Some("ORIGIN-OK /node"),
            "{stdout}{}",
            text(&out.stderr)
        );
        assert!(
            lines.next().is_some_and(|l| l.starts_with("ERR ")),
            "{stdout}"
        );
        let h = o.head_for("/node").unwrap();
        assert!(
            h.contains(&format!("Authorization: Bearer {SECRET}")),
            "{h}"
        );
        assert_eq!(o.heads().len(), 1, "{:?}", o.heads());
        assert_no_secret("node", &out);
    }
}

const FOLLOW: &str = r#"
import os, ssl, sys, urllib.request as u
ca, port = sys.argv[1], sys.argv[2]
c = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
c.load_verify_locations(ca)
o = u.build_opener(u.HTTPSHandler(context=c))
for to, rest in ((f"localhost:{port}", "same"), (f"127.0.0.1:{port}", "other")):
    print(o.open(f"https://localhost:{port}/302/{to}/{rest}").read().decode().strip())
"#;

#[test]
fn a_redirect_to_another_host_is_followed_by_the_client_without_the_credential() {
    if !ready() {
        return;
    }
    let pki = pki();
    let s = setup(&pki);
    std::fs::write(s.dir.join("follow.py"), FOLLOW).unwrap();
    for &nobody in scratch::users() {
        let o = origin(Some(&pki));
        // The client follows each redirect itself, on a new connection
        // through the proxy: to the bound name (the control) the credential
        // is added again; to 127.0.0.1, allowed and unbound, it is not.
        // Trusting the run's CA (for the bound name) and the test CA (for
        // the unbound one, whose TLS is the origin's own); urllib follows
        // each redirect with a new request through the proxy.
        let script = format!("python3 follow.py {} {}", s.ca.display(), o.port);
        let out = run(&s, &policy(&s, true), "bwrap", &script, nobody);
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("ORIGIN-OK /same\n"),
            "{stdout}{}",
            text(&out.stderr)
        );
        assert!(stdout.contains("ORIGIN-OK /other\n"), "{stdout}");
        let heads = o.heads();
        let with = |p: &str| {
            heads
                .iter()
                .find(|h| h.starts_with(&format!("GET {p} ")))
                .unwrap_or_else(|| panic!("{p}: {heads:?}"))
                .contains(SECRET)
        };
        assert!(with(&format!("/302/localhost:{}/same", o.port)));
        assert!(with("/same"), "the control: the bound name gets it again");
        assert!(with(&format!("/302/127.0.0.1:{}/other", o.port)));
        assert!(!with("/other"), "{heads:?}");
        assert_no_secret("redirect", &out);
    }
}
