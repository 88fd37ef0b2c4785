//! The macOS network allowlist, wired and driven on Linux: `exec::start_net`
//! given a Seatbelt launch starts dcjail's proxy on a loopback port, passes
//! that port to the profile as the `PROXY` parameter (the profile text is
//! the one rendered before any port existed, so what `explain` showed is
//! what runs), points the command's proxy variables at it, and the proxy
//! there serves only the allowed names. What only a Mac can show — that
//! Seatbelt then refuses every other destination — is the macOS CI job's
//! (`.github/workflows/ci.yml`).
#![cfg(any(target_os = "linux", target_os = "macos"))]

use dcjail::backend::{seatbelt, Launch};
use dcjail::net::proxy::base64;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// An echo server on loopback that counts its connections.
fn origin() -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            n2.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut b = Vec::new();
                let _ = c.read_to_end(&mut b);
                let _ = c.write_all(&b);
            });
        }
    });
    (port, n)
}

fn allowlist_plan(allow: &str) -> dcjail::plan::Plan {
    let mut policy = dcjail::policy::Policy::embedded().unwrap();
    policy.sandbox.backend = dcjail::policy::BackendChoice::Seatbelt;
    policy.sandbox.network.mode = dcjail::policy::NetMode::Allowlist;
    policy.sandbox.network.allow_domains = vec![allow.to_string()];
    let facts = dcjail::plan::Facts::gather().unwrap();
    dcjail::plan::build(&policy, vec!["curl".into(), "https://x".into()], &facts).unwrap()
}

fn env_var<'a>(env: &'a [(std::ffi::OsString, std::ffi::OsString)], k: &str) -> &'a str {
    env.iter()
        .find(|(n, _)| n == k)
        .and_then(|(_, v)| v.to_str())
        .unwrap_or_else(|| panic!("{k} not set"))
}

/// CONNECT through the proxy; the status line, and the echo when tunnelled.
fn connect(port: u16, target: &str, secret: Option<&str>) -> (String, Option<Vec<u8>>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = secret
        .map(|x| {
            format!(
                "Proxy-Authorization: Basic {}\r\n",
                base64(format!("dcjail:{x}").as_bytes())
            )
        })
        .unwrap_or_default();
    write!(
        s,
        "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{auth}\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => break,
        }
    }
    let status = String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    if !status.contains(" 200 ") {
        return (status, None);
    }
    s.write_all(b"through the tunnel").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let mut echoed = Vec::new();
    s.read_to_end(&mut echoed).unwrap();
    (status, Some(echoed))
}

#[test]
fn a_seatbelt_allowlist_launch_gets_dcjails_proxy_and_only_its_port() {
    let (oport, hits) = origin();
    let plan = allowlist_plan(&format!("localhost:{oport}"));
    // What explain shows: the profile, with the port still to come.
    let before = seatbelt::render(&plan, None).unwrap();
    assert!(before.proxy_pending);
    assert!(before.argv(&plan.argv).is_err(), "no argv without the port");
    let mut launch = Launch::Seatbelt(before.clone());
    let net = dcjail::exec::start_net(&plan, &mut launch, None).unwrap();
    let Launch::Seatbelt(r) = &launch else {
        panic!("the launch changed kind")
    };

    // The port reached the profile as a parameter; the text did not change.
    assert!(!r.proxy_pending);
    assert_eq!(r.profile, before.profile);
    let proxy: Vec<&str> = r
        .params
        .iter()
        .filter(|(n, _)| n == seatbelt::PROXY_PARAM)
        .map(|(_, v)| v.to_str().unwrap())
        .collect();
    assert_eq!(proxy.len(), 1, "{:?}", r.params);
    let port: u16 = proxy[0]
        .strip_prefix("localhost:")
        .expect("localhost:PORT")
        .parse()
        .unwrap();
    assert_eq!(*r, seatbelt::render(&plan, Some(port)).unwrap());
    assert!(r
        .profile
        .contains("(allow network-outbound (remote tcp (param \"PROXY\")))"));
    let argv = r.argv(&plan.argv).unwrap();
    let d = argv.iter().position(|a| a == "-D").unwrap();
    assert!(argv[d + 1..]
        .iter()
        .any(|a| a.to_str() == Some(&format!("PROXY=localhost:{port}"))));

    // The command's variables name that same listener, with the secret.
    let http = env_var(&net.env, "HTTP_PROXY");
    let rest = http.strip_prefix("http://dcjail:").expect(http);
    let (secret, endpoint) = rest.split_once('@').unwrap();
    assert_eq!(endpoint, format!("127.0.0.1:{port}"));
    assert_eq!(
        env_var(&net.env, "ALL_PROXY"),
        format!("socks5h://dcjail:{secret}@127.0.0.1:{port}")
    );

    // The proxy listening there: the allowed name tunnels, another is 403,
    // no secret is 407, and only the allowed one reached anything.
    let (st, echoed) = connect(port, &format!("localhost:{oport}"), Some(secret));
    assert!(st.contains(" 200 "), "{st}");
    assert_eq!(echoed.as_deref(), Some(&b"through the tunnel"[..]));
    let (st, _) = connect(port, "denied.example:443", Some(secret));
    assert!(st.contains(" 403 "), "{st}");
    let (st, _) = connect(port, &format!("localhost:{oport}"), None);
    assert!(st.contains(" 407 "), "{st}");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let denied = net.finish();
    assert!(
        denied.iter().any(|d| d.contains("denied.example")),
        "{denied:?}"
    );
}

#[test]
fn without_an_allowlist_no_proxy_starts_and_the_profile_has_no_network() {
    let mut plan = allowlist_plan("example.com");
    plan.net.mode = dcjail::policy::NetMode::None;
    plan.net.allow.clear();
    let r = seatbelt::render(&plan, None).unwrap();
    assert!(!r.proxy_pending);
    let mut launch = Launch::Seatbelt(r.clone());
    let net = dcjail::exec::start_net(&plan, &mut launch, None).unwrap();
    assert!(net.env.is_empty());
    let Launch::Seatbelt(after) = &launch else {
        panic!("the launch changed kind")
    };
    assert_eq!(*after, r);
    assert!(!r.profile.contains("(allow network-outbound"));
}
