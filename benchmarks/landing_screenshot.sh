#!/usr/bin/env bash
# The report's landing page as a 1400×1000 window shows it (issue: the verdict column must be on screen and the
# introduction not clipped): a headless-Chromium screenshot to look at.
#
#   benchmarks/landing_screenshot.sh report.html landing.png [WIDTHxHEIGHT]
#
# Needs a headless Chromium: `chromium-headless-shell` or `chromium` (Debian: apt-get install chromium-headless-shell).
set -euo pipefail
report=${1:?usage: landing_screenshot.sh report.html out.png [WxH]}
out=${2:?usage: landing_screenshot.sh report.html out.png [WxH]}
size=${3:-1400x1000}
browser=$(command -v chromium-headless-shell || command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "no headless Chromium found (apt-get install chromium-headless-shell)"; exit 2; }
"$browser" --no-sandbox --disable-gpu --hide-scrollbars --window-size="${size/x/,}" --virtual-time-budget=15000 \
    --screenshot="$(realpath -m "$out")" "file://$(realpath "$report")" >/dev/null 2>&1
echo "$out ($size) from $report"
