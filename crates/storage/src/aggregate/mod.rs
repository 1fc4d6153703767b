//! Aggregation inside the scan: per group of the tuples a scan selects, their count and
//! the exact sums of some values computed from their stored columns.
//!
//! A scan that aggregates (`GROUP BY` a few columns, `SUM`, `AVG`, `COUNT` of decimal
//! arithmetic: TPC-H Q1 and Q6, the 2007 paper's FAST and SLOW) works on the decoded
//! stored integers of each chunk ([`crate::read::decode_chunk_values`]) and never
//! builds Arrow arrays of its tuples: no widening of decimals to 128 bits, no strings
//! copied for the group columns, no batch for an operator above to filter again. The
//! query layer turns the sums and counts into its aggregates' partial states
//! (`coopscan_exec::scan_aggregate`), so the final results are computed as they were.
//! This is the 2012 paper's compressed execution (§5) in the form its TPC-H Q1 takes.

mod keys;
mod lanes;
mod program;
mod value;

pub use keys::GroupIndex;
use lanes::Lanes;
use program::Program;
pub use value::{ArithOp, ValueExpr, Wide, BLOCK};

use crate::column::ColumnValues;
use crate::error::{Result, StorageError};
use crate::types::{Physical, TableSchema};

/// What a scan aggregates: the stored columns it groups by and the values it sums.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AggregateSpec {
    /// Stored columns, in the output's order.
    pub groups: Vec<usize>,
    /// Summed per group, each exactly.
    pub values: Vec<ValueExpr>,
}

impl AggregateSpec {
    /// The stored columns the aggregation reads, ascending, once each.
    pub fn columns(&self) -> Vec<usize> {
        let mut columns = self.groups.clone();
        for v in &self.values {
            v.columns(&mut columns);
        }
        columns.sort_unstable();
        columns.dedup();
        columns
    }

    /// The group columns a scan delivers as packed words (`CHAR(n)` that pack,
    /// [`crate::read::ValueColumns::packed`]): numbered without building strings.
    pub fn packed_groups(&self, schema: &TableSchema) -> Vec<usize> {
        let packs = |c: &usize| {
            let physical = schema.columns.get(*c).map(|d| d.ty.physical());
            matches!(physical, Some(Physical::FixedBytes(n)) if n <= crate::packed_chars::PACKED_CHAR)
        };
        let mut packed: Vec<usize> = self.groups.iter().copied().filter(packs).collect();
        packed.sort_unstable();
        packed.dedup();
        packed
    }

    /// Checks that every column is one of `schema`'s and every summed column a number.
    pub fn check(&self, schema: &TableSchema) -> Result<()> {
        let physical = |c: usize| {
            schema
                .columns
                .get(c)
                .map(|d| d.ty.physical())
                .ok_or_else(|| StorageError::Invalid(format!("no stored column {c}")))
        };
        for &c in &self.groups {
            physical(c)?;
        }
        let mut summed = Vec::new();
        self.values.iter().for_each(|v| v.columns(&mut summed));
        for c in summed {
            if matches!(physical(c)?, Physical::FixedBytes(_) | Physical::VarBytes) {
                return Err(StorageError::Invalid(format!(
                    "column {c} holds strings, not numbers to sum"
                )));
            }
        }
        Ok(())
    }
}

/// The running counts and sums of an aggregating scan's groups.
#[derive(Debug)]
pub struct GroupedSums {
    spec: AggregateSpec,
    index: GroupIndex,
    /// Each group column's value for each group, in group order.
    keys: Vec<ColumnValues>,
    /// The group columns' types.
    physical: Vec<Physical>,
    /// Indexed by group number: 0 is where the tuples a filter rejected go (adding
    /// them there costs less than a branch per tuple), groups are 1 on.
    counts: Vec<u64>,
    /// Group-major: the sums of group `g` are `sums[g * values ..][..values]`.
    sums: Vec<i128>,
    /// Scratch: the group of each tuple of a chunk, one block of values.
    group_of: Vec<u32>,
    /// The value trees compiled for the 64-bit pass over a block.
    program: Program,
    /// Narrow sums of few groups, added in copies (`lanes.rs`); `sums` holds the rest.
    lanes: Lanes,
    wide: Wide,
    /// Whether a block so far overflowed 64 bits (and was summed from 128-bit values):
    /// sums may then be anywhere in `i128`, so every addition is checked.
    wide_seen: bool,
}

