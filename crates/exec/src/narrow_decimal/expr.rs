//! The physical expression that runs a [`Program`] in 64 bits and falls back to the
//! original expression whenever the values do not fit.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{Decimal128Array, RecordBatch};
use datafusion::arrow::buffer::ScalarBuffer;
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::Result;
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::PhysicalExpr;

use super::program::Program;

/// `original`, evaluated on `i64` when every value fits; shown as `narrow_i64(…)`.
#[derive(Debug)]
pub struct NarrowDecimalExpr {
    program: Program,
    original: Arc<dyn PhysicalExpr>,
}

impl NarrowDecimalExpr {
    pub fn new(program: Program, original: Arc<dyn PhysicalExpr>) -> NarrowDecimalExpr {
        NarrowDecimalExpr { program, original }
    }

    /// The expression this one stands for.
    pub fn original(&self) -> &Arc<dyn PhysicalExpr> {
        &self.original
    }
}

impl fmt::Display for NarrowDecimalExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "narrow_i64({})", self.original)
    }
}

// Equality and hashing are the original's: the program is a function of it.
impl PartialEq for NarrowDecimalExpr {
    fn eq(&self, other: &Self) -> bool {
        self.original.eq(&other.original)
    }
}

impl Eq for NarrowDecimalExpr {}

impl Hash for NarrowDecimalExpr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.original.hash(state);
    }
}

impl PhysicalExpr for NarrowDecimalExpr {
    fn data_type(&self, input_schema: &Schema) -> Result<DataType> {
        self.original.data_type(input_schema)
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        self.original.nullable(input_schema)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        let Some(values) = self.program.run(batch) else {
            return self.original.evaluate(batch);
        };
        let shape = self.program.shape;
        let wide: Vec<i128> = values.iter().map(|&v| i128::from(v)).collect();
        let array = Decimal128Array::new(ScalarBuffer::from(wide), None)
            .with_precision_and_scale(shape.precision, shape.scale)?;
        Ok(ColumnarValue::Array(Arc::new(array)))
    }

    /// The original is the only child: a rewrite of the plan that changes it (columns
    /// renumbered, say) gets the new original back, unnarrowed, rather than a program
    /// compiled for another schema.
    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.original]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        match children.pop() {
            Some(child) if children.is_empty() && Arc::ptr_eq(&child, &self.original) => Ok(self),
            Some(child) if children.is_empty() => Ok(child),
            _ => datafusion::common::internal_err!("narrow_i64 takes exactly one child"),
        }
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.original.fmt_sql(f)
    }
}
