//! Small-sample statistics for comparing a baseline run with a new one (issue 15's
//! `drainwatch compare`): the spread of one side, and an exact two-sided permutation test of the
//! Wilcoxon–Mann–Whitney rank sum.
//!
//! Why exact and not a normal approximation: gates run 3 to 10 trials per arm, where the
//! approximation is wrong by more than the α it is compared with. Why a permutation test over
//! midranks: measured intervals and counts tie often (every trial failing 0 requests), and the
//! exact distribution of the rank sum with ties is that of its permutations. Every value here is a
//! pure function of the samples: no RNG, no sampling of permutations, the same answer on every
//! machine.

pub mod decide;
pub mod metric;
pub mod report;
pub mod runs;

/// The most label assignments enumerated exactly: C(20, 10) = 184 756, so up to 10 trials a side.
/// Beyond it [`rank_sum_p`] answers `None` (undecided), never a guess.
pub const MAX_ENUMERATED: u64 = 184_756;

/// One side's spread. Built only from measured values: a side with none is not-measured
/// (`None` from [`spread`]), never a spread of zeros.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spread {
    /// How many values.
    pub n: usize,
    /// The median (the mean of the middle two for an even n).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
}

/// The spread of `xs`, or `None` when it holds no value or a value that is not a number.
pub fn spread(xs: &[f64]) -> Option<Spread> {
    if xs.is_empty() || xs.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Spread {
        n,
        median,
        min: v[0],
        max: v[n - 1],
    })
}

/// C(n, k), saturating at `u64::MAX` (only compared with [`MAX_ENUMERATED`]).
pub fn choose(n: u64, k: u64) -> u64 {
    let k = k.min(n.saturating_sub(k));
    let mut c: u64 = 1;
    for i in 0..k {
        // c * (n - i) / (i + 1) stays exact: c is C(n, i) and C(n, i) * (n - i) is divisible
        // by (i + 1).
        match c.checked_mul(n - i) {
            Some(x) => c = x / (i + 1),
            None => return u64::MAX,
        }
    }
    c
}

/// The smallest two-sided p-value the exact test can reach with `n` and `m` values a side and
/// no ties: 2 / C(n + m, n) (the two most extreme of all equally likely assignments). 3 against 3
/// cannot go below 0.10, 5 against 5 reaches 0.0079: below the n where this exceeds α, only a
/// deterministic rule can decide.
pub fn min_p(n: usize, m: usize) -> f64 {
    let c = choose((n + m) as u64, n as u64);
    (2.0 / c as f64).min(1.0)
}

/// Midranks of the pooled values (1-based; tied values share the mean of their ranks).
fn midranks(pooled: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..pooled.len()).collect();
    idx.sort_by(|&a, &b| pooled[a].total_cmp(&pooled[b]));
    let mut ranks = vec![0.0; pooled.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && pooled[idx[j + 1]] == pooled[idx[i]] {
            j += 1;
        }
        // positions i..=j (0-based) share the ranks i+1..=j+1
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            ranks[k] = r;
        }
        i = j + 1;
    }
    ranks
}

/// Calls `f` with every k-subset of 0..n as a sorted index list, in lexicographic order.
fn for_each_subset(n: usize, k: usize, f: &mut impl FnMut(&[usize])) {
    let mut s: Vec<usize> = (0..k).collect();
    loop {
        f(&s);
        // the rightmost index that can still move right
        let Some(i) = (0..k).rev().find(|&i| s[i] < n - k + i) else {
            return;
        };
        s[i] += 1;
        for j in i + 1..k {
            s[j] = s[j - 1] + 1;
        }
    }
}

/// The exact two-sided p-value of the rank-sum test that `new` and `base` come from one
/// distribution: the share of all C(n + m, m) ways of labelling the pooled values "new" whose
/// rank sum lies at least as far from its mean as the observed one. `None` when either side is
/// empty, holds a value that is not a number, or the enumeration would exceed
/// [`MAX_ENUMERATED`]. Symmetric: swapping the sides gives the same p.
pub fn rank_sum_p(base: &[f64], new: &[f64]) -> Option<f64> {
    let (n, m) = (base.len(), new.len());
    if n == 0 || m == 0 || base.iter().chain(new).any(|x| x.is_nan()) {
        return None;
    }
    let total = choose((n + m) as u64, m as u64);
    if total > MAX_ENUMERATED {
        return None;
    }
    let pooled: Vec<f64> = base.iter().chain(new).copied().collect();
    let ranks = midranks(&pooled);
    let mean = m as f64 * (n + m + 1) as f64 / 2.0;
    let observed: f64 = ranks[n..].iter().sum();
    let far = (observed - mean).abs();
    // Rank sums are multiples of 0.5, so a half-step tolerance separates "as far" from "nearer"
    // without float equality.
    let eps = 0.25;
    let mut extreme: u64 = 0;
    for_each_subset(n + m, m, &mut |s| {
        let sum: f64 = s.iter().map(|&i| ranks[i]).sum();
        if (sum - mean).abs() + eps >= far {
            extreme += 1;
        }
    });
    Some(extreme as f64 / total as f64)
}

#[cfg(test)]
mod tests;
