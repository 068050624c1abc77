#!/usr/bin/env bash
# The same benchmark on two revisions, one after the other in one run (issue 14's "no new
# behaviour" check: the refactor must not cost speed). Usage:
#   bash perf/before_after.sh REV MODULE [ARGS...]
# e.g. bash perf/before_after.sh 1ff5736 perf.bench_judge_throughput --skip-threads --skip-transports
# REV is checked out into a temporary worktree; both runs use this checkout's .venv (the same
# packages), each importing its own `clineval` (the working directory comes first on sys.path).
set -euo pipefail
cd "$(dirname "$0")/.."
REV="$1"; shift
MODULE="$1"; shift
PY="$(pwd)/.venv/bin/python"
TREE="$(mktemp -d)/before"
git worktree add -f --detach "$TREE" "$REV" >/dev/null
trap 'git worktree remove --force "$TREE"' EXIT
for side in before after; do
  dir="$TREE"; [ "$side" = after ] && dir="$(pwd)"
  echo "=== $side: $(git -C "$dir" rev-parse --short HEAD) $MODULE $*"
  module="$MODULE"
  # revisions before the rename kept these scripts in benchmarks/
  if [ ! -d "$dir/perf" ] && [ -d "$dir/benchmarks" ]; then module="benchmarks.${MODULE#perf.}"; fi
  (cd "$dir" && "$PY" -c 'import clineval, sys; print("clineval from", clineval.__file__)' && "$PY" -m "$module" "$@")
done
