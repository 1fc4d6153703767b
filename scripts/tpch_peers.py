#!/usr/bin/env python3
"""The 22 TPC-H queries on coopscan's peers, timed as `coopscan tpch` times its own.

DuckDB on its own database file, and plain DataFusion (the Python bindings, the same
DataFusion major version coopscan uses) over Parquet files, both of the same data
(`tpchgen-cli`, the generator coopscan's `gen` uses), both run in this process, so the
CPU-seconds are the process's (every thread) as in `coopscan tpch`. The SQL is
coopscan's own after substitution (`coopscan tpch --print-sql`), so all three run the
same statements.

    python3 -m venv target/peers-venv
    target/peers-venv/bin/pip install tpchgen-cli datafusion duckdb pyarrow
    coopscan tpch --db DB --print-sql > target/tpch.sql
    PATH=target/peers-venv/bin:$PATH python scripts/tpch_peers.py --sql target/tpch.sql \\
        --data target/data/peers-sf1 --sf 1 --threads 2 --repeat 3

Prints one line per query and engine (median wall s, median CPU s, rows) and the sums.

With `--streams FILE1,FILE2,…` (each the `--print-sql` output of one stream,
`coopscan tpch --db DB --stream N --print-sql`) it runs those streams at once instead,
one thread and one connection per stream (both engines release Python's lock while a
query runs), and prints each engine's stream times, their average and the CPU-seconds:
the throughput run's shape, as `coopscan tpch --streams` prints it.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

TABLES = ["lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region"]


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def read_queries(path):
    """`-- Qn` headers, each followed by its statement."""
    queries, name, lines = [], None, []
    for line in Path(path).read_text().splitlines():
        if line.startswith("-- Q") and line[4:].strip().isdigit():
            if name:
                queries.append((name, "\n".join(lines)))
            name, lines = line[3:].strip(), []
        else:
            lines.append(line)
    if name:
        queries.append((name, "\n".join(lines)))
    if not queries:
        sys.exit(f"{path}: no queries (expected `coopscan tpch --print-sql` output)")
    return queries


def ensure_parquet(data, sf):
    parquet = data / "parquet"
    if all((parquet / f"{t}.parquet").exists() for t in TABLES):
        return parquet
    parquet.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["tpchgen-cli", "parquet", "--scale-factor", str(sf),
         "--output-dir", str(parquet)],
        check=True,
    )
    return parquet


def ensure_duckdb(data, parquet):
    import duckdb

    path = data / "tpch.duckdb"
    if path.exists():
        return path
    tmp = data / "tpch.duckdb.tmp"
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    for t in TABLES:
        con.execute(f"CREATE TABLE {t} AS SELECT * FROM read_parquet('{parquet / (t + '.parquet')}')")
    con.close()
    tmp.rename(path)
    return path


def duckdb_engine(path, threads):
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    con.execute(f"SET threads = {threads}")
    return lambda sql: len(con.execute(sql).fetchall())


def datafusion_engine(parquet, threads):
    import datafusion

    config = datafusion.SessionConfig().with_target_partitions(threads)
    ctx = datafusion.SessionContext(config)
    for t in TABLES:
        ctx.register_parquet(t, str(parquet / f"{t}.parquet"))
    return lambda sql: sum(b.num_rows for b in ctx.sql(sql).collect())


def measure(run, sql, repeat):
    walls, cpus, rows = [], [], 0
    for _ in range(repeat):
        c0, t0 = cpu_seconds(), time.perf_counter()
        rows = run(sql.strip().rstrip(";"))
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu_seconds() - c0)
    return statistics.median(walls), statistics.median(cpus), rows


def duckdb_stream_engine(path, threads):
    """A function giving each stream its own cursor on one read-only connection."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    con.execute(f"SET threads = {threads}")

    def runner():
        cur = con.cursor()
        return lambda sql: len(cur.execute(sql).fetchall())

    return runner


def datafusion_stream_engine(parquet, threads):
    run = datafusion_engine(parquet, threads)
    return lambda: run


def run_streams(make_runner, streams):
    """Runs each stream's queries in order, all streams at once; their times."""
    import threading

    times = [0.0] * len(streams)
    errors = []

    def one(i, queries):
        try:
            run = make_runner()
            t0 = time.perf_counter()
            for _, sql in queries:
                run(sql.strip().rstrip(";"))
            times[i] = time.perf_counter() - t0
        except Exception as e:  # reported after all streams end
            errors.append(f"stream {i + 1}: {e}")

    threads = [threading.Thread(target=one, args=(i, q)) for i, q in enumerate(streams)]
    c0 = cpu_seconds()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        sys.exit("; ".join(errors))
    return times, cpu_seconds() - c0


def main_streams(args, parquet):
    streams = [read_queries(f) for f in args.streams.split(",")]
    for name in args.engines.split(","):
        if name == "duckdb":
            make = duckdb_stream_engine(ensure_duckdb(args.data, parquet), args.threads)
        elif name == "datafusion-parquet":
            make = datafusion_stream_engine(parquet, args.threads)
        else:
            sys.exit(f"unknown engine {name}")
        times, cpu = run_streams(make, streams)
        each = " ".join(f"{t:.2f}" for t in times)
        avg = sum(times) / len(times)
        print(f"{name:<20} avg stream {avg:7.2f} s  max {max(times):7.2f} s  CPU {cpu:7.2f} s  streams {each}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sql", help="output of `coopscan tpch --print-sql`")
    p.add_argument("--data", required=True, type=Path, help="directory for the peers' data")
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--engines", default="duckdb,datafusion-parquet")
    p.add_argument("--streams", help="comma-separated --print-sql files, one per stream, run at once")
    args = p.parse_args()
    if not args.sql and not args.streams:
        sys.exit("give --sql (one stream, timed per query) or --streams (several at once)")
    args.data.mkdir(parents=True, exist_ok=True)
    parquet = ensure_parquet(args.data, args.sf)
    if args.streams:
        main_streams(args, parquet)
        return
    queries = read_queries(args.sql)
    engines = {}
    for name in args.engines.split(","):
        if name == "duckdb":
            engines[name] = duckdb_engine(ensure_duckdb(args.data, parquet), args.threads)
        elif name == "datafusion-parquet":
            engines[name] = datafusion_engine(parquet, args.threads)
        else:
            sys.exit(f"unknown engine {name}")
    for name, run in engines.items():
        total_wall = total_cpu = 0.0
        print(f"== {name} ({args.threads} threads, medians of {args.repeat})")
        for query, sql in queries:
            wall, cpu, rows = measure(run, sql, args.repeat)
            total_wall += wall
            total_cpu += cpu
            print(f"{query:<5} {wall:7.3f} {cpu:7.3f} {rows:7d}")
        print(f"total {total_wall:7.3f} {total_cpu:7.3f}")


if __name__ == "__main__":
    main()
