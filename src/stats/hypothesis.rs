//! Two-sided tests of "A and B come from the same distribution": Welch's t
//! test on the means and the Mann-Whitney U rank test.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::describe::mean;

/// Welch's unequal-variances t test of B's mean against A's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WelchTest {
    /// `(mean B − mean A) / sqrt(var A / n A + var B / n B)`: positive when
    /// B's mean is larger. scipy's `ttest_ind(b, a, equal_var=False)`.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value, `2 · P(T_df > |t|)`.
    pub p: f64,
}

/// Welch's t test, two-sided, as `scipy.stats.ttest_ind(b, a,
/// equal_var=False)`.
///
/// `None` when either group has fewer than two samples (no variance), or
/// when both groups are constant: the standard error is then 0 and the
/// test does not apply; the difference of the means is exact.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<WelchTest> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ma, mb) = (mean(a), mean(b));
    let va = a.iter().map(|x| (x - ma).powi(2)).sum::<f64>() / (na - 1.0);
    let vb = b.iter().map(|x| (x - mb).powi(2)).sum::<f64>() / (nb - 1.0);
    let (sa, sb) = (va / na, vb / nb);
    let se2 = sa + sb;
    if se2 <= 0.0 {
        return None;
    }
    let t = (mb - ma) / se2.sqrt();
    let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    // `df` is positive and finite here: at least one variance is positive.
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = (2.0 * dist.sf(t.abs())).min(1.0);
    Some(WelchTest { t, df, p })
}

/// How a Mann-Whitney p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MannWhitneyMethod {
    /// The exact null distribution of U (no ties, a small group).
    Exact,
    /// The normal approximation with tie and continuity corrections.
    Asymptotic,
}

/// The Mann-Whitney U rank test of A against B.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of A: the number of (a, b) pairs with a > b, plus half the pairs
    /// with a = b. scipy's `mannwhitneyu(a, b).statistic`. `n A · n B`
    /// means every A sample exceeds every B sample; 0, the reverse.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub method: MannWhitneyMethod,
}

/// The Mann-Whitney U test, two-sided, matching
/// `scipy.stats.mannwhitneyu(a, b, method="auto")` (scipy 1.17):
///
/// - **exact** when at least one group has 8 or fewer samples and there
///   are no ties: `p = 2 · P(U ≥ max(U_A, U_B))` under the null, capped at 1;
/// - otherwise **asymptotic**: `z = (max(U_A, U_B) − n_A n_B / 2 − 0.5) / σ`
///   with the tie-corrected `σ² = n_A n_B / 12 · ((n + 1) − Σ(t³ − t) /
///   (n (n − 1)))` and `p = 2 · P(Z > z)`, capped at 1.
///
/// `None` when either group is empty. When every sample is equal, σ is 0
/// and p is 1.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (na, nb) = (a.len(), b.len());
    let (ranks, tie_sizes) = average_ranks(a.iter().chain(b).copied());
    let rank_sum_a: f64 = ranks[..na].iter().sum();
    let u_a = rank_sum_a - (na * (na + 1)) as f64 / 2.0;
    let u_b = (na * nb) as f64 - u_a;
    let u = u_a.max(u_b);
    let ties = tie_sizes.iter().any(|&t| t > 1);
    let exact = (na <= 8 || nb <= 8) && !ties;
    let p = if exact {
        // Without ties U is a whole number.
        2.0 * exact_u_sf(u as usize, na.min(nb), na.max(nb))
    } else {
        let n = (na + nb) as f64;
        let tie_term: f64 = tie_sizes
            .iter()
            .map(|&t| {
                let t = t as f64;
                t * t * t - t
            })
            .sum();
        let product = (na * nb) as f64;
        let sigma = (product / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
        if sigma > 0.0 {
            let z = (u - product / 2.0 - 0.5) / sigma;
            2.0 * Normal::standard().sf(z)
        } else {
            1.0
        }
    };
    Some(MannWhitney {
        u: u_a,
        p: p.min(1.0),
        method: if exact {
            MannWhitneyMethod::Exact
        } else {
            MannWhitneyMethod::Asymptotic
        },
    })
}

