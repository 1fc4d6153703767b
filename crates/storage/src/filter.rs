//! Comparisons a scan evaluates itself while decoding: `column <op> value` on an
//! integer, date or decimal column, in the column's stored units (days for dates,
//! scaled integers for decimals), and `column IN (strings)` (`=` a list of one) on a
//! string column, ANDed.
//!
//! Evaluated on the decoded 64-bit values of a chunk before any Arrow array is built,
//! they give a selection; the projected columns are then built only for the selected
//! tuples, and a column no selected tuple lies in is not decoded at all, page by page
//! (late materialization, 2012 paper §5's compressed execution in its simplest form).
//! The query layer decides which of its filters are such comparisons
//! (`coopscan_exec::pushdown`).

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Decimal128Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray};
use arrow_schema::DataType;

use crate::column::ColumnValues;
use crate::error::{Result, StorageError};
use crate::types::{Physical, TableSchema};

/// A comparison with the column on the left: `column <op> value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    /// `lhs <op> rhs`.
    #[inline]
    pub fn holds<T: PartialOrd>(self, lhs: T, rhs: T) -> bool {
        match self {
            CmpOp::Eq => lhs == rhs,
            CmpOp::Lt => lhs < rhs,
            CmpOp::LtEq => lhs <= rhs,
            CmpOp::Gt => lhs > rhs,
            CmpOp::GtEq => lhs >= rhs,
        }
    }

    /// `lit <op> col` is `col <flip(op)> lit`.
    pub fn flip(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::Eq,
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
        }
    }
}

/// `column <op> value`, `column` a stored column's index, `value` in its stored units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Comparison {
    pub column: usize,
    pub op: CmpOp,
    pub value: i64,
}

/// `column IN (values)` on a string column (`column = value` is a list of one):
/// `column` a stored column's index, `values` the strings as stored (without
/// `CHAR(n)` padding, as every layout decodes them).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StringIn {
    pub column: usize,
    pub values: Vec<String>,
}

impl StringIn {
    /// Whether `value` is one of the list's.
    #[inline]
    pub fn holds(&self, value: &[u8]) -> bool {
        self.values.iter().any(|v| v.as_bytes() == value)
    }
}

/// A conjunction of comparisons; empty means every tuple.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RowFilter {
    conjuncts: Vec<Comparison>,
    strings: Vec<StringIn>,
}

impl RowFilter {
    /// The conjunction of `conjuncts`, each on an integer-valued column of `schema`
    /// (an error names one that is not: strings are compared by the query engine).
    pub fn new(schema: &TableSchema, conjuncts: Vec<Comparison>) -> Result<RowFilter> {
        for c in &conjuncts {
            let physical = schema.columns.get(c.column).map(|d| d.ty.physical());
            if !matches!(physical, Some(Physical::I32 | Physical::I64)) {
                return Err(StorageError::Invalid(format!(
                    "a row filter on column {} (not an integer, date or decimal column)",
                    c.column
                )));
            }
        }
        Ok(RowFilter {
            conjuncts,
            strings: Vec::new(),
        })
    }

    /// This filter ANDed with `strings`, each on a string column of `schema` with at
    /// least one value (an error names one that is not).
    pub fn with_strings(mut self, schema: &TableSchema, strings: Vec<StringIn>) -> Result<Self> {
        for s in &strings {
            let physical = schema.columns.get(s.column).map(|d| d.ty.physical());
            if !matches!(physical, Some(Physical::FixedBytes(_) | Physical::VarBytes)) {
                return Err(StorageError::Invalid(format!(
                    "a string filter on column {} (not a string column)",
                    s.column
                )));
            }
            if s.values.is_empty() {
                return Err(StorageError::Invalid(format!(
                    "a string filter on column {} with no values",
                    s.column
                )));
            }
        }
        self.strings.extend(strings);
        Ok(self)
    }

    pub fn is_empty(&self) -> bool {
        self.conjuncts.is_empty() && self.strings.is_empty()
    }

    pub fn conjuncts(&self) -> &[Comparison] {
        &self.conjuncts
    }

    pub fn strings(&self) -> &[StringIn] {
        &self.strings
    }

    /// This filter without its string lists on `columns` (which the caller tests
    /// itself).
    pub fn without_strings_on(&self, columns: &[usize]) -> RowFilter {
        RowFilter {
            conjuncts: self.conjuncts.clone(),
            strings: (self.strings.iter())
                .filter(|s| !columns.contains(&s.column))
                .cloned()
                .collect(),
        }
    }

