//! Clotho's page schemas (VLDB 2004 §4.2, Figure 4): which columns of a chunk the buffer
//! keeps and loads together. Each query has a query schema (the columns it reads, a
//! bit per column); the table keeps a list of page schemas, and a C-page holds the
//! columns of one page schema. A new read-only query schema
//!
//! ```text
//!   subsumed by a page schema          → nothing changes
//!   disjoint from every page schema    → added as a page schema of its own
//!   otherwise                          → merged with every page schema it meets
//! ```
//!
//! so queries with common columns share C-pages and queries with disjoint columns do not
//! affect each other. When a query ends, the list is rebuilt from the queries still
//! running. A write uses the full schema: the list becomes that one schema
//! ([`PageSchemas::write`]; coopscan never writes pages in place — changes go to
//! Positional Delta Trees and checkpoints write a new table version — so nothing calls
//! it yet).
//!
//! Figure 4 adds the merged schema without saying what happens to the schemas merged
//! into it; here they are removed, since the new one subsumes them: page schemas stay
//! pairwise disjoint, so each column is in at most one of them.

/// A table's page schemas, pairwise disjoint column sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageSchemas {
    schemas: Vec<u64>,
}

impl PageSchemas {
    /// The list a run of `queries` (query schemas, in arrival order) builds.
    pub fn rebuild(queries: impl IntoIterator<Item = u64>) -> PageSchemas {
        let mut list = PageSchemas::default();
        for q in queries {
            list.admit(q);
        }
        list
    }

    /// Figure 4 for a read-only query reading `query` (an empty schema changes nothing).
    pub fn admit(&mut self, query: u64) {
        if query == 0 || self.schemas.iter().any(|&p| p & query == query) {
            return;
        }
        let met: u64 = self
            .schemas
            .iter()
            .filter(|&&p| p & query != 0)
            .fold(0, |a, &p| a | p);
        self.schemas.retain(|&p| p & query == 0);
        self.schemas.push(query | met);
    }

    /// Figure 4 for a write: the full schema `all` only.
    pub fn write(&mut self, all: u64) {
        self.schemas = vec![all];
    }

    pub fn schemas(&self) -> &[u64] {
        &self.schemas
    }

    /// `cols` and the columns of every page schema they meet: what a C-page holding
    /// `cols` holds.
    pub fn closure(&self, cols: u64) -> u64 {
        self.schemas
            .iter()
            .filter(|&&p| p & cols != 0)
            .fold(cols, |a, &p| a | p)
    }

    /// Page schemas are non-empty and pairwise disjoint, each of `queries` is subsumed
    /// by one of them, and together they hold exactly the queries' columns.
    pub fn check(&self, queries: impl IntoIterator<Item = u64>) -> Result<(), String> {
        let queries: Vec<u64> = queries.into_iter().collect();
        let mut seen = 0u64;
        for &p in &self.schemas {
            if p == 0 || p & seen != 0 {
                return Err(format!(
                    "page schemas {:x?} overlap or are empty",
                    self.schemas
                ));
            }
            seen |= p;
        }
        let read = queries.iter().fold(0, |a, q| a | q);
        if seen != read {
            return Err(format!(
                "page schemas {:x?} hold columns {seen:#x}, the queries read {read:#x}",
                self.schemas
            ));
        }
        for q in queries {
            if q != 0 && !self.schemas.iter().any(|&p| p & q == q) {
                return Err(format!(
                    "query schema {q:#x} is in no page schema of {:x?}",
                    self.schemas
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const A1: u64 = 1;
    const A2: u64 = 2;
    const A3: u64 = 4;
    const A4: u64 = 8;

    #[test]
    fn the_papers_example_merges_overlapping_schemas_and_adapts_when_a_query_ends() {
        // §4.2: Q1 reads a1 and a2, Q2 a2 and a3: one C-page of a1, a2, a3 for both;
        // after Q1 ends, C-pages of a2 and a3 for Q2.
        let mut list = PageSchemas::default();
        list.admit(A1 | A2);
        assert_eq!(list.schemas(), [A1 | A2]);
        list.admit(A2 | A3);
        assert_eq!(list.schemas(), [A1 | A2 | A3]);
        assert_eq!(PageSchemas::rebuild([A2 | A3]).schemas(), [A2 | A3]);
    }

    #[test]
    fn subsumed_and_disjoint_schemas() {
        let mut list = PageSchemas::rebuild([A1 | A2 | A3]);
        list.admit(A2);
        assert_eq!(list.schemas(), [A1 | A2 | A3], "subsumed: nothing changes");
        list.admit(A4);
        assert_eq!(list.schemas(), [A1 | A2 | A3, A4], "disjoint: its own");
        assert_eq!(list.closure(A1), A1 | A2 | A3);
        assert_eq!(list.closure(A4), A4);
        assert_eq!(list.closure(A3 | A4), A1 | A2 | A3 | A4);
        // A query meeting both merges them into one.
        list.admit(A3 | A4);
        assert_eq!(list.schemas(), [A1 | A2 | A3 | A4]);
        list.write(0xff);
        assert_eq!(list.schemas(), [0xff]);
    }

    proptest! {
        #[test]
        fn any_run_keeps_schemas_disjoint_and_every_query_inside_one(
            queries in proptest::collection::vec(0u64..256, 0..12),
            ends in proptest::collection::vec(any::<bool>(), 12),
        ) {
            let mut list = PageSchemas::default();
            for (i, &q) in queries.iter().enumerate() {
                list.admit(q);
                prop_assert!(list.check(queries[..=i].iter().copied()).is_ok(), "{:?}", list);
            }
            // Queries end: the rebuilt list covers the rest and never more columns.
            let running: Vec<u64> = queries.iter().zip(&ends).filter(|(_, e)| !**e).map(|(q, _)| *q).collect();
            let rebuilt = PageSchemas::rebuild(running.iter().copied());
            prop_assert!(rebuilt.check(running.iter().copied()).is_ok());
            let covered = rebuilt.schemas().iter().fold(0, |a, p| a | p);
            prop_assert_eq!(covered, running.iter().fold(0, |a, q| a | q));
            // A column's closure is its page schema: the same for any of its columns.
            for &p in rebuilt.schemas() {
                prop_assert_eq!(rebuilt.closure(p & p.wrapping_neg()), p);
            }
        }
    }
}
