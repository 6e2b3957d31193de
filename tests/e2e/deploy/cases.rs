//! One test per values file of the chart's `ci/` directory: the common
//! checks (`super::check`), then what the file's own features render.

use serde_json::{Value, json};

use super::checks::{scrape_annotations, secret_ref};
use super::kube::runbook_base;
use super::render::{Rendered, ci_values, object_name, yaml_documents};
use super::{Checked, check};

/// A values file, as JSON.
fn values_of(name: &str) -> Value {
    yaml_documents(&std::fs::read(ci_values(name)).unwrap()).remove(0)
}

fn names(docs: &[&Value]) -> Vec<String> {
    docs.iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn ref_of(rendered: &Rendered, var: &str) -> (String, String) {
    secret_ref(rendered, var)
}

fn pair(secret: &str, key: &str) -> (String, String) {
    (secret.to_owned(), key.to_owned())
}

#[test]
fn default_values_one_upstream_and_a_generated_session_key() {
    let Checked { rendered, pod, loaded } = check("default-values.yaml");
    let config = &loaded.expect("the chart renders the configuration").config;
    let servers: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(servers, ["everything"]);
    assert_eq!(config.shutdown.grace.as_secs(), 25);
    assert_eq!(rendered.pod_spec()["terminationGracePeriodSeconds"], 5 + 25 + 5);
    assert_eq!(rendered.one("Deployment")["spec"]["replicas"], 2);
    let app_version =
        yaml_documents(&std::fs::read(super::chart_dir().join("Chart.yaml")).unwrap()).remove(0)["appVersion"].clone();
    assert_eq!(
        rendered.container()["image"],
        format!("tollgate:{}", app_version.as_str().unwrap())
    );
    assert_eq!(rendered.one("PodDisruptionBudget")["spec"]["maxUnavailable"], 1);
    for kind in [
        "HorizontalPodAutoscaler",
        "ServiceMonitor",
        "PrometheusRule",
        "Ingress",
        "HTTPRoute",
        "NetworkPolicy",
    ] {
        assert!(rendered.all(kind).is_empty(), "{kind} is off by default");
    }
    assert!(!config.console.enabled, "the console is off by default");
    scrape_annotations(&rendered, "http");
    assert_eq!(
        ref_of(&rendered, "TOLLGATE_SESSION_KEY"),
        pair(&object_name("session"), "session-key")
    );
    assert_eq!(
        ref_of(&rendered, "TOLLGATE_ADMIN_TOKEN"),
        pair(&object_name("admin-token"), "admin-token")
    );
    assert!(pod.env["TOLLGATE_ADMIN_TOKEN"].len() >= 16, "a generated admin token");
    assert_eq!(
        pod.env.len(),
        2,
        "only the session key and the admin token: {:?}",
        pod.env.keys()
    );
    assert!(rendered.volume("audit").unwrap()["emptyDir"].is_object());
    let mounts: Vec<&str> = pod.mounts.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(mounts, ["/etc/tollgate/config", "/var/lib/tollgate/audit"]);
}

#[test]
fn full_values_every_feature_with_existing_secrets() {
    let Checked { rendered, pod, loaded } = check("full-values.yaml");
    let config = &loaded.expect("the chart renders the configuration").config;
    assert!(config.listen.tls.is_some() && config.listen.admin_tls.is_some());
    let redis = config.limits.redis.as_ref().expect("[limits.redis]");
    let tls = redis.tls.as_ref().expect("Redis TLS");
    assert!(tls.ca.is_some() && tls.cert.is_some() && tls.key.is_some());
    assert_eq!(redis.replicas, 3, "the autoscaler's minimum");
    assert!(config.policy.dir.is_some());
    assert_eq!(config.sessions.previous_keys.len(), 1);
    assert_eq!(config.shutdown.grace.as_secs(), 40);
    assert_eq!(rendered.pod_spec()["terminationGracePeriodSeconds"], 10 + 40 + 5);
    assert!(rendered.container().get("startupProbe").is_some());
    scrape_annotations(&rendered, "https");
    autoscaling(&rendered);
    assert_eq!(rendered.one("PodDisruptionBudget")["spec"]["minAvailable"], 2);
    assert_eq!(names(&rendered.all("ServiceMonitor")), [object_name("")]);
    assert_eq!(names(&rendered.all("PrometheusRule")), [object_name("")]);
    assert_eq!(
        runbook_base(&rendered.one("PrometheusRule")["spec"]),
        "https://docs.example.com/tollgate/operations.html"
    );
    assert!(rendered.all("Secret").is_empty(), "every Secret exists already");
    for (var, secret, key) in [
        ("TOLLGATE_SESSION_KEY", "tollgate-session", "key"),
        ("TOLLGATE_SESSION_PREVIOUS_KEY_0", "tollgate-session", "previous"),
        ("TOLLGATE_ADMIN_TOKEN", "tollgate-admin", "token"),
        ("GITHUB_TOKEN", "tollgate-upstreams", "github-token"),
        ("SEARCH_CLIENT_SECRET", "tollgate-upstreams", "search-client-secret"),
        ("TOLLGATE_REDIS_PASSWORD", "redis-auth", "password"),
        ("TOLLGATE_CONSOLE_SECRET", "tollgate-console-oidc", "secret"),
    ] {
        assert_eq!(ref_of(&rendered, var), pair(secret, key), "{var}");
    }
    console(&rendered, config);
    network_policy(&rendered);
    for (volume, secret) in [
        ("tls-public", "tollgate-public-tls"),
        ("tls-admin", "tollgate-admin-tls"),
        ("redis-tls", "redis-client-tls"),
    ] {
        assert_eq!(rendered.volume(volume).unwrap()["secret"]["secretName"], secret);
    }
    assert!(pod.mounts.iter().filter(|m| m.external).count() >= 4);
    let service = &rendered.get("Service", &object_name("")).unwrap()["spec"];
    assert_eq!(
        (&service["type"], &service["ports"][0]["port"]),
        (&json!("LoadBalancer"), &json!(443))
    );
}

/// Every console value reaches `[console]`, and the Ingress serves its URL.
fn console(rendered: &Rendered, config: &tollgate_config::Config) {
    let c = &config.console;
    assert!(c.enabled);
    assert_eq!(
        c.url.as_ref().map(|u| u.as_str()),
        Some("https://tollgate-console.example.com/console")
    );
    assert_eq!(c.issuer.as_deref(), Some("https://sso.example.com/realms/acme"));
    assert_eq!(c.audiences, ["api://tollgate-console"]);
    assert_eq!(c.client_id, "tollgate-console");
    assert!(c.client_secret.is_some());
    assert_eq!(c.scopes, ["openid", "profile"]);
    assert_eq!(c.session_ttl.as_secs(), 4 * 3600);
    let r = &c.roles;
    assert_eq!(
        [&r.viewer, &r.auditor, &r.approver, &r.admin].map(|g| g.join(",")),
        ["*", "security", "platform", "platform-admins"]
    );
    let ingress = rendered.one("Ingress");
    assert_eq!(ingress["metadata"]["name"], object_name("console"));
    assert_eq!(ingress["spec"]["ingressClassName"], "nginx");
    assert_eq!(ingress["spec"]["tls"][0]["secretName"], "tollgate-console-tls");
    assert_eq!(
        ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"],
        "HTTPS"
    );
    assert!(rendered.all("HTTPRoute").is_empty());
}

/// The MCP port open to all, the admin port to the peers named only.
fn network_policy(rendered: &Rendered) {
    let policy = rendered.one("NetworkPolicy");
    let spec = &policy["spec"];
    assert_eq!(
        spec["podSelector"]["matchLabels"],
        rendered.workload()["spec"]["selector"]["matchLabels"]
    );
    assert_eq!(spec["policyTypes"], json!(["Ingress"]));
    let rules = spec["ingress"].as_array().unwrap();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0], json!({"ports": [{"port": "mcp", "protocol": "TCP"}]}));
    assert_eq!(rules[1]["ports"], json!([{"port": "admin", "protocol": "TCP"}]));
    let peers = rules[1]["from"].as_array().unwrap();
    assert_eq!(peers.len(), 2, "Prometheus and the ingress controller");
}

