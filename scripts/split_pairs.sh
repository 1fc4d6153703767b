#!/bin/bash
# Table 2 with --query-threads 2 --scan-workers 2: dynamic against static split, three
# interleaved pairs, JSON reports in target/split-runs/.
# Usage: scripts/split_pairs.sh [COOPSCAN_BINARY] (default: coopscan on PATH)
set -euo pipefail
B=${1:-coopscan}
O=target/split-runs
mkdir -p "$O"
for i in 1 2 3; do
  for split in dynamic static; do
    flag=""; [ "$split" = static ] && flag="--static-split"
    COOPSCAN_DATA=${COOPSCAN_DATA:-target/data} "$B" bench --policies normal,relevance \
      --query-threads 2 --scan-workers 2 $flag --json "$O/split-$split-$i.json" > "$O/split-$split-$i.txt"
    echo "$split $i done"
  done
done