    /// The filter as text, columns by their names in `schema` and values in stored
    /// units (days for dates, scaled integers for decimals): `a >= 3 AND b < 7`.
    pub fn describe(&self, schema: &TableSchema) -> String {
        let op = |op: CmpOp| match op {
            CmpOp::Eq => "=",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        };
        let name = |column: usize| schema.columns.get(column).map_or("?", |d| d.name.as_str());
        let quoted = |v: &String| format!("'{}'", v.replace('\'', "''"));
        let numbers = self
            .conjuncts
            .iter()
            .map(|c| format!("{} {} {}", name(c.column), op(c.op), c.value));
        let strings = self.strings.iter().map(|s| match s.values.as_slice() {
            [one] => format!("{} = {}", name(s.column), quoted(one)),
            many => {
                let list: Vec<String> = many.iter().map(quoted).collect();
                format!("{} IN ({})", name(s.column), list.join(", "))
            }
        });
        numbers.chain(strings).collect::<Vec<_>>().join(" AND ")
    }

    /// The columns the filter reads, ascending, once each.
    pub fn columns(&self) -> Vec<usize> {
        let numbers = self.conjuncts.iter().map(|c| c.column);
        let mut columns: Vec<usize> = numbers
            .chain(self.strings.iter().map(|s| s.column))
            .collect();
        columns.sort_unstable();
        columns.dedup();
        columns
    }

    /// Which of `n` tuples pass, given each filtered column's decoded values
    /// (`values(column)`; `None` or a length other than `n` is an error).
    pub fn select<'v>(
        &self,
        n: usize,
        values: impl Fn(usize) -> Option<&'v ColumnValues>,
    ) -> Result<Vec<bool>> {
        Ok(self.selection(n, values)?.into_mask(n))
    }

    /// [`RowFilter::select`] as a mask or, once the selection is sparse, the passing
    /// positions (so they are not found again).
    ///
    /// Conjuncts are evaluated over every tuple while many pass; once fewer than one in
    /// [`SPARSE_DENOMINATOR`] does, the rest only at the passing tuples' positions
    /// (TPC-H Q6: its year of dates leaves 15 % for the discount and quantity tests).
    pub fn selection<'v>(
        &self,
        n: usize,
        values: impl Fn(usize) -> Option<&'v ColumnValues>,
    ) -> Result<Selection> {
        let mut keep = vec![true; n];
        let mut passing: Option<Vec<u32>> = None;
        let column = |c: usize| {
            values(c).filter(|v| v.len() == n).ok_or_else(|| {
                StorageError::Invalid(format!("no {n} decoded values of column {c}"))
            })
        };
        let tests = self.conjuncts.len() + self.strings.len();
        for (done, c) in self.conjuncts.iter().enumerate() {
            let values = column(c.column)?;
            match (&mut passing, values) {
                (None, ColumnValues::I32(v)) => and_compare_i32(&mut keep, v, c.op, c.value),
                (None, ColumnValues::I64(v)) => and_compare(&mut keep, v, c.op, c.value),
                (Some(at), ColumnValues::I32(v)) => retain_compare(at, v, c.op, c.value),
                (Some(at), ColumnValues::I64(v)) => retain_compare(at, v, c.op, c.value),
                (_, ColumnValues::Bytes { .. }) => {
                    return Err(StorageError::Invalid(format!(
                        "column {} holds strings, not numbers to compare",
                        c.column
                    )))
                }
            }
            if passing.is_none() && done + 1 < tests && sparse(&keep) {
                passing = Some(positions(&keep));
            }
        }
        for (done, s) in self.strings.iter().enumerate() {
            let values = column(s.column)?;
            if values.strings().is_none() {
                return Err(StorageError::Invalid(format!(
                    "column {} holds numbers, not strings to compare",
                    s.column
                )));
            }
            match &mut passing {
                None => {
                    for (i, k) in keep.iter_mut().enumerate() {
                        *k = *k && s.holds(values.str_at(i));
                    }
                }
                Some(at) => at.retain(|&i| s.holds(values.str_at(i as usize))),
            }
            let done = self.conjuncts.len() + done;
            if passing.is_none() && done + 1 < tests && sparse(&keep) {
                passing = Some(positions(&keep));
            }
        }
        Ok(match passing {
            Some(at) => Selection::Positions(at),
            None => Selection::Mask(keep),
        })
    }
}

