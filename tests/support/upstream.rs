//! Loopback stand-ins shared by the proxy and allowlist tests.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

/// A minimal upstream HTTP proxy: records CONNECT lines, then tunnels to
/// the loopback port named in the target.
pub fn fake_upstream() -> (u16, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            let seen = s2.clone();
            thread::spawn(move || {
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if c.read(&mut b).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(b[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                seen.lock().unwrap().push(head.clone());
                let target = head.split(' ').nth(1).unwrap_or("");
                let port: u16 = target
                    .rsplit(':')
                    .next()
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0);
                let Ok(up) = TcpStream::connect(("127.0.0.1", port)) else {
                    return;
                };
                c.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
                let (mut a, mut b2) = (c.try_clone().unwrap(), up.try_clone().unwrap());
                let (mut c, mut up) = (c, up);
                let t = thread::spawn(move || {
                    let _ = std::io::copy(&mut b2, &mut a);
                    let _ = a.shutdown(Shutdown::Write);
                });
                let _ = std::io::copy(&mut c, &mut up);
                let _ = up.shutdown(Shutdown::Write);
                let _ = t.join();
            });
        }
    });
    (port, seen)
}

/// The origin counts connections on its own thread: wait for the count to
/// settle (briefly for 0, so a late connection is not missed).
pub fn settled(n: &std::sync::atomic::AtomicUsize, want: usize) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    if want == 0 {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    loop {
        let v = n.load(std::sync::atomic::Ordering::SeqCst);
        if v == want || std::time::Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
