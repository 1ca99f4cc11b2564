//! One request to the GitHub REST API, and the verdict on its answer: done,
//! wait and retry, or fail. octocrab's own retry layer is switched off (it
//! re-sends a POST on a 5xx, which can post a comment twice); the loops that
//! retry live in the parent module, which knows what is safe to repeat.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::types::GithubError;

/// GitHub asks clients hit by a secondary rate limit without a `retry-after`
/// header to wait at least a minute.
const SECONDARY_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// How many times a request is tried and how long it may wait in between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries per request, the first included (at least 1).
    pub max_attempts: u32,
    /// The longest single wait. A rate limit that asks for more fails at once
    /// rather than sleeping through a CI job's time for a likely second refusal.
    pub max_wait: Duration,
    /// The wait after the first server error; it doubles after each one.
    pub server_error_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            max_wait: Duration::from_secs(60),
            server_error_backoff: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// The wait before the next try after `failures` server errors in a row.
    pub(crate) fn backoff(&self, failures: u32) -> Duration {
        let factor = 1u32 << failures.saturating_sub(1).min(16);
        self.server_error_backoff
            .saturating_mul(factor)
            .min(self.max_wait)
    }
}

/// Time as the retry loops see it; tests substitute one that records sleeps
/// and returns at once.
pub(crate) trait Clock: Send + Sync {
    fn now(&self) -> SystemTime;
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>>;
}

/// The real clock: the system time and tokio's sleep.
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        Box::pin(tokio::time::sleep(duration))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
    Patch,
}

/// A request as errors name it: method and path (never headers, so never
/// the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    pub method: Method,
    pub path: String,
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let method = match self.method {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Patch => "PATCH",
        };
        write!(f, "{method} {}", self.path)
    }
}

/// The parts of an answer the loops look at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Reply {
    pub status: u16,
    pub retry_after: Option<String>,
    pub ratelimit_remaining: Option<String>,
    pub ratelimit_reset: Option<String>,
    pub link: Option<String>,
    pub body: String,
}

/// What to do after one try.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// A 2xx answer.
    Done(Reply),
    /// Rate limited: nothing happened; wait this long, then try again.
    RateLimited(Duration),
    /// A 5xx or a transport failure: the request may or may not have taken
    /// effect. The text says what happened.
    Unsure(String),
    /// Trying again cannot help.
    Fail(GithubError),
}

/// Sends `call` once through `octo`. A transport error is returned as text:
/// callers treat it like a 5xx.
pub(crate) async fn send_once(
    octo: &octocrab::Octocrab,
    call: &Call,
    body: Option<&serde_json::Value>,
) -> Result<Reply, String> {
    let path = call.path.as_str();
    let sent = match call.method {
        Method::Get => octo._get(path).await,
        Method::Post => octo._post(path, body).await,
        Method::Patch => octo._patch(path, body).await,
    };
    let response = sent.map_err(|e| format!("transport error: {e}"))?;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let mut reply = Reply {
        status: response.status().as_u16(),
        retry_after: header("retry-after"),
        ratelimit_remaining: header("x-ratelimit-remaining"),
        ratelimit_reset: header("x-ratelimit-reset"),
        link: header("link"),
        body: String::new(),
    };
    reply.body = octo
        .body_to_string(response)
        .await
        .map_err(|e| format!("answered {} but the body was unreadable: {e}", reply.status))?;
    Ok(reply)
}

/// How long GitHub asks us to wait, if `reply` is a rate limit.
///
/// `retry-after` (seconds) wins; then `x-ratelimit-remaining: 0` with
/// `x-ratelimit-reset` (a Unix time); then a bare 429 means a secondary limit.
/// A bare 403 is a permission problem, not a rate limit.
pub(crate) fn rate_limit_wait(reply: &Reply, now: SystemTime) -> Option<Duration> {
    if !matches!(reply.status, 403 | 429) {
        return None;
    }
    let number = |v: &Option<String>| v.as_deref().and_then(|s| s.trim().parse::<u64>().ok());
    if let Some(secs) = number(&reply.retry_after) {
        return Some(Duration::from_secs(secs));
    }
    // No let-chains: the MSRV is 1.85.
    if number(&reply.ratelimit_remaining) == Some(0) {
        if let Some(reset) = number(&reply.ratelimit_reset) {
            let now = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
            // One extra second: the reset time is rounded down to a second.
            return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
        }
    }
    (reply.status == 429).then_some(SECONDARY_LIMIT_WAIT)
}