fn autoscaling(rendered: &Rendered) {
    assert!(
        rendered.workload()["spec"].get("replicas").is_none(),
        "the autoscaler sets replicas"
    );
    let hpa = rendered.one("HorizontalPodAutoscaler");
    assert_eq!(hpa["apiVersion"], "autoscaling/v2");
    let spec = &hpa["spec"];
    assert_eq!(spec["scaleTargetRef"]["kind"], "Deployment");
    assert_eq!(spec["scaleTargetRef"]["name"], object_name(""));
    assert_eq!((&spec["minReplicas"], &spec["maxReplicas"]), (&json!(3), &json!(12)));
    let metric = &spec["metrics"][0]["resource"];
    assert_eq!(metric["name"], "cpu");
    assert_eq!(
        metric["target"],
        json!({"type": "Utilization", "averageUtilization": 65})
    );
}

#[test]
fn config_values_a_whole_file_with_the_charts_secrets() {
    let Checked { rendered, pod, loaded } = check("config-values.yaml");
    let values = values_of("config-values.yaml");
    let text = rendered
        .entry("ConfigMap", &object_name("config"), "tollgate.toml")
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    assert_eq!(
        text.trim(),
        values["config"].as_str().unwrap().trim(),
        "the file as given"
    );
    let config = &loaded.expect("the configuration is rendered").config;
    assert_eq!(config.shutdown.grace.as_secs(), 20);
    assert_eq!(rendered.pod_spec()["terminationGracePeriodSeconds"], 5 + 20 + 5);
    let sessions = &values["sessions"];
    for (var, expected) in [
        ("TOLLGATE_SESSION_KEY", &sessions["key"]),
        ("TOLLGATE_SESSION_PREVIOUS_KEY_0", &sessions["previousKeys"][0]),
        ("TOLLGATE_ADMIN_TOKEN", &values["admin"]["token"]),
        ("GITHUB_TOKEN", &values["credentials"]["values"]["github-token"]),
        ("TOLLGATE_REDIS_PASSWORD", &values["redis"]["password"]),
        ("TOLLGATE_CONSOLE_SECRET", &values["console"]["clientSecret"]),
    ] {
        assert_eq!(
            pod.env[var],
            expected.as_str().unwrap(),
            "{var} from the chart's Secret"
        );
    }
    let mut secrets = names(&rendered.all("Secret"));
    secrets.sort();
    assert_eq!(
        secrets,
        ["admin-token", "console", "credentials", "redis", "session"].map(object_name)
    );
    assert!(config.console.enabled && config.console.client_secret.is_some());
    let route = rendered.one("HTTPRoute");
    assert_eq!(route["metadata"]["name"], object_name("console"));
    assert_eq!(route["spec"]["hostnames"], json!(["tollgate.example.com"]));
    assert_eq!(
        route["spec"]["parentRefs"],
        json!([{"name": "public", "namespace": "gateway-system", "sectionName": "https"}])
    );
    assert!(rendered.all("Ingress").is_empty());
    let schema = rendered.entry("ConfigMap", &object_name("policies"), "schema.cedarschema");
    let shipped = std::fs::read(tollgate_e2e::repo_root().join("policies/schema.cedarschema")).unwrap();
    assert_eq!(schema, Some(shipped), "the schema of this Tollgate joins the policies");
    assert!(
        pod.mounts.iter().all(|m| !m.external),
        "everything comes from the chart"
    );
}