/// Ranks 1..=n of `values` in their given order, ties sharing the average
/// of their ranks, and the size of every group of equal values.
fn average_ranks(values: impl Iterator<Item = f64>) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<(usize, f64)> = values.enumerate().collect();
    order.sort_by(|x, y| x.1.total_cmp(&y.1));
    let mut ranks = vec![0.0; order.len()];
    let mut tie_sizes = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let end = start
            + order[start..]
                .iter()
                .take_while(|(_, v)| *v == order[start].1)
                .count();
        // Ranks start+1 ..= end share their mean.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &(index, _) in &order[start..end] {
            ranks[index] = rank;
        }
        tie_sizes.push(end - start);
        start = end;
    }
    (ranks, tie_sizes)
}

/// `P(U ≥ u)` under the null for groups of `m` ≤ `n` samples without ties.
///
/// The number of arrangements with U = k is the coefficient of q^k in the
/// Gaussian binomial `[m + n choose m]_q = Π_{i=1..m} (1 − q^{n+i}) / (1 −
/// q^i)`; after step i the running product is `[n + i choose i]_q`, so
/// every intermediate is a count of at most `C(m + n, m)` and exact in
/// `u128` for any group sizes this tool sees (m ≤ 8 here).
fn exact_u_sf(u: usize, m: usize, n: usize) -> f64 {
    let counts = u_distribution(m, n);
    let total: u128 = counts.iter().sum();
    let tail: u128 = counts.iter().skip(u).sum();
    tail as f64 / total as f64
}

