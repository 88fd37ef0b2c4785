//! The TLS of the credential path: a CA made in memory for this run, a
//! leaf certificate for each bound name signed by it, the server side the
//! command talks to (that name only, HTTP/1.1 only), and the client side
//! the proxy opens upstream, verifying the origin against the system roots
//! and the binding's extra CA. rustls and rcgen do all of TLS and X.509.
//!
//! The CA's private key is made, used to sign the leaves, and dropped here:
//! it is never written anywhere and is gone before the command starts. The
//! CA is name-constrained to the bound names and valid for days, so even a
//! copy of its certificate vouches for nothing else.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, GeneralSubtree, IsCa,
    KeyPair, KeyUsagePurpose, NameConstraints,
};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// How long the run's certificates are valid, in days either side of now.
const VALID_DAYS_BEFORE: i64 = 1;
const VALID_DAYS_AFTER: i64 = 30;

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Both sides for every bound name.
pub struct Tls {
    /// The run's CA certificate, PEM (public; the bundle carries it).
    pub ca_pem: String,
    servers: HashMap<String, Arc<ServerConfig>>,
    clients: HashMap<String, Arc<ClientConfig>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("names", &self.servers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Tls {
    /// `names`: each bound name with the extra CA files trusted for it;
    /// `system_pem`: the system's roots.
    pub fn new(names: &[(String, Vec<PathBuf>)], system_pem: &[u8]) -> Result<Tls, String> {
        let e = |what: &str, err: &dyn std::fmt::Display| format!("{what}: {err}");
        let ca_key = KeyPair::generate().map_err(|x| e("making the run's CA key", &x))?;
        let mut ca = CertificateParams::default();
        ca.distinguished_name
            .push(DnType::CommonName, "dcjail per-run CA (credentials)");
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        ca.name_constraints = Some(NameConstraints {
            permitted_subtrees: names
                .iter()
                .map(|(n, _)| GeneralSubtree::DnsName(n.clone()))
                .collect(),
            excluded_subtrees: Vec::new(),
        });
        validity(&mut ca);
        let ca_cert = ca
            .self_signed(&ca_key)
            .map_err(|x| e("making the run's CA", &x))?;
        let ca_der = ca_cert.der().clone();
        let provider = provider();
        let mut servers = HashMap::new();
        let mut clients = HashMap::new();
        let roots_pem: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(system_pem)
            .filter_map(|c| c.ok())
            .collect();
        for (name, extra) in names {
            let key = KeyPair::generate().map_err(|x| e("making a leaf key", &x))?;
            let mut leaf = CertificateParams::new(vec![name.clone()])
                .map_err(|x| e(&format!("a certificate for `{name}`"), &x))?;
            leaf.distinguished_name
                .push(DnType::CommonName, name.as_str());
            leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
            leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            validity(&mut leaf);
            let cert = leaf
                .signed_by(&key, &ca_cert, &ca_key)
                .map_err(|x| e(&format!("a certificate for `{name}`"), &x))?;
            let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
            let signing = provider
                .key_provider
                .load_private_key(der)
                .map_err(|x| e("loading a leaf key", &x))?;
            let certified = Arc::new(CertifiedKey::new(
                vec![cert.der().clone(), ca_der.clone()],
                signing,
            ));
            let mut server = ServerConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .map_err(|x| e("TLS server", &x))?
                .with_no_client_auth()
                .with_cert_resolver(Arc::new(OneName {
                    name: name.clone(),
                    key: certified,
                }));
            // HTTP/1.1 only: no HTTP/2, so no connection coalescing.
            server.alpn_protocols = vec![b"http/1.1".to_vec()];
            servers.insert(name.clone(), Arc::new(server));
            clients.insert(
                name.clone(),
                Arc::new(client_config(&provider, &roots_pem, extra)?),
            );
        }
        // The CA key goes out of scope here: nothing can sign again.
        drop(ca_key);
        Ok(Tls {
            ca_pem: pem("CERTIFICATE", &ca_der),
            servers,
            clients,
        })
    }

    pub fn server(&self, name: &str) -> Option<Arc<ServerConfig>> {
        self.servers.get(name).cloned()
    }

    pub fn client(&self, name: &str) -> Option<Arc<ClientConfig>> {
        self.clients.get(name).cloned()
    }
}

fn client_config(
    provider: &Arc<CryptoProvider>,
    system: &[CertificateDer<'static>],
    extra: &[PathBuf],
) -> Result<ClientConfig, String> {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(system.iter().cloned());
    for f in extra {
        let bytes = std::fs::read(f).map_err(|x| {
            format!(
                "upstream_ca `{}`: {}",
                f.display(),
                crate::policy::io_words(&x)
            )
        })?;
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
            .filter_map(|c| c.ok())
            .collect();
        let (added, _) = roots.add_parsable_certificates(certs);
        if added == 0 {
            return Err(format!(
                "upstream_ca `{}`: no PEM certificate in it",
                f.display()
            ));
        }
    }
    if roots.is_empty() {
        return Err("no trusted roots for the proxy's upstream TLS: no system trust store was found and no `upstream_ca` is named".into());
    }
    let mut c = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|x| format!("TLS client: {x}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(c)
}

/// The upstream name a bound host is verified as.
pub fn server_name(name: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(name.to_string()).map_err(|e| format!("`{name}`: {e}"))
}

/// Serves the one leaf, and only to a client that names that host (or
/// names none): a different SNI fails the handshake.
#[derive(Debug)]
struct OneName {
    name: String,
    key: Arc<CertifiedKey>,
}

impl ResolvesServerCert for OneName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        match hello.server_name() {
            None => Some(self.key.clone()),
            Some(n) if n.eq_ignore_ascii_case(&self.name) => Some(self.key.clone()),
            Some(_) => None,
        }
    }
}

fn validity(p: &mut CertificateParams) {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| (d.as_secs() / 86_400) as i64)
        .unwrap_or(0);
    let (y, m, d) = civil(days - VALID_DAYS_BEFORE);
    p.not_before = rcgen::date_time_ymd(y, m, d);
    let (y, m, d) = civil(days + VALID_DAYS_AFTER);
    p.not_after = rcgen::date_time_ymd(y, m, d);
}

/// The calendar date `days` after 1970-01-01 (proleptic Gregorian).
fn civil(days: i64) -> (i32, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y as i32, m as u8, d as u8)
}

