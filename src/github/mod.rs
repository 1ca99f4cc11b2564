//! Publishing to GitHub: one comment per campaign on the pull request, a
//! commit status, and the job's step summary.
//!
//! The report arrives already rendered as Markdown; this module only places
//! it. Invariants:
//! - Untrusted text cannot mention, link or show an image: what the report
//!   left outside code spans goes through [`inert`] first.
//! - The token is never shown: [`Token`] and [`GithubClient`] redact it in
//!   `Debug`, and errors name requests by method and path only.
//! - A comment is never posted twice. octocrab's retry layer (which re-sends
//!   a POST on a 5xx) is off; after an unclear failure of the create, the
//!   comments are listed again and the marker looked for before another try.

mod http;
mod inert;
mod summary;
mod text;
mod types;

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::events::{Event, Sink};
use http::{Call, Clock, Method, Reply, SystemClock, Verdict};

pub use http::RetryPolicy;
pub use inert::inert;
pub use summary::{SummaryWrite, append_step_summary, append_step_summary_from_env};
pub use text::{
    COMMENT_LIMIT_CHARS, DESCRIPTION_LIMIT_CHARS, STEP_SUMMARY_LIMIT_BYTES, campaign_marker,
    comment_body, status_description,
};
pub use types::{CommentAction, CommentOutcome, GithubError, Repo, StatusState, Token};
use types::{MAX_PAGES, PER_PAGE};

/// The environment variable the token is read from unless told otherwise.
pub const DEFAULT_TOKEN_VAR: &str = "GITHUB_TOKEN";
/// The public GitHub REST API.
pub const DEFAULT_API: &str = "https://api.github.com";

#[derive(Debug, Deserialize)]
struct IssueComment {
    id: u64,
    html_url: String,
    #[serde(default)]
    body: Option<String>,
}

/// Talks to one repository's REST API.
pub struct GithubClient {
    octo: octocrab::Octocrab,
    repo: Repo,
    base_uri: String,
    retry: RetryPolicy,
    clock: Arc<dyn Clock>,
    events: Option<Arc<dyn Sink>>,
}

