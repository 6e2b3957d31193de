//! Reading a policy directory: the Cedar schema, the policy files and the
//! policy test tables, as text.
//!
//! This crate is the only one that reads files, so `tollgate-policy` asks
//! here for the text and compiles it; it runs at start, on every reload and
//! in `tollgate policy validate|test`, never on the request path.
//!
//! Layout of a policy directory `DIR`:
//! - the schema: `DIR/schema.cedarschema`, or, when absent, the one in the
//!   parent directory (so `policies/examples/` shares `policies/`' schema);
//! - the policies: every `DIR/*.cedar` file (not recursive), in name order;
//! - the tests: every `DIR/tests/*.toml` file, in name order.

use std::path::{Path, PathBuf};

use crate::ConfigError;

/// The schema file name looked up in a policy directory.
pub const SCHEMA_FILE: &str = "schema.cedarschema";

/// One file of a policy directory, with its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its contents.
    pub text: String,
}

/// The schema and policies of a policy directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyFiles {
    /// The directory.
    pub dir: PathBuf,
    /// The Cedar schema.
    pub schema: PolicyFile,
    /// The `*.cedar` files, in name order.
    pub policies: Vec<PolicyFile>,
}

/// Read the schema and the `*.cedar` files of a policy directory.
///
/// # Errors
///
/// A directory that cannot be listed, a missing schema, or a file that
/// cannot be read (or is not UTF-8), naming the path.
pub fn read_policy_dir(dir: &Path) -> Result<PolicyFiles, ConfigError> {
    let schema_path = [dir.join(SCHEMA_FILE), dir.join("..").join(SCHEMA_FILE)]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| error(dir, format!("no {SCHEMA_FILE} in this directory or its parent")))?;
    let schema = read(&schema_path)?;
    let policies = files_with_extension(dir, "cedar")?
        .iter()
        .map(|p| read(p))
        .collect::<Result<_, _>>()?;
    Ok(PolicyFiles {
        dir: dir.to_owned(),
        schema,
        policies,
    })
}

/// Read the policy test tables, `DIR/tests/*.toml`; none when there is no
/// `tests` directory.
///
/// # Errors
///
/// A file that cannot be read, naming the path.
pub fn read_policy_tests(dir: &Path) -> Result<Vec<PolicyFile>, ConfigError> {
    let tests = dir.join("tests");
    if !tests.is_dir() {
        return Ok(Vec::new());
    }
    files_with_extension(&tests, "toml")?.iter().map(|p| read(p)).collect()
}

fn files_with_extension(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, ConfigError> {
    let entries = std::fs::read_dir(dir).map_err(|e| error(dir, format!("cannot list the directory: {e}")))?;
    let mut out = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| error(dir, format!("cannot list the directory: {e}")))?
            .path();
        if path.extension().is_some_and(|e| e == ext) && path.is_file() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn read(path: &Path) -> Result<PolicyFile, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| error(path, format!("cannot read the file: {e}")))?;
    Ok(PolicyFile {
        path: path.to_owned(),
        text,
    })
}

fn error(path: &Path, message: String) -> ConfigError {
    ConfigError {
        file: path.to_owned(),
        line: None,
        column: None,
        key: String::new(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_schema_policies_and_tests_in_name_order() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("examples");
        std::fs::create_dir_all(dir.join("tests")).unwrap();
        std::fs::write(root.path().join(SCHEMA_FILE), "namespace X {}").unwrap();
        std::fs::write(dir.join("b.cedar"), "// b").unwrap();
        std::fs::write(dir.join("a.cedar"), "// a").unwrap();
        std::fs::write(dir.join("notes.md"), "ignored").unwrap();
        std::fs::write(dir.join("tests/t.toml"), "").unwrap();
        let files = read_policy_dir(&dir).unwrap();
        assert_eq!(files.schema.text, "namespace X {}");
        let names: Vec<_> = files.policies.iter().map(|f| f.path.file_name().unwrap()).collect();
        assert_eq!(names, ["a.cedar", "b.cedar"]);
        assert_eq!(read_policy_tests(&dir).unwrap().len(), 1);
        assert!(read_policy_tests(root.path()).unwrap().is_empty());
        // A directory's own schema wins over the parent's.
        std::fs::write(dir.join(SCHEMA_FILE), "namespace Y {}").unwrap();
        assert_eq!(read_policy_dir(&dir).unwrap().schema.text, "namespace Y {}");
    }

    #[test]
    fn a_missing_schema_or_directory_is_an_error_naming_the_path() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        std::fs::create_dir_all(&dir).unwrap();
        let e = read_policy_dir(&dir).unwrap_err();
        assert!(e.message.contains(SCHEMA_FILE), "{e}");
        let e = read_policy_dir(&root.path().join("nope")).unwrap_err();
        assert!(e.to_string().contains("nope"), "{e}");
    }
}
