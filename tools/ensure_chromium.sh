#!/usr/bin/env bash
# Make sure the browser the page tests drive is installed: Debian's Chromium at
# /usr/bin/chromium (tests/test_plugin_browser.py launches it through Playwright, which must
# never download a browser of its own). Run by `make test` and by .ci/run.
#
#   tools/ensure_chromium.sh
#
# Present: exits 0 and prints nothing. Missing: installs Debian's `chromium` package with
# apt-get when running as root or with passwordless sudo; otherwise exits 1 at once with
# one line naming the command to run. CHROMIUM overrides the path looked for (this script's
# own tests point it at a missing file).
set -euo pipefail

chromium="${CHROMIUM:-/usr/bin/chromium}"
install_command="apt-get update && apt-get install -y --no-install-recommends chromium"

[[ -x "$chromium" ]] && exit 0

fail() {
    echo "make test: $chromium is missing (the browser tests drive Debian's Chromium): $1" >&2
    exit 1
}

command -v apt-get >/dev/null 2>&1 \
    || fail "no apt-get here; install your distribution's chromium package so that $chromium exists"

if [[ "$(id -u)" == 0 ]]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
    as_root=(sudo -n)
else
    fail "run: sudo sh -c '$install_command'"
fi

echo "Installing Debian's chromium for the browser tests ($chromium is missing)"
# Through env: sudo would drop an exported DEBIAN_FRONTEND.
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
[[ -x "$chromium" ]] || fail "apt-get installed chromium, but $chromium is still not there"
