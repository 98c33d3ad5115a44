#!/usr/bin/env bash
# The one test command (README, CI). First it installs whatever the tests need and is missing (and
# skips what is there): the Python test extras, Node/npm and the frontend's node_modules, Azurite for
# the Azure tests, Debian's chromium for the browser tests. Then: frontend type-check + unit tests +
# bundle freshness, then every Python test, the browser tests included. Fails loudly on the first
# failing stage.
#
#   ./run_tests.sh [PYTEST ARGS...]    set up what is missing, then run the tests
#   ./run_tests.sh --setup-only        set up what is missing, run nothing
#   ./run_tests.sh --setup-dry-run     say what is present and what would be installed, change nothing
set -euo pipefail
cd "$(dirname "$0")"

mode=test
case "${1:-}" in
  --setup-only) mode=setup; shift ;;
  --setup-dry-run) mode=dry; shift ;;
esac

PYTHON=${PYTHON:-python}
EXTRAS=".[test,s3,gcs,azure,dask]"
AZURITE_VERSION=3.37.0
CHROMIUM=${KINETOSCOPE_CHROMIUM:-/usr/bin/chromium}
export DEBIAN_FRONTEND=noninteractive

# "need X: how" in a dry run; otherwise run the command that installs X (set -e stops on failure)
install() {
  local what=$1; shift
  if [ "$mode" = dry ]; then echo "setup: would install $what: $*"; return; fi
  echo "setup: installing $what: $*"
  "$@"
}
have() { [ "$mode" = dry ] && echo "setup: present: $1"; return 0; }

apt_install() {  # apt_install PACKAGE... (root only; else a message that says what to run)
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    if [ "$mode" = dry ]; then echo "setup: missing $*: run as root on Debian/Ubuntu, or: sudo apt-get install $*"; return; fi
    echo "FAIL: $* missing and this is not root on a Debian/Ubuntu machine: run 'sudo apt-get install $*'" \
         "(or set KINETOSCOPE_CHROMIUM to a chromium binary), then ./run_tests.sh again" >&2
    exit 1
  fi
  install "$*" sh -c "apt-get update -qq && apt-get install -y -qq $*"
}

echo "== setup: install what is missing"
# Python: this package (its entry point is how TensorBoard finds the plugin) and the test extras
if "$PYTHON" - <<'EOF' 2>/dev/null
import importlib.metadata, pytest, hypothesis, playwright.sync_api, moto.server, gcp_storage_emulator, s3fs, gcsfs, adlfs, distributed, flask, pandas, mcp
importlib.metadata.distribution("kinetoscope")
EOF
then have "python test extras $EXTRAS"
else install "python test extras" "$PYTHON" -m pip install -q -e "$EXTRAS"
fi
# Node + npm (frontend build and unit tests, Azurite)
if command -v npm >/dev/null 2>&1; then have "node $(node --version 2>/dev/null || echo '?') + npm"
else apt_install nodejs npm
fi
# the frontend's node_modules, when missing or older than package-lock.json
if [ -d frontend/node_modules ] && [ frontend/node_modules/.package-lock.json -nt frontend/package-lock.json ]; then
  have "frontend/node_modules"
else install "frontend/node_modules" sh -c "cd frontend && npm ci --no-audit --no-fund"
fi
# Azurite (Azure Blob emulator), pinned, in a gitignored folder (tests/emulators.py looks there)
azurite=""
for d in ${KINETOSCOPE_AZURITE_DIR:-} tests/.azurite /tmp/azurite_pkg; do
  [ -x "$d/node_modules/.bin/azurite-blob" ] && { azurite=$d; break; }
done
if [ -n "$azurite" ]; then have "azurite in $azurite"
else install "azurite $AZURITE_VERSION" npm install --no-audit --no-fund --prefix tests/.azurite "azurite@$AZURITE_VERSION"
fi
# Debian's chromium for the browser tests (not Playwright's download: the tests run offline)
if [ -x "$CHROMIUM" ]; then have "chromium at $CHROMIUM"
else apt_install chromium
fi
# (tests/e2e/test_install_side_by_side.py installs torch-tb-profiler 0.4.3 into a venv of its own)
[ "$mode" = test ] || exit 0

echo "== frontend: type-check, unit tests, build"
(
  cd frontend
  npm run --silent typecheck
  npm test --silent
)
before=$(cd tb_plugin/static && find . -type f -print0 | sort -z | xargs -0 sha256sum)
(cd frontend && npm run --silent build >/dev/null)
after=$(cd tb_plugin/static && find . -type f -print0 | sort -z | xargs -0 sha256sum)
if [ "$before" != "$after" ]; then
  echo "FAIL: tb_plugin/static/ is stale: a fresh build of frontend/ differs from it. Commit the rebuilt bundle." >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
echo "== frontend bundle is fresh"

echo "== python: pytest (unit, known-answer, real samples, incumbent parity, browser)"
"$PYTHON" -m pytest -q tests "$@"
