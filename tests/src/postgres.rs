//! A real PostgreSQL server for tests: Debian's PostgreSQL (installed by
//! `scripts/install-test-deps.sh`), a throwaway cluster made by `initdb` in
//! a temporary directory, listening on a free loopback port, with a
//! database `tollgate` owned by the user `tollgate`.
//!
//! Run as root (as the tests are in the project's containers), the server
//! runs as the unprivileged `postgres` user through `runuser`, since
//! PostgreSQL refuses to run as root; otherwise it runs as the current
//! user. [`PostgresServer::stop`] and [`PostgresServer::start_again`] take
//! the same cluster down and up again on the same port, for outage tests.
//!
//! This file uses nothing but `std`, `tokio` and `tempfile`, so that a
//! crate's own tests can include it with `#[path]` without depending on
//! the black-box test crate.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use tokio::process::Command;

/// The user and database every test cluster has.
pub const USER: &str = "tollgate";
/// See [`USER`].
pub const DATABASE: &str = "tollgate";

/// How a test cluster authenticates clients on loopback TCP.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `None`: trust (no password). `Some(p)`: the user's password is `p`,
    /// checked with SCRAM-SHA-256.
    pub password: Option<String>,
    /// TLS only, with `server.pem`/`server.key` from this directory, and
    /// client certificates signed by its `client-ca.pem` required (the
    /// certificate's CN must be [`USER`]).
    pub tls_dir: Option<PathBuf>,
}

/// A PostgreSQL server on loopback, stopped (and its files removed) on drop.
pub struct PostgresServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: tempfile::TempDir,
    options: Options,
    running: bool,
}

impl PostgresServer {
    /// A new cluster trusting loopback connections, started.
    pub async fn start() -> PostgresServer {
        PostgresServer::start_with(Options::default()).await
    }

    /// A new cluster with `options`, started.
    pub async fn start_with(options: Options) -> PostgresServer {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut server = PostgresServer {
            port: free_port(),
            dir,
            options,
            running: false,
        };
        server.init().await;
        server.start_again().await;
        server.create_database().await;
        server
    }

    /// `postgres://tollgate@127.0.0.1:PORT/tollgate` (no password in it).
    pub fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{DATABASE}", self.port)
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Stop the server (fast shutdown: open connections are closed) and
    /// wait until it has exited. The cluster stays for
    /// [`PostgresServer::start_again`].
    pub async fn stop(&mut self) {
        if std::mem::take(&mut self.running) {
            let data = self.data_dir().display().to_string();
            run(self.command("pg_ctl").args(["-D", &data, "-m", "fast", "-w", "stop"])).await;
        }
    }

    /// Start the server on its cluster and port (after
    /// [`PostgresServer::stop`]); returns once it accepts connections.
    pub async fn start_again(&mut self) {
        assert!(!self.running, "the server is already running");
        let data = self.data_dir().display().to_string();
        let log = self.dir.path().join("postgres.log").display().to_string();
        let mut options = format!("-p {} -k {}", self.port, self.dir.path().display());
        for setting in self.settings() {
            options.push_str(" -c ");
            options.push_str(&setting);
        }
        let out = self
            .command("pg_ctl")
            .args(["-D", &data, "-l", &log, "-w", "-t", "30", "-o", &options, "start"])
            .output()
            .await
            .expect("PostgreSQL's pg_ctl (scripts/install-test-deps.sh installs it)");
        if !out.status.success() {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("postgres did not start on port {}:\n{log}", self.port);
        }
        self.running = true;
    }

