//! The 2007 paper's Table 4 (§6.3.1): how column overlap changes what cooperative
//! scans share in DSM. A synthetic relation of 200 M tuples × 10 int64 attributes A-J,
//! a 1 GB buffer, 16 streams × 4 queries, each query reading 3 adjacent columns over a
//! random 40 % range; the query types of a family are dealt to the streams in turn (one
//! type: 16 queries of it at a time; two types: 8 each). Normal vs relevance.

/// The paper's relation: tuples and attributes (8 bytes each).
pub const ROWS: u64 = 200_000_000;
pub const COLUMNS: usize = 10;
pub const COLUMN_BYTES: u64 = 8;
/// The paper's buffer, 1 GB of the 16 GB relation.
pub const BUFFER_SHARE: f64 = 1.0 / 16.0;
pub const STREAMS: usize = 16;
pub const QUERIES_PER_STREAM: usize = 4;
/// Columns a query reads, adjacent.
pub const COLUMNS_PER_QUERY: usize = 3;
/// Each query's share of the relation's tuples.
pub const RANGE_PERCENT: u32 = 40;

/// The five families: the query types (3 adjacent columns each) in play.
pub const FAMILIES: [&[&str]; 5] = [
    &["ABC"],
    &["ABC", "DEF"],
    &["ABC", "BCD"],
    &["ABC", "BCD", "CDE"],
    &["ABC", "BCD", "CDE", "DEF"],
];

/// One published cell group: I/Os, average latency (s), latency stddev (s).
pub type PaperCell = (u64, f64, f64);

/// The paper's Table 4 (normal, relevance) per family.
pub const PAPER: [(&str, [PaperCell; 2]); 5] = [
    ("ABC", [(5094, 100.58, 20.71), (1560, 24.27, 5.24)]),
    ("ABC,DEF", [(6215, 121.83, 24.83), (3254, 57.87, 14.54)]),
    ("ABC,BCD", [(5447, 107.86, 21.28), (2258, 39.69, 10.34)]),
    ("ABC,BCD,CDE", [(5791, 113.26, 27.39), (2918, 52.94, 14.02)]),
    (
        "ABC,BCD,CDE,DEF",
        [(6313, 125.14, 22.35), (3299, 60.20, 12.50)],
    ),
];

/// The paper's (normal, relevance) cells of `family` (e.g. "ABC,BCD").
pub fn paper_of(family: &str) -> Option<&'static [PaperCell; 2]> {
    PAPER.iter().find(|(f, _)| *f == family).map(|(_, c)| c)
}

/// The SQL name of attribute `column` (0 = A): the paper's letter in lower case
/// (`a` … `z`), `c26`, `c27`, … beyond the alphabet.
pub fn attribute_name(column: usize) -> String {
    u8::try_from(column).ok().filter(|c| *c < 26).map_or_else(
        || format!("c{column}"),
        |c| char::from(b'a' + c).to_string(),
    )
}

/// Column indexes (A = 0) of a query type such as "BCD"; `None` unless it names
/// [`COLUMNS_PER_QUERY`] adjacent columns in A-J.
pub fn columns_of(kind: &str) -> Option<std::ops::Range<usize>> {
    let bytes = kind.as_bytes();
    let first = usize::from(bytes.first()?.checked_sub(b'A')?);
    let adjacent = bytes.len() == COLUMNS_PER_QUERY
        && bytes
            .iter()
            .enumerate()
            .all(|(i, &b)| usize::from(b) == usize::from(b'A') + first + i);
    (adjacent && first + COLUMNS_PER_QUERY <= COLUMNS).then(|| first..first + COLUMNS_PER_QUERY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_named_as_published_and_their_types_parse() {
        for family in FAMILIES {
            assert!(paper_of(&family.join(",")).is_some(), "{family:?}");
            for kind in family {
                assert!(columns_of(kind).is_some(), "{kind}");
            }
        }
        assert_eq!(columns_of("BCD"), Some(1..4));
        assert_eq!(columns_of("HIJ"), Some(7..10));
        for bad in ["", "AB", "ACD", "IJK", "abc", "ABCD", "CBA"] {
            assert_eq!(columns_of(bad), None, "{bad}");
        }
    }
}
