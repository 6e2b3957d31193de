//! TLS on the listeners of a real `tollgate serve`, with certificates made
//! by `openssl`, and `curl` and the TypeScript SDK as clients: ALPN h2 and
//! HTTP/1.1, the certificate replaced on disk mid-run (new connections get
//! the new one, a stream that started before the swap finishes), and
//! client certificates required on the admin listener; an upstream reached
//! over TLS with a configured CA and client certificate (mTLS).

use std::path::Path;
use std::time::Duration;

use tokio::process::Command;
use tollgate_e2e::Demo;
use tollgate_e2e::audit_support::{modern, try_metric};
use tollgate_e2e::children::{ChildGateway, RedisServer, ts_plan_client_env};
use tollgate_e2e::modern_body;

/// Run `openssl` with `args` in `dir`.
async fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA `{name}-ca.pem` and a certificate `{name}.pem`/`{name}.key` it
/// signed for 127.0.0.1.
async fn issue(dir: &Path, name: &str) {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
    let ca = format!("{name}-ca");
    let subject = format!("/CN={name} test CA");
    let (ca_key, ca_pem) = (format!("{ca}.key"), format!("{ca}.pem"));
    let mut args = vec!["req", "-x509"];
    args.extend(ec);
    args.extend(["-keyout", &ca_key, "-out", &ca_pem, "-days", "2", "-subj", &subject]);
    openssl(dir, &args).await;
    let (key, csr, pem) = (format!("{name}.key"), format!("{name}.csr"), format!("{name}.pem"));
    let mut args = vec!["req"];
    args.extend(ec);
    args.extend(["-keyout", &key, "-out", &csr, "-subj", "/CN=127.0.0.1"]);
    openssl(dir, &args).await;
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    let args = [
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &ca_pem,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-out",
        &pem,
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ];
    openssl(dir, &args).await;
}

/// A directory with a server and a client certificate, each with its CA.
async fn certificates() -> tempfile::TempDir {
    let certs = tempfile::tempdir().unwrap();
    issue(certs.path(), "server").await;
    issue(certs.path(), "client").await;
    certs
}

/// `curl` with `args`: its exit status and stdout.
async fn curl(args: &[&str]) -> (i32, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .args(args)
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

const ECHO: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"over tls"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

fn call_args<'a>(url: &'a str, ca: &'a str, body: &'a str, name: &'a str) -> Vec<String> {
    [
        "--cacert",
        ca,
        "-X",
        "POST",
        url,
        "-H",
        "content-type: application/json",
        "-H",
        "accept: application/json, text/event-stream",
        "-H",
        "mcp-protocol-version: 2026-07-28",
        "-H",
        "mcp-method: tools/call",
        "-H",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("mcp-name: {name}"), "--data".into(), body.into()])
    .collect()
}

