//! The fetcher against raw TCP and TLS servers: chunked bodies, silent
//! servers, and https with an extra root. The TLS server's certificate
//! (for localhost and 127.0.0.1) is signed by a throwaway CA made at test
//! time.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{dev, fetcher};
use crate::cimd::{CimdError, CimdFetcher, CimdSettings};

/// A server that answers every connection with `response` after reading
/// the request head, or holds it open without answering (`None`).
async fn raw_server(response: Option<&'static [u8]>, tls: Option<tokio_rustls::TlsAcceptor>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            match tls.clone() {
                Some(acceptor) => {
                    let Ok(stream) = acceptor.accept(tcp).await else {
                        continue;
                    };
                    tokio::spawn(reply(stream, response));
                }
                None => drop(tokio::spawn(reply(tcp, response))),
            }
        }
    });
    port
}

async fn reply<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, response: Option<&'static [u8]>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    match response {
        Some(bytes) => {
            let _ = stream.write_all(bytes).await;
            let _ = stream.shutdown().await;
        }
        None => tokio::time::sleep(Duration::from_secs(30)).await,
    }
}

#[tokio::test]
async fn chunked_body_is_cut_at_max_bytes() {
    // No Content-Length: the limit is enforced while streaming.
    let chunk = "x".repeat(80);
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n\
         50\r\n{chunk}\r\n50\r\n{chunk}\r\n0\r\n\r\n"
    );
    let port = raw_server(Some(response.into_bytes().leak()), None).await;
    let f = fetcher(CimdSettings {
        max_bytes: 100,
        ..dev()
    });
    let result = f.fetch(&format!("http://127.0.0.1:{port}/client")).await;
    assert!(
        matches!(result, Err(CimdError::TooLarge { limit: 100, .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn the_whole_fetch_is_timed() {
    let port = raw_server(None, None).await;
    let f = fetcher(CimdSettings {
        timeout: Duration::from_millis(200),
        ..dev()
    });
    let result = f.fetch(&format!("http://127.0.0.1:{port}/client")).await;
    assert!(matches!(result, Err(CimdError::Timeout { .. })), "{result:?}");
}

/// A throwaway CA and a certificate it signed for localhost and
/// 127.0.0.1: the CA's PEM, the leaf's chain and key.
fn test_pki() -> (Vec<u8>, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
    let key = PrivateKeyDer::from_pem_slice(leaf_key.serialize_pem().as_bytes()).unwrap();
    (ca_cert.pem().into_bytes(), vec![leaf_cert.der().clone()], key)
}

fn tls_acceptor(certs: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>) -> tokio_rustls::TlsAcceptor {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

#[tokio::test]
async fn https_with_an_extra_root() {
    // The document names the port it is served on, unknown until bound:
    // serve a mismatching one and read the client_id back from the error.
    static DOC: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n\
        {\"client_id\":\"https://localhost/client\",\"redirect_uris\":[\"https://app.example/cb\"]}";
    let (ca, certs, key) = test_pki();
    let port = raw_server(Some(DOC), Some(tls_acceptor(certs, key))).await;
    let url = format!("https://localhost:{port}/client");
    let trusted = fetcher(CimdSettings {
        extra_roots: vec![ca.clone()],
        ..dev()
    });
    let reached = trusted.fetch(&url).await.unwrap_err().to_string();
    assert!(
        reached.contains("\"https://localhost/client\" is not the URL"),
        "{reached}"
    );
    let untrusted = fetcher(dev());
    assert!(matches!(
        untrusted.fetch(&url).await,
        Err(CimdError::Unreachable { .. })
    ));
}

#[test]
fn settings_are_checked() {
    let inverted = CimdSettings {
        min_cache: Duration::from_secs(10),
        max_cache: Duration::from_secs(5),
        ..dev()
    };
    assert!(matches!(CimdFetcher::new(inverted), Err(CimdError::Setup(_))));
    let garbage = CimdSettings {
        extra_roots: vec![b"not a certificate".to_vec()],
        ..dev()
    };
    assert!(matches!(CimdFetcher::new(garbage), Err(CimdError::Setup(_))));
    assert!(
        CimdFetcher::new(CimdSettings {
            extra_roots: vec![test_pki().0],
            ..dev()
        })
        .is_ok()
    );
    let debug = format!("{:?}", fetcher(dev()));
    assert!(
        debug.contains("CimdFetcher") && debug.contains("development: true"),
        "{debug}"
    );
}
