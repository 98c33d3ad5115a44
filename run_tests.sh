#!/usr/bin/env bash
# The one test command (README, CI): frontend type-check + unit tests + bundle freshness, then every
# Python test, the browser tests included. Fails loudly on the first failing stage.
set -euo pipefail
cd "$(dirname "$0")"

echo "== frontend: npm ci, type-check, unit tests, build"
(
  cd frontend
  [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund
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
python -m pytest -q tests "$@"
