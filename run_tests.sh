#!/usr/bin/env bash
# The one test command (README, CI, docs/TESTING.md). First it installs whatever the tests need and is
# missing (and skips what is there): the Python test extras (into ./.venv when no virtual environment is
# active and python3 lacks them), Node/npm and the frontend's node_modules, Azurite for the Azure tests,
# Debian's chromium for the browser tests. As root it installs system packages; otherwise it installs
# what it can and skips, with one line each, the tests whose tools are missing. Then:
# the static checks (ruff lint + format, mypy against .mypy-baseline, eslint), then frontend type-check +
# unit tests + bundle freshness, then every Python test, the browser tests included, in 2 processes
# ($KINETOSCOPE_TEST_JOBS). Fails loudly on the first failing stage.
#
#   ./run_tests.sh                     set up what is missing, then run every check and test (CI runs this)
#   ./run_tests.sh --static            the static checks only: ruff check, ruff format --check, mypy, eslint
#   ./run_tests.sh --fast              ruff (lint + format), then the Python unit and known-answer tests
#                                      (tests/unit/ without the external corpus or emulators): no mypy, eslint,
#                                      browser or servers
#   ./run_tests.sh TEST_ID...          just those tests (pytest ids: tests/test_x.py::test_y), no frontend
#   ./run_tests.sh [--fast] -k EXPR    any other pytest arguments are passed on
#   ./run_tests.sh --setup-only        set up what is missing, run nothing
#   ./run_tests.sh --setup-dry-run     say what is present and what would be installed, change nothing
#
# Tests that read the external sample corpus ($KINETOSCOPE_SAMPLES, else ../shared/samples) are skipped
# when it is absent, with one summary line; with CI set, a missing corpus is an error.
set -euo pipefail
cd "$(dirname "$0")"

mode=test
fast=0
static=0
case "${1:-}" in
  --setup-only) mode=setup; shift ;;
  --setup-dry-run) mode=dry; shift ;;
  --fast) fast=1; shift ;;
  --static) static=1; shift ;;
esac
# arguments that name an existing test file or folder are test ids: run those instead of tests/
ids=0
for a in "$@"; do
  case "$a" in -*) continue ;; esac
  [ -e "${a%%::*}" ] && ids=1
done

