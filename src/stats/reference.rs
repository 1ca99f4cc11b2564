//! Test data shared by the statistics tests, and a tolerance check.
//!
//! The PAGEOUT groups are synthetic: seed 000 publishes only means and CVs,
//! so these were drawn once, shaped like its A/B/A run (A 23.903 ms with
//! CV 2.82%, counter 13.113 ms with CV 3.55%, A′ 23.514 ms), by
//!
//! ```python
//! rng = np.random.default_rng(2026)
//! A_BOOT_1 = rng.normal(23.903, 23.903 * 0.0282, 9).round(3)
//! B_BOOT_1 = rng.normal(13.113, 13.113 * 0.0355, 9).round(3)
//! A_BOOT_2 = rng.normal(23.514, 23.514 * 0.0282, 9).round(3)
//! CONTROL_A_BOOT_1 = rng.normal(21.0, 21.0 * 0.0474, 9).round(3)
//! CONTROL_B_BOOT_1 = rng.normal(21.0, 21.0 * 0.0474, 9).round(3)
//! CONTROL_A_BOOT_2 = rng.normal(21.0, 21.0 * 0.0474, 9).round(3)
//! ```
//!
//! (numpy 2.4.6). Every reference value in the tests was then computed once
//! with scipy 1.17.1 by the call its comment names.

/// PAGEOUT CPU ms, first baseline boot (A).
pub const A_BOOT_1: [f64; 9] = [
    23.368, 24.065, 22.625, 24.844, 24.333, 23.706, 23.693, 24.108, 23.723,
];
/// PAGEOUT CPU ms, the patched boot (B).
pub const B_BOOT_1: [f64; 9] = [
    13.008, 13.448, 13.353, 13.083, 13.073, 13.188, 12.827, 12.925, 13.368,
];
/// PAGEOUT CPU ms, the return baseline boot (A′).
pub const A_BOOT_2: [f64; 9] = [
    23.427, 22.603, 23.198, 23.949, 23.36, 23.415, 23.94, 24.724, 23.041,
];
/// An unlimited-zswap control: A, B and A′ drawn from one distribution
/// (CV 4.74%, the seed's worst control CV).
pub const CONTROL_A_BOOT_1: [f64; 9] = [
    22.342, 19.776, 21.174, 19.836, 22.345, 21.83, 22.132, 20.119, 21.681,
];
/// See [`CONTROL_A_BOOT_1`].
pub const CONTROL_B_BOOT_1: [f64; 9] = [
    20.483, 20.545, 21.504, 21.873, 21.203, 20.375, 20.178, 22.438, 21.591,
];
/// See [`CONTROL_A_BOOT_1`].
pub const CONTROL_A_BOOT_2: [f64; 9] = [
    21.716, 23.173, 20.188, 23.548, 24.136, 22.611, 21.823, 20.339, 21.99,
];

/// The PAGEOUT A samples of both boots, pooled.
pub fn a_pooled() -> Vec<f64> {
    A_BOOT_1.iter().chain(&A_BOOT_2).copied().collect()
}

/// Assert that `got` is within `rel` of `want`, relative to `|want|` (or
/// absolutely, when `want` is 0).
#[track_caller]
pub fn assert_close(got: f64, want: f64, rel: f64) {
    let scale = if want == 0.0 { 1.0 } else { want.abs() };
    assert!(
        (got - want).abs() <= rel * scale,
        "got {got:e}, want {want:e} (relative tolerance {rel:e})"
    );
}
