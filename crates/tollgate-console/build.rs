//! Embeds every file under `assets/` in the binary: writes a table of
//! `(path, bytes)` with `include_bytes!` to `OUT_DIR/assets.rs`.

#![allow(
    clippy::disallowed_methods,
    reason = "a build script reads the variables Cargo sets for it"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("assets");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    walk(&root, &mut files)?;
    files.sort();
    let mut table = String::from("&[\n");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let name = file.strip_prefix(&root)?.to_string_lossy().replace('\\', "/");
        writeln!(
            table,
            "    ({name:?}, include_bytes!({:?}).as_slice()),",
            file.display().to_string()
        )?;
    }
    table.push(']');
    std::fs::write(PathBuf::from(std::env::var("OUT_DIR")?).join("assets.rs"), table)?;
    Ok(())
}