/// GitHub's own explanation from an error body, else the start of the body.
fn github_message(body: &str) -> String {
    let parsed = serde_json::from_str::<serde_json::Value>(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.get("message"))
        .and_then(|m| m.as_str());
    match message {
        Some(m) => m.to_string(),
        None => body.trim().chars().take(200).collect(),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        410 => "Gone",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// `502 Bad Gateway`, or just `599` for a code without a common name.
pub(crate) fn status_text(status: u16) -> String {
    format!("{status} {}", reason(status))
        .trim_end()
        .to_string()
}

/// The verdict on one try's outcome.
pub(crate) fn judge(
    call: &Call,
    outcome: Result<Reply, String>,
    now: SystemTime,
    policy: &RetryPolicy,
) -> Verdict {
    let reply = match outcome {
        Ok(reply) => reply,
        Err(transport) => return Verdict::Unsure(transport),
    };
    if (200..300).contains(&reply.status) {
        return Verdict::Done(reply);
    }
    if let Some(wait) = rate_limit_wait(&reply, now) {
        if wait > policy.max_wait {
            return Verdict::Fail(GithubError::RateLimited {
                request: call.to_string(),
                wait,
                cap: policy.max_wait,
            });
        }
        return Verdict::RateLimited(wait);
    }
    if reply.status >= 500 {
        return Verdict::Unsure(format!("answered {}", status_text(reply.status)));
    }
    let hint = match reply.status {
        401 => " (is the token valid?)",
        403 | 404 => {
            " (does the token have `pull-requests: write` and `statuses: write`? \
              A pull request from a fork gets a read-only token)"
        }
        _ => "",
    };
    Verdict::Fail(GithubError::Status {
        request: call.to_string(),
        status: status_text(reply.status),
        message: format!("{}{hint}", github_message(&reply.body)),
    })
}

/// Whether a `link` header points at a next page.
pub(crate) fn has_next_page(link: Option<&str>) -> bool {
    link.is_some_and(|link| {
        link.split(',')
            .any(|part| part.split(';').skip(1).any(|p| p.trim() == "rel=\"next\""))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16) -> Reply {
        Reply {
            status,
            ..Reply::default()
        }
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn rate_limit_waits_follow_githubs_headers() {
        let now = at(1_000);
        let mut r = reply(403);
        assert_eq!(rate_limit_wait(&r, now), None, "a bare 403 is not a limit");
        r.retry_after = Some("7".into());
        assert_eq!(rate_limit_wait(&r, now), Some(Duration::from_secs(7)));
        let mut r = reply(403);
        r.ratelimit_remaining = Some("0".into());
        r.ratelimit_reset = Some("1030".into());
        assert_eq!(rate_limit_wait(&r, now), Some(Duration::from_secs(31)));
        r.ratelimit_remaining = Some("12".into());
        assert_eq!(rate_limit_wait(&r, now), None);
        assert_eq!(
            rate_limit_wait(&reply(429), now),
            Some(SECONDARY_LIMIT_WAIT)
        );
        let mut r = reply(500);
        r.retry_after = Some("1".into());
        assert_eq!(rate_limit_wait(&r, now), None);
    }

    #[test]
    fn verdicts_separate_retryable_from_final_answers() {
        let call = Call {
            method: Method::Post,
            path: "/repos/o/r/issues/1/comments".into(),
        };
        let policy = RetryPolicy::default();
        let judge = |outcome| judge(&call, outcome, at(0), &policy);
        assert!(matches!(judge(Ok(reply(201))), Verdict::Done(_)));
        assert!(matches!(judge(Ok(reply(502))), Verdict::Unsure(_)));
        assert!(matches!(judge(Err("reset".into())), Verdict::Unsure(_)));
        let mut limited = reply(429);
        limited.retry_after = Some("3600".into());
        match judge(Ok(limited)) {
            Verdict::Fail(e) => assert_eq!(
                e.to_string(),
                "POST /repos/o/r/issues/1/comments is rate limited for 3600s, \
                 longer than the 60s this run waits"
            ),
            other => panic!("{other:?}"),
        }
        let mut missing = reply(422);
        missing.body = r#"{"message":"Validation Failed"}"#.into();
        match judge(Ok(missing)) {
            Verdict::Fail(e) => assert_eq!(
                e.to_string(),
                "POST /repos/o/r/issues/1/comments answered 422 Unprocessable Entity: \
                 Validation Failed"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RetryPolicy::default();
        let waits: Vec<u64> = (1..=7).map(|n| policy.backoff(n).as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 60, 60]);
    }

    #[test]
    fn next_pages_are_found_in_link_headers() {
        let link = "<https://api.github.com/x?page=2>; rel=\"next\", \
                    <https://api.github.com/x?page=5>; rel=\"last\"";
        assert!(has_next_page(Some(link)));
        let last = "<https://api.github.com/x?page=1>; rel=\"prev\", \
                    <https://api.github.com/x?page=1>; rel=\"first\"";
        assert!(!has_next_page(Some(last)));
        assert!(!has_next_page(None));
    }
}
