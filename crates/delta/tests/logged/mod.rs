//! What the log tests share: a table of 2 `u32` columns over 50 stable tuples, random
//! statements on it, its rows, and how a crashed child's acknowledgements are read.

#![allow(dead_code)]

use coopscan_delta::log::{CrashStage, LogIdentity, Op, ValueCodec};
use coopscan_delta::{Pdt, Rid, Step};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

pub const STABLE_ROWS: u64 = 50;
pub const COLUMNS: usize = 2;
pub const IDENTITY: LogIdentity = LogIdentity {
    stable_rows: STABLE_ROWS,
    columns: COLUMNS,
    fingerprint: 0x00c0_ffee,
};

pub struct U32Codec;

impl ValueCodec<u32> for U32Codec {
    fn encode(&self, _: usize, value: &u32, out: &mut Vec<u8>) -> Result<(), String> {
        out.extend_from_slice(&value.to_le_bytes());
        Ok(())
    }
    fn decode(&self, _: usize, bytes: &[u8]) -> Result<u32, String> {
        let array: [u8; 4] = bytes
            .try_into()
            .map_err(|_| format!("{} bytes for a u32", bytes.len()))?;
        Ok(u32::from_le_bytes(array))
    }
}

/// One statement: a few changes, each valid in the state the ones before it left.
pub fn statement(rng: &mut ChaCha8Rng, pdt: &Pdt<u32>) -> Vec<Op<u32>> {
    let mut scratch = pdt.clone();
    let mut ops = Vec::new();
    for _ in 0..rng.random_range(1..5) {
        let rows = scratch.rows();
        let op = match rng.random_range(0..3) {
            0 => Op::Insert {
                rid: Rid(rng.random_range(0..=rows)),
                row: vec![rng.random(), rng.random()],
            },
            1 if rows > 0 => Op::Delete {
                rid: Rid(rng.random_range(0..rows)),
            },
            _ if rows > 0 => Op::Modify {
                rid: Rid(rng.random_range(0..rows)),
                values: vec![(rng.random_range(0..COLUMNS), rng.random())],
            },
            _ => continue,
        };
        op.apply(&mut scratch).expect("valid op");
        ops.push(op);
    }
    ops
}

/// The table's rows (stable values are `sid * 10 + column`).
pub fn rows(pdt: &Pdt<u32>) -> Vec<Vec<u32>> {
    let merged = pdt.merge_steps(0..pdt.stable_rows()).expect("merge");
    let stable = |sid: u64| {
        (0..COLUMNS)
            .map(|c| sid as u32 * 10 + c as u32)
            .collect::<Vec<_>>()
    };
    let mut out = Vec::new();
    for step in merged.steps {
        match step {
            Step::Stable(sids) => out.extend(sids.map(stable)),
            Step::Insert(row) => out.push(row.to_vec()),
            Step::Modified { sid, values } => {
                let mut row = stable(sid);
                for (c, v) in values {
                    row[*c] = *v;
                }
                out.push(row);
            }
        }
    }
    out
}

pub const STAGES: [CrashStage; 4] = [
    CrashStage::BeforeWrite,
    CrashStage::MidRecord,
    CrashStage::BeforeSync,
    CrashStage::AfterSync,
];

pub fn stage_named(name: &str) -> CrashStage {
    STAGES
        .into_iter()
        .find(|s| format!("{s:?}") == name)
        .expect("stage")
}