impl GroupedSums {
    /// Empty sums for `spec` over a table of `schema` (checked with
    /// [`AggregateSpec::check`]).
    pub fn new(spec: AggregateSpec, schema: &TableSchema) -> Result<GroupedSums> {
        spec.check(schema)?;
        let physical: Vec<Physical> = (spec.groups.iter())
            .map(|&c| schema.columns[c].ty.physical())
            .collect();
        Ok(GroupedSums {
            index: GroupIndex::new(&physical),
            keys: physical.iter().map(|&p| ColumnValues::empty(p)).collect(),
            physical,
            counts: vec![0],
            sums: vec![0; spec.values.len()],
            program: Program::compile(&spec.values),
            lanes: Lanes::new(spec.values.len()),
            spec,
            group_of: Vec::new(),
            wide: Wide::default(),
            wide_seen: false,
        })
    }

    /// Adds those of `n` tuples that `keep` marks (all without it), whose decoded
    /// stored columns are `columns(c)` (each `n` values long; the spec's columns must
    /// all be there).
    pub fn add<'v>(
        &mut self,
        n: usize,
        columns: impl Fn(usize) -> Option<&'v ColumnValues>,
        keep: Option<&[bool]>,
    ) -> Result<()> {
        let missing = |c: usize| StorageError::Invalid(format!("no decoded values of column {c}"));
        let keys = (self.spec.groups.iter())
            .map(|&c| {
                columns(c)
                    .filter(|v| v.len() == n)
                    .ok_or_else(|| missing(c))
            })
            .collect::<Result<Vec<&ColumnValues>>>()?;
        let width = self.spec.values.len();
        let physical = &self.physical;
        let (store, counts, sums) = (&mut self.keys, &mut self.counts, &mut self.sums);
        self.index
            .assign(&keys, n, keep, &mut self.group_of, |tuple| {
                for ((stored, key), &p) in store.iter_mut().zip(&keys).zip(physical) {
                    push_value(stored, key, tuple, p)?;
                }
                counts.push(0);
                sums.resize(sums.len() + width, 0);
                Ok(())
            })?;
        self.lanes.count(&self.group_of, &mut self.counts);
        let columns = |c: usize| columns(c).filter(|v| v.len() == n);
        let mut in_lanes = !self.wide_seen && self.lanes.fit(self.counts.len(), &mut self.sums);
        let mut start = 0;
        while start < n {
            let len = BLOCK.min(n - start);
            let groups = &self.group_of[start..start + len];
            if self.program.eval(&columns, start, len)? {
                for v in 0..width {
                    let values = self.program.values(v, &columns, start, len)?;
                    if in_lanes {
                        self.lanes.add(v, groups, values);
                        continue;
                    }
                    let block = Block::Narrow(values);
                    add_block(&mut self.sums, width, v, groups, block, self.wide_seen)?;
                }
            } else {
                // A step overflowed 64 bits: each tree on its own in 128 bits, and every
                // sum from now on in `sums`, checked.
                self.lanes.drain_into(&mut self.sums);
                in_lanes = false;
                self.wide_seen = true;
                for (v, expr) in self.spec.values.iter().enumerate() {
                    value::eval_wide(expr, &columns, start, len, &mut self.wide)?;
                    let block = Block::Wide(&self.wide);
                    add_block(&mut self.sums, width, v, groups, block, self.wide_seen)?;
                }
            }
            start += len;
        }
        Ok(())
    }

    /// Groups seen so far.
    pub fn groups(&self) -> usize {
        self.counts.len() - 1
    }

    /// Group column `i`'s value for every group, in group order.
    pub fn keys(&self, i: usize) -> Option<&ColumnValues> {
        self.keys.get(i)
    }

    /// The tuples of each group.
    pub fn counts(&self) -> &[u64] {
        &self.counts[1..]
    }

    /// Value `v`'s sum for every group.
    pub fn sums(&self, v: usize) -> impl Iterator<Item = i128> + '_ {
        let width = self.spec.values.len();
        // Exact: the lanes hold only sums of 64-bit values (see `lanes.rs`).
        (1..=self.groups())
            .map(move |g| self.sums[g * width + v].wrapping_add(self.lanes.total(g, v)))
    }
}

