//! `tollgate clients` and `tollgate grants`: the authorization server's
//! registered clients and users' grants, through the running gateway's
//! admin listener (its address and `[admin] token` read from the
//! configuration file, or given with `--admin` and `TOLLGATE_ADMIN_TOKEN`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

/// Where the running gateway's admin listener is.
#[derive(Args)]
pub(crate) struct Admin {
    /// The gateway's configuration file (for `listen.admin` and `[admin] token`).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// The admin listener's URL, instead of `listen.admin`.
    #[arg(long)]
    admin: Option<String>,
    /// The admin token, instead of the configuration's.
    #[arg(long, env = "TOLLGATE_ADMIN_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

#[derive(Subcommand)]
pub(crate) enum ClientsCommand {
    /// Every client: registered (RFC 7591) or known by its metadata document.
    List(Admin),
    /// Refuse a client at authorize and token (its grants stay until revoked).
    Disable {
        /// The client id.
        client_id: String,
        #[command(flatten)]
        admin: Admin,
    },
    /// Accept a disabled client again.
    Enable {
        /// The client id.
        client_id: String,
        #[command(flatten)]
        admin: Admin,
    },
    /// Forget a client (a metadata-document client is fetched again on its
    /// next visit: disable it to keep it out).
    Delete {
        /// The client id.
        client_id: String,
        #[command(flatten)]
        admin: Admin,
    },
}

#[derive(Subcommand)]
pub(crate) enum GrantsCommand {
    /// Users' live grants: to MCP clients (front door), and their own at
    /// upstreams (the vault), newest first.
    List {
        /// Only this user's.
        #[arg(long)]
        subject: Option<String>,
        #[command(flatten)]
        admin: Admin,
    },
    /// Revoke one grant, or every grant of a user (both kinds): client
    /// refresh tokens stop at once, access tokens at their next use; an
    /// upstream grant is forgotten and the user is asked to connect again.
    Revoke {
        /// The grant id.
        #[arg(long, conflicts_with = "subject", required_unless_present = "subject")]
        grant: Option<String>,
        /// Every grant of this user.
        #[arg(long)]
        subject: Option<String>,
        #[command(flatten)]
        admin: Admin,
    },
}

fn admin_endpoint(a: &Admin) -> anyhow::Result<(String, Option<String>)> {
    let loaded = match &a.config {
        Some(path) => Some(
            tollgate_config::load(path, &tollgate_config::ProcessEnvironment)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
        ),
        None => None,
    };
    let url = match (&a.admin, &loaded) {
        (Some(url), _) => url.trim_end_matches('/').to_owned(),
        (None, Some(l)) => format!("http://{}", l.config.listen.admin),
        (None, None) => anyhow::bail!("name the gateway: --config FILE or --admin URL"),
    };
    let token = a.token.clone().or_else(|| {
        let l = loaded.as_ref()?;
        Some(String::from_utf8_lossy(l.admin_token.as_ref()?.expose()).into_owned())
    });
    Ok((url, token))
}

async fn request(a: &Admin, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
    let (base, token) = admin_endpoint(a)?;
    let http = tollgate_auth::identity_client()?;
    let url = format!("{base}{path}");
    let mut req = match body {
        Some(b) => http.post(&url).json(&b),
        None => http.get(&url),
    };
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.with_context(|| format!("cannot reach {url}"))?;
    let status = res.status();
    let answer: Value = res.json().await.with_context(|| format!("{url}: not JSON"))?;
    anyhow::ensure!(status.is_success(), "{url} answered {status}: {}", answer["error"]);
    Ok(answer)
}

fn when(secs: &Value) -> String {
    secs.as_u64()
        .map(|s| {
            humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(s)).to_string()
        })
        .unwrap_or_default()
}