    /// Run SQL as the cluster's superuser on the test database (through
    /// the Unix socket, which trusts it); panics when `psql` fails.
    pub async fn psql(&self, sql: &str) -> String {
        let socket_dir = self.dir.path().to_str().expect("a UTF-8 temporary path");
        let out = self
            .command("psql")
            .args([
                "-h",
                socket_dir,
                "-p",
                &self.port.to_string(),
                "-U",
                USER,
                "-d",
                DATABASE,
            ])
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .await
            .expect("psql");
        assert!(
            out.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// `postgres -c` settings: loopback only, no durability (a test cluster
    /// is thrown away), TLS when asked.
    fn settings(&self) -> Vec<String> {
        let mut out: Vec<String> = ["listen_addresses=127.0.0.1", "fsync=off", "synchronous_commit=off"]
            .map(str::to_owned)
            .into();
        out.push("full_page_writes=off".into());
        if let Some(tls) = &self.options.tls_dir {
            let copy = self.dir.path().join("tls");
            out.push("ssl=on".into());
            out.push(format!("ssl_cert_file={}", copy.join("server.pem").display()));
            out.push(format!("ssl_key_file={}", copy.join("server.key").display()));
            out.push(format!("ssl_ca_file={}", copy.join("client-ca.pem").display()));
            debug_assert!(tls.exists());
        }
        out
    }

    /// `initdb` the cluster, with the authentication `options` ask for.
    async fn init(&self) {
        if let Some(tls) = &self.options.tls_dir {
            // The key must belong to the server's user and be private.
            let copy = self.dir.path().join("tls");
            std::fs::create_dir_all(&copy).expect("the TLS directory");
            for name in ["server.pem", "server.key", "client-ca.pem"] {
                std::fs::copy(tls.join(name), copy.join(name)).expect("the test certificates");
            }
            chmod(&copy.join("server.key"), "0600").await;
        }
        let mut args = vec!["-D".to_owned(), self.data_dir().display().to_string()];
        args.extend(["-U".into(), USER.into(), "-E".into(), "UTF8".into(), "--no-sync".into()]);
        args.extend(["--locale=C".into(), "--auth-local=trust".into()]);
        if let Some(password) = &self.options.password {
            let file = self.dir.path().join("pwfile");
            std::fs::write(&file, password).expect("the password file");
            args.push(format!("--pwfile={}", file.display()));
            args.push("--auth-host=scram-sha-256".into());
        } else {
            args.push("--auth-host=trust".into());
        }
        self.hand_over().await;
        run(self.command("initdb").args(&args)).await;
        if self.options.tls_dir.is_some() {
            // Loopback TCP only over TLS, and only with a client certificate.
            let hba = "local all all trust\nhostssl all all 127.0.0.1/32 cert\n";
            std::fs::write(self.data_dir().join("pg_hba.conf"), hba).expect("pg_hba.conf");
            self.hand_over().await;
        }
    }

    async fn create_database(&self) {
        let socket_dir = self.dir.path().display().to_string();
        let port = self.port.to_string();
        run(self
            .command("createdb")
            .args(["-h", &socket_dir, "-p", &port, "-U", USER, "-O", USER, DATABASE]))
        .await;
    }

    /// A command running PostgreSQL's program `name`, as `postgres` when
    /// this process is root, in the cluster's directory.
    fn command(&self, name: &str) -> Command {
        Command::from(self.std_command(name))
    }

    /// [`PostgresServer::command`], for `Drop`.
    fn std_command(&self, name: &str) -> std::process::Command {
        let program = bin_dir().join(name);
        let mut cmd = if running_as_root() {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            std::process::Command::new(program)
        };
        cmd.current_dir(self.dir.path());
        cmd
    }

    /// Give the temporary directory to the `postgres` user (when root).
    async fn hand_over(&self) {
        if running_as_root() {
            let dir = self.dir.path().display().to_string();
            run(Command::new("chown").args(["-R", "postgres:postgres", &dir])).await;
        }
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        if self.running {
            // Immediate shutdown, before the directory goes.
            let data = self.data_dir().display().to_string();
            let _ = self
                .std_command("pg_ctl")
                .args(["-D", &data, "-m", "immediate", "-w", "stop"])
                .output();
        }
    }
}

/// The directory of the newest installed PostgreSQL's programs.
fn bin_dir() -> PathBuf {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("postgres").exists())
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .expect("PostgreSQL under /usr/lib/postgresql: run scripts/install-test-deps.sh")
}

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

async fn chmod(path: &Path, mode: &str) {
    run(Command::new("chmod").arg(mode).arg(path)).await;
}

/// Run a command to its end; panic with its output when it fails.
async fn run(cmd: &mut Command) {
    let out = cmd.output().await.expect("a PostgreSQL program");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A free loopback port below 32768 (a recently used outgoing port could
/// not be reused for listening on these machines).
fn free_port() -> u16 {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
        ^ std::process::id();
    for i in 0..2000u32 {
        let port = 20000 + (seed.wrapping_add(i.wrapping_mul(7919)) % 12000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in 20000..32000");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cluster_starts_stops_and_starts_again_with_its_data() {
        let mut pg = PostgresServer::start().await;
        assert!(pg.url().ends_with(&format!(":{}/tollgate", pg.port)));
        pg.psql("CREATE TABLE t (x int); INSERT INTO t VALUES (7)").await;
        pg.stop().await;
        assert!(std::net::TcpStream::connect(("127.0.0.1", pg.port)).is_err());
        pg.start_again().await;
        assert_eq!(pg.psql("SELECT x FROM t").await, "7");
    }
}
