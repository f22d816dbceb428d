//! TLS to PostgreSQL, chosen as libpq chooses it: `sslmode` and `sslrootcert` in the storage URL.
//!
//! | `sslmode` | encrypted | the server's certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (the default) | when the server offers it | not checked |
//! | `require` | always | not checked, unless `sslrootcert` names a CA: then as `verify-ca` |
//! | `verify-ca` | always | signed by `sslrootcert`'s CAs (else the system's) |
//! | `verify-full` | always | as `verify-ca`, and issued for the host connected to |
//!
//! rustls does the TLS (with the aws-lc-rs provider the rest of the build already has); the system's
//! CAs come from `rustls-native-certs`.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use quiver_core::StoreError;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::Socket;
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Nothing: the connection is encrypted against eavesdroppers only.
    Nothing,
    /// The chain, up to a trusted CA.
    Chain,
    /// The chain and the host name.
    Full,
}

/// What the storage URL asks for: the URL for the driver (our keys taken out) and the connector.
#[derive(Debug, Clone)]
pub(crate) struct Secured {
    /// The driver's configuration, its `sslmode` set.
    pub(crate) config: tokio_postgres::Config,
    /// Makes TLS connections as the URL asks.
    pub(crate) connector: Connector,
}

impl Secured {
    /// A connection of its own (outside the pool), and the future that drives it.
    pub(crate) async fn connect(
        &self,
    ) -> Result<
        (
            tokio_postgres::Client,
            tokio_postgres::Connection<Socket, TlsStream>,
        ),
        tokio_postgres::Error,
    > {
        self.config.connect(self.connector.clone()).await
    }
}

/// Reads `sslmode` and `sslrootcert` from a storage URL (`postgres://...?sslmode=verify-full&sslrootcert=/path`)
/// or a key-value string (`host=... sslmode=require`), and makes the driver's configuration and the
/// connector.
///
/// # Errors
/// The URL does not parse, names an `sslmode` this build does not know, or a CA file that cannot be
/// read or holds no certificate.
pub(crate) fn secured(url: &str) -> Result<Secured, StoreError> {
    let (rest, mode, root) = take_tls_keys(url);
    let mut config = rest
        .parse::<tokio_postgres::Config>()
        .map_err(|e| StoreError::Backend(format!("the storage URL is not a PostgreSQL URL: {e}")))?;
    let (ssl_mode, check) = match mode.as_deref() {
        None | Some("prefer") => (SslMode::Prefer, Check::Nothing),
        Some("disable") => (SslMode::Disable, Check::Nothing),
        Some("require") if root.is_some() => (SslMode::Require, Check::Chain),
        Some("require") => (SslMode::Require, Check::Nothing),
        Some("verify-ca") => (SslMode::Require, Check::Chain),
        Some("verify-full") => (SslMode::Require, Check::Full),
        Some(other) => {
            return Err(StoreError::Backend(format!(
                "sslmode `{other}` is not supported; use disable, prefer, require, verify-ca or verify-full"
            )));
        }
    };
    config.ssl_mode(ssl_mode);
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        Check::Nothing => Arc::new(Unchecked(provider.clone())),
        Check::Chain | Check::Full => {
            let roots = Arc::new(trusted(root.as_deref())?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| StoreError::Backend(format!("cannot check PostgreSQL's certificates: {e}")))?;
            if check == Check::Full {
                webpki
            } else {
                Arc::new(AnyName(webpki))
            }
        }
    };
    let tls = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Backend(format!("cannot set up TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Secured {
        config,
        connector: Connector(Arc::new(tls)),
    })
}

/// The URL without `sslmode` and `sslrootcert`, and their values. The other query pairs are kept as
/// written: the driver decodes them itself (and reads `+` as a plus, not a space).
fn take_tls_keys(url: &str) -> (String, Option<String>, Option<String>) {
    let (mut mode, mut root) = (None, None);
    if let Some((base, query)) = url.split_once('?') {
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let Some((key, value)) = url::form_urlencoded::parse(pair.as_bytes()).next() else {
                continue;
            };
            match key.as_ref() {
                "sslmode" => mode = Some(value.into_owned()),
                "sslrootcert" => root = Some(value.into_owned()),
                _ => kept.push(pair),
            }
        }
        let rest = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return (rest, mode, root);
    }
    if url.contains("://") {
        return (url.to_owned(), None, None);
    }
    // The key-value form: `host=localhost sslmode=require`.
    let mut kept = Vec::new();
    for pair in url.split_whitespace() {
        match pair.split_once('=') {
            Some(("sslmode", value)) => mode = Some(value.to_owned()),
            Some(("sslrootcert", value)) => root = Some(value.to_owned()),
            _ => kept.push(pair),
        }
    }
    (kept.join(" "), mode, root)
}

