//! Seeded substitution parameters from the TPC-H specification's domains (§2.4, as the
//! kit's `qgen` draws them), and the query order of each stream (Appendix A).
//!
//! The values are drawn with our own seeded generator, not `qgen`'s, so a stream's
//! parameters are reproducible from its seed but differ from `qgen`'s for the same
//! seed; the domains are the specification's.

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tpchgen::distribution::Distributions;

use crate::queries::{q11_fraction, Params, QueryId, QUERY_COUNT};

/// The 25 nations with their region's index in [`REGIONS`] (§4.2.3).
pub const NATIONS: [(&str, usize); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];
/// R_NAME by region key.
pub const REGIONS: [&str; 5] = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];
/// P_TYPE's three syllables (§4.2.2.13).
const TYPE_SYLLABLE_1: [&str; 6] = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"];
const TYPE_SYLLABLE_2: [&str; 5] = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"];
const TYPE_SYLLABLE_3: [&str; 5] = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"];
/// P_CONTAINER's two syllables.
const CONTAINER_SYLLABLE_1: [&str; 5] = ["SM", "LG", "MED", "JUMBO", "WRAP"];
const CONTAINER_SYLLABLE_2: [&str; 8] = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"];
const SEGMENTS: [&str; 5] = [
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "HOUSEHOLD",
    "MACHINERY",
];
const SHIP_MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
/// Q13's word lists (the kit's `Q13a` and `Q13b` distributions).
const Q13_WORD1: [&str; 4] = ["special", "pending", "unusual", "express"];
const Q13_WORD2: [&str; 4] = ["packages", "requests", "accounts", "deposits"];
/// Q22's country codes: 10 + nation key.
const COUNTRY_CODES: std::ops::RangeInclusive<u32> = 10..=34;

