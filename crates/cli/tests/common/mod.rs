//! Helpers shared by the CLI's end-to-end tests.

use std::path::Path;

/// Nothing was generated under the data root `data`: a refusal came before the
/// dataset (`what` names the case in the failure).
pub fn assert_nothing_generated(data: &Path, what: &str) {
    let generated: Vec<String> = std::fs::read_dir(data)
        .expect("data root")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tpch-"))
        .collect();
    assert!(
        generated.is_empty(),
        "{what}: dataset generated first: {generated:?}"
    );
}