impl RowFilter {
    /// [`RowFilter::selection`] of the comparisons (not the string lists, which the
    /// caller tests on its pages, nor what page bounds rule out: both come as
    /// `initial`), one column at a time, the most selective by its `zonemap` (min, max)
    /// first, each decoded only when its turn comes: while many tuples pass, all `n`
    /// values (`decode(column, Needed::All(flags))`, tuples already out may be zeros);
    /// once fewer than one in [`NARROW_DENOMINATOR`] do, only the passing tuples'
    /// (`Needed::At(positions)`, values in the positions' order). So TPC-H Q6's
    /// discount and quantity are decoded for the 15 % of tuples its dates pass, not
    /// all. Returns the selection and the columns decoded whole (zeros where their
    /// tuples were already out).
    pub fn selection_narrowing(
        &self,
        n: usize,
        initial: Option<Vec<bool>>,
        zonemap: impl Fn(usize) -> Option<(i64, i64)>,
        mut decode: impl FnMut(usize, Needed<'_>) -> Result<ColumnValues>,
    ) -> Result<(Selection, Vec<(usize, ColumnValues)>)> {
        let mut keep = initial.unwrap_or_else(|| vec![true; n]);
        if keep.len() != n {
            return Err(StorageError::Invalid(format!(
                "{} flags for {n} tuples",
                keep.len()
            )));
        }
        let mut passing: Option<Vec<u32>> = None;
        let mut whole = Vec::new();
        for (column, (lo, hi)) in self.intervals_by_share(zonemap) {
            if passing.is_none() && sparse_below(&keep, NARROW_DENOMINATOR) {
                passing = Some(positions(&keep));
            }
            match &mut passing {
                None => {
                    let values = decode(column, Needed::All(&keep))?;
                    if values.len() != n {
                        return Err(no_values(column, n));
                    }
                    match &values {
                        ColumnValues::I32(v) => and_within_i32(&mut keep, v, lo, hi),
                        ColumnValues::I64(v) => and_where(&mut keep, v, |x| lo <= x && x <= hi),
                        ColumnValues::Bytes { .. } => return Err(not_numbers(column)),
                    }
                    whole.push((column, values));
                }
                Some(at) => {
                    let mut values = decode(column, Needed::At(at))?;
                    if values.len() != at.len() {
                        return Err(no_values(column, at.len()));
                    }
                    match &mut values {
                        ColumnValues::I32(v) => retain_within(at, v, lo, hi),
                        ColumnValues::I64(v) => retain_within(at, v, lo, hi),
                        ColumnValues::Bytes { .. } => return Err(not_numbers(column)),
                    }
                }
            }
        }
        let selection = match passing {
            Some(at) => Selection::Positions(at),
            None => Selection::Mask(keep),
        };
        Ok((selection, whole))
    }

    /// Each compared column once, in the order of its first comparison, with the
    /// interval `lo..=hi` its comparisons leave (every comparison bounds a range, so
    /// their AND is one; `lo > hi` when none passes): a value passes the comparisons
    /// on its column exactly when it lies in the interval.
    pub fn intervals(&self) -> Vec<(usize, (i64, i64))> {
        let mut columns: Vec<usize> = Vec::new();
        for c in &self.conjuncts {
            if !columns.contains(&c.column) {
                columns.push(c.column);
            }
        }
        columns
            .into_iter()
            .map(|column| {
                let tests = self.conjuncts.iter().filter(|c| c.column == column);
                let (lo, hi) = tests.fold((i64::MIN, i64::MAX), |(lo, hi), c| match c.op {
                    CmpOp::Eq => (lo.max(c.value), hi.min(c.value)),
                    CmpOp::Lt => (lo, hi.min(c.value.saturating_sub(1))),
                    CmpOp::LtEq => (lo, hi.min(c.value)),
                    CmpOp::Gt => (lo.max(c.value.saturating_add(1)), hi),
                    CmpOp::GtEq => (lo.max(c.value), hi),
                });
                // `x < i64::MIN` and `x > i64::MAX` pass nothing.
                let empty = tests_empty(self.conjuncts.iter().filter(|c| c.column == column));
                (column, if empty { (1, 0) } else { (lo, hi) })
            })
            .collect()
    }

    /// [`RowFilter::intervals`], the column whose interval holds the smallest share of
    /// its zonemap's range first (values assumed spread evenly; a column without one
    /// last), so the most selective test runs on all tuples and the others on fewer.
    fn intervals_by_share(
        &self,
        zonemap: impl Fn(usize) -> Option<(i64, i64)>,
    ) -> Vec<(usize, (i64, i64))> {
        let mut ranked: Vec<(f64, usize, (i64, i64))> = (self.intervals().into_iter())
            .map(|(column, interval)| {
                let share = zonemap(column).map_or(1.0, |zone| share_within(interval, zone));
                (share, column, interval)
            })
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
        ranked.into_iter().map(|(_, c, i)| (c, i)).collect()
    }
}

/// Which of a chunk's wanted tuples [`RowFilter::selection_narrowing`] needs a
/// column's values of.
#[derive(Clone, Copy, Debug)]
pub enum Needed<'a> {
    /// All of them, one flag each: a tuple flagged `false` is already out, so its
    /// value may be left as zero (a page holding only such tuples need not be decoded).
    All(&'a [bool]),
    /// Only these positions, ascending; the values come in their order.
    At(&'a [u32]),
}

/// Whether a comparison passes nothing whatever the value (`< i64::MIN`, `> i64::MAX`).
fn tests_empty<'c>(mut tests: impl Iterator<Item = &'c Comparison>) -> bool {
    tests.any(|c| {
        matches!(
            (c.op, c.value),
            (CmpOp::Lt, i64::MIN) | (CmpOp::Gt, i64::MAX)
        )
    })
}

/// The share of `min..=max` that `lo..=hi` covers (0 when they do not meet).
fn share_within((lo, hi): (i64, i64), (min, max): (i64, i64)) -> f64 {
    let (lo, hi) = (i128::from(lo.max(min)), i128::from(hi.min(max)));
    let span = i128::from(max) - i128::from(min) + 1;
    if hi < lo || span <= 0 {
        return 0.0;
    }
    (hi - lo + 1) as f64 / span as f64
}

/// [`and_where`] `lo <= x <= hi` for 32-bit values, compared as 32-bit numbers (twice
/// as many a vector instruction); bounds outside their range are clamped.
fn and_within_i32(keep: &mut [bool], values: &[i32], lo: i64, hi: i64) {
    if lo > hi || lo > i64::from(i32::MAX) || hi < i64::from(i32::MIN) {
        keep.fill(false);
        return;
    }
    let clamp = |x: i64| x.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
    let (lo, hi) = (clamp(lo), clamp(hi));
    and_where(keep, values, |x| lo <= x && x <= hi);
}

/// Keeps the positions `at`, and their values `values` (`values[k]` is position
/// `at[k]`'s), whose value lies in `lo..=hi`.
fn retain_within<T: Copy + Into<i64>>(at: &mut Vec<u32>, values: &mut Vec<T>, lo: i64, hi: i64) {
    let mut end = 0;
    for k in 0..at.len() {
        let (i, v) = (at[k], values[k]);
        at[end] = i;
        values[end] = v;
        let x: i64 = v.into();
        end += usize::from(lo <= x && x <= hi);
    }
    at.truncate(end);
    values.truncate(end);
}

fn no_values(column: usize, n: usize) -> StorageError {
    StorageError::Invalid(format!("no {n} decoded values of column {column}"))
}

fn not_numbers(column: usize) -> StorageError {
    StorageError::Invalid(format!(
        "column {column} holds strings, not numbers to compare"
    ))
}

/// Which tuples a filter passes: a flag per tuple, or the passing positions, ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    Mask(Vec<bool>),
    Positions(Vec<u32>),
}

