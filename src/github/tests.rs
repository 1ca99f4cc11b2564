//! The client against a local GitHub stand-in (wiremock). Waits go through a
//! fake clock that records them and returns at once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::http::Clock;
use super::*;
use crate::events::Recorder;

const TOKEN: &str = "ghp_t0kenThatMustNeverBeShown123";
const COMMENTS: &str = "/repos/o/r/issues/7/comments";

struct FakeClock {
    now: SystemTime,
    slept: Mutex<Vec<Duration>>,
}

impl Clock for FakeClock {
    fn now(&self) -> SystemTime {
        self.now
    }

    fn sleep(
        &self,
        duration: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>> {
        self.slept.lock().unwrap().push(duration);
        Box::pin(std::future::ready(()))
    }
}

impl FakeClock {
    fn slept(&self) -> Vec<Duration> {
        self.slept.lock().unwrap().clone()
    }
}

fn secs(s: &[u64]) -> Vec<Duration> {
    s.iter().map(|&s| Duration::from_secs(s)).collect()
}

/// A client for `o/r` on `server`: 3 attempts, 2 s first backoff, 60 s cap.
fn client(server: &MockServer) -> (GithubClient, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock {
        now: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        slept: Mutex::new(Vec::new()),
    });
    let client = GithubClient::new(
        "o/r".parse().unwrap(),
        &Token::new(TOKEN, "test").unwrap(),
        &server.uri(),
    )
    .unwrap()
    .with_retry(RetryPolicy {
        max_attempts: 3,
        max_wait: Duration::from_secs(60),
        server_error_backoff: Duration::from_secs(2),
    })
    .with_clock(clock.clone());
    (client, clock)
}

fn comment(id: u64, body: &str) -> Value {
    json!({
        "id": id,
        "html_url": format!("https://github.com/o/r/pull/7#issuecomment-{id}"),
        "body": body,
    })
}

const MARKED_BODY: &str = "<!-- patchbench:mm -->\n# Report\n";

async fn list_returns(server: &MockServer, comments: Value, expected_calls: u64) {
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(200).set_body_json(comments))
        .expect(expected_calls)
        .mount(server)
        .await;
}

async fn no_edits(server: &MockServer) {
    Mock::given(method("PATCH"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(server)
        .await;
}

#[tokio::test]
async fn a_comment_is_created_when_none_carries_the_campaign_marker() {
    let server = MockServer::start().await;
    let others = json!([
        comment(1, "looks good"),
        comment(2, "<!-- patchbench:mm-thp -->\nanother campaign"),
    ]);
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .and(query_param("per_page", "100"))
        .and(query_param("page", "1"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(others))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .and(body_json(json!({ "body": MARKED_BODY })))
        .respond_with(ResponseTemplate::new(201).set_body_json(comment(99, MARKED_BODY)))
        .expect(1)
        .mount(&server)
        .await;
    no_edits(&server).await;
    let (client, clock) = client(&server);
    let outcome = client
        .upsert_comment(7, "mm", "# Report\n", None)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        CommentOutcome {
            action: CommentAction::Created,
            id: 99,
            html_url: "https://github.com/o/r/pull/7#issuecomment-99".into(),
        }
    );
    assert!(clock.slept().is_empty());
}

#[tokio::test]
async fn the_marked_comment_is_edited_and_no_new_one_is_posted() {
    let server = MockServer::start().await;
    let old = "<!-- patchbench:mm -->\n# Old report\n";
    list_returns(&server, json!([comment(1, "hi"), comment(5, old)]), 1).await;
    Mock::given(method("PATCH"))
        .and(path("/repos/o/r/issues/comments/5"))
        .and(body_json(json!({ "body": MARKED_BODY })))
        .respond_with(ResponseTemplate::new(200).set_body_json(comment(5, MARKED_BODY)))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let (client, _) = client(&server);
    let outcome = client
        .upsert_comment(7, "mm", "# Report\n", None)
        .await
        .unwrap();
    assert_eq!(outcome.action, CommentAction::Updated);
    assert_eq!(outcome.id, 5);
}

#[tokio::test]
async fn a_marked_comment_that_already_says_the_same_is_left_alone() {
    let server = MockServer::start().await;
    list_returns(&server, json!([comment(5, MARKED_BODY)]), 1).await;
    no_edits(&server).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let (client, _) = client(&server);
    let outcome = client
        .upsert_comment(7, "mm", "# Report\n", None)
        .await
        .unwrap();
    assert_eq!(outcome.action, CommentAction::Unchanged);
    assert_eq!(outcome.id, 5);
}

#[tokio::test]
async fn a_502_on_create_that_landed_is_not_posted_twice() {
    let server = MockServer::start().await;
    // Mounted first, so it answers the first list; then it is used up.
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    list_returns(&server, json!([comment(9, MARKED_BODY)]), 1).await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(502))
        .expect(1)
        .mount(&server)
        .await;
    no_edits(&server).await;
    let (client, clock) = client(&server);
    let outcome = client
        .upsert_comment(7, "mm", "# Report\n", None)
        .await
        .unwrap();
    assert_eq!(outcome.action, CommentAction::Created);
    assert_eq!(outcome.id, 9);
    assert_eq!(clock.slept(), secs(&[2]));
}

#[tokio::test]
async fn a_502_on_create_that_did_not_land_is_posted_exactly_once_more() {
    let server = MockServer::start().await;
    // The first list, and the re-list after the 502: both find nothing.
    list_returns(&server, json!([]), 2).await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(502))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .and(body_json(json!({ "body": MARKED_BODY })))
        .respond_with(ResponseTemplate::new(201).set_body_json(comment(12, MARKED_BODY)))
        .expect(1)
        .mount(&server)
        .await;
    let (client, clock) = client(&server);
    let outcome = client
        .upsert_comment(7, "mm", "# Report\n", None)
        .await
        .unwrap();
    assert_eq!((outcome.action, outcome.id), (CommentAction::Created, 12));
    assert_eq!(clock.slept(), secs(&[2]));
}

