#!/usr/bin/env bash
# Installs Debian's Chromium for the documentation tests, which open the built site in a
# headless browser (docs/test_site.py). Nothing is started: each test runs its own
# short-lived headless Chromium. `--check` only says whether it is installed.
set -euo pipefail
STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/chromium"
NAME=chromium-up
source "$(dirname "$0")/lib/backend.sh"
answers() { command -v chromium >/dev/null 2>&1; }
check_or_reuse "${1:-}" "$(chromium --version 2>/dev/null || echo chromium)"
apt_install chromium
echo "$NAME: $(chromium --version 2>/dev/null)"