EXTRAS=".[test,s3,gcs,azure,dask]"
AZURITE_VERSION=3.37.0
CHROMIUM=${KINETOSCOPE_CHROMIUM:-/usr/bin/chromium}
export DEBIAN_FRONTEND=noninteractive
root=0; [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && root=1

# "need X: how" in a dry run; otherwise run the command that installs X (set -e stops on failure)
install() {
  local what=$1; shift
  if [ "$mode" = dry ]; then echo "setup: would install $what: $*"; return; fi
  echo "setup: installing $what: $*"
  "$@"
}
have() { [ "$mode" = dry ] && echo "setup: present: $1"; return 0; }
# apt_install PACKAGES WHAT_NEEDS_THEM: system packages, installed as root on Debian/Ubuntu; otherwise one line saying what to install
# (returns 1 so that the caller skips what needs it)
apt_install() {
  if [ "$root" = 1 ]; then install "$1" sh -c "apt-get update -qq && apt-get install -y -qq $1"; return; fi
  if [ "$mode" = dry ]; then echo "setup: missing $1: run as root on Debian/Ubuntu, or: sudo apt-get install $1"; return 1; fi
  echo "setup: SKIPPING $2: $1 is missing and this is not root on Debian/Ubuntu; install it (sudo apt-get install $1)" \
       "and run ./run_tests.sh again"
  return 1
}

echo "== setup: install what is missing"
# Python: an active virtual environment, else ./.venv, else python3 when it already has every test
# package, else a new ./.venv (Debian's python3 refuses pip installs into the system)
has_extras() {
  "$1" - <<'EOF' 2>/dev/null
import importlib.metadata, isal, pytest, hypothesis, playwright.sync_api, moto.server, gcp_storage_emulator, s3fs, gcsfs, adlfs, distributed, flask, waitress, pandas, mcp, mypy
importlib.metadata.distribution("kinetoscope"), importlib.metadata.distribution("ruff"), importlib.metadata.distribution("pytest-xdist")
EOF
}
if [ -n "${PYTHON:-}" ]; then :
elif [ -n "${VIRTUAL_ENV:-}" ]; then PYTHON=$VIRTUAL_ENV/bin/python
elif [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python
elif has_extras python3; then PYTHON=python3
else
  if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
    apt_install python3-venv "the Python tests" || [ "$mode" = dry ] || exit 1
  fi
  install "a virtual environment in .venv" python3 -m venv .venv
  PYTHON=.venv/bin/python
fi
[ "$mode" = dry ] && echo "setup: python: $PYTHON"
if has_extras "$PYTHON"; then have "python test extras $EXTRAS"
else install "python test extras" "$PYTHON" -m pip install -q -e "$EXTRAS"
fi
# this checkout's tb_plugin, also in the subprocesses the tests start (tensorboard, kinetoscope), even
# when the installed kinetoscope points at another copy
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

node=1
browser=1
if [ "$fast" = 0 ]; then
  # Node + npm (frontend build and unit tests, Azurite)
  if command -v npm >/dev/null 2>&1; then have "node $(node --version 2>/dev/null || echo '?') + npm"
  else apt_install "nodejs npm" "the frontend checks and the storage-emulator tests" || node=0
  fi
  if [ "$node" = 1 ]; then
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
    if [ "$static" = 1 ]; then :
    elif [ -n "$azurite" ]; then have "azurite in $azurite"
    else install "azurite $AZURITE_VERSION" npm install --no-audit --no-fund --prefix tests/.azurite "azurite@$AZURITE_VERSION"
    fi
  fi
  # Debian's chromium for the browser tests (not Playwright's download: the tests run offline)
  if [ "$static" = 1 ]; then :
  elif [ -x "$CHROMIUM" ]; then have "chromium at $CHROMIUM"
  else apt_install chromium "the browser tests (or set KINETOSCOPE_CHROMIUM to a chromium binary)" || browser=0
  fi
fi
# (tests/e2e/test_install_side_by_side.py installs torch-tb-profiler 0.4.3 into a venv of its own)
[ "$mode" = test ] || exit 0
[ "$browser" = 1 ] || export KINETOSCOPE_NO_BROWSER=1
[ "$node" = 1 ] || export KINETOSCOPE_NO_EMULATORS=1

# static checks: every finding fails the run (mypy: beyond the per-file counts in .mypy-baseline, which
# only shrink; docs/TESTING.md). --fast runs ruff only; test ids run none.
if [ "$ids" = 0 ]; then
  echo "== static: ruff check, ruff format --check"
  "$PYTHON" -m ruff check --no-cache . || { echo "FAIL: ruff check found the above (ruff check --fix fixes some)" >&2; exit 1; }
  "$PYTHON" -m ruff format --no-cache --check . || { echo "FAIL: files not formatted: run ruff format" >&2; exit 1; }
  if [ "$fast" = 0 ]; then
    echo "== static: mypy (mypy.ini) against .mypy-baseline"
    "$PYTHON" tools/mypy_gate.py || { echo "FAIL: mypy findings beyond .mypy-baseline (above)" >&2; exit 1; }
    if [ "$node" = 1 ]; then
      echo "== static: eslint (frontend/eslint.config.js)"
      (cd frontend && npm run --silent lint) || { echo "FAIL: eslint found the above in frontend/" >&2; exit 1; }
    fi
  fi
  if [ "$static" = 1 ]; then echo "== static checks: clean"; exit 0; fi
fi

if [ "$fast" = 0 ] && [ "$ids" = 0 ] && [ "$node" = 1 ]; then
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
fi

where=(tests)
[ "$ids" = 1 ] && where=()
# both tiers run in 2 processes (pytest-xdist, from the test extra; $KINETOSCOPE_TEST_JOBS overrides, 1
# runs in this process), a test module at a time per process so that its module fixtures (servers,
# emulators, loaded samples) start once, the slow folders first (tests/conftest.py); test ids, or -n
# given, run as asked
jobs=()
case " $* " in *" -n "*|*" -n"[0-9]*) ;; *)
  n=${KINETOSCOPE_TEST_JOBS:-2}
  [ "$ids" = 0 ] && [ "$n" -gt 1 ] && "$PYTHON" -c "import xdist" 2>/dev/null && jobs=(-n "$n" --dist loadfile --no-loadscope-reorder) ;;
esac
# a passing test's tmp_path is removed when it ends (a full run wrote ~8 GB there, and pytest keeps three runs)
set -- -o tmp_path_retention_policy=failed "$@"
if [ "$fast" = 1 ]; then
  echo "== python: pytest, fast tier (unit and known-answer: not corpus, e2e, integration or emulator)"
  exec "$PYTHON" -m pytest -q "${jobs[@]}" -m "not corpus and not e2e and not integration and not emulator" "${where[@]}" "$@"
fi
echo "== python: pytest (unit, known-answer, real samples, incumbent parity, browser)"
exec "$PYTHON" -m pytest -q "${jobs[@]}" "${where[@]}" "$@"
