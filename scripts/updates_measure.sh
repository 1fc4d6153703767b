#!/usr/bin/env bash
# The measurements of docs/updates.md: scan cost with changes merged, statement (commit)
# latency, log replay at open. On a private copy of an SF1 lineitem (DSM), so the
# database's own table keeps no delta log.
#   scripts/updates_measure.sh BIN SF1_LINEITEM_DIR WORK_DIR [POLICY]
set -euo pipefail
bin=$1; src=$2; work=$3; policy=${4:-relevance}
rm -rf "$work"; mkdir -p "$work"; cp -r "$src" "$work/lineitem"
t="lineitem=$work/lineitem"
q6="SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24;"
q1="SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice), sum(l_extendedprice * (1 - l_discount)), avg(l_discount), count(*) FROM lineitem WHERE l_shipdate <= DATE '1998-09-02' GROUP BY 1, 2 ORDER BY 1, 2;"
cols="l_orderkey, l_partkey, l_suppkey, l_linenumber, l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, l_comment"
queries() { for _ in 1 2 3 4 5; do echo "$q6"; echo "$q1"; done; }
run() { # label, script on stdin: prints each statement's seconds
  local label=$1
  /usr/bin/time -f "$label: session %e s wall, %U+%S CPU-s" "$bin" sql --table "$t" --policy "$policy" --buffer-mb 1024 2>&1 >/dev/null \
    | grep -E "row\(s\) in|session" | sed "s/^/$label: /"
}
{ queries; } | run "stable"
{ for k in 7 107 207 307 407; do echo "UPDATE lineitem SET l_comment = 'one order' WHERE l_orderkey = $k;"; done; } | run "small updates (one order each)"
echo "UPDATE lineitem SET l_quantity = l_quantity + 1 WHERE l_orderkey % 100 = 7;" | run "update 1 % of rows"
{ queries; } | run "1 % modified"
echo "DELETE FROM lineitem WHERE l_orderkey % 100 = 8;" | run "delete 1 % of rows"
echo "INSERT INTO lineitem ($cols) SELECT $cols FROM lineitem WHERE l_orderkey % 100 = 9;" | run "insert 1 % of rows"
{ queries; } | run "1 % modified, deleted, inserted"
echo "SELECT count(*) FROM lineitem;" | run "open (log replay) + count"
ls -l "$work/lineitem/delta.log"
