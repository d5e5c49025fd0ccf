//! Retries for idempotent API calls: exponential backoff with jitter on throttling,
//! server errors and transport failures.

use std::future::Future;
use std::time::Duration;

use super::errors::is_transient;

/// Retry policy; the defaults give ~6 attempts over ~10 s.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub attempts: u32,
    pub first: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            attempts: 6,
            first: Duration::from_millis(200),
            max: Duration::from_secs(4),
        }
    }
}

impl Backoff {
    /// Delay before retry number `n` (0-based), with ±25 % jitter.
    pub fn delay(&self, n: u32) -> Duration {
        let base = self.first.saturating_mul(1u32 << n.min(16)).min(self.max);
        let jitter = 0.75 + fastrand::f64() * 0.5;
        base.mul_f64(jitter)
    }
}

/// Run `f` until it succeeds, fails with a non-transient error, or attempts run out.
pub async fn retry<T, F, Fut>(policy: Backoff, mut f: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut n = 0;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if is_transient(&e) && n + 1 < policy.attempts => {
                tracing::debug!(attempt = n + 1, error = %e, "transient API error, retrying");
                tokio::time::sleep(policy.delay(n)).await;
                n += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_cap() {
        let b = Backoff::default();
        assert!(b.delay(0) <= Duration::from_millis(250));
        assert!(b.delay(10) <= Duration::from_secs(5));
        assert!(b.delay(3) >= Duration::from_millis(1200));
    }
}