impl Selection {
    /// Tuples passing.
    pub fn count(&self) -> usize {
        match self {
            Selection::Mask(keep) => keep.iter().map(|&k| usize::from(k)).sum(),
            Selection::Positions(at) => at.len(),
        }
    }

    /// Also requires `passed` (a flag per tuple).
    pub fn and(&mut self, passed: &[bool]) {
        match self {
            Selection::Mask(keep) => keep.iter_mut().zip(passed).for_each(|(k, p)| *k &= p),
            Selection::Positions(at) => at.retain(|&i| passed.get(i as usize) == Some(&true)),
        }
    }

    /// A flag for each of `n` tuples.
    pub fn into_mask(self, n: usize) -> Vec<bool> {
        match self {
            Selection::Mask(keep) => keep,
            Selection::Positions(at) => {
                let mut keep = vec![false; n];
                at.iter().for_each(|&i| keep[i as usize] = true);
                keep
            }
        }
    }

    /// The passing positions, ascending.
    pub fn into_positions(self) -> Vec<u32> {
        match self {
            Selection::Mask(keep) => positions(&keep),
            Selection::Positions(at) => at,
        }
    }
}

/// Fewer than one tuple in this many passing makes the remaining conjuncts test only
/// the passing ones.
const SPARSE_DENOMINATOR: usize = 8;

fn sparse(keep: &[bool]) -> bool {
    sparse_below(keep, SPARSE_DENOMINATOR)
}

/// Fewer than one tuple in this many passing makes [`RowFilter::selection_narrowing`]
/// decode the remaining columns only at the passing tuples: a value decoded where it
/// lies costs a few times one unpacked in a block (Q6's dates pass 15 %).
const NARROW_DENOMINATOR: usize = 4;

/// Fewer than one of `keep` in `denominator` set.
fn sparse_below(keep: &[bool], denominator: usize) -> bool {
    let passing = keep.iter().map(|&k| usize::from(k)).sum::<usize>();
    passing.saturating_mul(denominator) < keep.len()
}

