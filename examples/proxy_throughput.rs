//! Throughput of the allowlist proxy against a direct loopback connection.
//! `cargo run --release --example proxy_throughput [MiB]` (default 1024);
//! called by scripts/bench.sh. Prints one line per path, and the
//! ratio. `--serve MiB` only runs the loopback server (an HTTP response of
//! MiB bytes to every connection) and prints its port, for measuring a
//! real client inside dcjail.

use dcjail::domain::{DomainRule, Rules};
use dcjail::net::conn::Listener;
use dcjail::net::proxy::{base64, Config, Proxy};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

const SECRET: &str = "bench";

/// A loopback server sending `total` bytes to every client, then closing;
/// as an HTTP response (after reading the request head) when `http`.
fn server(total: u64, http: bool) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                if http {
                    let mut head = Vec::new();
                    let mut b = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if s.read(&mut b).unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(b[0]);
                    }
                    let h = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {total}\r\nConnection: close\r\n\r\n"
                    );
                    if s.write_all(h.as_bytes()).is_err() {
                        return;
                    }
                }
                let chunk = vec![0x5au8; 1 << 20];
                let mut left = total;
                while left > 0 {
                    let n = left.min(chunk.len() as u64) as usize;
                    if s.write_all(&chunk[..n]).is_err() {
                        return;
                    }
                    left -= n as u64;
                }
            });
        }
    });
    port
}

fn drain(mut s: TcpStream) -> u64 {
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0u64;
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return got,
            Ok(n) => got += n as u64,
        }
    }
}

fn report(what: &str, bytes: u64, t: Instant) -> f64 {
    let secs = t.elapsed().as_secs_f64();
    let mibs = bytes as f64 / (1024.0 * 1024.0) / secs;
    println!("{what:<28} {bytes} bytes in {secs:.3} s = {mibs:.0} MiB/s");
    mibs
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve") {
        let mib: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1024);
        let port = server(mib * 1024 * 1024, true);
        println!("{port}");
        loop {
            std::thread::park();
        }
    }
    let mib: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1024);
    let total = mib * 1024 * 1024;
    let port = server(total, false);

    let t = Instant::now();
    let got = drain(TcpStream::connect(("127.0.0.1", port)).expect("connect"));
    let mut direct = report("direct", got, t);

    let rules = Rules {
        allow: vec![DomainRule::parse("localhost").expect("rule")],
        deny: Vec::new(),
    };
    let proxy = Proxy::new(Config::new(rules, Some(SECRET.into())));
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let paddr = l.local_addr().expect("addr");
    proxy.spawn(Listener::Tcp(l)).expect("spawn");

    // Best of three each, interleaved: the machine may be shared and noisy.
    let mut best = 0f64;
    for round in 0..3 {
        best = best.max(through(paddr, port, "through proxy (CONNECT)"));
        if round < 2 {
            let t = Instant::now();
            let got = drain(TcpStream::connect(("127.0.0.1", port)).expect("connect"));
            direct = direct.max(report("direct", got, t));
        }
    }
    println!(
        "best of 3: direct {direct:.0} MiB/s, proxy {best:.0} MiB/s, ratio {:.2}",
        best / direct
    );
}

fn through(paddr: std::net::SocketAddr, port: u16, what: &str) -> f64 {
    let t = Instant::now();
    let mut s = TcpStream::connect(paddr).expect("connect proxy");
    let auth = base64(format!("dcjail:{SECRET}").as_bytes());
    write!(
        s,
        "CONNECT localhost:{port} HTTP/1.1\r\nProxy-Authorization: Basic {auth}\r\n\r\n"
    )
    .expect("write");
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut b).unwrap_or(0) == 0 {
            eprintln!("proxy closed: {}", String::from_utf8_lossy(&head));
            std::process::exit(1);
        }
        head.push(b[0]);
    }
    let got = drain(s);
    report(what, got, t)
}