#[tokio::test]
async fn persistent_502s_give_up_with_the_attempt_count_and_without_duplicates() {
    let server = MockServer::start().await;
    // First list, a re-list before each of the 2 retries, and a last look.
    list_returns(&server, json!([]), 4).await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(502))
        .expect(3)
        .mount(&server)
        .await;
    let (client, clock) = client(&server);
    let err = client
        .upsert_comment(7, "mm", "# Report\n", None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "POST /repos/o/r/issues/7/comments failed after 3 attempts; \
         the last answered 502 Bad Gateway"
    );
    assert_eq!(clock.slept(), secs(&[2, 4]));
}

#[tokio::test]
async fn a_403_with_retry_after_is_waited_out_then_retried() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("retry-after", "1")
                .set_body_json(json!({ "message": "You have exceeded a secondary rate limit" })),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    list_returns(&server, json!([]), 1).await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(201).set_body_json(comment(3, MARKED_BODY)))
        .expect(1)
        .mount(&server)
        .await;
    let (client, clock) = client(&server);
    let events = Arc::new(Recorder::default());
    let client = client.with_events(events.clone());
    let outcome = client
        .upsert_comment(7, "mm", "# Report\n", None)
        .await
        .unwrap();
    assert_eq!(outcome.id, 3);
    assert_eq!(clock.slept(), secs(&[1]));
    assert_eq!(
        *events.0.lock().unwrap(),
        [Event::Note(
            "GET /repos/o/r/issues/7/comments?per_page=100&page=1 was rate limited; \
             retrying in 1s"
                .into()
        )]
    );
}

#[tokio::test]
async fn an_exhausted_rate_limit_on_create_waits_for_the_reset_without_a_relist() {
    let server = MockServer::start().await;
    // Only the first list: a refused create did not land, so no second look.
    list_returns(&server, json!([]), 1).await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", "1700000009"),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(201).set_body_json(comment(4, MARKED_BODY)))
        .expect(1)
        .mount(&server)
        .await;
    let (client, clock) = client(&server);
    let outcome = client
        .upsert_comment(7, "mm", "# Report\n", None)
        .await
        .unwrap();
    assert_eq!(outcome.id, 4);
    // The fake clock stands at 1_700_000_000; one second of rounding margin.
    assert_eq!(clock.slept(), secs(&[10]));
}

#[tokio::test]
async fn a_404_fails_at_once_naming_the_request_and_status() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let (client, clock) = client(&server);
    let err = client
        .upsert_comment(7, "mm", "# Report\n", None)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(
            "GET /repos/o/r/issues/7/comments?per_page=100&page=1 answered 404 Not Found: Not Found"
        ),
        "{text}"
    );
    assert!(clock.slept().is_empty());
}

#[tokio::test]
async fn the_marker_is_found_on_the_second_page_of_comments() {
    let server = MockServer::start().await;
    let first: Vec<Value> = (1..=100).map(|id| comment(id, "chatter")).collect();
    let next = format!(
        "<{}{COMMENTS}?per_page=100&page=2>; rel=\"next\", \
         <{}{COMMENTS}?per_page=100&page=2>; rel=\"last\"",
        server.uri(),
        server.uri()
    );
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .and(query_param("page", "1"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("link", next.as_str())
                .set_body_json(first),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .and(query_param("page", "2"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            comment(150, "more chatter"),
            comment(250, "<!-- patchbench:mm -->\nold"),
        ])))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(path("/repos/o/r/issues/comments/250"))
        .respond_with(ResponseTemplate::new(200).set_body_json(comment(250, MARKED_BODY)))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let (client, _) = client(&server);
    let outcome = client
        .upsert_comment(7, "mm", "# Report\n", None)
        .await
        .unwrap();
    assert_eq!((outcome.action, outcome.id), (CommentAction::Updated, 250));
}