/// Keeps the positions `at` whose value passes `<op> value`.
fn retain_compare<T: Copy + Into<i64>>(at: &mut Vec<u32>, values: &[T], op: CmpOp, value: i64) {
    match op {
        CmpOp::Eq => retain_where(at, values, |x| x.into() == value),
        CmpOp::Lt => retain_where(at, values, |x| x.into() < value),
        CmpOp::LtEq => retain_where(at, values, |x| x.into() <= value),
        CmpOp::Gt => retain_where(at, values, |x| x.into() > value),
        CmpOp::GtEq => retain_where(at, values, |x| x.into() >= value),
    }
}

/// `at.retain(|i| test(values[i]))` without a branch per position (each is written,
/// the end advanced only for a kept one): a test passing half the tuples mispredicts
/// half the time.
fn retain_where<T: Copy>(at: &mut Vec<u32>, values: &[T], test: impl Fn(T) -> bool) {
    let mut end = 0;
    for k in 0..at.len() {
        let i = at[k];
        at[end] = i;
        end += usize::from(test(values[i as usize]));
    }
    at.truncate(end);
}

/// [`and_compare`] for 32-bit values, compared as 32-bit numbers (twice as many a
/// vector instruction): a literal outside their range makes the test constant.
fn and_compare_i32(keep: &mut [bool], values: &[i32], op: CmpOp, value: i64) {
    let Ok(v) = i32::try_from(value) else {
        // Every value is below a literal above i32's range, above one below it.
        let below = value > 0;
        let holds = match op {
            CmpOp::Eq => false,
            CmpOp::Lt | CmpOp::LtEq => below,
            CmpOp::Gt | CmpOp::GtEq => !below,
        };
        if !holds {
            keep.fill(false);
        }
        return;
    };
    match op {
        CmpOp::Eq => and_where(keep, values, |x| x == v),
        CmpOp::Lt => and_where(keep, values, |x| x < v),
        CmpOp::LtEq => and_where(keep, values, |x| x <= v),
        CmpOp::Gt => and_where(keep, values, |x| x > v),
        CmpOp::GtEq => and_where(keep, values, |x| x >= v),
    }
}

impl RowFilter {
    /// Which of `n` tuples pass, given each filtered column as an Arrow array of its
    /// type (`Int32`, `Int64`, `Date32`, `Decimal128` of the column's scale): for tuples
    /// whose values are not stored ones (a changed table's merged tuples). A null
    /// passes no comparison, as in SQL.
    pub fn select_arrays<'a>(
        &self,
        n: usize,
        arrays: impl Fn(usize) -> Option<&'a dyn Array>,
    ) -> Result<Vec<bool>> {
        let mut keep = vec![true; n];
        for c in &self.conjuncts {
            let array = arrays(c.column).filter(|a| a.len() == n).ok_or_else(|| {
                StorageError::Invalid(format!("no {n} values of column {}", c.column))
            })?;
            let value = |x: i64| c.op.holds(x, c.value);
            match array.data_type() {
                DataType::Int32 => and_array(&mut keep, array.as_primitive::<Int32Type>(), |x| {
                    value(i64::from(x))
                }),
                DataType::Date32 => and_array(&mut keep, array.as_primitive::<Date32Type>(), |x| {
                    value(i64::from(x))
                }),
                DataType::Int64 => and_array(&mut keep, array.as_primitive::<Int64Type>(), value),
                DataType::Decimal128(..) => {
                    // Stored decimals fit in i64; a merged value that does not is
                    // compared exactly in i128.
                    let wide = |x: i128| c.op.holds(x, i128::from(c.value));
                    and_array(&mut keep, array.as_primitive::<Decimal128Type>(), wide)
                }
                other => {
                    return Err(StorageError::Invalid(format!(
                        "column {} is {other}, not a type the filter compares",
                        c.column
                    )))
                }
            }
        }
        for s in &self.strings {
            let array = arrays(s.column).filter(|a| a.len() == n).ok_or_else(|| {
                StorageError::Invalid(format!("no {n} values of column {}", s.column))
            })?;
            let test = |v: Option<&str>| v.is_some_and(|v| s.holds(v.as_bytes()));
            match array.data_type() {
                DataType::Utf8 => and_strings(&mut keep, array.as_string::<i32>().iter(), test),
                DataType::LargeUtf8 => {
                    and_strings(&mut keep, array.as_string::<i64>().iter(), test)
                }
                DataType::Utf8View => and_strings(&mut keep, array.as_string_view().iter(), test),
                other => {
                    return Err(StorageError::Invalid(format!(
                        "column {} is {other}, not strings to compare",
                        s.column
                    )))
                }
            }
        }
        Ok(keep)
    }
}

/// `keep[i] &= test(values[i])` over an Arrow string array's values (`None`: null).
fn and_strings<'a>(
    keep: &mut [bool],
    values: impl Iterator<Item = Option<&'a str>>,
    test: impl Fn(Option<&'a str>) -> bool,
) {
    for (k, v) in keep.iter_mut().zip(values) {
        *k &= test(v);
    }
}

