//! When to try a Ray call again, and how long to wait.
//!
//! Only idempotent calls (reads, package GET) are retried, and only for failures that a
//! second attempt can fix: no connection, 429, and 5xx. A submission is never repeated:
//! a lost answer to a POST that Ray did act on would otherwise start the job twice.

use std::time::Duration;

/// Whether repeating a request is harmless.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotency {
    /// GET-like: version, list, status, logs, package GET.
    Idempotent,
    /// Submissions, stop, delete, package PUT: sent once.
    Once,
}

/// What went wrong with one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// TCP/TLS connection could not be made (refused, reset, DNS).
    Connect,
    /// No complete answer before the attempt's deadline.
    Timeout,
    /// The server answered with this HTTP status.
    Status(u16),
    /// Anything else (malformed response, body read error).
    Other,
}

/// Exponential backoff with full jitter, bounded by attempts and by the call's deadline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Total attempts including the first (1 = never retry).
    pub max_attempts: u32,
    /// Upper bound of the first wait; doubles every retry.
    pub base_delay: Duration,
    /// Cap on any single wait.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// Whether `failure` on attempt number `attempt` (1-based) deserves another try.
    pub fn should_retry(&self, idempotency: Idempotency, failure: Failure, attempt: u32) -> bool {
        if idempotency == Idempotency::Once || attempt >= self.max_attempts {
            return false;
        }
        is_transient(failure)
    }

    /// The wait before attempt `attempt + 1`: uniform in `[ceiling/2, ceiling]`, where the
    /// ceiling doubles from `base_delay` and is capped at `max_delay`. Half-jitter keeps
    /// a floor so a refused connection is not hammered, while spreading clients apart.
    pub fn delay(&self, attempt: u32) -> Duration {
        let ceiling = backoff_ceiling(self.base_delay, self.max_delay, attempt);
        let half = ceiling / 2;
        let spread = ceiling.saturating_sub(half).as_millis() as u64;
        half + Duration::from_millis(fastrand::u64(0..=spread))
    }
}

/// Failures a later attempt may not see.
pub fn is_transient(failure: Failure) -> bool {
    match failure {
        Failure::Connect | Failure::Timeout => true,
        Failure::Status(code) => code == 429 || (500..=599).contains(&code),
        Failure::Other => false,
    }
}

/// `base * 2^(attempt-1)`, capped.
fn backoff_ceiling(base: Duration, max: Duration, attempt: u32) -> Duration {
    let exp = attempt.saturating_sub(1).min(20);
    base.saturating_mul(1u32 << exp).min(max)
}

/// Backoff for polling a job's status: grows from `initial` to `max` while nothing
/// changes, with jitter so many followers do not poll in lockstep.
#[derive(Debug, Clone)]
pub struct PollBackoff {
    initial: Duration,
    max: Duration,
    step: u32,
}

impl PollBackoff {
    pub fn new(initial: Duration, max: Duration) -> PollBackoff {
        PollBackoff {
            initial,
            max,
            step: 0,
        }
    }

    /// The next wait; each call grows the ceiling.
    pub fn next_delay(&mut self) -> Duration {
        self.step = self.step.saturating_add(1);
        let ceiling = backoff_ceiling(self.initial, self.max, self.step);
        let half = ceiling / 2;
        let spread = ceiling.saturating_sub(half).as_millis() as u64;
        half + Duration::from_millis(fastrand::u64(0..=spread))
    }

    /// Start over from `initial` (something happened: new output, a state change).
    pub fn reset(&mut self) {
        self.step = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_idempotent_calls_are_retried() {
        let p = RetryPolicy::default();
        for failure in [Failure::Connect, Failure::Status(503), Failure::Status(429)] {
            assert!(
                p.should_retry(Idempotency::Idempotent, failure, 1),
                "{failure:?}"
            );
            assert!(
                !p.should_retry(Idempotency::Once, failure, 1),
                "{failure:?}"
            );
        }
    }

    #[test]
    fn client_errors_and_garbage_are_not_retried() {
        let p = RetryPolicy::default();
        for failure in [
            Failure::Status(400),
            Failure::Status(404),
            Failure::Status(409),
            Failure::Other,
        ] {
            assert!(
                !p.should_retry(Idempotency::Idempotent, failure, 1),
                "{failure:?}"
            );
        }
        assert!(p.should_retry(Idempotency::Idempotent, Failure::Status(500), 1));
        assert!(p.should_retry(Idempotency::Idempotent, Failure::Status(599), 1));
        assert!(!p.should_retry(Idempotency::Idempotent, Failure::Status(600), 1));
    }

    #[test]
    fn attempts_are_bounded() {
        let p = RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::default()
        };
        assert!(p.should_retry(Idempotency::Idempotent, Failure::Connect, 2));
        assert!(!p.should_retry(Idempotency::Idempotent, Failure::Connect, 3));
        assert!(!RetryPolicy::none().should_retry(Idempotency::Idempotent, Failure::Connect, 1));
    }

    #[test]
    fn delays_grow_exponentially_within_jitter_bounds() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        for _ in 0..200 {
            let d1 = p.delay(1);
            assert!(d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100));
            let d3 = p.delay(3);
            assert!(d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400));
            let d9 = p.delay(9);
            assert!(d9 >= Duration::from_millis(500) && d9 <= Duration::from_millis(1000));
        }
    }

    #[test]
    fn jitter_actually_varies() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(1000),
            max_delay: Duration::from_secs(10),
        };
        let samples: std::collections::HashSet<Duration> = (0..50).map(|_| p.delay(2)).collect();
        assert!(samples.len() > 5, "{samples:?}");
    }

    #[test]
    fn poll_backoff_grows_and_resets() {
        let mut b = PollBackoff::new(Duration::from_millis(100), Duration::from_millis(800));
        let first = b.next_delay();
        assert!(first <= Duration::from_millis(100));
        for _ in 0..10 {
            b.next_delay();
        }
        let late = b.next_delay();
        assert!(late >= Duration::from_millis(400) && late <= Duration::from_millis(800));
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(100));
    }
}
