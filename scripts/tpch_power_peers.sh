#!/bin/bash
# The 22 TPC-H queries side by side: three alternating rounds of coopscan (`tpch --repeat 3`)
# then DuckDB and DataFusion over Parquet (scripts/tpch_peers.py) on the same statements.
# Usage: scripts/tpch_power_peers.sh [COOPSCAN_BINARY] (default: coopscan on PATH)
# Needs: the SF1 DSM database in target/data/sf1-dsm-db (coopscan gen --sf 1 --tables all
# --layout dsm --out target/data/sf1-dsm-db) and the venv of scripts/tpch_peers.py.
set -euo pipefail
B=${1:-coopscan}
DB=target/data/sf1-dsm-db
"$B" tpch --db "$DB" --print-sql > target/tpch-validation.sql
for i in 1 2 3; do
  "$B" tpch --db "$DB" --repeat 3 > "target/power-coop-$i.txt"
  PATH=target/peers-venv/bin:$PATH python scripts/tpch_peers.py --sql target/tpch-validation.sql \
    --data target/data/peers-sf1 --sf 1 --threads 2 --repeat 3 > "target/power-peers-$i.txt"
  echo "round $i: coopscan $(tail -1 "target/power-coop-$i.txt" | awk '{print $2, $3}') | $(grep total "target/power-peers-$i.txt" | awk '{printf "%s %s | ", $2, $3}')"
done