#[tokio::test]
async fn a_commit_status_carries_state_context_url_and_a_short_description() {
    let server = MockServer::start().await;
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let long = "x".repeat(300);
    let cut = format!("{}…", "x".repeat(139));
    Mock::given(method("POST"))
        .and(path(format!("/repos/o/r/statuses/{sha}")))
        .and(body_json(json!({
            "state": "failure",
            "description": cut,
            "context": "patchbench/mm",
            "target_url": "https://example.org/r/1",
        })))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({ "id": 1 })))
        .expect(1)
        .mount(&server)
        .await;
    let (client, _) = client(&server);
    client
        .set_status(
            sha,
            StatusState::Failure,
            "mm",
            &long,
            Some("https://example.org/r/1"),
        )
        .await
        .unwrap();
    let err = client
        .set_status("HEAD", StatusState::Pending, "mm", "", None)
        .await
        .unwrap_err();
    assert!(matches!(err, GithubError::InvalidSha { .. }), "{err}");
}

#[tokio::test]
async fn the_token_never_shows_in_debug_output_or_errors() {
    let server = MockServer::start().await;
    // The token is sent (so the test is not vacuous) and is refused.
    Mock::given(method("GET"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(json!({ "message": "Bad credentials" })),
        )
        .expect(1)
        .mount(&server)
        .await;
    let (client, _) = client(&server);
    let err = client
        .upsert_comment(7, "mm", "# Report\n", None)
        .await
        .unwrap_err();
    let token = Token::new(TOKEN, "test").unwrap();
    let shown = [
        format!("{client:?}"),
        format!("{token:?}"),
        format!("{err}"),
        format!("{err:?}"),
        format!("{:?}", Token::new(&format!("{TOKEN} x"), "X").unwrap_err()),
    ];
    for text in shown {
        assert!(!text.contains(TOKEN), "{text}");
    }
    assert!(
        err.to_string()
            .contains("401 Unauthorized: Bad credentials")
    );
}

/// The Markdown as GitHub renders it: GitHub Flavored Markdown with bare-URL
/// autolinks, and raw HTML passed through (GitHub allows `<img>` and `<a>`).
fn render_like_github(markdown: &str) -> String {
    let mut options = comrak::Options::default();
    options.extension.autolink = true;
    options.extension.table = true;
    options.extension.strikethrough = true;
    options.render.r#unsafe = true;
    comrak::markdown_to_html(markdown, &options)
}

/// The rendered HTML outside `<code>` elements, where GitHub looks for
/// mentions.
fn outside_code(html: &str) -> String {
    let mut rest = html;
    let mut out = String::new();
    while let Some(start) = rest.find("<code") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .split_once("</code>")
            .map_or("", |(_, after)| after);
    }
    out.push_str(rest);
    out
}

/// Issue 17: a hostile subject and author must not mention, link or show an
/// image in the PR comment, whether the report put them in a code span (the
/// subject, today) or not (a line as a careless renderer would write it).
#[test]
fn hostile_subjects_and_authors_render_as_no_mention_link_or_image() {
    const HOSTILE: &str = "@torvalds [x](javascript:alert(1)) ![i](http://x/y.png)";
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smoke-results.json");
    let mut results = crate::results::Results::load(&fixture).unwrap();
    let patch = &mut results.series.patches[0];
    patch.subject = format!("mm: {HOSTILE}");
    patch.author = format!("{HOSTILE} <evil@example.org>");
    crate::judge::judge_into(&mut results);
    let mut report = crate::report::markdown(&results);
    // A line that names them outside code spans.
    report.push_str(&format!(
        "\nPatch 1/1 {} by {}\n",
        results.series.patches[0].subject, results.series.patches[0].author
    ));
    let marker = campaign_marker("smoke").unwrap();
    let body = comment_body(&marker, &report, None);
    let html = render_like_github(&body);

    assert!(!html.contains("<a "), "a link rendered:\n{html}");
    assert!(!html.contains("<img"), "an image rendered:\n{html}");
    let text = outside_code(&html);
    for mention in ["@torvalds", "@example.org"] {
        assert!(!text.contains(mention), "{mention} would mention:\n{html}");
    }
    // The subject is still there to read, literally, in its code span.
    assert!(
        html.contains(&format!("<code>mm: {HOSTILE}</code>")),
        "{html}"
    );
    // And the careless line reads the same text, only inert.
    assert!(
        text.contains("@\u{200b}torvalds [x](javascript:alert(1)) ![i](http:\u{200b}//x/y.png)"),
        "{text}"
    );
}

/// Without `inert`, the same text would render as a link, an image and a
/// mention: the test above can fail.
#[test]
fn the_renderer_in_these_tests_does_render_links_images_and_autolinks() {
    let html = render_like_github("@torvalds [x](http://a/) ![i](http://x/y.png) www.e.org");
    assert!(html.contains("<a href=\"http://a/\""), "{html}");
    assert!(html.contains("<img src=\"http://x/y.png\""), "{html}");
    assert!(html.contains("<a href=\"http://www.e.org\""), "{html}");
    assert!(outside_code(&html).contains("@torvalds"), "{html}");
}
