//! Spend estimation: response bytes to model tokens, counted while
//! streaming.
//!
//! The server keeps a [`ByteMeter`] per response (request path step 12):
//! it adds each frame's length as it passes, buffering nothing, and the
//! call summary gets [`TokenEstimator::estimate`] of the total. A ratio is
//! used rather than a tokenizer: tokenizing at the proxy costs far more CPU
//! than the whole forwarding path (`tiktoken-rs` o200k measured ~30 MB/s
//! here, ~340 µs for a 10 KiB response) and no single vocabulary matches
//! every model. The default 3.5 bytes per token is what o200k gives on
//! JSON-RPC tool results in English; `docs/audit.md` says how to calibrate
//! it.

use tollgate_core::McpMethod;

/// The fallback ratio when the configured one is not a positive number.
pub const DEFAULT_BYTES_PER_TOKEN: f64 = 3.5;

/// Bytes-per-token conversion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenEstimator {
    bytes_per_token: f64,
}

impl TokenEstimator {
    /// An estimator with the given ratio; a ratio that is not a positive
    /// number falls back to [`DEFAULT_BYTES_PER_TOKEN`].
    pub fn new(bytes_per_token: f64) -> TokenEstimator {
        let ok = bytes_per_token.is_finite() && bytes_per_token > 0.0;
        TokenEstimator {
            bytes_per_token: if ok { bytes_per_token } else { DEFAULT_BYTES_PER_TOKEN },
        }
    }

    /// The configured ratio.
    pub fn bytes_per_token(&self) -> f64 {
        self.bytes_per_token
    }

    /// Estimated tokens in `bytes` bytes (rounded up; 0 for 0).
    pub fn estimate(&self, bytes: u64) -> u64 {
        // Precision loss above 2^53 bytes is irrelevant for an estimate.
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let tokens = (bytes as f64 / self.bytes_per_token).ceil() as u64;
        tokens
    }
}

/// Counts the bytes of one streamed body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ByteMeter {
    bytes: u64,
}

impl ByteMeter {
    /// Count one chunk as it passes.
    pub fn observe(&mut self, chunk: &[u8]) {
        self.bytes = self.bytes.saturating_add(chunk.len() as u64);
    }

    /// Bytes seen so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Estimated tokens of the bytes seen so far.
    pub fn tokens(&self, estimator: &TokenEstimator) -> u64 {
        estimator.estimate(self.bytes)
    }
}

/// Whether a method's response is a catalog the client puts into model
/// context (`tools/list`): its tokens are recorded with `catalog = true`.
pub fn is_catalog(method: McpMethod) -> bool {
    method == McpMethod::ToolsList
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_counted_incrementally_and_rounded_up() {
        let est = TokenEstimator::new(4.0);
        let mut meter = ByteMeter::default();
        for chunk in [&b"data: {\"a\""[..], b":1}\n\n", b""] {
            meter.observe(chunk);
        }
        assert_eq!(meter.bytes(), 15);
        assert_eq!(meter.tokens(&est), 4);
        assert_eq!(est.estimate(0), 0);
        assert_eq!(TokenEstimator::new(f64::NAN).bytes_per_token(), 3.5);
        assert_eq!(TokenEstimator::new(-1.0).estimate(7), 2);
    }

    #[test]
    fn only_tool_lists_are_catalog_context() {
        assert!(is_catalog(McpMethod::ToolsList));
        assert!(!is_catalog(McpMethod::ToolsCall));
        assert!(!is_catalog(McpMethod::PromptsList));
    }
}
