//! Signed checkpoints from the command line: `tollgate audit verify
//! --checkpoints` proves a replica's files match every checkpoint it
//! stored in the fleet store (after the chain itself verified), and
//! `tollgate audit checkpoint-key` makes a signing key or shows a key's
//! public half. The checks live in `tollgate-audit` (`check`); this module
//! gathers the keys, the replica and its checkpoints (`docs/audit.md`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use tollgate_audit::{CheckpointKeys, CheckpointReport, CheckpointSigner};

use crate::audit_cmd::Stop;
use crate::fleet_cmd::{Fleet, StoreSource, load, store_stop};

/// `tollgate audit verify`'s checkpoint options.
#[derive(clap::Args)]
pub(crate) struct CheckpointArgs {
    /// Also prove the files match every signed checkpoint their replica
    /// stored in the fleet store (`--store`), which catches a consistent
    /// rewrite of the files.
    #[arg(long, requires = "store")]
    checkpoints: bool,
    #[command(flatten)]
    fleet: StoreSource,
    /// The gateway configuration: its `[audit] checkpoint_public_keys`,
    /// and its `[store] postgres` when `--store` has no URL.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The replica whose checkpoints to check (`[store] replica`); by
    /// default the one whose checkpoints name these files.
    #[arg(long, value_name = "NAME", requires = "checkpoints")]
    replica: Option<String>,
    /// A trusted Ed25519 public key (base64), besides the configuration's;
    /// repeat for several.
    #[arg(long = "public-key", value_name = "BASE64", requires = "checkpoints")]
    public_keys: Vec<String>,
}

/// `tollgate audit checkpoint-key`.
#[derive(clap::Args)]
pub(crate) struct KeyArgs {
    /// Write a new private key (PKCS#8 PEM, mode 0600) to FILE; refuses
    /// to overwrite one.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "public_of",
        conflicts_with = "public_of"
    )]
    out: Option<PathBuf>,
    /// Print the public key of an existing private key instead (e.g. one
    /// from `openssl genpkey -algorithm ed25519`).
    #[arg(long, value_name = "FILE")]
    public_of: Option<PathBuf>,
}

/// The checkpoint lines `verify` prints after the chain's, when asked for.
pub(crate) fn verify(paths: &[PathBuf], args: &CheckpointArgs) -> Result<Option<String>, Stop> {
    if !args.checkpoints {
        return Ok(None);
    }
    let loaded = args.config.as_deref().map(|path| Ok((path, load(path)?))).transpose()?;
    let config = loaded.as_ref().map(|(path, l)| (*path, l));
    let keys = keys(args, config.map(|(_, l)| l))?;
    let url = args.fleet.store.as_deref().unwrap_or_default();
    let fleet = Fleet::open_loaded(url, config)?;
    let replica = match &args.replica {
        Some(r) => r.clone(),
        None => replica_of(&fleet, paths)?,
    };
    let checkpoints = fleet.block_on(|s| s.checkpoints(&replica)).map_err(store_stop)?;
    let report = tollgate_audit::check(paths, &checkpoints, &keys)
        .map_err(|e| Stop::Trail(anyhow::anyhow!("the trail does not match its checkpoints: {e}")))?;
    if report.checked == 0 {
        return Err(Stop::Trail(anyhow::anyhow!(
            "none of replica {replica}'s {} checkpoint(s) is on these files: nothing proves them",
            checkpoints.len()
        )));
    }
    Ok(Some(summary(&replica, &report)))
}

/// The trusted keys: the configuration's (`loaded`, from `--config`) and
/// `--public-key`'s.
fn keys(args: &CheckpointArgs, loaded: Option<&tollgate_config::Loaded>) -> Result<CheckpointKeys, Stop> {
    let mut listed = args.public_keys.clone();
    if let Some(loaded) = loaded {
        listed.extend(loaded.config.audit.checkpoint_public_keys.iter().cloned());
    }
    if listed.is_empty() {
        return Err(Stop::Run(anyhow::anyhow!(
            "no checkpoint public keys: give --config (its [audit] checkpoint_public_keys) or --public-key"
        )));
    }
    CheckpointKeys::parse(&listed).map_err(|e| Stop::Run(anyhow::anyhow!(e)))
}

/// The one replica whose checkpoints name any of the files in `paths`.
fn replica_of(fleet: &Fleet, paths: &[PathBuf]) -> Result<String, Stop> {
    let files = tollgate_audit::trail_files(paths)
        .map_err(|(path, e)| Stop::Run(anyhow::anyhow!("cannot read {}: {e}", path.display())))?;
    let names: Vec<String> = files
        .iter()
        .filter_map(|p| Some(p.file_name()?.to_str()?.to_owned()))
        .collect();
    let mut replicas = fleet
        .block_on(|s| s.replicas_checkpointing(&names))
        .map_err(store_stop)?;
    match replicas.len() {
        1 => Ok(replicas.remove(0)),
        0 => Err(Stop::Trail(anyhow::anyhow!(
            "no checkpoint in the fleet store names these files: nothing proves them (give --replica to name the \
             replica they belong to)"
        ))),
        _ => Err(Stop::Run(anyhow::anyhow!(
            "checkpoints of several replicas name these files ({}): give --replica",
            replicas.join(", ")
        ))),
    }
}

fn summary(replica: &str, report: &CheckpointReport) -> String {
    let mut out = format!("{} checkpoint(s) of replica {replica} match", report.checked);
    if report.skipped > 0 {
        out.push_str(&format!("; {} on older files not given were skipped", report.skipped));
    }
    if let Some(cp) = &report.latest {
        out.push_str(&format!(
            "\nproven up to {}:{} (seq {}), signed {} with key {}\n",
            cp.head.file,
            cp.head.line,
            cp.head.seq,
            humantime::format_rfc3339_seconds(cp.time),
            cp.key_id
        ));
    }
    out
}

/// Run `tollgate audit checkpoint-key`.
pub(crate) fn key(args: &KeyArgs) -> Result<String, Stop> {
    let run = |e: String| Stop::Run(anyhow::anyhow!(e));
    if let Some(path) = &args.public_of {
        let pem = std::fs::read(path).map_err(|e| run(format!("cannot read {}: {e}", path.display())))?;
        let signer = CheckpointSigner::from_pkcs8(&pem).map_err(|e| run(format!("{}: {e}", path.display())))?;
        return Ok(format!("{}\n", signer.public_key()));
    }
    let Some(out) = &args.out else {
        return Err(run("give --out FILE or --public-of FILE".into()));
    };
    let (signer, pem) = CheckpointSigner::generate().map_err(run)?;
    write_private(out, &pem).map_err(|e| run(format!("cannot write {}: {e}", out.display())))?;
    Ok(format!(
        "wrote a new Ed25519 private key to {}: keep it secret, and set\n  [audit] checkpoint_key = {{ file = \"{}\" }}\n\
         its public key, for every replica's [audit] checkpoint_public_keys:\n{}\n",
        out.display(),
        out.display(),
        signer.public_key()
    ))
}

/// Create `path` readable by its owner only, never over an existing file.
fn write_private(path: &Path, pem: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(pem.as_bytes())?;
    file.sync_all()
}
