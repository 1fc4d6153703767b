#!/usr/bin/env bash
# Renders a coopscan HTML report in headless Chromium and saves a PNG, to check that
# the page opens in a browser and shows its plots.
#   scripts/screenshot-report.sh target/data/reports/table2/table2.html /tmp/report.png
# Needs Debian's chromium (apt-get install chromium).
set -euo pipefail
html=${1:?usage: $0 REPORT.html OUT.png}
png=${2:?usage: $0 REPORT.html OUT.png}
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "chromium not found: apt-get install chromium" >&2; exit 1; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --window-size=1400,2400 --hide-scrollbars \
  --screenshot="$png" "file://$(realpath "$html")" 2>/dev/null
[ -s "$png" ] || { echo "no screenshot written" >&2; exit 1; }
echo "$png"