/// The query order of TPC-H streams 0 (the power test) to 40: Appendix A of the
/// specification, as the kit's `qgen` carries it (`permute.h`, the same in kits 2.14.0
/// and 2.17.3).
pub const STREAM_ORDERS: [[u8; QUERY_COUNT as usize]; 41] = [
    [
        14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12,
    ],
    [
        21, 3, 18, 5, 11, 7, 6, 20, 17, 12, 16, 15, 13, 10, 2, 8, 14, 19, 9, 22, 1, 4,
    ],
    [
        6, 17, 14, 16, 19, 10, 9, 2, 15, 8, 5, 22, 12, 7, 13, 18, 1, 4, 20, 3, 11, 21,
    ],
    [
        8, 5, 4, 6, 17, 7, 1, 18, 22, 14, 9, 10, 15, 11, 20, 2, 21, 19, 13, 16, 12, 3,
    ],
    [
        5, 21, 14, 19, 15, 17, 12, 6, 4, 9, 8, 16, 11, 2, 10, 18, 1, 13, 7, 22, 3, 20,
    ],
    [
        21, 15, 4, 6, 7, 16, 19, 18, 14, 22, 11, 13, 3, 1, 2, 5, 8, 20, 12, 17, 10, 9,
    ],
    [
        10, 3, 15, 13, 6, 8, 9, 7, 4, 11, 22, 18, 12, 1, 5, 16, 2, 14, 19, 20, 17, 21,
    ],
    [
        18, 8, 20, 21, 2, 4, 22, 17, 1, 11, 9, 19, 3, 13, 5, 7, 10, 16, 6, 14, 15, 12,
    ],
    [
        19, 1, 15, 17, 5, 8, 9, 12, 14, 7, 4, 3, 20, 16, 6, 22, 10, 13, 2, 21, 18, 11,
    ],
    [
        8, 13, 2, 20, 17, 3, 6, 21, 18, 11, 19, 10, 15, 4, 22, 1, 7, 12, 9, 14, 5, 16,
    ],
    [
        6, 15, 18, 17, 12, 1, 7, 2, 22, 13, 21, 10, 14, 9, 3, 16, 20, 19, 11, 4, 8, 5,
    ],
    [
        15, 14, 18, 17, 10, 20, 16, 11, 1, 8, 4, 22, 5, 12, 3, 9, 21, 2, 13, 6, 19, 7,
    ],
    [
        1, 7, 16, 17, 18, 22, 12, 6, 8, 9, 11, 4, 2, 5, 20, 21, 13, 10, 19, 3, 14, 15,
    ],
    [
        21, 17, 7, 3, 1, 10, 12, 22, 9, 16, 6, 11, 2, 4, 5, 14, 8, 20, 13, 18, 15, 19,
    ],
    [
        2, 9, 5, 4, 18, 1, 20, 15, 16, 17, 7, 21, 13, 14, 19, 8, 22, 11, 10, 3, 12, 6,
    ],
    [
        16, 9, 17, 8, 14, 11, 10, 12, 6, 21, 7, 3, 15, 5, 22, 20, 1, 13, 19, 2, 4, 18,
    ],
    [
        1, 3, 6, 5, 2, 16, 14, 22, 17, 20, 4, 9, 10, 11, 15, 8, 12, 19, 18, 13, 7, 21,
    ],
    [
        3, 16, 5, 11, 21, 9, 2, 15, 10, 18, 17, 7, 8, 19, 14, 13, 1, 4, 22, 20, 6, 12,
    ],
    [
        14, 4, 13, 5, 21, 11, 8, 6, 3, 17, 2, 20, 1, 19, 10, 9, 12, 18, 15, 7, 22, 16,
    ],
    [
        4, 12, 22, 14, 5, 15, 16, 2, 8, 10, 17, 9, 21, 7, 3, 6, 13, 18, 11, 20, 19, 1,
    ],
    [
        16, 15, 14, 13, 4, 22, 18, 19, 7, 1, 12, 17, 5, 10, 20, 3, 9, 21, 11, 2, 6, 8,
    ],
    [
        20, 14, 21, 12, 15, 17, 4, 19, 13, 10, 11, 1, 16, 5, 18, 7, 8, 22, 9, 6, 3, 2,
    ],
    [
        16, 14, 13, 2, 21, 10, 11, 4, 1, 22, 18, 12, 19, 5, 7, 8, 6, 3, 15, 20, 9, 17,
    ],
    [
        18, 15, 9, 14, 12, 2, 8, 11, 22, 21, 16, 1, 6, 17, 5, 10, 19, 4, 20, 13, 3, 7,
    ],
    [
        7, 3, 10, 14, 13, 21, 18, 6, 20, 4, 9, 8, 22, 15, 2, 1, 5, 12, 19, 17, 11, 16,
    ],
    [
        18, 1, 13, 7, 16, 10, 14, 2, 19, 5, 21, 11, 22, 15, 8, 17, 20, 3, 4, 12, 6, 9,
    ],
    [
        13, 2, 22, 5, 11, 21, 20, 14, 7, 10, 4, 9, 19, 18, 6, 3, 1, 8, 15, 12, 17, 16,
    ],
    [
        14, 17, 21, 8, 2, 9, 6, 4, 5, 13, 22, 7, 15, 3, 1, 18, 16, 11, 10, 12, 20, 19,
    ],
    [
        10, 22, 1, 12, 13, 18, 21, 20, 2, 14, 16, 7, 15, 3, 4, 17, 5, 19, 6, 8, 9, 11,
    ],
    [
        10, 8, 9, 18, 12, 6, 1, 5, 20, 11, 17, 22, 16, 3, 13, 2, 15, 21, 14, 19, 7, 4,
    ],
    [
        7, 17, 22, 5, 3, 10, 13, 18, 9, 1, 14, 15, 21, 19, 16, 12, 8, 6, 11, 20, 4, 2,
    ],
    [
        2, 9, 21, 3, 4, 7, 1, 11, 16, 5, 20, 19, 18, 8, 17, 13, 10, 12, 15, 6, 14, 22,
    ],
    [
        15, 12, 8, 4, 22, 13, 16, 17, 18, 3, 7, 5, 6, 1, 9, 11, 21, 10, 14, 20, 19, 2,
    ],
    [
        15, 16, 2, 11, 17, 7, 5, 14, 20, 4, 21, 3, 10, 9, 12, 8, 13, 6, 18, 19, 22, 1,
    ],
    [
        1, 13, 11, 3, 4, 21, 6, 14, 15, 22, 18, 9, 7, 5, 10, 20, 12, 16, 17, 8, 19, 2,
    ],
    [
        14, 17, 22, 20, 8, 16, 5, 10, 1, 13, 2, 21, 12, 9, 4, 18, 3, 7, 6, 19, 15, 11,
    ],
    [
        9, 17, 7, 4, 5, 13, 21, 18, 11, 3, 22, 1, 6, 16, 20, 14, 15, 10, 8, 2, 12, 19,
    ],
    [
        13, 14, 5, 22, 19, 11, 9, 6, 18, 15, 8, 10, 7, 4, 17, 16, 3, 1, 12, 2, 21, 20,
    ],
    [
        20, 5, 4, 14, 11, 1, 6, 16, 8, 22, 7, 3, 2, 12, 21, 19, 17, 13, 10, 15, 18, 9,
    ],
    [
        3, 7, 14, 15, 6, 5, 21, 20, 18, 10, 4, 16, 19, 1, 13, 9, 8, 17, 11, 12, 22, 2,
    ],
    [
        13, 15, 17, 1, 22, 11, 3, 4, 7, 20, 14, 21, 9, 8, 2, 18, 16, 6, 10, 12, 5, 19,
    ],
];

