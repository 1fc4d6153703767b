//! What one experiment is, in the papers' terms: its workload, the buffer, the sweep,
//! the policies compared, the numbers published and the finding our runs are held
//! against. Both executors read it — the simulator (`coopscan sim --preset NAME`) and
//! the real engine (`coopscan bench --preset NAME`) — and scale it to their own table
//! and device; neither keeps a copy of a sweep's points, a stream count or a policy
//! list. The experiments themselves are in [`crate::experiments`].

use crate::published::Published;

/// One experiment, defined once.
#[derive(Clone, Copy, Debug)]
pub struct Experiment {
    /// Its preset name in both executors.
    pub name: &'static str,
    /// Paper and figure or table.
    pub source: &'static str,
    pub workload: WorkloadShape,
    /// The buffer as % of the table (the 2012 microbenchmarks: of the data the
    /// queries touch, which the simulator counts and the benchmark, reading nearly
    /// the whole table, takes as the table).
    pub buffer_pct: f64,
    /// The layout of the table: `"pax"` (NSM-like row groups) or `"dsm"`.
    pub layout: &'static str,
    /// What varies, one run per point (every combination of the axes' values).
    pub sweep: &'static [Axis],
    /// The policies compared, in the paper's order.
    pub policies: &'static [&'static str],
    /// The paper's table to print beside ours, where it published one.
    pub published: Option<&'static Published>,
    /// The paper's finding, which a report holds our numbers against.
    pub finding: &'static str,
}

/// The queries of a run, before any executor turns them into ranges of its table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkloadShape {
    pub streams: usize,
    pub queries_per_stream: usize,
    pub queries: QueryShape,
    pub starts: Starts,
    /// Share of queries, in %, that must read in table order (in-order Scans beside
    /// CScans in one pool, 2012 §2.3); seeded per query.
    pub in_order_pct: u32,
}

/// What each query is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueryShape {
    /// FAST (TPC-H Q6) or SLOW (Q1 plus arithmetic), the letter drawn uniformly from
    /// `speeds` (`"FS"`, `"F"`, `"FFS"`: repeated letters weigh), over a range of one of
    /// `range_percents` % of the table from a random start.
    Ranges {
        speeds: &'static str,
        range_percents: &'static [u32],
    },
    /// Table 4: each query sums 3 adjacent attributes over `range_percent` % of the
    /// synthetic relation; the family's types are dealt to the streams in turn.
    Columns {
        family: &'static [&'static str],
        range_percent: u32,
    },
}

/// When the streams start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Starts {
    /// Table 2's 3 s apart: the simulator runs the paper's machine and uses 3 virtual
    /// seconds; the benchmark scales it to its calibrated device as the same fraction of
    /// a full FAST read of its table.
    Staggered,
    /// All at once (the 2012 microbenchmarks name no stagger).
    Together,
}

