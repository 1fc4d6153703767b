//! Reports of a [`crate::BenchReport`]: Table 2 as text beside the paper's numbers,
//! JSON (schema in docs/bench.md), and a self-contained HTML page with Figures 4 and 5.
//! A preset's reports together may form a sweep (`sweep`, `figures`, `fig5_table`): Figures 5-8's
//! tables in text (`text::render_sweep`), JSON (`json::preset_to_json`) and HTML plots;
//! a `table4` preset's runs form Table 4 (`table4`), a `mixed-pool` preset's runs the
//! mixed pool's table (`mixed_pool`). A `pbm-sharing` run adds the 2012 paper's Figure
//! 17 to each format (`sharing`).

pub mod fig4;
pub mod fig5_chart;
pub mod fig5_table;
pub mod figures;
pub mod findings;
pub mod html;
pub mod json;
pub mod line_chart;
pub mod mixed_pool;
pub mod sharing;
pub mod sweep;
pub mod sweep_html;
pub mod sweep_json;
pub mod sweep_text;
pub mod table2_html;
pub mod table4;
pub mod text;
pub mod tpch;

// The renderer both the simulator and the benchmark draw with.
pub use coopscan_render::{axis, html_table, palette, svg};
