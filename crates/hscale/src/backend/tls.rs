//! TLS to backends: a `[[backends]]` entry with `tls = true` is reached
//! over TLS, its certificate verified against the `ca` file (names from
//! `server_name`, else the host of `address`; an IP address is checked
//! against the certificate's IP SANs), with an optional client certificate
//! (`cert`, `key`) for accounts that `REQUIRE X509`. Built once per backend
//! at start ([`connectors`]) and used by every connection to it
//! (`BackendConn::connect`: pooled, admin, change and probe connections).
//!
//! ```text
//!  TCP ─► server greeting (must offer CLIENT_SSL) ─► SSLRequest (seq 1)
//!      ─► TLS handshake (rustls, ring) ─► HandshakeResponse (seq 2) over TLS
//! ```

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::TlsConnector;

use crate::config::BackendConfig;

/// How to reach one backend over TLS.
pub struct BackendTls {
    pub connector: TlsConnector,
    /// The name the server's certificate must carry.
    pub server_name: ServerName<'static>,
}

impl BackendTls {
    /// The same connector for another server of backend `b` (a replica
    /// at `address`): its certificate must carry `server_name` when set,
    /// else the host of `address`.
    pub fn for_address(&self, b: &BackendConfig, address: &str) -> BackendTls {
        let server_name = match &b.server_name {
            Some(_) => self.server_name.clone(),
            None => ServerName::try_from(host_of(address).to_string())
                .unwrap_or_else(|_| self.server_name.clone()),
        };
        BackendTls {
            connector: self.connector.clone(),
            server_name,
        }
    }
}

/// Why a backend's TLS settings could not be used.
#[derive(Debug, thiserror::Error)]
pub enum BackendTlsError {
    #[error("[[backends]] {backend}: {field} = {path:?}: {reason}")]
    File {
        backend: String,
        field: &'static str,
        path: String,
        reason: String,
    },
    #[error("[[backends]] {backend}: {reason}")]
    Settings { backend: String, reason: String },
    #[error("[[backends]] {backend}: {source}")]
    Rustls {
        backend: String,
        source: rustls::Error,
    },
}

impl From<BackendTlsError> for std::io::Error {
    fn from(e: BackendTlsError) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
    }
}

/// One entry per backend: its TLS connector, or `None` without `tls`.
pub fn connectors(
    backends: &[BackendConfig],
) -> Result<Vec<Option<Arc<BackendTls>>>, BackendTlsError> {
    backends
        .iter()
        .map(|b| connector(b).map(|c| c.map(Arc::new)))
        .collect()
}

/// The connector of one backend, or `None` when `tls` is off.
pub fn connector(b: &BackendConfig) -> Result<Option<BackendTls>, BackendTlsError> {
    if !b.tls {
        return Ok(None);
    }
    let settings = |reason: String| BackendTlsError::Settings {
        backend: b.name.clone(),
        reason,
    };
    let file = |field: &'static str, path: &str, reason: String| BackendTlsError::File {
        backend: b.name.clone(),
        field,
        path: path.to_string(),
        reason,
    };
    let ca =
        b.ca.as_deref()
            .ok_or_else(|| settings("tls = true needs ca = \"<PEM file of the CA>\"".into()))?;
    let mut roots = rustls::RootCertStore::empty();
    let cas = CertificateDer::pem_file_iter(ca)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| file("ca", ca, e.to_string()))?;
    if cas.is_empty() {
        return Err(file("ca", ca, "no certificate in the file".into()));
    }
    for c in cas {
        roots
            .add(c)
            .map_err(|e| file("ca", ca, format!("not a CA certificate: {e}")))?;
    }
    let rustls_err = |source| BackendTlsError::Rustls {
        backend: b.name.clone(),
        source,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(rustls_err)?
        .with_root_certificates(roots);
    let config = match (&b.cert, &b.key) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| file("cert", cert, e.to_string()))?;
            let key_der =
                PrivateKeyDer::from_pem_file(key).map_err(|e| file("key", key, e.to_string()))?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(rustls_err)?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err(settings("cert and key go together".into())),
    };
    let name = match &b.server_name {
        Some(n) => n.clone(),
        None => host_of(&b.address).to_string(),
    };
    let server_name = ServerName::try_from(name.clone())
        .map_err(|e| settings(format!("{name:?} is not a server name: {e}")))?;
    Ok(Some(BackendTls {
        connector: TlsConnector::from(Arc::new(config)),
        server_name,
    }))
}

/// The host of `host:port`, `[v6]:port` or a bare host.
fn host_of(address: &str) -> &str {
    if let Some(rest) = address.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match address.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.parse::<u16>().is_ok() => host,
        _ => address,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hosts() {
        assert_eq!(super::host_of("127.0.0.1:3306"), "127.0.0.1");
        assert_eq!(super::host_of("db.example:3306"), "db.example");
        assert_eq!(super::host_of("[::1]:3306"), "::1");
        assert_eq!(super::host_of("db.example"), "db.example");
    }
}