/// One swept parameter and its values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Axis {
    /// The buffer, % of the table.
    BufferPct(&'static [f64]),
    Streams(&'static [usize]),
    /// The disk at these MB/s, relative to the paper's default (`default_mb_s`), which
    /// each executor's base disk stands for.
    BandwidthMbS {
        default_mb_s: f64,
        points: &'static [f64],
    },
    /// The table (`table_mib` in the paper) stored in this many chunks.
    Chunks {
        table_mib: u64,
        counts: &'static [u32],
    },
    /// Query speeds (see [`QueryShape::Ranges`]).
    Speeds(&'static [&'static str]),
    /// Named sets of range sizes (Figure 5's S, M, L; Figure 7's single sizes).
    Sizes(&'static [(&'static str, &'static [u32])]),
    /// Named sets of query speeds (Figure 6's disk-bound and CPU-bound sets).
    Sets(&'static [(&'static str, &'static str)]),
    /// Table 4's families of column types.
    Families(&'static [&'static [&'static str]]),
    /// Share of in-order queries, %.
    InOrderPct(&'static [u32]),
}

impl Axis {
    /// How many values the axis has.
    pub fn len(&self) -> usize {
        match self {
            Axis::BufferPct(v) => v.len(),
            Axis::Streams(v) => v.len(),
            Axis::BandwidthMbS { points, .. } => points.len(),
            Axis::Chunks { counts, .. } => counts.len(),
            Axis::Speeds(v) => v.len(),
            Axis::Sizes(v) => v.len(),
            Axis::Sets(v) => v.len(),
            Axis::Families(v) => v.len(),
            Axis::InOrderPct(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One run of an experiment: its workload and buffer with one value of every axis
/// applied, and what the executors need beyond them.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// The axes' values, e.g. `buffer 40%`, `FS-L`, `8 streams`; empty without a sweep.
    pub label: String,
    pub workload: WorkloadShape,
    pub buffer_pct: f64,
    /// The disk's bandwidth over the executor's base disk (1 = the paper's default).
    pub bandwidth_scale: f64,
    /// The table in this many chunks (`Chunks` sweeps), and the paper's table size.
    pub chunks: Option<(u32, u64)>,
}

impl Experiment {
    /// Every run of the experiment, the first axis varying slowest.
    pub fn points(&self) -> Vec<Point> {
        let base = Point {
            label: String::new(),
            workload: self.workload,
            buffer_pct: self.buffer_pct,
            bandwidth_scale: 1.0,
            chunks: None,
        };
        self.sweep.iter().fold(vec![base], |points, axis| {
            points
                .iter()
                .flat_map(|p| (0..axis.len()).map(move |i| apply(p, axis, i)))
                .collect()
        })
    }

    /// The values of the first axis of kind `pick`, if the sweep has one.
    pub fn axis<T>(&self, pick: impl Fn(&Axis) -> Option<T>) -> Option<T> {
        self.sweep.iter().find_map(pick)
    }
}

/// `point` with value `i` of `axis`.
fn apply(point: &Point, axis: &Axis, i: usize) -> Point {
    let mut p = point.clone();
    let label = match *axis {
        Axis::BufferPct(v) => {
            p.buffer_pct = v[i];
            format!("buffer {}%", v[i])
        }
        Axis::Streams(v) => {
            p.workload.streams = v[i];
            let plural = if v[i] == 1 { "" } else { "s" };
            format!("{} stream{plural}", v[i])
        }
        Axis::BandwidthMbS {
            default_mb_s,
            points,
        } => {
            p.bandwidth_scale = points[i] / default_mb_s;
            format!("{} MB/s", points[i])
        }
        Axis::Chunks { table_mib, counts } => {
            p.chunks = Some((counts[i], table_mib));
            format!("{} chunks", counts[i])
        }
        Axis::Speeds(v) => {
            set_speeds(&mut p.workload, v[i]);
            v[i].to_string()
        }
        Axis::Sizes(v) => {
            let (name, percents) = v[i];
            set_ranges(&mut p.workload, percents);
            name.to_string()
        }
        Axis::Sets(v) => {
            let (name, speeds) = v[i];
            set_speeds(&mut p.workload, speeds);
            name.to_string()
        }
        Axis::Families(v) => {
            if let QueryShape::Columns { family, .. } = &mut p.workload.queries {
                *family = v[i];
            }
            v[i].join(",")
        }
        Axis::InOrderPct(v) => {
            p.workload.in_order_pct = v[i];
            format!("{}% Scans", v[i])
        }
    };
    // Figure 5's labels name a mix as SPEED-SIZE (`FS-L`).
    let separator = if matches!(axis, Axis::Sizes(_)) {
        "-"
    } else {
        " "
    };
    p.label = if p.label.is_empty() {
        label
    } else {
        format!("{}{separator}{label}", p.label)
    };
    p
}

fn set_speeds(workload: &mut WorkloadShape, new: &'static str) {
    if let QueryShape::Ranges { speeds, .. } = &mut workload.queries {
        *speeds = new;
    }
}

fn set_ranges(workload: &mut WorkloadShape, new: &'static [u32]) {
    if let QueryShape::Ranges { range_percents, .. } = &mut workload.queries {
        *range_percents = new;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: WorkloadShape = WorkloadShape {
        streams: 8,
        queries_per_stream: 4,
        queries: QueryShape::Ranges {
            speeds: "FS",
            range_percents: &[1, 10],
        },
        starts: Starts::Staggered,
        in_order_pct: 0,
    };

    fn experiment(sweep: &'static [Axis]) -> Experiment {
        Experiment {
            name: "test",
            source: "none",
            workload: SHAPE,
            buffer_pct: 25.0,
            layout: "pax",
            sweep,
            policies: &["normal"],
            published: None,
            finding: "",
        }
    }

    #[test]
    fn no_sweep_is_one_point_of_the_workload() {
        let points = experiment(&[]).points();
        assert_eq!(points.len(), 1);
        assert_eq!((points[0].workload, points[0].buffer_pct), (SHAPE, 25.0));
        assert_eq!(points[0].label, "");
    }

    #[test]
    fn axes_combine_with_the_first_varying_slowest() {
        const SWEEP: &[Axis] = &[
            Axis::Sets(&[("disk", "F"), ("cpu", "FS")]),
            Axis::BufferPct(&[10.0, 50.0, 100.0]),
        ];
        let points = experiment(SWEEP).points();
        let labels: Vec<&str> = points.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "disk buffer 10%",
                "disk buffer 50%",
                "disk buffer 100%",
                "cpu buffer 10%",
                "cpu buffer 50%",
                "cpu buffer 100%"
            ]
        );
        assert_eq!(points[4].buffer_pct, 50.0);
        assert!(matches!(
            points[4].workload.queries,
            QueryShape::Ranges { speeds: "FS", .. }
        ));
        assert!(matches!(
            points[0].workload.queries,
            QueryShape::Ranges { speeds: "F", .. }
        ));
    }

    #[test]
    fn a_bandwidth_axis_is_relative_to_the_papers_default() {
        const SWEEP: &[Axis] = &[Axis::BandwidthMbS {
            default_mb_s: 700.0,
            points: &[350.0, 700.0],
        }];
        let scales: Vec<f64> = experiment(SWEEP)
            .points()
            .iter()
            .map(|p| p.bandwidth_scale)
            .collect();
        assert_eq!(scales, [0.5, 1.0]);
    }
}
