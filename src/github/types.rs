//! The module's vocabulary: its error, the token, the repository name, and
//! what a publish did.

use std::fmt;
use std::time::Duration;

/// Comments listed per page (GitHub's maximum).
pub(super) const PER_PAGE: u32 = 100;
/// 10,000 comments; a PR with more is not one to keep scanning.
pub(super) const MAX_PAGES: u32 = 100;

#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    #[error("environment variable {var} holds no GitHub token")]
    MissingToken { var: String },
    #[error("the GitHub token from {origin} is malformed: {reason}")]
    InvalidToken { origin: String, reason: String },
    #[error("repository {given:?} is not of the form owner/name")]
    InvalidRepo { given: String },
    #[error("campaign name {given:?} cannot go in a comment marker: {reason}")]
    InvalidCampaign { given: String, reason: String },
    #[error("{given:?} is not a full commit SHA (40 or 64 hex digits)")]
    InvalidSha { given: String },
    #[error("cannot build a GitHub client for {base_uri}")]
    Build {
        base_uri: String,
        #[source]
        source: octocrab::Error,
    },
    #[error("{request} answered {status}: {message}")]
    Status {
        request: String,
        status: String,
        message: String,
    },
    #[error("{request} is rate limited for {}s, longer than the {}s this run waits", wait.as_secs(), cap.as_secs())]
    RateLimited {
        request: String,
        wait: Duration,
        cap: Duration,
    },
    #[error("{request} failed after {attempts} attempts; the last {last}")]
    GaveUp {
        request: String,
        attempts: u32,
        last: String,
    },
    #[error("{request} answered with JSON of an unexpected shape")]
    Decode {
        request: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("pull request #{pr} has more than {} comments; not scanning further for the marker", MAX_PAGES * PER_PAGE)]
    TooManyComments { pr: u64 },
    #[error("cannot append the step summary to {}", path.display())]
    Summary {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A GitHub token. `Debug` never shows it.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// The secret itself, for the client builder only.
    pub(super) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// Checks a token; `origin` says where it came from, for the error.
    /// Surrounding whitespace (a trailing newline from a file) is dropped.
    pub fn new(token: &str, origin: &str) -> Result<Token, GithubError> {
        let token = token.trim();
        let invalid = |reason: &str| GithubError::InvalidToken {
            origin: origin.to_string(),
            reason: reason.to_string(),
        };
        if token.is_empty() {
            return Err(invalid("it is empty"));
        }
        // octocrab panics on a token that is not a valid header value.
        if !token.chars().all(|c| c.is_ascii_graphic()) {
            return Err(invalid("it holds characters other than printable ASCII"));
        }
        Ok(Token(token.to_string()))
    }

    /// Reads the token from the environment variable `var`.
    pub fn from_env(var: &str) -> Result<Token, GithubError> {
        match std::env::var(var) {
            Ok(value) if !value.trim().is_empty() => Token::new(&value, var),
            _ => Err(GithubError::MissingToken {
                var: var.to_string(),
            }),
        }
    }
}

/// `owner/name`, checked so that it can go in a URL path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    pub owner: String,
    pub name: String,
}

impl std::str::FromStr for Repo {
    type Err = GithubError;

    fn from_str(given: &str) -> Result<Repo, GithubError> {
        let invalid = || GithubError::InvalidRepo {
            given: given.to_string(),
        };
        let (owner, name) = given.split_once('/').ok_or_else(invalid)?;
        let part_ok = |p: &str| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        if !part_ok(owner) || !part_ok(name) {
            return Err(invalid());
        }
        Ok(Repo {
            owner: owner.to_string(),
            name: name.to_string(),
        })
    }
}

impl fmt::Display for Repo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// What [`GithubClient::upsert_comment`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentAction {
    Created,
    Updated,
    /// The marked comment already had exactly this body.
    Unchanged,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentOutcome {
    pub action: CommentAction,
    pub id: u64,
    pub html_url: String,
}

/// The state of a commit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusState {
    Success,
    Failure,
    Error,
    Pending,
}

impl StatusState {
    pub fn as_str(self) -> &'static str {
        match self {
            StatusState::Success => "success",
            StatusState::Failure => "failure",
            StatusState::Error => "error",
            StatusState::Pending => "pending",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_token_names_the_variable() {
        let var = "PATCHBENCH_TEST_TOKEN_THAT_IS_NEVER_SET";
        let err = Token::from_env(var).unwrap_err();
        assert_eq!(
            err.to_string(),
            "environment variable PATCHBENCH_TEST_TOKEN_THAT_IS_NEVER_SET holds no GitHub token"
        );
    }

    #[test]
    fn tokens_are_trimmed_and_checked() {
        let token = Token::new("  ghp_abc\n", "a file").unwrap();
        assert_eq!(token.expose(), "ghp_abc");
        let err = Token::new("ghp abc", "GH_TOKEN").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the GitHub token from GH_TOKEN is malformed: \
             it holds characters other than printable ASCII"
        );
    }

    #[test]
    fn repositories_must_be_owner_slash_name() {
        let repo: Repo = "torvalds/linux".parse().unwrap();
        assert_eq!(repo.to_string(), "torvalds/linux");
        for bad in ["linux", "a/b/c", "/b", "a/", "a/..", "a b/c", "a/b?x=1"] {
            assert!(bad.parse::<Repo>().is_err(), "{bad}");
        }
    }
}