fn print_clients(answer: &Value) {
    println!(
        "{:<52} {:<18} {:<8} {:<9} NAME",
        "CLIENT ID", "KIND", "STATUS", "REGISTERED"
    );
    for c in answer["clients"].as_array().into_iter().flatten() {
        let status = if c["disabled"] == true { "disabled" } else { "active" };
        println!(
            "{:<52} {:<18} {:<8} {:<9} {}",
            c["client_id"].as_str().unwrap_or(""),
            c["kind"].as_str().unwrap_or(""),
            status,
            &when(&c["created"])[..10.min(when(&c["created"]).len())],
            c["client_name"].as_str().unwrap_or("-"),
        );
    }
}

fn print_grants(answer: &Value) {
    println!(
        "{:<26} {:<14} {:<40} {:<20} ROUTES",
        "GRANT", "SUBJECT", "CLIENT", "GRANTED"
    );
    for g in answer["grants"].as_array().into_iter().flatten() {
        let routes: Vec<&str> = g["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        println!(
            "{:<26} {:<14} {:<40} {:<20} {}",
            g["id"].as_str().unwrap_or(""),
            g["user"]["subject"].as_str().unwrap_or(""),
            g["client_id"].as_str().unwrap_or(""),
            when(&g["created"]),
            routes.join(" "),
        );
    }
    let connections = answer["connections"].as_array().map(Vec::as_slice).unwrap_or_default();
    if connections.is_empty() {
        return;
    }
    println!("\nUsers' own grants at upstreams (vault):");
    println!(
        "{:<18} {:<14} {:<14} {:<20} {:<8} {:<30} SCOPES",
        "GRANT", "SUBJECT", "SERVER", "CONNECTED", "KEY", "UPSTREAM ISSUER"
    );
    for c in connections {
        println!(
            "{:<18} {:<14} {:<14} {:<20} {:<8} {:<30} {}",
            c["id"].as_str().unwrap_or(""),
            c["subject"].as_str().unwrap_or(""),
            c["server"].as_str().unwrap_or(""),
            when(&c["created"]),
            c["key_id"].as_str().unwrap_or(""),
            c["upstream_issuer"].as_str().unwrap_or(""),
            c["scopes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
}

async fn clients(cmd: &ClientsCommand) -> anyhow::Result<()> {
    let (action, id, admin) = match cmd {
        ClientsCommand::List(admin) => {
            print_clients(&request(admin, "/oauth/clients", None).await?);
            return Ok(());
        }
        ClientsCommand::Disable { client_id, admin } => ("disable", client_id, admin),
        ClientsCommand::Enable { client_id, admin } => ("enable", client_id, admin),
        ClientsCommand::Delete { client_id, admin } => ("delete", client_id, admin),
    };
    request(
        admin,
        &format!("/oauth/clients/{action}"),
        Some(json!({"client_id": id})),
    )
    .await?;
    println!("{id}: {action}d");
    Ok(())
}

async fn grants(cmd: &GrantsCommand) -> anyhow::Result<()> {
    match cmd {
        GrantsCommand::List { subject, admin } => {
            let path = match subject {
                Some(s) => format!("/oauth/grants?subject={}", url_encode(s)),
                None => "/oauth/grants".into(),
            };
            print_grants(&request(admin, &path, None).await?);
        }
        GrantsCommand::Revoke { grant, subject, admin } => {
            let answer = request(
                admin,
                "/oauth/grants/revoke",
                Some(json!({"grant": grant, "subject": subject})),
            )
            .await?;
            let n = answer["revoked"].as_array().map_or(0, Vec::len);
            println!("{n} grant(s) revoked");
        }
    }
    Ok(())
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn run_async(f: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tollgate: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(f) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tollgate: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Run `tollgate clients …`.
pub(crate) fn run_clients(cmd: &ClientsCommand) -> ExitCode {
    run_async(clients(cmd))
}

/// Run `tollgate grants …`.
pub(crate) fn run_grants(cmd: &GrantsCommand) -> ExitCode {
    run_async(grants(cmd))
}