/// The queries of stream `stream` in the specification's order; stream numbers wrap
/// every 41, as in `qgen`.
pub fn stream_order(stream: usize) -> Vec<QueryId> {
    STREAM_ORDERS[stream % STREAM_ORDERS.len()]
        .iter()
        .filter_map(|&n| QueryId::new(n).ok())
        .collect()
}

/// The parameters of every query of stream `stream` of a run seeded with `seed`, in the
/// stream's order: one generator per stream, so a stream's parameters do not depend on
/// how many streams run.
pub fn stream_params(seed: u64, stream: usize, sf: f64) -> Vec<Params> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream as u64);
    stream_order(stream)
        .into_iter()
        .map(|q| Params::random(q, sf, &mut rng))
        .collect()
}

impl Params {
    /// Parameters for `query` drawn uniformly from the specification's domains (§2.4).
    pub fn random(query: QueryId, sf: f64, rng: &mut impl Rng) -> Params {
        let values = match query.number() {
            1 => vec![("DELTA", rng.random_range(60..=120).to_string())],
            2 => vec![
                ("SIZE", rng.random_range(1..=50).to_string()),
                ("TYPE", pick(rng, &TYPE_SYLLABLE_3).to_string()),
                ("REGION", pick(rng, &REGIONS).to_string()),
            ],
            3 => vec![
                ("SEGMENT", pick(rng, &SEGMENTS).to_string()),
                ("DATE", date(1995, 3, rng.random_range(1..=31))),
            ],
            4 => vec![("DATE", month_start(rng, (1993, 1), (1997, 10)))],
            5 => vec![
                ("REGION", pick(rng, &REGIONS).to_string()),
                ("DATE", year_start(rng)),
            ],
            6 => vec![
                ("DATE", year_start(rng)),
                ("DISCOUNT", format!("0.0{}", rng.random_range(2..=9))),
                ("QUANTITY", rng.random_range(24..=25).to_string()),
            ],
            7 => {
                let [a, b] = distinct(rng, NATIONS.len());
                vec![
                    ("NATION1", NATIONS[a].0.into()),
                    ("NATION2", NATIONS[b].0.into()),
                ]
            }
            8 => {
                let (nation, region) = *pick(rng, &NATIONS);
                vec![
                    ("NATION", nation.to_string()),
                    ("REGION", REGIONS[region].to_string()),
                    ("TYPE", part_type(rng, 3)),
                ]
            }
            9 => vec![("COLOR", color(rng))],
            10 => vec![("DATE", month_start(rng, (1993, 2), (1995, 1)))],
            11 => vec![("NATION", nation(rng)), ("FRACTION", q11_fraction(sf))],
            12 => {
                let [a, b] = distinct(rng, SHIP_MODES.len());
                vec![
                    ("SHIPMODE1", SHIP_MODES[a].into()),
                    ("SHIPMODE2", SHIP_MODES[b].into()),
                    ("DATE", year_start(rng)),
                ]
            }
            13 => vec![
                ("WORD1", pick(rng, &Q13_WORD1).to_string()),
                ("WORD2", pick(rng, &Q13_WORD2).to_string()),
            ],
            14 => vec![("DATE", month_start(rng, (1993, 1), (1997, 12)))],
            15 => vec![("DATE", month_start(rng, (1993, 1), (1997, 10)))],
            16 => q16(rng),
            17 => vec![("BRAND", brand(rng)), ("CONTAINER", container(rng))],
            18 => vec![("QUANTITY", rng.random_range(312..=315).to_string())],
            19 => vec![
                ("QUANTITY1", rng.random_range(1..=10).to_string()),
                ("QUANTITY2", rng.random_range(10..=20).to_string()),
                ("QUANTITY3", rng.random_range(20..=30).to_string()),
                ("BRAND1", brand(rng)),
                ("BRAND2", brand(rng)),
                ("BRAND3", brand(rng)),
            ],
            20 => vec![
                ("COLOR", color(rng)),
                ("DATE", year_start(rng)),
                ("NATION", nation(rng)),
            ],
            21 => vec![("NATION", nation(rng))],
            _ => q22(rng),
        };
        Params::new(query, values)
    }
}

