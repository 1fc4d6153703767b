#!/usr/bin/env bash
# Clotho's Figure 9 on the real engine: TPC-H Q1, Q6, Q12 and Q14 at SF1, each query
# cold in its own process on the emulated disk (150 MB/s, 4 ms per request), over the
# same database in NSM, PAX, DSM and CSM, answers checked against the kit's. Rounds
# alternate the layouts; prints one line per run: round layout query wall_s.
#
#   for l in nsm pax dsm csm; do coopscan gen --sf 1 --tables all --layout $l --out target/data/sf1-$l-db; done
#   scripts/clotho_tpch.sh [ROUNDS] > runs.txt
set -euo pipefail
rounds=${1:-3}
bin=${COOPSCAN_BIN:-target/release/coopscan}
for r in $(seq 1 "$rounds"); do
  for layout in nsm pax dsm csm; do
    for q in 1 6 12 14; do
      line=$("$bin" tpch --db "target/data/sf1-$layout-db" --queries "$q" --repeat 1 \
        --answers queries/tpch/answers-sf1 --bandwidth-mb 150 --latency-ms 4 2>&1 |
        grep -E "^Q$q ")
      case "$line" in
        *" ok "*) ;;
        *) echo "round $r $layout Q$q: answer not ok: $line" >&2; exit 1 ;;
      esac
      echo "$r $layout Q$q $(echo "$line" | awk '{print $2}')"
    done
  done
done
