//! Throughput of the allowlist proxy against a direct loopback connection.
//! `cargo run --release --example proxy_throughput [MiB [ROUNDS]]` (default
//! 1024 MiB, 5 rounds); called by scripts/bench.sh. Prints one line per
//! transfer (MiB/s, and the CPU seconds the whole process spent per GiB),
//! then the medians and the ratio. `--serve MiB` only runs the loopback server (an HTTP response of
//! MiB bytes to every connection) and prints its port, for measuring a
//! real client inside dcjail.

use dcjail::net::conn::Listener;
use dcjail::net::domain::{DomainRule, Rules};
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

/// Wall time and this process's CPU time (every thread: server, client
/// and proxy alike) of one transfer.
struct Took {
    mibs: f64,
    cpu_per_gib: f64,
}

fn cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is a valid value of the C struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills a plain struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn timed(what: &str, f: impl FnOnce() -> u64) -> Took {
    let (t, c) = (Instant::now(), cpu_seconds());
    let bytes = f();
    let (secs, cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - c);
    let gib = bytes as f64 / (1u64 << 30) as f64;
    let took = Took {
        mibs: gib * 1024.0 / secs,
        cpu_per_gib: cpu / gib,
    };
    println!(
        "{what:<26} {bytes} bytes in {secs:.3} s = {:.0} MiB/s, {:.2} CPU s/GiB",
        took.mibs, took.cpu_per_gib
    );
    took
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
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
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let port = server(mib * 1024 * 1024, false);

    let rules = Rules {
        allow: vec![DomainRule::parse("localhost").expect("rule")],
        deny: Vec::new(),
    };
    let proxy = Proxy::new(Config::new(rules, Some(SECRET.into())));
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let paddr = l.local_addr().expect("addr");
    proxy.spawn(Listener::Tcp(l)).expect("spawn");

    // Paired rounds, the order alternating: the machine may be shared and
    // noisy, and whatever it does then falls on both paths alike.
    let direct = || drain(TcpStream::connect(("127.0.0.1", port)).expect("connect"));
    let proxied = || drain(through(paddr, port));
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for round in 0..rounds.max(1) {
        if round % 2 == 0 {
            d.push(timed("direct", direct));
            p.push(timed("through proxy (CONNECT)", proxied));
        } else {
            p.push(timed("through proxy (CONNECT)", proxied));
            d.push(timed("direct", direct));
        }
    }
    let ratios: Vec<f64> = d.iter().zip(&p).map(|(d, p)| p.mibs / d.mibs).collect();
    let n = d.len();
    println!(
        "median of {n} paired rounds: direct {:.0} MiB/s, proxy {:.0} MiB/s, ratio {:.2} \
         (rounds {:.2}-{:.2}); CPU s/GiB: direct {:.2}, proxy {:.2}",
        median(d.iter().map(|t| t.mibs).collect()),
        median(p.iter().map(|t| t.mibs).collect()),
        median(ratios.clone()),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
        median(d.iter().map(|t| t.cpu_per_gib).collect()),
        median(p.iter().map(|t| t.cpu_per_gib).collect()),
    );
}

/// A CONNECT tunnel through the proxy to the server.
fn through(paddr: std::net::SocketAddr, port: u16) -> TcpStream {
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
    s
}
