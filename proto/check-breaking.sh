#!/usr/bin/env bash
# buf breaking against the previous commit of main (the protocol must never break a bot).
set -euo pipefail
cd "$(dirname "$0")"
base=${BUF_BREAKING_AGAINST:-HEAD~1}
if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
  echo "buf breaking: no commit $base to compare with (shallow or first clone): skipped"
  exit 0
fi
if ! git cat-file -e "$base:proto/kozel/v1" 2>/dev/null; then
  echo "buf breaking: $base has no proto/kozel/v1: skipped"
  exit 0
fi
npx --no-install buf breaking . --against "../.git#ref=$base,subdir=proto"
echo "buf breaking: no breaking change against $base"
