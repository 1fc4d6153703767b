//! # coopscan-render: the one renderer of the reports
//!
//! The simulator's timeline pictures and the benchmark's figures and tables are drawn
//! with the same pieces, so a figure of either looks and scales the same way:
//!
//! * [`svg`]: a minimal SVG writer (every text XML-escaped) and a plot [`svg::Frame`].
//! * [`axis`]: linear or log axes fitted to the data, their ticks and labels.
//! * [`palette`]: one colour per policy or engine, the same in every figure.
//! * [`html_table`]: real HTML tables, the paper's numbers beside ours.

pub mod axis;
pub mod html_table;
pub mod palette;
pub mod svg;
