//! Statistics over samples. Pure functions, no I/O.

/// Summary of one group of samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for fewer than two samples.
    pub sd: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Summary {
            n,
            mean,
            sd,
            min,
            max,
        })
    }

    /// Coefficient of variation in percent, if the mean is not zero.
    pub fn cv_pct(&self) -> Option<f64> {
        (self.mean != 0.0).then(|| self.sd / self.mean.abs() * 100.0)
    }
}

/// `(new − old) / old` in percent, if `old` is not zero.
pub fn pct_change(old: f64, new: f64) -> Option<f64> {
    (old != 0.0).then(|| (new - old) / old.abs() * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_matches_hand_computed_values() {
        // Reference: mean 5, sample variance 32/7 for the classic set below
        // (numpy: np.std([2,4,4,4,5,5,7,9], ddof=1) = 2.138089935299395).
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.mean, 5.0);
        assert!((s.sd - 2.138_089_935_299_395).abs() < 1e-12);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        assert!((s.cv_pct().unwrap() - 42.761_798_705_987_9).abs() < 1e-9);
    }

    #[test]
    fn degenerate_inputs_do_not_divide_by_zero() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[3.0]).unwrap().sd, 0.0);
        assert_eq!(Summary::of(&[0.0, 0.0]).unwrap().cv_pct(), None);
        assert_eq!(pct_change(0.0, 1.0), None);
    }

    #[test]
    fn the_seeds_headline_change_is_reproduced() {
        // Seed 000: PAGEOUT 23.903 ms (A) → 13.113 ms (counter) is −45.14%
        // against Base A alone (the mail's −44.69% pools A and A').
        let pooled_a = (23.903 + 23.514) / 2.0;
        let change = pct_change(pooled_a, 13.113).unwrap();
        assert!((change - -44.689).abs() < 0.01, "{change}");
    }
}
