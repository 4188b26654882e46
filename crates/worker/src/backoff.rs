//! Exponential backoff with jitter for retrying calls to the coordinator.

use std::time::Duration;

use rand::Rng;

/// Retry delays: the `n`-th consecutive failure waits a random time in `[d/2, d]` where
/// `d = min(cap, base * 2^n)`, so that workers cut off together do not return together.
#[derive(Clone, Debug)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    failures: u32,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::new(Duration::from_millis(200), Duration::from_secs(10))
    }
}

impl Backoff {
    /// A schedule starting near `base` and never above `cap`.
    pub fn new(base: Duration, cap: Duration) -> Backoff {
        Backoff { base, cap, failures: 0 }
    }

    /// The upper bound of the next delay.
    pub fn ceiling(&self) -> Duration {
        self.base.saturating_mul(1u32 << self.failures.min(20)).min(self.cap)
    }

    /// The delay before the next try, drawn with `rng`; each call counts one more failure.
    pub fn next_delay(&mut self, rng: &mut impl Rng) -> Duration {
        let ceiling = self.ceiling();
        self.failures = self.failures.saturating_add(1);
        ceiling.mul_f64(rng.random_range(0.5..=1.0))
    }

    /// Starts over after a success.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_with_jitter_and_reset() {
        let mut rng = rand::rng();
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        let ceilings: Vec<u64> = (0..7)
            .map(|_| {
                let ceiling = backoff.ceiling();
                let delay = backoff.next_delay(&mut rng);
                assert!(delay >= ceiling / 2 && delay <= ceiling, "{delay:?} outside [{ceiling:?}/2, {ceiling:?}]");
                ceiling.as_millis() as u64
            })
            .collect();
        assert_eq!(ceilings, [100, 200, 400, 800, 1000, 1000, 1000]);
        for _ in 0..100 {
            backoff.next_delay(&mut rng);
        }
        assert_eq!(backoff.ceiling(), Duration::from_secs(1));
        backoff.reset();
        assert_eq!(backoff.ceiling(), Duration::from_millis(100));
    }
}
