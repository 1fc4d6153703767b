//! The plain model the trees are checked against: the whole table as a vector, deleted
//! stable tuples kept as tombstones so that an inserted tuple's anchor (the SID of the
//! stable tuple after it) is simply the next stable entry.

#[derive(Clone, Debug, PartialEq)]
pub struct Tuple {
    /// `Some(sid)` for a stable tuple.
    pub sid: Option<u64>,
    pub live: bool,
    pub values: Vec<u32>,
}

#[derive(Clone, Debug)]
pub struct Model {
    pub stable_rows: u64,
    pub seq: Vec<Tuple>,
}

/// The value a stable tuple holds in a column before any change.
pub fn stable_value(sid: u64, column: usize) -> u32 {
    (sid as u32).wrapping_mul(1000).wrapping_add(column as u32)
}

impl Model {
    pub fn new(stable_rows: u64, columns: usize) -> Model {
        let seq = (0..stable_rows)
            .map(|sid| Tuple {
                sid: Some(sid),
                live: true,
                values: (0..columns).map(|c| stable_value(sid, c)).collect(),
            })
            .collect();
        Model { stable_rows, seq }
    }

    pub fn rows(&self) -> u64 {
        self.seq.iter().filter(|t| t.live).count() as u64
    }

    /// Index in `seq` of the live tuple at `rid`.
    fn position(&self, rid: u64) -> Option<usize> {
        self.seq
            .iter()
            .enumerate()
            .filter(|(_, t)| t.live)
            .nth(rid as usize)
            .map(|(i, _)| i)
    }

    pub fn insert(&mut self, rid: u64, values: Vec<u32>) {
        let at = self.position(rid).unwrap_or(self.seq.len());
        self.seq.insert(
            at,
            Tuple {
                sid: None,
                live: true,
                values,
            },
        );
    }

    pub fn delete(&mut self, rid: u64) {
        let at = self.position(rid).expect("rid in range");
        if self.seq[at].sid.is_some() {
            self.seq[at].live = false;
        } else {
            self.seq.remove(at);
        }
    }

    pub fn modify(&mut self, rid: u64, values: &[(usize, u32)]) {
        let at = self.position(rid).expect("rid in range");
        for &(column, value) in values {
            self.seq[at].values[column] = value;
        }
    }

    /// Each sequence entry's anchor: its own SID, or the next stable entry's.
    pub fn anchors(&self) -> Vec<u64> {
        let mut next = self.stable_rows;
        let mut out = vec![0; self.seq.len()];
        for (i, t) in self.seq.iter().enumerate().rev() {
            if let Some(sid) = t.sid {
                next = sid;
            }
            out[i] = next;
        }
        out
    }

    /// The live tuples with their anchors, in RID order.
    pub fn visible(&self) -> Vec<(u64, &Tuple)> {
        let anchors = self.anchors();
        self.seq
            .iter()
            .zip(anchors)
            .filter(|(t, _)| t.live)
            .map(|(t, a)| (a, t))
            .collect()
    }

    pub fn rid_to_sid(&self, rid: u64) -> u64 {
        self.visible()[rid as usize].0
    }

    pub fn sid_to_rid_low(&self, sid: u64) -> u64 {
        self.visible().iter().filter(|(a, _)| *a < sid).count() as u64
    }

    pub fn sid_to_rid_high(&self, sid: u64) -> u64 {
        let inserted_at = |(a, t): &&(u64, &Tuple)| *a == sid && t.sid.is_none();
        self.sid_to_rid_low(sid) + self.visible().iter().filter(inserted_at).count() as u64
    }
}