#[test]
fn existing_config_values_mount_objects_managed_elsewhere() {
    let Checked { rendered, pod, loaded } = check("existing-config-values.yaml");
    assert!(
        loaded.is_none(),
        "nothing to validate: the configuration is not rendered"
    );
    assert!(rendered.all("ConfigMap").is_empty());
    assert!(rendered.all("Secret").is_empty());
    for (volume, config_map) in [
        ("config", "tollgate-config"),
        ("policies", "tollgate-policies"),
        ("catalog", "tollgate-catalog-lock"),
    ] {
        assert_eq!(rendered.volume(volume).unwrap()["configMap"]["name"], config_map);
    }
    assert_eq!(pod.config, "/etc/tollgate/config/tollgate.toml");
    assert_eq!(
        ref_of(&rendered, "TOLLGATE_SESSION_KEY"),
        pair("tollgate-session", "session-key")
    );
    assert_eq!(
        ref_of(&rendered, "TOLLGATE_ADMIN_TOKEN"),
        pair("tollgate-admin", "admin-token")
    );
    assert_eq!(rendered.pod_spec()["terminationGracePeriodSeconds"], 5 + 30 + 5);
}

#[test]
fn statefulset_values_a_claim_per_replica_and_the_fleet_store() {
    let Checked { rendered, pod, loaded } = check("statefulset-values.yaml");
    let loaded = loaded.expect("the chart renders the configuration");
    assert!(rendered.all("Deployment").is_empty(), "a StatefulSet instead");
    let spec = &rendered.one("StatefulSet")["spec"];
    assert_eq!(spec["serviceName"], object_name("headless"));
    assert_eq!(spec["podManagementPolicy"], "Parallel");
    assert_eq!(
        spec["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    let claims = spec["volumeClaimTemplates"].as_array().unwrap();
    assert_eq!(claims.len(), 1, "one claim per pod: its audit trail");
    let claim = &claims[0];
    assert_eq!(claim["metadata"]["name"], "audit");
    assert_eq!(claim["metadata"]["annotations"]["backup.example.com/schedule"], "daily");
    assert_eq!(claim["spec"]["accessModes"], json!(["ReadWriteOnce"]));
    assert_eq!(claim["spec"]["storageClassName"], "fast-ssd");
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "20Gi");
    let declared: Vec<&Value> = rendered.pod_spec()["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["name"])
        .collect();
    assert!(
        !declared.contains(&&json!("audit")),
        "the claim, not audit.volume: {declared:?}"
    );
    let audit = pod.mounts.iter().find(|m| m.path == "/var/lib/tollgate/audit").unwrap();
    assert!(audit.writable);
    let hpa = &rendered.one("HorizontalPodAutoscaler")["spec"]["scaleTargetRef"];
    assert_eq!(
        (&hpa["kind"], &hpa["name"]),
        (&json!("StatefulSet"), &json!(object_name("")))
    );

    let store = loaded.store.as_ref().expect("[store] postgres");
    assert_eq!(store.replica, "tollgate-0", "a replica is named after its pod");
    assert!(loaded.config.store.replica.is_none(), "no name shared by every pod");
    let values = values_of("statefulset-values.yaml");
    assert_eq!(
        store.password.as_ref().map(|p| p.expose().to_vec()),
        Some(values["store"]["password"].as_str().unwrap().as_bytes().to_vec())
    );
    assert_eq!(
        ref_of(&rendered, "TOLLGATE_STORE_PASSWORD"),
        pair(&object_name("store"), "password")
    );
    assert!(
        store.ca.is_some() && store.client.is_some(),
        "the CA and a client certificate"
    );
    assert_eq!(store.pool_size, 6);
    assert_eq!(store.statement_timeout.as_secs(), 20);
    assert!(!store.migrate);
    let tls = rendered.volume("store-tls").unwrap();
    assert_eq!(tls["secret"]["secretName"], "tollgate-store-tls");
    assert_eq!(
        tls["secret"]["items"],
        json!([
            {"key": "ca.crt", "path": "ca.crt"},
            {"key": "tls.crt", "path": "tls.crt"},
            {"key": "tls.key", "path": "tls.key"}
        ])
    );
    let audit = &loaded.config.audit;
    assert_eq!(audit.checkpoint_interval.as_secs(), 30);
    assert!(audit.checkpoint_key.is_some());
    assert_eq!(
        audit.checkpoint_public_keys,
        ["+yr8cgjvymFmmktv/Oeq1kMpF3sRBi2uNCghcpN1oEI="]
    );
    assert_eq!(
        ref_of(&rendered, "TOLLGATE_CHECKPOINT_KEY"),
        pair("tollgate-checkpoint", "checkpoint-key")
    );
    super::cli::store_url_is_understood(&pod);
}

#[test]
fn the_fleet_example_a_managed_postgres_from_existing_secrets() {
    let example = super::chart_dir().join("examples/values-fleet.yaml");
    let Checked { rendered, pod, loaded } = super::check_file(&example);
    let loaded = loaded.expect("the chart renders the configuration");
    assert_eq!(rendered.one("StatefulSet")["spec"]["replicas"], 3);
    assert!(rendered.all("Secret").is_empty(), "every Secret exists already");
    let store = loaded.store.as_ref().expect("[store] postgres");
    assert!(store.url.contains(".rds.amazonaws.com:5432/"), "{}", store.url);
    assert!(store.url.ends_with("?sslmode=require"), "{}", store.url);
    assert!(store.password.is_some() && store.ca.is_some() && store.client.is_none());
    assert_eq!(
        ref_of(&rendered, "TOLLGATE_STORE_PASSWORD"),
        pair("tollgate-store", "password")
    );
    let tls = rendered.volume("store-tls").unwrap();
    assert_eq!(tls["secret"]["secretName"], "tollgate-store-tls");
    assert_eq!(tls["secret"]["items"], json!([{"key": "ca.crt", "path": "ca.crt"}]));
    super::cli::store_url_is_understood(&pod);
}

/// The chart rendered with the default values and `sets`.
fn rendered_with(sets: &[&str]) -> Rendered {
    let mut cmd = super::render::template_command(&ci_values("default-values.yaml"), super::render::MIN_KUBE);
    for set in sets {
        cmd.args(["--set", set]);
    }
    let out = super::render::run(&mut cmd, b"");
    Rendered {
        docs: yaml_documents(&out.stdout),
    }
}

fn config_text(rendered: &Rendered) -> String {
    let text = rendered.entry("ConfigMap", &object_name("config"), "tollgate.toml");
    String::from_utf8(text.unwrap()).unwrap()
}

/// Checkpoint settings are written only when set, the signing key read
/// from an existing Secret (`statefulset-values.yaml` sets them all and
/// the configuration loads them).
#[test]
fn checkpoint_settings_only_when_set_the_key_from_a_secret() {
    let plain = rendered_with(&[]);
    assert!(!config_text(&plain).contains("checkpoint"));
    let env = plain.container()["env"].as_array().unwrap();
    assert!(env.iter().all(|e| e["name"] != "TOLLGATE_CHECKPOINT_KEY"));

    let signed = rendered_with(&[
        "checkpoint.interval=30s",
        "checkpoint.existingSecret=tollgate-checkpoint",
        "checkpoint.publicKeys[0]=ed25519:AAAA",
    ]);
    let text = config_text(&signed);
    let audit = text.split("\n[").find(|t| t.starts_with("audit]")).expect("[audit]");
    for line in [
        "checkpoint_interval = \"30s\"",
        "checkpoint_key = { env = \"TOLLGATE_CHECKPOINT_KEY\" }",
        "checkpoint_public_keys = [\"ed25519:AAAA\"]",
    ] {
        assert!(audit.lines().any(|l| l == line), "[audit] lacks {line}:\n{audit}");
    }
    assert_eq!(
        ref_of(&signed, "TOLLGATE_CHECKPOINT_KEY"),
        pair("tollgate-checkpoint", "checkpoint-key")
    );
    assert!(
        signed
            .all("Secret")
            .iter()
            .all(|s| s["metadata"]["name"] != "tollgate-checkpoint")
    );
}

#[test]
fn store_values_are_refused_when_incomplete_or_with_a_password_in_the_url() {
    let url = "store.postgres.url=postgres://tollgate@db.example.com/tollgate";
    for (sets, says) in [
        (
            &[url, "store.postgres.tls.enabled=true"][..],
            "store.postgres.tls.secretName is required",
        ),
        (
            &[
                url,
                "store.postgres.tls.enabled=true",
                "store.postgres.tls.secretName=s",
                "store.postgres.tls.ca=false",
            ][..],
            "store.postgres.tls needs ca or clientCertificate",
        ),
        (
            &["store.postgres.url=postgres://tollgate:hunter2@db.example.com/tollgate"][..],
            "/store/postgres/url",
        ),
        (&["workload=daemonset"][..], "workload"),
    ] {
        let mut cmd = super::render::template_command(&ci_values("default-values.yaml"), super::render::MIN_KUBE);
        for set in sets {
            cmd.args(["--set", set]);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{sets:?}: {stderr}");
    }
}
