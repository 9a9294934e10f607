#!/usr/bin/env bash
# All the tests, on a fresh machine: installs what they need, then checks
# formatting and lints and runs every test (unit, integration, doc, examples).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cc >/dev/null || need_apt+=(gcc)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  else
    echo "missing packages: ${need_apt[*]} (run as root or install them)" >&2
    exit 1
  fi
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --release -- -D warnings
echo "== cargo test"
cargo test --release --all-targets
cargo test --release --doc
