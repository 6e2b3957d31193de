//! The tracing part of the configuration model: `[tracing]`, the export of
//! OpenTelemetry spans (one server span per request, one client span per
//! upstream call) over OTLP/HTTP, off by default.
//!
//! The server maps it to the settings `tollgate-telemetry` builds its tracer
//! provider from, at start. Every value is checked while deserializing, so a
//! bad one is reported with its file, line and key like any other.

use std::num::NonZeroUsize;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use url::Url;

/// `[tracing]`: OpenTelemetry traces exported over OTLP/HTTP.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Tracing {
    /// Export spans. Off by default.
    pub enabled: bool,
    /// The collector's OTLP/HTTP base URL; spans are POSTed to
    /// `{endpoint}/v1/traces`.
    #[serde(deserialize_with = "http_url")]
    #[schemars(with = "String")]
    pub endpoint: Url,
    /// The `service.name` resource attribute of every span.
    #[serde(deserialize_with = "service_name")]
    pub service_name: String,
    /// Share of new traces recorded, from 0.0 to 1.0. A request whose
    /// caller's trace is sampled is always recorded (parent-based).
    #[serde(deserialize_with = "unit_ratio")]
    pub sample_ratio: f64,
    /// Time one export request may take.
    #[serde(deserialize_with = "nonzero_duration")]
    #[schemars(with = "String")]
    pub timeout: Duration,
    /// Ended spans waiting for export; beyond it spans are dropped from the
    /// export, never from the request path.
    #[schemars(with = "u64")]
    pub queue_capacity: NonZeroUsize,
}

impl Default for Tracing {
    fn default() -> Tracing {
        Tracing {
            enabled: false,
            endpoint: Url::parse("http://127.0.0.1:4318").unwrap_or_else(|_| unreachable!("a valid literal URL")),
            service_name: "tollgate".to_owned(),
            sample_ratio: 1.0,
            timeout: Duration::from_secs(5),
            queue_capacity: NonZeroUsize::new(2048).unwrap_or(NonZeroUsize::MIN),
        }
    }
}

impl Tracing {
    /// The URL spans are posted to: `{endpoint}/v1/traces`.
    pub fn traces_url(&self) -> String {
        format!("{}/v1/traces", self.endpoint.as_str().trim_end_matches('/'))
    }
}

fn nonzero_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let value: Duration = humantime_serde::deserialize(d)?;
    if value.is_zero() {
        return Err(serde::de::Error::custom("must be greater than 0"));
    }
    Ok(value)
}

fn unit_ratio<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(d)?;
    if !(0.0..=1.0).contains(&value) {
        return Err(serde::de::Error::custom("must be a number from 0.0 to 1.0"));
    }
    Ok(value)
}

fn http_url<'de, D: Deserializer<'de>>(d: D) -> Result<Url, D::Error> {
    let value = Url::deserialize(d)?;
    let ok = matches!(value.scheme(), "http" | "https")
        && value.host().is_some()
        && value.query().is_none()
        && value.fragment().is_none();
    if !ok {
        return Err(serde::de::Error::custom(
            "must be an http:// or https:// URL without query or fragment",
        ));
    }
    Ok(value)
}

fn service_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let value = String::deserialize(d)?;
    if value.trim().is_empty() || value.len() > 255 {
        return Err(serde::de::Error::custom("must be 1 to 255 bytes, not blank"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests;
