//! A `Decimal128` column narrowed to `i64`, with its largest magnitude, shared by the
//! expressions that read it.
//!
//! SLOW has eighteen sums over the same four money columns; DataFusion evaluates each
//! sum's argument on its own, so without sharing every batch's four columns would be
//! narrowed eighteen times. A small per-thread cache keeps the last few narrowed
//! columns, keyed by the identity of the Arrow array they came from. An entry holds a
//! reference to that array, so the array cannot be freed and its address reused by
//! another array while the entry exists: a key can never match a different array.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::Decimal128Type;

/// Narrowed columns kept per thread: a batch's distinct decimal leaves (SLOW has six)
/// with room to spare. Each holds a batch's column twice (`i128` and `i64`).
const CACHED_LEAVES: usize = 8;

/// A column's values as `i64` and the largest magnitude among them.
#[derive(Debug)]
pub struct Leaf {
    pub values: Vec<i64>,
    pub max_abs: u64,
}

struct Entry {
    /// Keeps the array alive, so its address identifies it (module doc).
    array: ArrayRef,
    leaf: Arc<Leaf>,
}

thread_local! {
    static CACHE: RefCell<VecDeque<Entry>> = const { RefCell::new(VecDeque::new()) };
}

/// Column `index` of `batch` narrowed, if it is a `Decimal128` column without nulls
/// whose values all fit in `i64`.
pub fn narrowed(batch: &RecordBatch, index: usize) -> Option<Arc<Leaf>> {
    let array = batch.columns().get(index)?;
    if let Some(hit) = CACHE.with_borrow(|cache| {
        cache
            .iter()
            .find(|e| Arc::ptr_eq(&e.array, array))
            .map(|e| Arc::clone(&e.leaf))
    }) {
        return Some(hit);
    }
    let leaf = Arc::new(narrow(array.as_ref())?);
    CACHE.with_borrow_mut(|cache| {
        if cache.len() == CACHED_LEAVES {
            cache.pop_front();
        }
        cache.push_back(Entry {
            array: Arc::clone(array),
            leaf: Arc::clone(&leaf),
        });
    });
    Some(leaf)
}

fn narrow(array: &dyn Array) -> Option<Leaf> {
    if array.null_count() != 0 {
        return None;
    }
    let wide = array.as_primitive_opt::<Decimal128Type>()?.values();
    // One pass without a branch per value: truncate, and note whether any value did
    // not survive the truncation and the largest magnitude of those that did.
    let mut values = Vec::with_capacity(wide.len());
    let (mut exact, mut max_abs) = (true, 0u64);
    for &v in wide.iter() {
        let narrow = v as i64;
        exact &= i128::from(narrow) == v;
        max_abs = max_abs.max(narrow.unsigned_abs());
        values.push(narrow);
    }
    // `i64::MIN`'s magnitude is not an `i64`: such a column stays wide.
    (exact && max_abs <= i64::MAX as u64).then_some(Leaf { values, max_abs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Decimal128Array;

    fn leaf(values: Vec<Option<i128>>) -> Option<Leaf> {
        narrow(&Decimal128Array::from(values))
    }

    #[test]
    fn only_columns_whose_every_value_is_an_i64_magnitude_narrow() {
        let max = i128::from(i64::MAX);
        let fits = leaf(vec![Some(-5), Some(max), Some(-max), Some(0)]).expect("fits");
        assert_eq!(fits.values, [-5, i64::MAX, -i64::MAX, 0]);
        assert_eq!(fits.max_abs, i64::MAX as u64);
        assert!(leaf(vec![Some(1), Some(max + 1)]).is_none());
        assert!(leaf(vec![Some(i128::from(i64::MIN))]).is_none());
        // Its low 64 bits are 5: truncation alone would take it for a small value.
        assert!(leaf(vec![Some((1i128 << 64) + 5)]).is_none());
        assert!(leaf(vec![Some(1), None]).is_none());
        assert_eq!(leaf(vec![]).map(|l| l.max_abs), Some(0));
    }
}
