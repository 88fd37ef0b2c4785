//! Credentials the proxy adds on the wire (`[[sandbox.network.credentials]]`):
//! the secrets read once at launch from dcjail's own environment or files,
//! kept in this process only, and added as one header to the requests the
//! proxy itself forwards to the bound destination — plain HTTP through
//! `forward`, HTTPS by terminating TLS for that name only ([`tls`],
//! [`terminate`]). The command trusts the run's CA through a bundle file
//! (the system roots and that CA's certificate, never a key) that lives for
//! the run.
//!
//! Owns: reading the secrets, the run's TLS, the bundle file, and serving
//! a connection to a bound destination. Must never: put a secret in a
//! message, a log, a file or the command's environment; nothing of it is
//! made when no credential is configured.

pub mod terminate;
pub mod tls;

use crate::net::domain::Host;
use crate::policy::creds::Binding;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A secret header value: never printed.
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<secret>")
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        for b in self.0.iter_mut() {
            // SAFETY: `b` is a valid, aligned, exclusive reference into our
            // own buffer; the volatile write keeps the wipe from being
            // optimised away.
            unsafe { std::ptr::write_volatile(b, 0) };
        }
    }
}

/// One bound header, its secret read.
#[derive(Debug)]
struct Bound {
    domain: String,
    port: Option<u16>,
    header: String,
    value: Secret,
    plain_http: bool,
    /// The raw secrets inside `value` (what the environment must not hold).
    raw: Vec<Secret>,
}

/// The run's credentials, shared by the proxy's threads.
#[derive(Debug)]
pub struct Injector {
    bound: Vec<Bound>,
    pub(crate) tls: tls::Tls,
}

impl Injector {
    /// The headers to add on a request to `host:port`, over TLS the proxy
    /// terminated or (`tls` false) plain HTTP.
    pub fn headers_for(&self, host: &Host, port: u16, tls: bool) -> Vec<(String, Vec<u8>)> {
        let Host::Name(n) = host else {
            return Vec::new();
        };
        self.bound
            .iter()
            .filter(|b| b.domain == *n && b.port.is_none_or(|p| p == port))
            .filter(|b| tls || b.plain_http)
            .map(|b| (b.header.clone(), b.value.0.clone()))
            .collect()
    }

    /// Whether a tunnel to `host:port` is terminated here.
    pub fn binds(&self, host: &Host, port: u16) -> bool {
        !self.headers_for(host, port, true).is_empty()
    }

    /// Whether `v` holds any secret (or any header value made of one).
    pub fn leaks_in(&self, v: &[u8]) -> bool {
        self.bound.iter().any(|b| {
            contains(v, &b.value.0) || b.raw.iter().any(|r| r.0.len() >= 4 && contains(v, &r.0))
        })
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// The CA bundle file of one run, removed (with its directory) on drop.
#[derive(Debug)]
pub struct Bundle {
    dir: PathBuf,
    pub file: PathBuf,
}

impl Drop for Bundle {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The variables that make the usual clients trust the bundle.
pub const TRUST_VARS: &[&str] = &[
    "SSL_CERT_FILE",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "CARGO_HTTP_CAINFO",
    "GIT_SSL_CAINFO",
    "CURL_CA_BUNDLE",
];

impl Bundle {
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        TRUST_VARS
            .iter()
            .map(|k| (OsString::from(k), self.file.clone().into_os_string()))
            .collect()
    }
}

/// Where the system's roots are, in the order tried (Debian/Ubuntu,
/// Fedora/RHEL, openSUSE, Alpine and macOS); the caller's own
/// `SSL_CERT_FILE` comes first.
const SYSTEM_ROOTS: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

fn system_roots() -> Vec<u8> {
    let caller = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
    caller
        .into_iter()
        .chain(SYSTEM_ROOTS.iter().map(PathBuf::from))
        .find_map(|p| std::fs::read(p).ok().filter(|b| !b.is_empty()))
        .unwrap_or_default()
}

/// What a run with credentials holds: the shared injector and the bundle.
pub struct Prepared {
    pub injector: Arc<Injector>,
    pub bundle: Bundle,
}

/// Reads every secret and makes the run's TLS and bundle; `Ok(None)` when
/// nothing is bound (and then nothing TLS-related is touched). An error
/// names the variable or file, never a value.
pub fn prepare(bindings: &[Binding]) -> Result<Option<Prepared>, String> {
    if bindings.is_empty() {
        return Ok(None);
    }
    let env = |n: &str| std::env::var_os(n);
    let file = |p: &Path| read_small(p);
    let mut bound = Vec::with_capacity(bindings.len());
    for b in bindings {
        let value = b.value.render(&env, &file)?;
        let raw = b
            .value
            .sources()
            .iter()
            .filter_map(|s| {
                let one = crate::policy::creds::Template(vec![crate::policy::creds::Part::Secret(
                    s.clone(),
                )]);
                one.render(&env, &file).ok().map(Secret)
            })
            .collect();
        bound.push(Bound {
            domain: b.domain.clone(),
            port: b.port,
            header: b.header.clone(),
            value: Secret(value),
            plain_http: b.plain_http,
            raw,
        });
    }
    let mut names: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for b in bindings {
        let extra: Vec<PathBuf> = b.upstream_ca.iter().cloned().collect();
        match names.iter_mut().find(|(n, _)| *n == b.domain) {
            Some((_, e)) => e.extend(extra),
            None => names.push((b.domain.clone(), extra)),
        }
    }
    let system = system_roots();
    let tls = tls::Tls::new(&names, &system)?;
    let bundle = write_bundle(&system, &tls.ca_pem)?;
    Ok(Some(Prepared {
        injector: Arc::new(Injector { bound, tls }),
        bundle,
    }))
}

/// A secret file, bounded in size.
fn read_small(p: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(p)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut v = Vec::new();
    f.take(crate::policy::creds::MAX_SECRET_FILE + 1)
        .read_to_end(&mut v)?;
    if v.len() as u64 > crate::policy::creds::MAX_SECRET_FILE {
        return Err(std::io::Error::other("larger than 64 KiB"));
    }
    Ok(v)
}

/// The system roots and the run's CA certificate, in a directory of its
/// own (made with a random name, mode 0700) under the temporary directory,
/// where the command can read it.
fn write_bundle(system: &[u8], ca_pem: &str) -> Result<Bundle, String> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let base = std::env::temp_dir();
    let mut last = String::new();
    for _ in 0..8 {
        let tag = crate::net::new_secret()?;
        let dir = base.join(format!("dcjail-ca.{}", &tag[..16]));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                last = e.to_string();
                break;
            }
        }
        let file = dir.join("ca-bundle.pem");
        let bundle = Bundle {
            dir,
            file: file.clone(),
        };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&file)
            .map_err(|e| format!("the CA bundle {}: {e}", file.display()))?;
        let mut body = system.to_vec();
        if !body.is_empty() && !body.ends_with(b"\n") {
            body.push(b'\n');
        }
        body.extend_from_slice(ca_pem.as_bytes());
        f.write_all(&body)
            .map_err(|e| format!("the CA bundle {}: {e}", file.display()))?;
        return Ok(bundle);
    }
    Err(format!(
        "cannot make a directory for the CA bundle in {}: {last}",
        base.display()
    ))
}
