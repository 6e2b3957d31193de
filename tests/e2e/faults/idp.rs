//! The identity provider goes down mid-run and comes back: tokens signed
//! with keys the gateway already holds keep working (cached and freshly
//! minted alike), a token with a key id it has never seen is refused with
//! 401 while the key set cannot be fetched, the refusal is in the audit
//! trail, and once the provider is back with the new key it is accepted.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tollgate_auth::DevIssuer;
use tollgate_e2e::audit_support::{Exchange, metric, tool, wait_record};
use tollgate_e2e::children::ChildGateway;
use tollgate_e2e::{Demo, TEST_BASE_URL, http};

/// A JWKS endpoint that can be taken down and brought back on its port.
/// Every connection is answered once and closed, so stopping it leaves
/// nothing the gateway could still reach.
struct Provider {
    port: u16,
    keys: Arc<Mutex<Value>>,
    task: Option<JoinHandle<()>>,
}

impl Provider {
    async fn start(keys: Value) -> Provider {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let keys = Arc::new(Mutex::new(keys));
        let task = Some(tokio::spawn(serve(listener, keys.clone())));
        Provider { port, keys, task }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    async fn restart(&mut self, keys: Value) {
        *self.keys.lock().unwrap() = keys;
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.task = Some(tokio::spawn(serve(listener, self.keys.clone())));
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Aborting this task drops the set, which aborts every connection.
async fn serve(listener: TcpListener, keys: Arc<Mutex<Value>>) {
    let mut connections = JoinSet::new();
    while let Ok((stream, _)) = listener.accept().await {
        let body = keys.lock().unwrap().to_string();
        connections.spawn(tollgate_e2e::answer_json(stream, body));
    }
}

fn key(issuer: &str) -> DevIssuer {
    DevIssuer::from_pem(issuer, &DevIssuer::generate_pem().unwrap()).unwrap()
}

fn mint(key: &DevIssuer, sub: &str) -> String {
    let aud = [format!("{TEST_BASE_URL}/mcp/demo")];
    key.mint(sub, Some("payments"), &[], Duration::from_secs(600), &aud)
        .unwrap()
}

fn key_set(keys: &[&DevIssuer]) -> Value {
    json!({ "keys": keys.iter().map(|k| k.jwks()["keys"][0].clone()).collect::<Vec<_>>() })
}

async fn call(gw: &ChildGateway, token: &str, id: u64) -> Exchange {
    tool(gw.url("demo"), token, id, "echo", json!({"text": "idp"})).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_keys_serve_while_the_identity_provider_is_down_and_new_keys_wait_for_it() {
    let demo = Demo::spawn().await;
    let mut idp = Provider::start(json!({"keys": []})).await;
    let (old, new) = (key(&idp.url()), key(&idp.url()));
    *idp.keys.lock().unwrap() = key_set(&[&old]);
    let gw = ChildGateway::spawn(&format!(
        "[auth]\npublic_base_url = \"{TEST_BASE_URL}\"\n\n[[auth.issuers]]\nissuer = \"{issuer}\"\n\
         jwks_uri = \"{issuer}/jwks\"\nallow_insecure_http = true\nrefresh_interval = \"1s\"\n\
         min_refresh_interval = \"1s\"\n\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        demo.url,
        issuer = idp.url()
    ))
    .await;
    let cached = mint(&old, "alice");
    assert_eq!(call(&gw, &cached, 1).await.status, 200);

    idp.stop();
    // Past a scheduled refresh and the unknown-key refetch interval.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(call(&gw, &cached, 2).await.status, 200, "a verified token");
    assert_eq!(call(&gw, &mint(&old, "bob"), 3).await.status, 200, "a known key");
    let newcomer = mint(&new, "carol");
    let refused = call(&gw, &newcomer, 4).await;
    assert_eq!(
        refused.status, 401,
        "an unknown key id while the keys cannot be fetched"
    );
    let record = wait_record(&gw.audit_dir(), &refused).await;
    assert_eq!(record.status, Some(401));
    assert!(record.principal.is_none(), "no principal for a refused token");
    let metrics = gw.metrics().await;
    let failed = [("issuer", idp.url()), ("result", "failed".to_owned())];
    let failed: Vec<(&str, &str)> = failed.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert!(
        metric(&metrics, "tollgate_auth_jwks_fetches_total", &failed) >= 1.0,
        "{metrics}"
    );
    let ready = http().get(format!("{}/readyz", gw.admin)).send().await.unwrap();
    assert_eq!(ready.status(), 200, "keys are held: still ready");

    idp.restart(key_set(&[&old, &new])).await;
    let mut status = 0;
    for id in 5..50 {
        status = call(&gw, &newcomer, id).await.status;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(status, 200, "the new key is accepted once the provider is back");
    assert_eq!(call(&gw, &cached, 60).await.status, 200);
}
