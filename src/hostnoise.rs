//! The host's own noise floor, measured in the same run: a fixed CPU-bound
//! loop timed on the host a few times before, between and after the boots.
//! Under plain TCG the guest cannot be quieter than the host it runs on
//! (on one day here a fixed loop varied by 19.7% CV with no QEMU running),
//! so every report sets the guest's within-boot CVs beside this one.
//!
//! The loop is xorshift64 over a fixed number of steps, its result kept
//! alive with `black_box`: the same instructions every time, no memory
//! traffic beyond registers, no system calls. Its wall time varies only
//! with what the host does to the thread running it (frequency, other
//! load, steal).

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Steps of the loop: about 100 ms on this project's machines.
pub const STEPS: u64 = 150_000_000;

/// Loops timed at each point (before the first boot, after each boot).
pub const PER_POINT: usize = 3;

/// One timing of the loop.
pub fn time_loop(steps: u64) -> Duration {
    let started = Instant::now();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x);
    started.elapsed()
}

/// The loop timed `n` times in a row, in milliseconds.
pub fn sample(n: usize, steps: u64) -> Vec<f64> {
    (0..n)
        .map(|_| time_loop(steps).as_secs_f64() * 1e3)
        .collect()
}

/// The coefficient of variation of some timings, in percent (sample sd over
/// mean); `None` for fewer than two or a zero mean.
pub fn cv_pct(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    crate::stats::Summary::of(values).and_then(|s| s.cv_pct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_takes_time_and_the_cv_is_of_the_samples() {
        let ms = sample(3, 1_000_000);
        assert_eq!(ms.len(), 3);
        assert!(ms.iter().all(|m| *m > 0.0), "{ms:?}");
        assert_eq!(cv_pct(&[10.0, 10.0, 10.0]), Some(0.0));
        let cv = cv_pct(&[9.0, 10.0, 11.0]).unwrap();
        assert!((cv - 10.0).abs() < 1e-9, "{cv}");
        assert_eq!(cv_pct(&[1.0]), None);
    }
}