/// `keep[i] &= test(array[i])`; a null fails.
fn and_array<T: ArrowPrimitiveType>(
    keep: &mut [bool],
    array: &PrimitiveArray<T>,
    test: impl Fn(T::Native) -> bool,
) {
    for (k, v) in keep.iter_mut().zip(array.iter()) {
        *k &= v.is_some_and(&test);
    }
}

/// `keep[i] &= values[i] <op> value`: one loop per operator, so each is a plain
/// comparison the compiler vectorizes (a `match` per value was most of a Q6 scan).
fn and_compare<T: Copy + Into<i64>>(keep: &mut [bool], values: &[T], op: CmpOp, value: i64) {
    match op {
        CmpOp::Eq => and_where(keep, values, |x| x.into() == value),
        CmpOp::Lt => and_where(keep, values, |x| x.into() < value),
        CmpOp::LtEq => and_where(keep, values, |x| x.into() <= value),
        CmpOp::Gt => and_where(keep, values, |x| x.into() > value),
        CmpOp::GtEq => and_where(keep, values, |x| x.into() >= value),
    }
}

/// `keep[i] &= test(values[i])`, written so the loop has no branch.
fn and_where<T: Copy>(keep: &mut [bool], values: &[T], test: impl Fn(T) -> bool) {
    for (k, &v) in keep.iter_mut().zip(values) {
        *k &= test(v);
    }
}

/// The positions `keep` marks, ascending: one pass without a branch per tuple (the
/// position is written always and the end advanced only for a kept one), so later
/// gathers cost the selected tuples, not all of them.
pub fn positions(keep: &[bool]) -> Vec<u32> {
    let mut out = vec![0u32; keep.len()];
    let mut end = 0usize;
    for (i, &k) in keep.iter().enumerate() {
        out[end] = i as u32;
        end += usize::from(k);
    }
    out.truncate(end);
    out
}

