//! Prints the common-prefix experiment (2012 §2.1, bulk appends) for every policy.
use coopscan_buffer::PolicyKind;

fn main() -> Result<(), coopscan_sim::SimError> {
    let report = coopscan_sim::common_prefix(&PolicyKind::ALL)?;
    print!("{}", coopscan_sim::common_prefix_text(&report));
    Ok(())
}
