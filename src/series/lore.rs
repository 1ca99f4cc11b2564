//! Fetching a series from a public-inbox archive (lore.kernel.org or a
//! mirror): the thread of a message as an mbox, `<base>/<message-id>/t.mbox.gz`.

use std::io::Read;
use std::time::Duration;

/// The archive `lore:` series are fetched from unless configured otherwise.
pub const DEFAULT_BASE_URL: &str = "https://lore.kernel.org/all";

#[derive(Debug, thiserror::Error)]
pub enum LoreError {
    #[error("`{message_id}` is not a message id")]
    BadId { message_id: String },
    #[error("fetching {url} failed")]
    Http {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered {status}: no such message in the archive?")]
    Status { url: String, status: u16 },
    #[error("{url} is not a gzip mbox")]
    Gzip {
        url: String,
        #[source]
        source: std::io::Error,
    },
}

/// The URL of a message's thread mbox. The id may carry its angle brackets.
pub fn thread_url(base: &str, message_id: &str) -> Result<String, LoreError> {
    let id = message_id
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>');
    if id.is_empty() || !id.contains('@') || id.contains(|c: char| c.is_whitespace() || c == '/') {
        return Err(LoreError::BadId {
            message_id: message_id.to_string(),
        });
    }
    // '@' and the usual id characters are path-safe; escape the rest.
    let escaped: String = id
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '.' | '-' | '_' | '@' | '+' | '=' | '~' => {
                c.to_string()
            }
            other => other
                .to_string()
                .bytes()
                .map(|b| format!("%{b:02X}"))
                .collect(),
        })
        .collect();
    Ok(format!(
        "{}/{escaped}/t.mbox.gz",
        base.trim_end_matches('/')
    ))
}

/// Download and gunzip a message's thread mbox.
pub async fn fetch_thread(base: &str, message_id: &str) -> Result<Vec<u8>, LoreError> {
    let url = thread_url(base, message_id)?;
    let http = |source| LoreError::Http {
        url: url.clone(),
        source,
    };
    crate::tls::install();
    let client = reqwest::Client::builder()
        .user_agent(concat!("patchbench/", env!("CARGO_PKG_VERSION")))
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(http)?;
    let response = client.get(&url).send().await.map_err(http)?;
    let status = response.status();
    if !status.is_success() {
        return Err(LoreError::Status {
            url,
            status: status.as_u16(),
        });
    }
    let bytes = response.bytes().await.map_err(http)?;
    let mut mbox = Vec::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_end(&mut mbox)
        .map_err(|source| LoreError::Gzip {
            url: url.clone(),
            source,
        })?;
    Ok(mbox)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_urls_strip_brackets_and_escape() {
        assert_eq!(
            thread_url("https://lore.kernel.org/all/", "<20241023.1-1-a@gmail.com>").unwrap(),
            "https://lore.kernel.org/all/20241023.1-1-a@gmail.com/t.mbox.gz"
        );
        assert_eq!(
            thread_url("http://x", "a$b@c").unwrap(),
            "http://x/a%24b@c/t.mbox.gz"
        );
        assert!(thread_url("http://x", "no-at-sign").is_err());
        assert!(thread_url("http://x", "a/b@c").is_err());
    }
}
