//! The TPC-H tables: names, coopscan schemas and generators.

use std::str::FromStr;

use arrow_array::RecordBatch;
use arrow_schema::ArrowError;
use coopscan_storage::{ColumnType, TableSchema};
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

use crate::TpchError;

type Result<T, E = TpchError> = std::result::Result<T, E>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TpchTable {
    Lineitem,
    Orders,
    Customer,
    Part,
    Partsupp,
    Supplier,
    Nation,
    Region,
}

/// Columns the TPC-H specification declares `CHAR(n)` (fixed text size); all other
/// strings are `VARCHAR`.
const CHAR_COLUMNS: &[(&str, u16)] = &[
    ("l_returnflag", 1),
    ("l_linestatus", 1),
    ("l_shipinstruct", 25),
    ("l_shipmode", 10),
    ("o_orderstatus", 1),
    ("o_orderpriority", 15),
    ("o_clerk", 15),
    ("c_phone", 15),
    ("c_mktsegment", 10),
    ("p_mfgr", 25),
    ("p_brand", 10),
    ("p_container", 10),
    ("s_phone", 15),
    ("n_name", 25),
    ("r_name", 25),
];

impl TpchTable {
    pub const ALL: [TpchTable; 8] = [
        TpchTable::Lineitem,
        TpchTable::Orders,
        TpchTable::Customer,
        TpchTable::Part,
        TpchTable::Partsupp,
        TpchTable::Supplier,
        TpchTable::Nation,
        TpchTable::Region,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TpchTable::Lineitem => "lineitem",
            TpchTable::Orders => "orders",
            TpchTable::Customer => "customer",
            TpchTable::Part => "part",
            TpchTable::Partsupp => "partsupp",
            TpchTable::Supplier => "supplier",
            TpchTable::Nation => "nation",
            TpchTable::Region => "region",
        }
    }

    /// The coopscan schema: tpchgen's Arrow schema with the specification's
    /// `CHAR(n)` columns as fixed-width strings.
    pub fn schema(self) -> Result<TableSchema> {
        let arrow = match self {
            TpchTable::Lineitem => LineItemArrow::schema_ref(),
            TpchTable::Orders => OrderArrow::schema_ref(),
            TpchTable::Customer => CustomerArrow::schema_ref(),
            TpchTable::Part => PartArrow::schema_ref(),
            TpchTable::Partsupp => PartSuppArrow::schema_ref(),
            TpchTable::Supplier => SupplierArrow::schema_ref(),
            TpchTable::Nation => NationArrow::schema_ref(),
            TpchTable::Region => RegionArrow::schema_ref(),
        };
        let mut schema = TableSchema::from_arrow(&arrow)?;
        for col in &mut schema.columns {
            if let Some(&(_, len)) = CHAR_COLUMNS.iter().find(|(n, _)| *n == col.name) {
                col.ty = ColumnType::Char { len };
            }
        }
        Ok(schema)
    }

    /// Rows of this table at scale factor `sf` (lineitem: an estimate, its row count
    /// is only known after generation).
    pub fn estimated_rows(self, sf: f64) -> u64 {
        let n = match self {
            TpchTable::Lineitem => (6_001_215.0 * sf) as i64,
            TpchTable::Orders => OrderGenerator::calculate_row_count(sf, 1, 1),
            TpchTable::Customer => CustomerGenerator::calculate_row_count(sf, 1, 1),
            TpchTable::Part => PartGenerator::calculate_row_count(sf, 1, 1),
            TpchTable::Partsupp => PartSuppGenerator::calculate_row_count(sf, 1, 1),
            TpchTable::Supplier => SupplierGenerator::calculate_row_count(sf, 1, 1),
            TpchTable::Nation => 25,
            TpchTable::Region => 5,
        };
        n.max(0) as u64
    }
}

impl std::fmt::Display for TpchTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TpchTable {
    type Err = TpchError;
    fn from_str(s: &str) -> Result<Self> {
        TpchTable::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| TpchError::Invalid(format!("unknown TPC-H table {s:?} (expected one of lineitem, orders, customer, part, partsupp, supplier, nation, region)")))
    }
}

/// Batches of `table` at scale factor `sf`, part `part` of `parts` (1-based), in row
/// order, exactly as tpchgen produces them.
pub fn generate(
    table: TpchTable,
    sf: f64,
    part: i32,
    parts: i32,
    batch_rows: usize,
) -> Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send> {
    match table {
        TpchTable::Lineitem => Box::new(
            LineItemArrow::new(LineItemGenerator::new(sf, part, parts)).with_batch_size(batch_rows),
        ),
        TpchTable::Orders => Box::new(
            OrderArrow::new(OrderGenerator::new(sf, part, parts)).with_batch_size(batch_rows),
        ),
        TpchTable::Customer => Box::new(
            CustomerArrow::new(CustomerGenerator::new(sf, part, parts)).with_batch_size(batch_rows),
        ),
        TpchTable::Part => Box::new(
            PartArrow::new(PartGenerator::new(sf, part, parts)).with_batch_size(batch_rows),
        ),
        TpchTable::Partsupp => Box::new(
            PartSuppArrow::new(PartSuppGenerator::new(sf, part, parts)).with_batch_size(batch_rows),
        ),
        TpchTable::Supplier => Box::new(
            SupplierArrow::new(SupplierGenerator::new(sf, part, parts)).with_batch_size(batch_rows),
        ),
        TpchTable::Nation => Box::new(
            NationArrow::new(NationGenerator::new(sf, part, parts)).with_batch_size(batch_rows),
        ),
        TpchTable::Region => Box::new(
            RegionArrow::new(RegionGenerator::new(sf, part, parts)).with_batch_size(batch_rows),
        ),
    }
}