fn q16(rng: &mut impl Rng) -> Vec<(&'static str, String)> {
    const SIZES: [&str; 8] = [
        "SIZE1", "SIZE2", "SIZE3", "SIZE4", "SIZE5", "SIZE6", "SIZE7", "SIZE8",
    ];
    // Sizes drawn first: a seed's parameters stay what they were when this was written.
    let sizes = named_distinct(rng, SIZES, 1..=50);
    let mut values = vec![("BRAND", brand(rng)), ("TYPE", part_type(rng, 2))];
    values.extend(sizes);
    values
}

fn q22(rng: &mut impl Rng) -> Vec<(&'static str, String)> {
    const CODES: [&str; 7] = ["I1", "I2", "I3", "I4", "I5", "I6", "I7"];
    named_distinct(rng, CODES, COUNTRY_CODES)
}

/// One distinct value of `range` for each of `names` (Q16's sizes, Q22's country codes).
fn named_distinct<const N: usize>(
    rng: &mut impl Rng,
    names: [&'static str; N],
    range: std::ops::RangeInclusive<u32>,
) -> Vec<(&'static str, String)> {
    let offsets: [usize; N] = distinct(rng, range.clone().count());
    names
        .into_iter()
        .zip(offsets)
        .map(|(n, o)| (n, (*range.start() as usize + o).to_string()))
        .collect()
}

fn pick<'a, T>(rng: &mut impl Rng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

/// `N` distinct indices below `n` (`N ≤ n`), in the order drawn.
fn distinct<const N: usize>(rng: &mut impl Rng, n: usize) -> [usize; N] {
    let mut out = [0; N];
    let mut filled = 0;
    while filled < N {
        let candidate = rng.random_range(0..n);
        if !out[..filled].contains(&candidate) {
            out[filled] = candidate;
            filled += 1;
        }
    }
    out
}

fn date(year: u32, month: u32, day: u32) -> String {
    format!("{year:04}-{month:02}-{day:02}")
}

/// January 1st of a year from 1993 to 1997.
fn year_start(rng: &mut impl Rng) -> String {
    date(rng.random_range(1993..=1997), 1, 1)
}

/// The first day of a month from `first` to `last` (year, month), both included.
fn month_start(rng: &mut impl Rng, first: (u32, u32), last: (u32, u32)) -> String {
    let index = |(y, m): (u32, u32)| y * 12 + (m - 1);
    let chosen = rng.random_range(index(first)..=index(last));
    date(chosen / 12, chosen % 12 + 1, 1)
}

fn nation(rng: &mut impl Rng) -> String {
    pick(rng, &NATIONS).0.to_string()
}

/// `Brand#MN`, M and N from 1 to 5.
fn brand(rng: &mut impl Rng) -> String {
    format!(
        "Brand#{}{}",
        rng.random_range(1..=5),
        rng.random_range(1..=5)
    )
}

/// A part type of its first `syllables` syllables (2 for Q16, 3 for Q8).
fn part_type(rng: &mut impl Rng, syllables: usize) -> String {
    let words = [
        *pick(rng, &TYPE_SYLLABLE_1),
        *pick(rng, &TYPE_SYLLABLE_2),
        *pick(rng, &TYPE_SYLLABLE_3),
    ];
    words[..syllables].join(" ")
}

fn container(rng: &mut impl Rng) -> String {
    format!(
        "{} {}",
        pick(rng, &CONTAINER_SYLLABLE_1),
        pick(rng, &CONTAINER_SYLLABLE_2)
    )
}

/// A colour of P_NAME's word list (the generator's own `colors` distribution).
fn color(rng: &mut impl Rng) -> String {
    let colors = Distributions::static_default().part_colors().get_values();
    pick(rng, colors).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stream_is_a_permutation_of_the_22_queries() {
        for (s, order) in STREAM_ORDERS.iter().enumerate() {
            let mut sorted = order.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, (1..=22).collect::<Vec<u8>>(), "stream {s}");
        }
    }

    #[test]
    fn random_parameters_fill_templates_and_replay_from_their_seed() {
        for stream in 0..4 {
            let a = stream_params(7, stream, 1.0);
            assert_eq!(a, stream_params(7, stream, 1.0), "stream {stream}");
            assert_eq!(a.len(), 22);
            for params in &a {
                params
                    .sql()
                    .unwrap_or_else(|e| panic!("stream {stream}: {e}"));
            }
        }
        assert_ne!(stream_params(7, 0, 1.0), stream_params(7, 1, 1.0));
        assert_ne!(stream_params(7, 0, 1.0), stream_params(8, 0, 1.0));
    }

    /// Parameters `PREFIX1` … `PREFIXn` as numbers, checked to be `n` distinct ones.
    fn distinct_numbers(params: &Params, prefix: &str, n: usize) -> Vec<u32> {
        let mut values: Vec<u32> = (1..=n)
            .map(|i| {
                let value = params.get(&format!("{prefix}{i}"));
                value.and_then(|v| v.parse().ok()).expect("a number")
            })
            .collect();
        values.sort_unstable();
        values.dedup();
        assert_eq!(values.len(), n, "{params:?}");
        values
    }

    /// Each drawn value lies in its domain, over many draws.
    #[test]
    fn random_parameters_stay_in_their_domains() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let all_types = Distributions::static_default().part_types().get_values();
        let all_containers = Distributions::static_default()
            .part_containers()
            .get_values();
        for _ in 0..300 {
            let q = |n| QueryId::new(n).expect("query");
            let p1 = Params::random(q(1), 1.0, &mut rng);
            let delta: u32 = p1.get("DELTA").and_then(|d| d.parse().ok()).expect("delta");
            assert!((60..=120).contains(&delta));
            let p8 = Params::random(q(8), 1.0, &mut rng);
            assert!(all_types.contains(&p8.get("TYPE").expect("type")));
            let nation = p8.get("NATION").expect("nation");
            let region = NATIONS.iter().find(|(n, _)| *n == nation).expect("known").1;
            assert_eq!(p8.get("REGION"), Some(REGIONS[region]));
            let p17 = Params::random(q(17), 1.0, &mut rng);
            assert!(all_containers.contains(&p17.get("CONTAINER").expect("container")));
            let p4 = Params::random(q(4), 1.0, &mut rng);
            let d = p4.get("DATE").expect("date");
            assert!(
                ("1993-01-01"..="1997-10-01").contains(&d) && d.ends_with("-01"),
                "{d}"
            );
            let sizes = distinct_numbers(&Params::random(q(16), 1.0, &mut rng), "SIZE", 8);
            assert!(sizes.iter().all(|s| (1..=50).contains(s)), "{sizes:?}");
            let codes = distinct_numbers(&Params::random(q(22), 1.0, &mut rng), "I", 7);
            assert!(codes.iter().all(|c| COUNTRY_CODES.contains(c)), "{codes:?}");
        }
    }
}
