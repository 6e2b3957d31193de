//! Configuration loading: the TOML file an operator (or a reload) hands
//! the gateway.

use std::path::Path;

use tollgate_config::{Environment, load_str};

/// An environment with no variables and no files.
struct Empty;

impl Environment for Empty {
    fn var(&self, _name: &str) -> Option<String> {
        None
    }

    fn read_file(&self, path: &Path) -> Result<Vec<u8>, String> {
        Err(format!("{}: no such file", path.display()))
    }
}

/// Loading arbitrary text never panics; every refusal names the file.
pub(crate) fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let path = Path::new("fuzz.toml");
    if let Err(errors) = load_str(path, &text, &Empty) {
        for error in errors.0 {
            let shown = error.to_string();
            assert!(shown.starts_with("fuzz.toml"), "an error without its file: {shown}");
        }
    }
}
