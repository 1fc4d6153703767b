//! Reports of a [`crate::BenchReport`]: Table 2 as text beside the paper's numbers,
//! JSON (schema in docs/bench.md), and a self-contained HTML page with Figures 4 and 5.

pub mod html;
pub mod json;
pub mod svg;
pub mod text;
