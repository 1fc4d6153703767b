//! Clotho's page schemas in the simulator: Table 4's families (streams summing 3
//! adjacent attributes, with more or less overlap) on DSM and on CSM tiles. (Invariants
//! on tiles are checked after every event by `mixed_orders.rs` and the buffer's
//! `abm_ops.rs`; here they would take minutes in a debug build.) The simulator charges one request per load
//! either way, so tiles differ only in what relevance loads together: the columns of
//! a page schema. Normal (LRU) loads its own columns on both.

use coopscan_buffer::PolicyKind;
use coopscan_sim::{table4_config, table4_on, SimConfig};

#[test]
fn page_schemas_never_make_relevance_load_more_and_leave_normal_alone() {
    let policies = [PolicyKind::Normal, PolicyKind::Relevance];
    let plain = table4_config();
    let tiled = SimConfig {
        tiles: true,
        ..plain.clone()
    };
    let dsm = table4_on(&plain, &policies, 7).expect("dsm");
    let csm = table4_on(&tiled, &policies, 7).expect("csm");
    let mut fewer = 0;
    for (d, c) in dsm.rows.iter().zip(&csm.rows) {
        let what = format!("{} {}", d.family, d.policy);
        match d.policy.as_str() {
            "normal" => assert_eq!((c.loads, c.pieces), (d.loads, d.pieces), "{what}"),
            _ => {
                assert!(
                    c.loads <= d.loads,
                    "{what}: {} loads, DSM {}",
                    c.loads,
                    d.loads
                );
                assert!(
                    c.pieces <= d.pieces,
                    "{what}: {} pieces, DSM {}",
                    c.pieces,
                    d.pieces
                );
                fewer += usize::from(c.loads < d.loads);
            }
        }
    }
    // With every family overlapping the next (ABC,BCD,CDE,DEF) one schema holds them all.
    assert!(fewer >= 1, "page schemas changed no relevance run");
}
