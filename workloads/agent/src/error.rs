//! The agent's error type: one line of text naming the step that failed and why.
//!
//! Everything the agent reports ends up as a single `Message::Error` line and a
//! console line, so an error is just its rendered chain, outermost step first
//! (`setting up swap: running /bin/busybox mkswap /dev/vda: exit status 1`).
//! Each layer adds what it was doing, never a repetition of its cause.

use std::fmt;

/// A rendered error chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

/// The agent's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error with no underlying cause.
    pub fn msg(text: impl Into<String>) -> Self {
        Error(text.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Attaches "what we were doing" to an error.
pub trait Context<T> {
    /// Prefixes the error with `what`.
    fn context(self, what: impl fmt::Display) -> Result<T>;
    /// Prefixes the error with the text `what` builds (for formatted contexts).
    fn with_context<D: fmt::Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E: fmt::Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl fmt::Display) -> Result<T> {
        self.map_err(|e| Error(format!("{what}: {e}")))
    }

    fn with_context<D: fmt::Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|e| Error(format!("{}: {e}", what())))
    }
}

/// Returns early with an [`Error`] built like `format!`.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::Error::msg(format!($($arg)*)))
    };
}
pub(crate) use bail;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_chains_outermost_first() {
        let inner: std::result::Result<(), &str> = Err("exit status 1");
        let err = inner
            .context("running mkswap")
            .context("setting up swap")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "setting up swap: running mkswap: exit status 1"
        );
    }

    #[test]
    fn plain_message_is_kept_verbatim() {
        let err = Error::msg("guest-fault: deliberate workload failure");
        assert_eq!(err.to_string(), "guest-fault: deliberate workload failure");
    }
}
