//! Blocking work (git2, walks over a kernel tree's 87k files, big copies)
//! run off the async threads.
//!
//! `main` waits for Ctrl-C and SIGTERM in the same `select!` as the command
//! itself; a command that blocks the thread polling it would hide the
//! signal until the blocking call returns, which can be a minute. Work
//! handed to [`unblock`] runs on tokio's blocking pool instead, so the
//! signal is seen at once and the command's future dropped; the abandoned
//! work then runs on until it returns or the process exits. Code using it
//! must leave the cache consumable when that happens (see
//! `tree::import_tarball`).

/// Run `work` on the blocking pool and wait for it. A panic in `work` is
/// resumed here, as if it had run inline.
pub async fn unblock<T, F>(work: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // The runtime is shutting down: nothing is left to resume.
        Err(e) => panic!("blocking task cancelled: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_value_comes_back_and_the_caller_stays_responsive() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        // Run inline, this would block the test's only thread until the
        // timeout and return false.
        let work = unblock(move || rx.recv_timeout(std::time::Duration::from_secs(10)).is_ok());
        // The work blocks until told; the async thread is free meanwhile.
        let other = async {
            tx.send(()).unwrap();
        };
        let (value, ()) = tokio::join!(work, other);
        assert!(value, "the work ran on the async thread");
    }

    #[tokio::test]
    #[should_panic(expected = "boom")]
    async fn a_panic_is_resumed_in_the_caller() {
        unblock(|| panic!("boom")).await
    }
}