#[tokio::test]
async fn listeners_serve_tls_reload_their_certificate_and_can_require_client_certificates() {
    let demo = Demo::spawn().await;
    let certs = certificates().await;
    let dir = certs.path();
    let path = |f: &str| dir.join(f).display().to_string();
    let gw = ChildGateway::spawn(&format!(
        "[listen.tls]\ncert = \"{}\"\nkey = \"{}\"\nreload_interval = \"200ms\"\n\n\
         [listen.admin_tls]\ncert = \"{}\"\nkey = \"{}\"\nclient_ca = \"{}\"\nreload_interval = \"200ms\"\n\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        path("server.pem"),
        path("server.key"),
        path("server.pem"),
        path("server.key"),
        path("client-ca.pem"),
        demo.url
    ))
    .await;
    let url = gw.url("demo").replace("http://", "https://");
    let ca = path("server-ca.pem");

    // ALPN: h2 when the client offers it, HTTP/1.1 otherwise.
    for (flag, version) in [("--http2", "2"), ("--http1.1", "1.1")] {
        let mut args = call_args(&url, &ca, ECHO, "echo");
        args.extend([flag.into(), "-w".into(), "\n%{http_version} %{http_code}".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out) = curl(&args).await;
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("over tls"), "{out}");
        assert!(out.ends_with(&format!("{version} 200")), "{out}");
    }
    // The TypeScript SDK, trusting the private CA, runs a session over TLS.
    let plan = serde_json::json!({"calls": [{"name": "echo", "arguments": {"text": "sdk over tls"}}]});
    let out = ts_plan_client_env(&url, &plan, &[], &[("NODE_EXTRA_CA_CERTS", &ca)]).await;
    assert_eq!(out["sessionIdPresent"], true, "{out:#}");
    assert_eq!(out["calls"][0]["content"][0]["text"], "sdk over tls", "{out:#}");

    // Plain HTTP on a TLS listener does not get through.
    let (code, _) = curl(&[&gw.url("demo")]).await;
    assert_ne!(code, 0);

    // A stream that starts before the certificate is replaced finishes.
    let countdown = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"countdown","arguments":{"n":6,"delay_ms":300},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}}}"#;
    let args = call_args(&url, &ca, countdown, "countdown");
    let stream = tokio::spawn(async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        curl(&args).await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    issue(dir, "next").await;
    std::fs::copy(dir.join("next.key"), dir.join("server.key")).unwrap();
    std::fs::copy(dir.join("next.pem"), dir.join("server.pem")).unwrap();
    let next_ca = path("next-ca.pem");
    let mut swapped = false;
    for _ in 0..50 {
        let args = call_args(&url, &next_ca, ECHO, "echo");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        if curl(&args).await.0 == 0 {
            swapped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(swapped, "the new certificate is served: {}", gw.log());
    let args = call_args(&url, &ca, ECHO, "echo");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_ne!(
        curl(&args).await.0,
        0,
        "the old certificate is gone for new connections"
    );
    let (code, out) = stream.await.unwrap();
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("\"result\""),
        "the stream that spanned the swap ended with its result: {out}"
    );

    // The admin listener wants a client certificate.
    let healthz = gw.admin.replace("http://", "https://") + "/healthz";
    let next_ca = path("next-ca.pem");
    let (code, _) = curl(&["--cacert", &next_ca, &healthz]).await;
    assert_ne!(code, 0, "no client certificate, no admin");
    let (cert, key) = (path("client.pem"), path("client.key"));
    let (code, out) = curl(&["--cacert", &next_ca, "--cert", &cert, "--key", &key, &healthz]).await;
    assert_eq!((code, out.as_str()), (0, "ok\n"));

    // Each listener's certificate expiry, as reloaded: the test
    // certificates are valid for two days from their making.
    let metrics = healthz.replace("/healthz", "/metrics");
    let (code, out) = curl(&["--cacert", &next_ca, "--cert", &cert, "--key", &key, &metrics]).await;
    assert_eq!(code, 0, "{out}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for listener in ["public", "admin"] {
        let name = "tollgate_tls_certificate_expiry_timestamp_seconds";
        let expiry = try_metric(&out, name, &[("listener", listener)]).unwrap();
        let days = (expiry - now) / 86_400.0;
        assert!((1.99..2.001).contains(&days), "{listener}: expires in {days} days");
    }
}

#[tokio::test]
async fn an_upstream_that_requires_a_client_certificate_is_reached_with_the_configured_one() {
    let demo = Demo::spawn().await;
    let certs = certificates().await;
    let dir = certs.path();
    let path = |f: &str| dir.join(f).display().to_string();
    // The upstream: a gateway serving the demo over TLS, client
    // certificates required.
    let upstream = ChildGateway::spawn(&format!(
        "[listen.tls]\ncert = \"{}\"\nkey = \"{}\"\nclient_ca = \"{}\"\n\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        path("server.pem"),
        path("server.key"),
        path("client-ca.pem"),
        demo.url
    ))
    .await;
    let url = upstream.url("demo").replace("http://", "https://");
    let gw = tollgate_e2e::TestGateway::spawn(&format!(
        "[[servers]]\nname = \"mtls\"\nurl = \"{url}\"\ntls = {{ ca = \"{ca}\", cert = \"{cert}\", key = \"{key}\" }}\n\n\
         [[servers]]\nname = \"nocert\"\nurl = \"{url}\"\ntls = {{ ca = \"{ca}\" }}\n\n\
         [[servers]]\nname = \"noca\"\nurl = \"{url}\"\n",
        ca = path("server-ca.pem"),
        cert = path("client.pem"),
        key = path("client.key"),
    ))
    .await;
    let call = |route: &str| {
        let body = tollgate_e2e::modern_body(
            1,
            "tools/call",
            serde_json::json!({"name": "echo", "arguments": {"text": "over mtls"}}),
        );
        tollgate_e2e::audit_support::modern(gw.url(route), None, "tools/call", Some("echo"), body)
    };
    let ex = call("mtls").await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert_eq!(ex.message()["result"]["content"][0]["text"], "over mtls");
    for route in ["nocert", "noca"] {
        let ex = call(route).await;
        assert_eq!(
            (ex.status, ex.message()["error"]["code"].as_i64()),
            (502, Some(-32001)),
            "{route}: {ex:?}"
        );
    }
}

#[tokio::test]
async fn limits_are_shared_through_a_redis_over_tls_with_a_private_ca_and_a_client_certificate() {
    let demo = Demo::spawn().await;
    let certs = certificates().await;
    let dir = certs.path();
    let path = |f: &str| dir.join(f).display().to_string();
    let redis = RedisServer::start_tls(dir).await;
    let gw = ChildGateway::spawn(&format!(
        "[limits.redis]\nurl = \"rediss://127.0.0.1:{}\"\ntimeout = \"500ms\"\n\
         tls = {{ ca = \"{}\", cert = \"{}\", key = \"{}\" }}\n\n\
         [[limits.rules]]\nid = \"echo-global\"\ntools = [\"echo\"]\nper = \"global\"\nrate = 2\nperiod = \"1m\"\n\
         on_store_error = \"deny\"\n\n\
         [[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        redis.port,
        path("server-ca.pem"),
        path("client.pem"),
        path("client.key"),
        demo.url
    ))
    .await;
    let mut up = serde_json::Value::Null;
    for _ in 0..100 {
        up = gw.ready_detail().await["limit_store"].clone();
        if up["up"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(up["up"], true, "{up}\n{}", gw.log());
    // Counted in Redis (a store that is down would deny with "Limit store
    // unavailable").
    let echo = |id| {
        let body = modern_body(
            id,
            "tools/call",
            serde_json::json!({"name": "echo", "arguments": {"text": "x"}}),
        );
        modern(gw.url("demo"), None, "tools/call", Some("echo"), body)
    };
    for id in 0..2 {
        let ex = echo(id).await;
        assert_eq!(ex.status, 200, "{ex:?}");
    }
    let ex = echo(3).await;
    assert_eq!(ex.status, 429, "{ex:?}");
    assert_eq!(ex.message()["error"]["message"], "Rate limit exceeded: echo-global");
}