/// The CAs a server's chain must lead to: those of `file` (PEM), else the system's.
fn trusted(file: Option<&str>) -> Result<RootCertStore, StoreError> {
    let mut roots = RootCertStore::empty();
    match file {
        Some(file) => {
            let certificates = CertificateDer::pem_file_iter(file)
                .and_then(|all| all.collect::<Result<Vec<_>, _>>())
                .map_err(|e| StoreError::Backend(format!("sslrootcert `{file}` cannot be read: {e}")))?;
            let (added, _) = roots.add_parsable_certificates(certificates);
            if added == 0 {
                return Err(StoreError::Backend(format!(
                    "sslrootcert `{file}` holds no certificate"
                )));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(StoreError::Backend(
                    "no system CA certificates were found to check PostgreSQL's certificate; name a CA file with sslrootcert"
                        .to_owned(),
                ));
            }
        }
    }
    Ok(roots)
}

/// Takes any certificate (`prefer` and `require`), still checking that the handshake is signed by it.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Checks the chain but not the name (`verify-ca`).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Makes TLS connections to PostgreSQL servers for the driver.
#[derive(Debug, Clone)]
pub(crate) struct Connector(Arc<ClientConfig>);

impl MakeTlsConnect<Socket> for Connector {
    type Stream = TlsStream;
    type TlsConnect = Connect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, host: &str) -> Result<Connect, io::Error> {
        // A name that cannot be a TLS server name (a Unix socket's path) fails only if TLS is tried.
        Ok(Connect {
            config: self.0.clone(),
            name: ServerName::try_from(host.to_owned()).ok(),
        })
    }
}

/// One TLS connection about to be made.
#[derive(Debug)]
pub(crate) struct Connect {
    config: Arc<ClientConfig>,
    name: Option<ServerName<'static>>,
}

impl TlsConnect<Socket> for Connect {
    type Stream = TlsStream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TlsStream>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        Box::pin(async move {
            let name = self.name.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "this host cannot be reached over TLS",
                )
            })?;
            let stream = tokio_rustls::TlsConnector::from(self.config)
                .connect(name, stream)
                .await?;
            Ok(TlsStream(Box::new(stream)))
        })
    }
}

/// A connection to PostgreSQL over TLS.
#[derive(Debug)]
pub(crate) struct TlsStream(Box<tokio_rustls::client::TlsStream<Socket>>);

impl AsyncRead for TlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(context, buffer)
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(context, bytes)
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(context)
    }
}

impl tokio_postgres::tls::TlsStream for TlsStream {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_keys_are_taken_out_of_urls_and_key_value_strings() {
        assert_eq!(
            take_tls_keys(
                "postgres://u@h:5432/db?sslmode=verify-full&application_name=q&sslrootcert=%2Fca.pem"
            ),
            (
                "postgres://u@h:5432/db?application_name=q".to_owned(),
                Some("verify-full".to_owned()),
                Some("/ca.pem".to_owned())
            )
        );
        assert_eq!(
            take_tls_keys("postgres://u@h/db"),
            ("postgres://u@h/db".to_owned(), None, None)
        );
        assert_eq!(
            take_tls_keys(
                "postgres://u@h/db?options=-c%20search_path%3Dq&sslmode=require&application_name=a+b"
            ),
            (
                "postgres://u@h/db?options=-c%20search_path%3Dq&application_name=a+b".to_owned(),
                Some("require".to_owned()),
                None
            ),
            "the other pairs are passed on as written"
        );
        assert_eq!(
            take_tls_keys("host=h user=u sslmode=require"),
            ("host=h user=u".to_owned(), Some("require".to_owned()), None)
        );
    }

    #[test]
    fn an_unknown_mode_or_an_unreadable_ca_file_is_refused_by_name() {
        let unknown = secured("postgres://u@h/db?sslmode=allow")
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("sslmode `allow` is not supported"), "{unknown}");
        let missing = secured("postgres://u@h/db?sslmode=verify-ca&sslrootcert=/no/such/ca.pem")
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("sslrootcert `/no/such/ca.pem` cannot be read"),
            "{missing}"
        );
    }
}
