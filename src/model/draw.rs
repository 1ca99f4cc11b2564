//! Unbiased bounded random draws, shared by the bootstrap (stats) and the
//! shuffled boot order (order): both draw from a seeded ChaCha8 stream, so
//! this lives below both.

use rand_core::Rng;

/// A uniform integer in `0..n`, without modulo bias: Lemire's
/// multiply-shift ("Fast Random Integer Generation in an Interval", 2019),
/// rejecting the `2^64 mod n` low products that would favour some results.
///
/// # Panics
///
/// If `n` is 0.
pub fn uniform_below<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    assert!(n > 0, "uniform_below needs a non-empty range");
    let mut product = u128::from(rng.next_u64()) * u128::from(n);
    if (product as u64) < n {
        // 2^64 mod n, computed in 64 bits as (2^64 − n) mod n.
        let threshold = n.wrapping_neg() % n;
        while (product as u64) < threshold {
            product = u128::from(rng.next_u64()) * u128::from(n);
        }
    }
    (product >> 64) as u64
}
