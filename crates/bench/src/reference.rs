//! Reference outputs: every distinct query (same type and row range) is run once by the
//! reference engine *before* the timed runs, so checking during a run is a map lookup
//! and adds no work to the timed threads. Every timed and standalone query's output is
//! compared with its reference; a difference fails the benchmark naming the query.

use crate::engine::{QueryEngine, QueryOutput};
use crate::error::BenchError;
use crate::mix::QueryType;
use crate::workload::QueryInstance;
use indicatif::ProgressBar;
use std::collections::HashMap;

type QueryKey = (QueryType, u64, u64);

fn key(q: &QueryInstance) -> QueryKey {
    (q.query_type, q.rows.start, q.rows.end)
}

#[derive(Debug, Default)]
pub struct References {
    outputs: HashMap<QueryKey, QueryOutput>,
}

impl References {
    /// Runs each distinct query among `queries` once on `reference`.
    pub fn compute<'q>(
        reference: &dyn QueryEngine,
        queries: impl IntoIterator<Item = &'q QueryInstance>,
        bar: &ProgressBar,
    ) -> Result<References, BenchError> {
        let mut outputs = HashMap::new();
        for q in queries {
            if outputs.contains_key(&key(q)) {
                continue;
            }
            let output = reference.run(q).map_err(|source| BenchError::Query {
                policy: "reference".to_string(),
                query: q.to_string(),
                source,
            })?;
            outputs.insert(key(q), output);
            bar.inc(1);
        }
        Ok(References { outputs })
    }

    pub fn len(&self) -> usize {
        self.outputs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty()
    }

    /// `Ok` when `got` equals the reference output of `q`'s type and range.
    pub fn check(
        &self,
        policy: &str,
        q: &QueryInstance,
        got: &QueryOutput,
    ) -> Result<(), BenchError> {
        let empty = QueryOutput::default();
        // A query without a reference is a bug of the runner; compare with "nothing"
        // so it fails loudly rather than passing unchecked.
        let want = self.outputs.get(&key(q)).unwrap_or(&empty);
        if want == got {
            return Ok(());
        }
        let first_difference = want
            .rows
            .iter()
            .zip(&got.rows)
            .position(|(w, g)| w != g)
            .unwrap_or(want.rows.len().min(got.rows.len()));
        Err(BenchError::WrongResult {
            policy: policy.to_string(),
            query: q.to_string(),
            got_rows: got.rows.len(),
            want_rows: want.rows.len(),
            first_difference,
        })
    }
}
