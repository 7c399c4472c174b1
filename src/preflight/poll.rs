//! The one poll loop of the preflight waits: evaluate a condition every `every` until it
//! decides or `limit` passes, keeping the last observation for the timeout's message. The
//! Kubernetes waits (in-memory views), the local probe's `/readyz` and the host client's
//! NodePort all wait through it.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::Check;

/// One evaluation of a wait.
pub enum Poll<R> {
    /// Done.
    Ready(R),
    /// A definite failure of `Check` (a pull error, a crash loop, the probe exited): no point
    /// waiting.
    Failed(Check, String),
    /// Not yet; the last observation, for the timeout message.
    Waiting(String),
}

/// How a wait ended without its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// A definite failure, named by the evaluation.
    Failed(Check, String),
    /// `limit` passed; the last observation.
    TimedOut(String),
}

/// Evaluates `eval` every `every` until it is ready or failed, or `limit` has passed since the
/// first evaluation (which always runs).
pub async fn poll<R, F, Fut>(limit: Duration, every: Duration, mut eval: F) -> Result<R, Stopped>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Poll<R>>,
{
    let deadline = Instant::now() + limit;
    loop {
        match eval().await {
            Poll::Ready(r) => return Ok(r),
            Poll::Failed(c, why) => return Err(Stopped::Failed(c, why)),
            Poll::Waiting(last) if Instant::now() >= deadline => {
                return Err(Stopped::TimedOut(last));
            }
            Poll::Waiting(_) => tokio::time::sleep(every).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preflight::PROBE_READY;

    #[tokio::test(start_paused = true)]
    async fn it_ends_ready_failed_or_timed_out_with_the_last_observation() {
        let mut n = 0;
        let r = poll(Duration::from_secs(1), Duration::from_millis(100), || {
            n += 1;
            let v = n;
            async move {
                if v == 3 {
                    Poll::Ready(v)
                } else {
                    Poll::Waiting(format!("try {v}"))
                }
            }
        })
        .await;
        assert_eq!(r, Ok(3));

        let r: Result<(), _> = poll(
            Duration::from_secs(1),
            Duration::from_millis(100),
            || async { Poll::Failed(PROBE_READY, "exited".into()) },
        )
        .await;
        assert_eq!(r, Err(Stopped::Failed(PROBE_READY, "exited".into())));

        let start = Instant::now();
        let mut tries = 0;
        let r: Result<(), _> = poll(Duration::from_secs(1), Duration::from_millis(100), || {
            tries += 1;
            let t = tries;
            async move { Poll::Waiting(format!("try {t}")) }
        })
        .await;
        assert_eq!(r, Err(Stopped::TimedOut(format!("try {tries}"))));
        assert!(
            start.elapsed() >= Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
        assert!((10..=12).contains(&tries), "{tries}");
    }
}