/// The number of arrangements of `m` and `n` samples with each U = 0..=mn.
fn u_distribution(m: usize, n: usize) -> Vec<u128> {
    let mut poly = vec![0_u128; m * n + 1];
    poly[0] = 1;
    let mut degree = 0;
    for i in 1..=m {
        // Multiply by (1 − q^{n+i}), in i128 since the product has negative
        // coefficients, keeping degrees up to i·n: the quotient below has
        // no higher terms, and a coefficient of it depends only on those
        // of equal or lower degree.
        let shift = n + i;
        let new_degree = degree + n;
        let mut product: Vec<i128> = poly[..=new_degree].iter().map(|&c| c as i128).collect();
        for k in (shift..=new_degree).rev() {
            product[k] -= poly[k - shift] as i128;
        }
        // Divide by (1 − q^i): out[k] = product[k] + out[k − i].
        for k in i..=new_degree {
            product[k] += product[k - i];
        }
        for (slot, c) in poly.iter_mut().zip(&product) {
            *slot = u128::try_from(*c).expect("Gaussian binomial coefficients are non-negative");
        }
        degree = new_degree;
    }
    poly
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::reference::*;

    #[test]
    fn welch_on_pageout_matches_scipy() {
        // scipy.stats.ttest_ind(A_pooled, B_BOOT_1, equal_var=False)
        //   → statistic 64.58017575881105, pvalue 1.0823654953803235e-27,
        //     df 23.198551257217883 (our t is B − A, so the sign flips).
        let w = welch_t_test(&a_pooled(), &B_BOOT_1).unwrap();
        assert_close(w.t, -64.58017575881105, 1e-12);
        assert_close(w.df, 23.198551257217883, 1e-12);
        assert_close(w.p, 1.0823654953803235e-27, 1e-8);
    }

    #[test]
    fn welch_on_the_control_matches_scipy() {
        // scipy.stats.ttest_ind(CONTROL_A_pooled, CONTROL_B_BOOT_1,
        //   equal_var=False) → statistic 1.4526153074404693,
        //   pvalue 0.1594299092136348, df 23.723808375405355
        let a: Vec<f64> = CONTROL_A_BOOT_1
            .iter()
            .chain(&CONTROL_A_BOOT_2)
            .copied()
            .collect();
        let w = welch_t_test(&a, &CONTROL_B_BOOT_1).unwrap();
        assert_close(w.t, -1.4526153074404693, 1e-12);
        assert_close(w.df, 23.723808375405355, 1e-12);
        assert_close(w.p, 0.1594299092136348, 1e-10);
    }

    #[test]
    fn welch_needs_two_samples_and_some_variance() {
        assert_eq!(welch_t_test(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(welch_t_test(&[3.0, 3.0], &[4.0, 4.0, 4.0]), None);
        // One constant group is fine: the other carries all the variance.
        let w = welch_t_test(&[3.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_close(w.df, 2.0, 1e-12);
    }

    #[test]
    fn mann_whitney_on_pageout_is_asymptotic_and_matches_scipy() {
        // scipy.stats.mannwhitneyu(A_pooled, B_BOOT_1, method='auto')
        //   → statistic 162.0, pvalue 3.465900661488035e-05 (18 and 9
        //   samples, both > 8: normal approximation).
        let m = mann_whitney_u(&a_pooled(), &B_BOOT_1).unwrap();
        assert_eq!(m.u, 162.0);
        assert_eq!(m.method, MannWhitneyMethod::Asymptotic);
        assert_close(m.p, 3.465900661488035e-05, 1e-10);
    }

    #[test]
    fn mann_whitney_on_the_control_matches_scipy() {
        // scipy.stats.mannwhitneyu(CONTROL_A_pooled, CONTROL_B_BOOT_1,
        //   method='auto') → statistic 102.0, pvalue 0.29169697358948865
        let a: Vec<f64> = CONTROL_A_BOOT_1
            .iter()
            .chain(&CONTROL_A_BOOT_2)
            .copied()
            .collect();
        let m = mann_whitney_u(&a, &CONTROL_B_BOOT_1).unwrap();
        assert_eq!(m.u, 102.0);
        assert_close(m.p, 0.29169697358948865, 1e-10);
    }

    #[test]
    fn mann_whitney_is_exact_for_tiny_samples_without_ties() {
        // scipy.stats.mannwhitneyu(a, b, method='auto') → (statistic, pvalue)
        let cases: [(&[f64], &[f64], f64, f64); 4] = [
            // The asymptotic p would be 0.05182992721790968.
            (
                &[1.1, 2.3, 3.5],
                &[4.2, 5.0, 6.1, 7.3],
                0.0,
                0.05714285714285714,
            ),
            (
                &[4.2, 1.1, 6.1, 3.5],
                &[2.3, 5.0, 7.3],
                4.0,
                0.6285714285714286,
            ),
            (&[0.5], &[0.7], 0.0, 1.0),
            (&[3.0], &[1.0, 2.0, 4.0, 5.0], 2.0, 1.0),
        ];
        for (a, b, u, p) in cases {
            let m = mann_whitney_u(a, b).unwrap();
            assert_eq!(m.method, MannWhitneyMethod::Exact, "{a:?} {b:?}");
            assert_eq!(m.u, u, "{a:?} {b:?}");
            assert_close(m.p, p, 1e-12);
        }
    }

    #[test]
    fn mann_whitney_is_exact_when_only_one_group_is_small() {
        // scipy.stats.mannwhitneyu(a8, b20, method='auto') → 43.0,
        //   0.06251075816293207 (method='asymptotic' would give
        //   0.0634252212242858): scipy goes exact unless both n > 8.
        let a8 = [1.5, 3.25, 4.0, 7.75, 9.0, 11.5, 12.25, 20.0];
        let b20: Vec<f64> = (0..20).map(|i| 2.0 + 1.37 * i as f64).collect();
        let m = mann_whitney_u(&a8, &b20).unwrap();
        assert_eq!((m.u, m.method), (43.0, MannWhitneyMethod::Exact));
        assert_close(m.p, 0.06251075816293207, 1e-12);
    }

    #[test]
    fn mann_whitney_is_asymptotic_when_both_groups_exceed_eight() {
        // scipy.stats.mannwhitneyu(a9, b9, method='auto') → 6.0,
        //   0.0026797144168214833 (method='exact': 0.0012340600575894691).
        let a9 = [10.1, 10.4, 9.8, 10.9, 10.0, 10.6, 9.7, 10.3, 10.2];
        let b9 = [10.5, 11.0, 10.8, 11.2, 10.45, 11.4, 10.75, 10.95, 11.1];
        let m = mann_whitney_u(&a9, &b9).unwrap();
        assert_eq!((m.u, m.method), (6.0, MannWhitneyMethod::Asymptotic));
        assert_close(m.p, 0.0026797144168214833, 1e-10);
        // scipy.stats.ttest_ind(b9, a9, equal_var=False) → 4.159942147812674,
        //   0.0007908736302870137, df 15.444838718283933
        let w = welch_t_test(&a9, &b9).unwrap();
        assert_close(w.t, 4.159942147812674, 1e-12);
        assert_close(w.df, 15.444838718283933, 1e-12);
        assert_close(w.p, 0.0007908736302870137, 1e-9);
    }

    #[test]
    fn mann_whitney_with_ties_uses_the_tie_corrected_normal_approximation() {
        // scipy.stats.mannwhitneyu(at, bt, method='auto') → 8.0,
        //   0.021920655864769517
        let at = [3.0, 4.0, 4.0, 5.0, 6.0, 6.0, 6.0, 7.0];
        let bt = [5.0, 6.0, 7.0, 7.0, 8.0, 8.0, 9.0];
        let m = mann_whitney_u(&at, &bt).unwrap();
        assert_eq!((m.u, m.method), (8.0, MannWhitneyMethod::Asymptotic));
        assert_close(m.p, 0.021920655864769517, 1e-10);
        // scipy.stats.mannwhitneyu([1, 2], [2, 3]) → 0.5, 0.4142161782425252
        let m = mann_whitney_u(&[1.0, 2.0], &[2.0, 3.0]).unwrap();
        assert_eq!(m.u, 0.5);
        assert_close(m.p, 0.4142161782425252, 1e-10);
        // scipy.stats.ttest_ind(bt, at, equal_var=False) → 2.887329266605666,
        //   0.0129171535284581, df 12.764369874091498
        let w = welch_t_test(&at, &bt).unwrap();
        assert_close(w.t, 2.887329266605666, 1e-12);
        assert_close(w.df, 12.764369874091498, 1e-12);
        assert_close(w.p, 0.0129171535284581, 1e-9);
    }

    #[test]
    fn mann_whitney_of_all_equal_samples_has_p_one() {
        // scipy.stats.mannwhitneyu([2, 2, 2], [2, 2]) → 3.0, 1.0
        let m = mann_whitney_u(&[2.0; 3], &[2.0; 2]).unwrap();
        assert_eq!((m.u, m.p), (3.0, 1.0));
        assert_eq!(mann_whitney_u(&[], &[1.0]), None);
    }

    #[test]
    fn the_u_distribution_is_the_gaussian_binomial() {
        // m = 2, n = 3: the 10 arrangements have U = 0,1,2,2,3,3,4,4,5,6.
        assert_eq!(u_distribution(2, 3), vec![1, 1, 2, 2, 2, 1, 1]);
        // Symmetric, and summing to C(m + n, m).
        let d = u_distribution(8, 40);
        assert_eq!(d.iter().sum::<u128>(), 377_348_994);
        assert!(d.iter().eq(d.iter().rev()));
    }

    #[test]
    fn average_ranks_share_ties() {
        let (ranks, ties) = average_ranks([5.0, 1.0, 5.0, 3.0].into_iter());
        assert_eq!(ranks, vec![3.5, 1.0, 3.5, 2.0]);
        assert_eq!(ties, vec![1, 1, 2]);
    }
}
