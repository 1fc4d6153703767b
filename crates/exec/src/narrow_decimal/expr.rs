//! The physical expression that runs a [`Program`] in 64 bits and falls back to the
//! original expression whenever the values do not fit.

use std::sync::Arc;

use datafusion::arrow::array::{Decimal128Array, RecordBatch};
use datafusion::arrow::buffer::ScalarBuffer;
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::Result;
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::PhysicalExpr;

use super::program::Program;
use crate::stand_in::{original_as_only_child, stands_in_for_original};

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

stands_in_for_original!(NarrowDecimalExpr, "narrow_i64");

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

    original_as_only_child!();
}
