#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (default 60 s each) with the
# nightly toolchain and cargo-fuzz: seeds in fuzz/seeds/ (committed), the
# growing corpus in fuzz/corpus/ (not committed).
# Not part of every CI run. Usage: fuzz/run.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-60}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
for t in manifest fs_check fetch_check topic; do
  echo "== $t ($secs s)"
  mkdir -p "corpus/$t"
  cargo +nightly fuzz run "$t" "corpus/$t" "seeds/$t" -- -max_total_time="$secs" -max_len=4096 2>&1 | grep -E "^#[0-9]+.*(DONE|pulse)|ERROR|panicked|SUMMARY|cov:" | tail -3
done