/// Appends to `out` the tuples of `values` at `positions` minus `base` (ascending
/// positions of tuples of `values`, which starts at position `base`; same kind).
pub(crate) fn gather_into(
    out: &mut ColumnValues,
    values: &ColumnValues,
    positions: &[u32],
    base: u32,
) -> Result<()> {
    let at = |p: &u32| (p - base) as usize;
    match (out, values) {
        (ColumnValues::I32(o), ColumnValues::I32(v)) => {
            o.extend(positions.iter().map(|p| v[at(p)]))
        }
        (ColumnValues::I64(o), ColumnValues::I64(v)) => {
            o.extend(positions.iter().map(|p| v[at(p)]))
        }
        (out @ ColumnValues::Bytes { .. }, ColumnValues::Bytes { .. }) => {
            for p in positions {
                out.push_str(values.str_at(at(p)))?;
            }
        }
        _ => return Err(StorageError::Invalid("mismatched column kinds".into())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ColumnDef, ColumnType};

    fn schema() -> TableSchema {
        TableSchema::new(vec![
            ColumnDef {
                name: "a".into(),
                ty: ColumnType::Int32,
            },
            ColumnDef {
                name: "b".into(),
                ty: ColumnType::Utf8,
            },
        ])
        .unwrap()
    }

    #[test]
    fn comparisons_select_and_gather() {
        let cmp = |op, value| Comparison {
            column: 0,
            op,
            value,
        };
        let filter =
            RowFilter::new(&schema(), vec![cmp(CmpOp::GtEq, 2), cmp(CmpOp::Lt, 5)]).unwrap();
        let a = ColumnValues::I32(vec![1, 2, 3, 4, 5, 6]);
        let keep = filter.select(6, |_| Some(&a)).unwrap();
        assert_eq!(keep, [false, true, true, true, false, false]);
        let at = positions(&keep);
        assert_eq!(at, [1, 2, 3]);
        let mut picked = ColumnValues::I32(vec![9]);
        gather_into(&mut picked, &a, &at, 0).unwrap();
        assert_eq!(picked, ColumnValues::I32(vec![9, 2, 3, 4]));
        let mut tail = ColumnValues::I32(Vec::new());
        gather_into(&mut tail, &ColumnValues::I32(vec![3, 4]), &at[1..], 2).unwrap();
        assert_eq!(tail, ColumnValues::I32(vec![3, 4]));
        // Lengths must agree; strings are not compared here.
        assert!(filter.select(5, |_| Some(&a)).is_err());
        assert!(RowFilter::new(
            &schema(),
            vec![Comparison {
                column: 1,
                ..cmp(CmpOp::Eq, 0)
            }]
        )
        .is_err());
        assert!(RowFilter::new(
            &schema(),
            vec![Comparison {
                column: 7,
                ..cmp(CmpOp::Eq, 0)
            }]
        )
        .is_err());
    }

    /// Once few tuples pass, the later conjuncts test only those: the answer is the
    /// plain conjunction's, whatever the order and density of the conjuncts.
    #[test]
    fn sparse_selections_agree_with_the_plain_conjunction() {
        let n = 4000usize;
        let a = ColumnValues::I32((0..n).map(|i| ((i * 7919) % 1000) as i32).collect());
        let mut b = ColumnValues::empty(Physical::VarBytes);
        for i in 0..n {
            b.push_str(["AIR", "MAIL", "SHIP"][(i * 31) % 3].as_bytes())
                .unwrap();
        }
        let cmp = |op, value| Comparison {
            column: 0,
            op,
            value,
        };
        let cases = [
            vec![cmp(CmpOp::Lt, 50), cmp(CmpOp::GtEq, 10), cmp(CmpOp::Gt, 12)],
            vec![
                cmp(CmpOp::GtEq, 10),
                cmp(CmpOp::Lt, 900),
                cmp(CmpOp::LtEq, 20),
            ],
            vec![cmp(CmpOp::Eq, 7), cmp(CmpOp::Lt, 8)],
            vec![cmp(CmpOp::Lt, 100)],
            vec![cmp(CmpOp::Lt, 1 << 40), cmp(CmpOp::Gt, 990)],
            vec![cmp(CmpOp::GtEq, -(1 << 40)), cmp(CmpOp::LtEq, 3)],
            vec![cmp(CmpOp::Gt, 1 << 40)],
            vec![cmp(CmpOp::Eq, -(1 << 40))],
        ];
        let of = |c: usize| [&a, &b].get(c).copied();
        for conjuncts in cases {
            let strings = vec![StringIn {
                column: 1,
                values: vec!["MAIL".into(), "SHIP".into()],
            }];
            let filter = RowFilter::new(&schema(), conjuncts.clone())
                .and_then(|f| f.with_strings(&schema(), strings))
                .unwrap();
            let want: Vec<bool> = (0..n)
                .map(|i| {
                    let v = i64::from(((i * 7919) % 1000) as i32);
                    conjuncts.iter().all(|c| c.op.holds(v, c.value)) && (i * 31) % 3 != 0
                })
                .collect();
            assert_eq!(filter.select(n, of).unwrap(), want, "{conjuncts:?}");
            let selection = filter.selection(n, of).unwrap();
            let passing = want.iter().filter(|&&k| k).count();
            assert_eq!(selection.count(), passing, "{conjuncts:?}");
            assert_eq!(
                selection.into_positions(),
                positions(&want),
                "{conjuncts:?}"
            );
        }
    }

    #[test]
    fn string_lists_select_on_stored_bytes_and_on_arrow_arrays() {
        let words = ["AIR", "MAIL", "", "AIR REG", "air", "SHIP"];
        let mut stored = ColumnValues::empty(Physical::VarBytes);
        for w in words {
            stored.push_str(w.as_bytes()).unwrap();
        }
        let list = |values: &[&str]| StringIn {
            column: 1,
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        let filter = RowFilter::default()
            .with_strings(&schema(), vec![list(&["AIR", "AIR REG"])])
            .unwrap();
        let expected = [true, false, false, true, false, false];
        assert_eq!(filter.select(6, |_| Some(&stored)).unwrap(), expected);
        let array = arrow_array::StringArray::from(words.to_vec());
        assert_eq!(filter.select_arrays(6, |_| Some(&array)).unwrap(), expected);
        // A null is in no list.
        let nulls = arrow_array::StringArray::from(vec![Some("AIR"), None]);
        assert_eq!(
            filter.select_arrays(2, |_| Some(&nulls)).unwrap(),
            [true, false]
        );
        assert_eq!(filter.columns(), [1]);
        assert_eq!(filter.describe(&schema()), "b IN ('AIR', 'AIR REG')");
        // With a comparison: both hold.
        let both = RowFilter::new(
            &schema(),
            vec![Comparison {
                column: 0,
                op: CmpOp::Lt,
                value: 4,
            }],
        )
        .unwrap()
        .with_strings(&schema(), vec![list(&["it's"])])
        .unwrap();
        assert_eq!(both.describe(&schema()), "a < 4 AND b = 'it''s'");
        assert_eq!(both.columns(), [0, 1]);
        // Numbers are not strings, an empty list matches nothing a user wrote.
        assert!(RowFilter::default()
            .with_strings(
                &schema(),
                vec![StringIn {
                    column: 0,
                    ..list(&["x"])
                }]
            )
            .is_err());
        assert!(RowFilter::default()
            .with_strings(&schema(), vec![list(&[])])
            .is_err());
        let numbers = ColumnValues::I32(vec![1; 6]);
        assert!(filter.select(6, |_| Some(&numbers)).is_err());
    }

    #[test]
    fn flipping_swaps_sides() {
        for (op, l, r) in [(CmpOp::Lt, 1, 2), (CmpOp::GtEq, 3, 3), (CmpOp::Eq, 4, 4)] {
            assert!(op.holds(l, r));
            assert!(op.flip().holds(r, l));
        }
    }

    fn value() -> impl proptest::strategy::Strategy<Value = i64> {
        use proptest::prelude::*;
        prop_oneof![
            -5i64..5,
            Just(i64::MIN),
            Just(i64::MAX),
            Just(i64::from(i32::MIN)),
            Just(i64::from(i32::MAX)),
            any::<i64>(),
        ]
    }

    fn zeroed<T: Copy + Default>(values: &[T], keep: &[bool]) -> Vec<T> {
        let pick = |(&v, &k): (&T, &bool)| if k { v } else { T::default() };
        values.iter().zip(keep).map(pick).collect()
    }

    proptest::proptest! {
        /// The narrowing selection (columns in any order a zonemap gives, decoded whole
        /// or at positions) passes exactly the tuples every comparison and `initial`
        /// pass, each tested on its own here.
        #[test]
        fn narrowing_selects_what_every_comparison_passes(
            a in proptest::collection::vec(-6i32..6, 0..200),
            wide in proptest::collection::vec(value(), 200),
            tests in proptest::collection::vec((0usize..2, 0usize..5, value()), 1..5),
            initial in proptest::option::of(proptest::collection::vec(proptest::bool::weighted(0.8), 200)),
            zonemaps in proptest::collection::vec(proptest::option::of((value(), value())), 2),
        ) {
            let n = a.len();
            let b: Vec<i64> = wide[..n].to_vec();
            let initial = initial.map(|v| v[..n].to_vec());
            let ops = [CmpOp::Eq, CmpOp::Lt, CmpOp::LtEq, CmpOp::Gt, CmpOp::GtEq];
            let conjuncts: Vec<Comparison> = tests
                .iter()
                .map(|&(column, op, value)| Comparison { column, op: ops[op], value })
                .collect();
            let filter = RowFilter { conjuncts: conjuncts.clone(), strings: Vec::new() };
            let columns = [ColumnValues::I32(a.clone()), ColumnValues::I64(b.clone())];
            let mut decoded = Vec::new();
            let (selection, whole) = filter
                .selection_narrowing(n, initial.clone(), |c| zonemaps[c], |c, needed| {
                    decoded.push(c);
                    let all = &columns[c];
                    Ok(match needed {
                        // Tuples already out as zeros, as a decoder skipping pages
                        // leaves them: they must stay out.
                        Needed::All(keep) => match all {
                            ColumnValues::I32(v) => ColumnValues::I32(zeroed(v, keep)),
                            ColumnValues::I64(v) => ColumnValues::I64(zeroed(v, keep)),
                            ColumnValues::Bytes { .. } => all.clone(),
                        },
                        Needed::At(at) => {
                            let mut out = all.empty_like();
                            gather_into(&mut out, all, at, 0)?;
                            out
                        }
                    })
                })
                .expect("selects");
            let want: Vec<u32> = (0..n)
                .filter(|&i| initial.as_ref().is_none_or(|m| m[i]))
                .filter(|&i| {
                    conjuncts.iter().all(|c| {
                        let x = if c.column == 0 { i64::from(a[i]) } else { b[i] };
                        c.op.holds(x, c.value)
                    })
                })
                .map(|i| i as u32)
                .collect();
            proptest::prop_assert_eq!(selection.into_positions(), want);
            let mut once = decoded.clone();
            once.sort_unstable();
            once.dedup();
            proptest::prop_assert_eq!(once.len(), decoded.len(), "a column decoded twice");
            proptest::prop_assert!(whole.iter().all(|(c, v)| v.len() == n && decoded.contains(c)));
        }
    }

    /// A mask and the same tuples as positions combine alike with another test's flags.
    #[test]
    fn selections_of_either_form_agree() {
        let keep = vec![true, false, true, true, false, true];
        let passed = [true, true, false, true, true, true];
        let mut mask = Selection::Mask(keep.clone());
        let mut at = Selection::Positions(positions(&keep));
        mask.and(&passed);
        at.and(&passed);
        assert_eq!(mask.count(), 3);
        assert_eq!(at.count(), 3);
        assert_eq!(mask.clone().into_mask(6), at.clone().into_mask(6));
        assert_eq!(mask.into_positions(), vec![0, 3, 5]);
        assert_eq!(at.into_positions(), vec![0, 3, 5]);
    }
}