/// PEM armour around DER (RFC 7468): base64 in lines of 64.
pub fn pem(label: &str, der: &[u8]) -> String {
    let b64 = crate::policy::creds::base64(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_match_known_days() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_723), (2024, 1, 1));
        assert_eq!(civil(19_782), (2024, 2, 29));
        assert_eq!(civil(-1), (1969, 12, 31));
    }

    #[test]
    fn the_run_ca_signs_a_leaf_per_name_and_its_pem_parses() {
        let e = Tls::new(&[("api.example.com".into(), Vec::new())], b"").unwrap_err();
        assert!(e.contains("no trusted roots"), "{e}");
        let k = KeyPair::generate().unwrap();
        let root = CertificateParams::new(vec!["root.test".into()])
            .unwrap()
            .self_signed(&k)
            .unwrap();
        let sys = pem("CERTIFICATE", root.der());
        let t = Tls::new(&[("api.example.com".into(), Vec::new())], sys.as_bytes()).unwrap();
        assert!(t.server("api.example.com").is_some());
        assert!(t.client("api.example.com").is_some());
        assert!(t.server("other.example").is_none());
        let parsed: Vec<_> = CertificateDer::pem_slice_iter(t.ca_pem.as_bytes()).collect();
        assert_eq!(parsed.len(), 1);
        assert!(parsed[0].is_ok());
        assert!(!t.ca_pem.contains("PRIVATE"));
    }

    /// A handshake between a client trusting `ca_pem` (naming `sni`,
    /// offering `alpn`) and `server`, in memory; the protocol agreed.
    fn handshake(
        server: Arc<ServerConfig>,
        ca_pem: &str,
        sni: &str,
        alpn: &[&[u8]],
    ) -> Result<Option<Vec<u8>>, rustls::Error> {
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(
            CertificateDer::pem_slice_iter(ca_pem.as_bytes()).map(|c| c.unwrap()),
        );
        let mut cc = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        cc.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
        let mut c = rustls::ClientConnection::new(Arc::new(cc), server_name(sni).unwrap()).unwrap();
        let mut s = rustls::ServerConnection::new(server).unwrap();
        for _ in 0..10 {
            let mut buf = Vec::new();
            c.write_tls(&mut buf).unwrap();
            s.read_tls(&mut buf.as_slice()).unwrap();
            s.process_new_packets()?;
            let mut buf = Vec::new();
            s.write_tls(&mut buf).unwrap();
            c.read_tls(&mut buf.as_slice()).unwrap();
            c.process_new_packets()?;
            if !c.is_handshaking() && !s.is_handshaking() {
                return Ok(c.alpn_protocol().map(|p| p.to_vec()));
            }
        }
        panic!("no handshake in 10 rounds");
    }

    #[test]
    fn the_leaf_serves_its_one_name_and_http1_only() {
        let k = KeyPair::generate().unwrap();
        let root = CertificateParams::new(vec!["root.test".into()])
            .unwrap()
            .self_signed(&k)
            .unwrap();
        let sys = pem("CERTIFICATE", root.der());
        let t = Tls::new(&[("api.example.com".into(), Vec::new())], sys.as_bytes()).unwrap();
        let server = t.server("api.example.com").unwrap();
        assert_eq!(
            handshake(server.clone(), &t.ca_pem, "api.example.com", &[b"http/1.1"]),
            Ok(Some(b"http/1.1".to_vec()))
        );
        assert_eq!(
            handshake(server.clone(), &t.ca_pem, "API.example.com", &[]),
            Ok(None)
        );
        // Another name: the server has no certificate for it.
        assert!(handshake(server.clone(), &t.ca_pem, "other.example", &[]).is_err());
        // HTTP/2 alone is not offered back.
        assert!(handshake(server.clone(), &t.ca_pem, "api.example.com", &[b"h2"]).is_err());
        // Another run's CA does not vouch for this run's leaf.
        let other = Tls::new(&[("api.example.com".into(), Vec::new())], sys.as_bytes()).unwrap();
        assert!(handshake(server, &other.ca_pem, "api.example.com", &[]).is_err());
    }
}