/// One block's values, as [`add_block`] takes them.
enum Block<'b> {
    Narrow(&'b [i64]),
    Wide(&'b Wide),
}

/// Adds one block of value `v` to the sums of its tuples' groups (`sums` group-major,
/// `width` values a group); `checked` unless every value so far fit in 64 bits.
fn add_block(
    sums: &mut [i128],
    width: usize,
    v: usize,
    groups: &[u32],
    block: Block<'_>,
    checked: bool,
) -> Result<()> {
    match block {
        Block::Narrow(values) if !checked => {
            // Sums of 64-bit values cannot leave 128 bits before 2^64 additions, more
            // tuples than any table holds: no check needed.
            for (&g, &x) in groups.iter().zip(values) {
                let sum = &mut sums[g as usize * width + v];
                *sum = sum.wrapping_add(i128::from(x));
            }
        }
        Block::Narrow(values) => {
            for (&g, &x) in groups.iter().zip(values) {
                add_checked(&mut sums[g as usize * width + v], i128::from(x), g, false)?;
            }
        }
        Block::Wide(wide) => {
            for ((&g, &x), &bad) in groups.iter().zip(&wide.values).zip(&wide.bad) {
                add_checked(&mut sums[g as usize * width + v], x, g, bad)?;
            }
        }
    }
    Ok(())
}

/// `sum += x`, an error if it leaves 128 bits or `x` did (`bad`) — unless the tuple
/// was rejected (group 0), whose sum is never looked at.
#[inline]
fn add_checked(sum: &mut i128, x: i128, g: u32, bad: bool) -> Result<()> {
    match sum.checked_add(x) {
        Some(s) if !bad => *sum = s,
        _ if g == 0 => *sum = 0,
        _ => return Err(value::overflow()),
    }
    Ok(())
}

/// Appends the value of tuple `i` of `from` to `out`, a group column's values of type
/// `physical` (a `CHAR(n)` value may come packed, [`crate::packed_chars`]).
fn push_value(
    out: &mut ColumnValues,
    from: &ColumnValues,
    i: usize,
    physical: Physical,
) -> Result<()> {
    match (out, from) {
        (ColumnValues::I32(o), ColumnValues::I32(v)) => o.push(v[i]),
        (out @ ColumnValues::Bytes { .. }, ColumnValues::I64(words)) => {
            let unpacked = match physical {
                Physical::FixedBytes(n) => crate::packed_chars::unpack(words[i] as u64, n),
                _ => None,
            };
            let (bytes, len) = unpacked.ok_or_else(|| {
                StorageError::Invalid("a packed group value that does not unpack".into())
            })?;
            out.push_str(&bytes[..len])?
        }
        (ColumnValues::I64(o), ColumnValues::I64(v)) => o.push(v[i]),
        (out @ ColumnValues::Bytes { .. }, from @ ColumnValues::Bytes { .. }) => {
            out.push_str(from.str_at(i))?
        }
        _ => return Err(StorageError::Invalid("group column of another kind".into())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ColumnDef, ColumnType};

    fn schema() -> TableSchema {
        let def = |name: &str, ty| ColumnDef {
            name: name.into(),
            ty,
        };
        TableSchema::new(vec![
            def("flag", ColumnType::Char { len: 1 }),
            def(
                "price",
                ColumnType::Decimal {
                    precision: 15,
                    scale: 2,
                },
            ),
            def("qty", ColumnType::Int32),
        ])
        .unwrap()
    }

    fn flags(values: &[&str]) -> ColumnValues {
        let mut c = ColumnValues::empty(Physical::FixedBytes(1));
        values
            .iter()
            .for_each(|v| c.push_str(v.as_bytes()).unwrap());
        c
    }

    /// Grouped by column 0: column 1, and column 1 × `right`.
    fn column_and_product(right: ValueExpr) -> AggregateSpec {
        AggregateSpec {
            groups: vec![0],
            values: vec![
                ValueExpr::Column(1),
                ValueExpr::Binary {
                    op: ArithOp::Mul,
                    left: Box::new(ValueExpr::Column(1)),
                    right: Box::new(right),
                    left_factor: 1,
                    right_factor: 1,
                },
            ],
        }
    }

    /// Sums over several chunks equal the sums a plain loop computes.
    #[test]
    fn sums_and_counts_per_group_over_chunks() {
        let spec = column_and_product(ValueExpr::Column(2));
        let mut sums = GroupedSums::new(spec, &schema()).unwrap();
        let mut plain: Vec<(String, u64, i128, i128)> = Vec::new();
        for chunk in 0..3u32 {
            let n = 2500 + chunk as usize * 7;
            let f: Vec<&str> = (0..n)
                .map(|i| ["A", "N", "R"][(i * 7 + chunk as usize) % 3])
                .collect();
            let price: Vec<i64> = (0..n).map(|i| (i as i64 * 37) % 10_000 - 300).collect();
            let qty: Vec<i32> = (0..n).map(|i| (i % 50) as i32).collect();
            let (fc, pc, qc) = (
                flags(&f),
                ColumnValues::I64(price.clone()),
                ColumnValues::I32(qty.clone()),
            );
            sums.add(n, |c| [&fc, &pc, &qc].get(c).copied(), None)
                .unwrap();
            for i in 0..n {
                let at = match plain.iter().position(|p| p.0 == f[i]) {
                    Some(at) => at,
                    None => {
                        plain.push((f[i].to_string(), 0, 0, 0));
                        plain.len() - 1
                    }
                };
                plain[at].1 += 1;
                plain[at].2 += i128::from(price[i]);
                plain[at].3 += i128::from(price[i]) * i128::from(qty[i]);
            }
        }
        assert_eq!(sums.groups(), plain.len());
        let keys = sums.keys(0).unwrap();
        let got: Vec<(String, u64, i128, i128)> = (0..sums.groups())
            .map(|g| {
                (
                    String::from_utf8(keys.str_at(g).to_vec()).unwrap(),
                    sums.counts()[g],
                    sums.sums(0).nth(g).unwrap(),
                    sums.sums(1).nth(g).unwrap(),
                )
            })
            .collect();
        assert_eq!(got, plain);
    }

    /// An `Int64` key `k` and an `Int64` value `v`.
    fn key_and_value() -> TableSchema {
        let column = |name: &str| ColumnDef {
            name: name.into(),
            ty: ColumnType::Int64,
        };
        TableSchema::new(vec![column("k"), column("v")]).unwrap()
    }

    /// Integer keys whose groups grow past the lanes' limit between chunks, and a
    /// chunk of values past 64 bits in the middle: every sum equals a plain loop's
    /// (the lanes' totals moved into the sums when either happens).
    #[test]
    fn sums_stay_exact_when_groups_grow_and_values_widen() {
        let schema = key_and_value();
        let spec = column_and_product(ValueExpr::Literal(3));
        for (keys_per_chunk, wide_chunk) in [
            ([4, 10, 300, 8], None),
            ([4, 10, 12, 8], Some(1)),
            ([4, 100, 3, 5], Some(3)),
        ] {
            let mut sums = GroupedSums::new(spec.clone(), &schema).unwrap();
            let mut plain: std::collections::BTreeMap<i64, (i128, i128)> = Default::default();
            for (chunk, keys) in keys_per_chunk.iter().enumerate() {
                let n = 3000;
                let k: Vec<i64> = (0..n).map(|i| (i as i64 * 7919) % keys).collect();
                let v: Vec<i64> = (0..n)
                    .map(|i| match wide_chunk {
                        Some(w) if w == chunk => i64::MAX - i as i64,
                        _ => (i as i64 * 37) % 10_000 - 300,
                    })
                    .collect();
                let (kc, vc) = (ColumnValues::I64(k.clone()), ColumnValues::I64(v.clone()));
                sums.add(n, |c| [&kc, &vc].get(c).copied(), None).unwrap();
                for i in 0..n {
                    let e = plain.entry(k[i]).or_default();
                    e.0 += i128::from(v[i]);
                    e.1 += i128::from(v[i]) * 3;
                }
            }
            let keys = match sums.keys(0) {
                Some(ColumnValues::I64(k)) => k.clone(),
                other => panic!("{other:?}"),
            };
            let got: std::collections::BTreeMap<i64, (i128, i128)> = (0..sums.groups())
                .map(|g| {
                    (
                        keys[g],
                        (sums.sums(0).nth(g).unwrap(), sums.sums(1).nth(g).unwrap()),
                    )
                })
                .collect();
            assert_eq!(got, plain, "{keys_per_chunk:?} {wide_chunk:?}");
        }
    }

    /// Blocks whose sums come to the edge of 64 bits and past it (a lane of
    /// `i64::MAX / 64`s would wrap in 64 bits), positive and negative: every sum
    /// equals a plain loop's.
    #[test]
    fn block_sums_at_the_edge_of_64_bits_are_exact() {
        let schema = key_and_value();
        let spec = AggregateSpec {
            groups: vec![0],
            values: vec![ValueExpr::Column(1)],
        };
        let edge = i64::MAX / BLOCK as i64;
        let bases = [
            edge,
            edge + 1,
            -edge,
            -edge - 1,
            i64::MAX / 64,
            i64::MIN / 64,
            i64::MIN,
        ];
        for base in bases {
            let mut sums = GroupedSums::new(spec.clone(), &schema).unwrap();
            let n = 3 * BLOCK + 17;
            let k: Vec<i64> = (0..n).map(|i| (i % 3) as i64).collect();
            let v: Vec<i64> = (0..n)
                .map(|i| base - base.signum() * (i as i64 % 7))
                .collect();
            let (kc, vc) = (ColumnValues::I64(k.clone()), ColumnValues::I64(v.clone()));
            sums.add(n, |c| [&kc, &vc].get(c).copied(), None).unwrap();
            let mut plain = [0i128; 3];
            for i in 0..n {
                plain[k[i] as usize] += i128::from(v[i]);
            }
            let keys = match sums.keys(0) {
                Some(ColumnValues::I64(k)) => k.clone(),
                other => panic!("{other:?}"),
            };
            for g in 0..sums.groups() {
                let want = plain[keys[g] as usize];
                assert_eq!(
                    sums.sums(0).nth(g),
                    Some(want),
                    "base {base}, group {}",
                    keys[g]
                );
            }
        }
    }

    /// A value past 128 bits is an error in a tuple the scan wants and ignored in one
    /// its filter rejected; values past 64 bits are summed exactly.
    #[test]
    fn overflow_counts_only_in_wanted_tuples() {
        let cube = |c: usize| ValueExpr::Binary {
            op: ArithOp::Mul,
            left: Box::new(ValueExpr::Binary {
                op: ArithOp::Mul,
                left: Box::new(ValueExpr::Column(c)),
                right: Box::new(ValueExpr::Column(c)),
                left_factor: 1,
                right_factor: 1,
            }),
            right: Box::new(ValueExpr::Column(c)),
            left_factor: 1,
            right_factor: 1,
        };
        let spec = AggregateSpec {
            groups: vec![0],
            values: vec![cube(1)],
        };
        let f = flags(&["A", "A", "N"]);
        let big = ColumnValues::I64(vec![i64::MAX, 1 << 40, 3]);
        let columns = |c: usize| [&f, &big].get(c).copied();
        let mut sums = GroupedSums::new(spec.clone(), &schema()).unwrap();
        sums.add(3, columns, Some(&[false, true, true])).unwrap();
        assert_eq!(sums.counts(), [1, 1]);
        assert_eq!(sums.sums(0).collect::<Vec<_>>(), [1i128 << 120, 27]);
        let mut sums = GroupedSums::new(spec, &schema()).unwrap();
        let err = sums.add(3, columns, None).unwrap_err();
        assert!(err.to_string().contains("overflow"), "{err}");
    }

    #[test]
    fn summing_a_string_column_is_refused() {
        let spec = AggregateSpec {
            groups: vec![],
            values: vec![ValueExpr::Column(0)],
        };
        assert!(GroupedSums::new(spec, &schema()).is_err());
        let spec = AggregateSpec {
            groups: vec![9],
            values: vec![],
        };
        assert!(GroupedSums::new(spec, &schema()).is_err());
    }
}
