//! Tollgate's configuration: typed TOML, validated at load.
//!
//! This crate is the only one that reads files or the environment. It turns a
//! TOML file into a [`Config`] or into a list of [`ConfigError`]s, each naming
//! the file, line, column and key path. `tollgate validate` and `tollgate
//! serve` share [`load`], so what validates is exactly what serves.

mod error;
mod load;
mod locate;
mod model;
mod secret;

pub use error::{ConfigError, ConfigErrors};
pub use load::{Environment, Loaded, ProcessEnvironment, load, load_str, schema};
pub use model::{
    Config, HeaderTrust, Limits, Listen, Runtime, Security, Server, ServerName, Sessions, Shutdown, TimeoutOverrides,
    Timeouts, UpstreamHttp,
};
pub use secret::{Secret, SecretSource};
