//! The nearest-rank percentile, the one definition every percentile drainwatch reports uses
//! (request latencies of attach trials, a policy's `pNN` distribution thresholds): the value at
//! position ⌈q·n⌉ of the sorted values, never an interpolation, so it is always a measured value.

/// The nearest-rank quantile `per_mille`/1000 of `sorted` (ascending); `None` when empty.
/// A quantile of 0 is the smallest value.
pub fn nearest_rank(sorted: &[i64], per_mille: usize) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (sorted.len() * per_mille).div_ceil(1000).max(1);
    sorted.get(rank - 1).copied()
}
