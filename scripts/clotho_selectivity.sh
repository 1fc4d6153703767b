#!/usr/bin/env bash
# Clotho's Figure 7c on the real engine: a selection on attribute `a` of the
# 15-attribute synthetic relation (8 M tuples, `a` uniform in [0, 2^32)) at several
# selectivities, read as an S-scan (`--index-scans never`), as an SI-scan (`always`,
# through the index of `a`) and as the planner chooses (`auto`: which plan it took is
# read from EXPLAIN) over NSM, PAX, DSM and CSM; each query cold in its own process.
# DEVICE: raw (this machine's disk, O_DIRECT) or emulated (150 MB/s, 4 ms per request).
# Prints one line per run: round device layout pct mode seconds answer.
#
#   for l in nsm pax dsm csm; do
#     coopscan gen --synthetic --rows 8000000 --columns 15 --layout $l --out target/clotho/$l
#     coopscan index target/clotho/$l/synthetic --column a
#   done
#   scripts/clotho_selectivity.sh [ROUNDS] [DEVICE] ["PCTS"] > runs.txt
set -euo pipefail
rounds=${1:-3}
device=${2:-raw}
pcts=${3:-"0.0001 0.001 0.01 0.1 1"}
bin=${COOPSCAN_BIN:-target/release/coopscan}
flags=()
if [ "$device" = emulated ]; then flags=(--bandwidth-mb 150 --latency-ms 4); fi
for r in $(seq 1 "$rounds"); do
  for pct in $pcts; do
    bound=$(python3 -c "print(int($pct / 100 * 2**32))")
    sql="SELECT count(*), sum(b), sum(c) FROM t WHERE a < $bound"
    for layout in nsm pax dsm csm; do
      for mode in never always auto; do
        run=("$bin" sql --table "t=target/clotho/$layout/synthetic" --policy scan
          --index-scans "$mode" "${flags[@]}")
        out=$("${run[@]}" "$sql" 2>&1)
        secs=$(echo "$out" | sed -n 's/.* row(s) in \([0-9.]*\) s$/\1/p')
        answer=$(echo "$out" | grep -E '^\| [0-9]' | tr -d ' |' | head -1)
        case $mode in
          never) name=S-scan ;;
          always) name=SI-scan ;;
          auto)
            plan=$("${run[@]}" "EXPLAIN $sql" 2>&1)
            if echo "$plan" | grep -q IndexScanExec; then name=auto:SI-scan
            elif echo "$plan" | grep -q 'ranges=\[0\.\.8000000\]'; then name=auto:S-scan
            else name=auto:chunks; fi ;;
        esac
        echo "$r $device $layout $pct $name $secs $answer"
      done
    done
  done
done