impl fmt::Debug for GithubClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GithubClient")
            .field("repo", &self.repo)
            .field("base_uri", &self.base_uri)
            .field("token", &"<redacted>")
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl GithubClient {
    /// A client for `repo` at `base_uri` (normally [`DEFAULT_API`]).
    pub fn new(repo: Repo, token: &Token, base_uri: &str) -> Result<GithubClient, GithubError> {
        let build = |source| GithubError::Build {
            base_uri: base_uri.to_string(),
            source,
        };
        crate::tls::install();
        let octo = octocrab::Octocrab::builder()
            // Retries are ours: octocrab's would re-send a POST on a 5xx.
            .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None)
            .set_connect_timeout(Some(Duration::from_secs(30)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .personal_token(token.expose().to_string())
            .base_uri(base_uri)
            .map_err(build)?
            .build()
            .map_err(build)?;
        Ok(GithubClient {
            octo,
            repo,
            base_uri: base_uri.to_string(),
            retry: RetryPolicy::default(),
            clock: Arc::new(SystemClock),
            events: None,
        })
    }

    /// A client whose token comes from the environment variable `token_var`.
    pub fn from_env(
        repo: Repo,
        token_var: &str,
        base_uri: &str,
    ) -> Result<GithubClient, GithubError> {
        GithubClient::new(repo, &Token::from_env(token_var)?, base_uri)
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> GithubClient {
        self.retry = retry;
        self
    }

    /// Waits and retries are reported to `sink` as notes.
    pub fn with_events(mut self, sink: Arc<dyn Sink>) -> GithubClient {
        self.events = Some(sink);
        self
    }

    #[cfg(test)]
    fn with_clock(mut self, clock: Arc<dyn Clock>) -> GithubClient {
        self.clock = clock;
        self
    }

    fn note(&self, text: String) {
        if let Some(sink) = &self.events {
            sink.emit(Event::Note(text));
        }
    }

    async fn wait(&self, call: &Call, wait: Duration, why: &str) {
        self.note(format!("{call} {why}; retrying in {}s", wait.as_secs()));
        self.clock.sleep(wait).await;
    }

    /// Sends a request that is safe to repeat, retrying rate limits and
    /// server errors under the policy.
    async fn request(
        &self,
        call: &Call,
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, GithubError> {
        let attempts = self.retry.max_attempts.max(1);
        let mut last = String::new();
        let mut server_errors = 0;
        for attempt in 1..=attempts {
            let outcome = http::send_once(&self.octo, call, body).await;
            let wait = match http::judge(call, outcome, self.clock.now(), &self.retry) {
                Verdict::Done(reply) => return Ok(reply),
                Verdict::Fail(e) => return Err(e),
                Verdict::RateLimited(wait) => {
                    last = "was rate limited".to_string();
                    wait
                }
                Verdict::Unsure(what) => {
                    server_errors += 1;
                    last = what;
                    self.retry.backoff(server_errors)
                }
            };
            if attempt < attempts {
                self.wait(call, wait, &last).await;
            }
        }
        Err(GithubError::GaveUp {
            request: call.to_string(),
            attempts,
            last,
        })
    }

    fn decode<T: serde::de::DeserializeOwned>(
        call: &Call,
        reply: &Reply,
    ) -> Result<T, GithubError> {
        serde_json::from_str(&reply.body).map_err(|source| GithubError::Decode {
            request: call.to_string(),
            source,
        })
    }

    fn repo_path(&self) -> String {
        format!("/repos/{}/{}", self.repo.owner, self.repo.name)
    }

    /// The first (oldest) comment on `pr` opened by `marker`, reading every page.
    async fn find_marked(
        &self,
        pr: u64,
        marker: &str,
    ) -> Result<Option<IssueComment>, GithubError> {
        for page in 1..=MAX_PAGES {
            let call = Call {
                method: Method::Get,
                path: format!(
                    "{}/issues/{pr}/comments?per_page={PER_PAGE}&page={page}",
                    self.repo_path()
                ),
            };
            let reply = self.request(&call, None).await?;
            let comments: Vec<IssueComment> = Self::decode(&call, &reply)?;
            let found = comments.into_iter().find(|c| {
                c.body
                    .as_deref()
                    .is_some_and(|b| text::is_marked(b, marker))
            });
            if found.is_some() {
                return Ok(found);
            }
            // Page numbers, not the `link` URL: every request stays relative
            // to the base URI rather than going wherever the server points.
            if !http::has_next_page(reply.link.as_deref()) {
                return Ok(None);
            }
        }
        Err(GithubError::TooManyComments { pr })
    }

    /// Brings `existing` to `body`, unless it already has it.
    async fn update(
        &self,
        existing: IssueComment,
        body: &str,
        action: CommentAction,
    ) -> Result<CommentOutcome, GithubError> {
        if existing.body.as_deref() == Some(body) {
            return Ok(CommentOutcome {
                action,
                id: existing.id,
                html_url: existing.html_url,
            });
        }
        let call = Call {
            method: Method::Patch,
            path: format!("{}/issues/comments/{}", self.repo_path(), existing.id),
        };
        let reply = self.request(&call, Some(&json!({ "body": body }))).await?;
        let edited: IssueComment = Self::decode(&call, &reply)?;
        Ok(CommentOutcome {
            action: CommentAction::Updated,
            id: edited.id,
            html_url: edited.html_url,
        })
    }

    /// Posts `report` on pull request `pr` as the one comment of `campaign`,
    /// editing that comment if it exists. A report over GitHub's limit is cut
    /// at a line, with a note pointing at `full_report` (a URL).
    ///
    /// A create that fails unclearly (5xx, dropped connection) may still have
    /// landed, so before each new try the comments are listed again and a
    /// comment that did land is used instead of posting another.
    pub async fn upsert_comment(
        &self,
        pr: u64,
        campaign: &str,
        report: &str,
        full_report: Option<&str>,
    ) -> Result<CommentOutcome, GithubError> {
        let marker = campaign_marker(campaign)?;
        let body = comment_body(&marker, report, full_report);
        if let Some(existing) = self.find_marked(pr, &marker).await? {
            return self.update(existing, &body, CommentAction::Unchanged).await;
        }
        let call = Call {
            method: Method::Post,
            path: format!("{}/issues/{pr}/comments", self.repo_path()),
        };
        let payload = json!({ "body": body });
        let attempts = self.retry.max_attempts.max(1);
        let mut last = String::new();
        let mut server_errors = 0;
        for attempt in 1..=attempts {
            if server_errors > 0 {
                // The previous try may have landed: look before posting again.
                if let Some(landed) = self.find_marked(pr, &marker).await? {
                    return self.update(landed, &body, CommentAction::Created).await;
                }
            }
            let outcome = http::send_once(&self.octo, &call, Some(&payload)).await;
            let wait = match http::judge(&call, outcome, self.clock.now(), &self.retry) {
                Verdict::Done(reply) => {
                    let created: IssueComment = Self::decode(&call, &reply)?;
                    return Ok(CommentOutcome {
                        action: CommentAction::Created,
                        id: created.id,
                        html_url: created.html_url,
                    });
                }
                Verdict::Fail(e) => return Err(e),
                Verdict::RateLimited(wait) => {
                    // Refused outright: nothing landed, no need to look.
                    server_errors = 0;
                    last = "was rate limited".to_string();
                    wait
                }
                Verdict::Unsure(what) => {
                    server_errors += 1;
                    last = what;
                    self.retry.backoff(server_errors)
                }
            };
            if attempt < attempts {
                self.wait(&call, wait, &last).await;
            }
        }
        if server_errors > 0 {
            // The last try may have landed too; an error would then be false.
            if let Some(landed) = self.find_marked(pr, &marker).await? {
                return self.update(landed, &body, CommentAction::Created).await;
            }
        }
        Err(GithubError::GaveUp {
            request: call.to_string(),
            attempts,
            last,
        })
    }

    /// Sets the commit status `patchbench/<campaign>` on `sha`. The
    /// description is cut to 140 characters. Statuses are safe to repeat (the
    /// latest per context wins), so every failure that may pass is retried.
    pub async fn set_status(
        &self,
        sha: &str,
        state: StatusState,
        campaign: &str,
        description: &str,
        target_url: Option<&str>,
    ) -> Result<(), GithubError> {
        let sha_ok = matches!(sha.len(), 40 | 64) && sha.chars().all(|c| c.is_ascii_hexdigit());
        if !sha_ok {
            return Err(GithubError::InvalidSha {
                given: sha.to_string(),
            });
        }
        // Same character rules as the marker, so the context is clean too.
        campaign_marker(campaign)?;
        let mut payload = json!({
            "state": state.as_str(),
            "description": status_description(description),
            "context": format!("patchbench/{campaign}"),
        });
        if let Some(url) = target_url {
            payload["target_url"] = json!(url);
        }
        let call = Call {
            method: Method::Post,
            path: format!("{}/statuses/{sha}", self.repo_path()),
        };
        self.request(&call, Some(&payload)).await?;
        Ok(())
    }
}
