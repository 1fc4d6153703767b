#!/bin/bash
# The TPC-H throughput run's shape: 4 streams, every policy, a 50 MB/s device, the buffer at
# 10 %, 30 % and 100 % of the SF1 DSM database (248 MB). JSON per point in target/tpch-runs/.
# Usage: scripts/tpch_throughput_sweep.sh [COOPSCAN_BINARY] (default: coopscan on PATH)
set -euo pipefail
B=${1:-coopscan}
O=target/tpch-runs
mkdir -p "$O"
for mb in 75 25 248; do
  "$B" tpch --db target/data/sf1-dsm-db --streams 4 \
    --policies normal,pbm,pbm-lru,relevance,mixed,scan \
    --buffer-mb "$mb" --bandwidth-mb 50 --json "$O/buf-$mb.json" > "$O/buf-$mb.txt"
  echo "buffer $mb MB done"
done
