#!/usr/bin/env bash
# Runs test files again and again with the machine kept busy, and counts the failures per file: a
# test that fails here by chance would also fail a landing by chance. Bounded in rounds and in time.
set -uo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/soak-tests.sh [options] [TEST_FILE...]

Runs each test file RUNS times in a row (one `node --test` per file and round) while stress-ng keeps
CPUs busy, then prints the failures per file. Exits 1 if any run failed or skipped a test, else 0.

Without files, runs the timing-sensitive CRI set:
  test/cri/streaming-*.test.ts test/cri/containers-lifecycle.test.ts
  test/cri/pods-*.test.ts test/cri/daemon-*.test.ts

Options:
  --runs N          rounds (default 10)
  --stress N        CPU workers for `stress-ng --cpu N` beside the tests (default 2; 0 for none)
  --max-minutes M   start no new round after M minutes (default 120); a round in progress finishes
  --file-timeout S  kill one file's run after S seconds and count it failed (default 900)
  --out DIR         logs and summary go here (default: a new directory under /tmp)
  --allow-skip      do not set CI=true (tests whose prerequisites are missing then skip, not fail)
  -h, --help        this text

Run as root on a machine with the test prerequisites (runc, conmon, CNI plugins, kubectl, ...), as
the tests themselves need. Node 24 must be first on PATH (/opt/skiff-node/24/bin is used if present).
EOF
}

runs=10 stress=2 max_minutes=120 file_timeout=900 out='' ci=true
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=${2:?}; shift 2 ;;
    --stress) stress=${2:?}; shift 2 ;;
    --max-minutes) max_minutes=${2:?}; shift 2 ;;
    --file-timeout) file_timeout=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --allow-skip) ci=''; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "soak-tests: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
for n in "$runs" "$stress" "$max_minutes" "$file_timeout"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "soak-tests: not a number: $n" >&2; exit 2; }
done

cd "$(dirname "$0")/.."
[ -d /opt/skiff-node/24/bin ] && export PATH="/opt/skiff-node/24/bin:$PATH"
if [ ${#files[@]} -eq 0 ]; then
  files=(test/cri/streaming-*.test.ts test/cri/containers-lifecycle.test.ts test/cri/pods-*.test.ts test/cri/daemon-*.test.ts)
fi
for f in "${files[@]}"; do [ -f "$f" ] || { echo "soak-tests: no such file: $f" >&2; exit 2; }; done
out=${out:-$(mktemp -d /tmp/skiff-soak.XXXXXX)}
mkdir -p "$out"

stress_pid=''
stop_stress() { [ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null; wait "$stress_pid" 2>/dev/null; stress_pid=''; }
trap 'stop_stress; exit 130' INT TERM
trap stop_stress EXIT
if [ "$stress" -gt 0 ]; then
  if ! command -v stress-ng >/dev/null; then
    echo "soak-tests: stress-ng is not installed (apt-get install stress-ng), or pass --stress 0" >&2
    exit 2
  fi
  stress-ng --cpu "$stress" --timeout "$((max_minutes * 60 + file_timeout * ${#files[@]}))s" >/dev/null 2>&1 &
  stress_pid=$!
fi

declare -A failed skipped
for f in "${files[@]}"; do failed[$f]=0 skipped[$f]=0; done
deadline=$(($(date +%s) + max_minutes * 60))
done_rounds=0
echo "soak: ${#files[@]} files x $runs rounds, stress-ng --cpu $stress, logs in $out" >&2
for round in $(seq 1 "$runs"); do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "soak: $max_minutes minutes are up; stopping after $done_rounds rounds" >&2
    break
  fi
  for f in "${files[@]}"; do
    log="$out/$(basename "$f" .test.ts).$round.log"
    start=$(date +%s)
    CI=$ci timeout --kill-after=30 "$file_timeout" node --import tsx --test --test-reporter=spec "$f" >"$log" 2>&1
    rc=$?
    skips=$(sed -n 's/^ℹ skipped \([0-9]*\)$/\1/p' "$log" | tail -1)
    status=ok
    if [ "$rc" -ne 0 ]; then
      failed[$f]=$((failed[$f] + 1)) status="FAILED (exit $rc)"
    elif [ "${skips:-0}" -gt 0 ]; then
      skipped[$f]=$((skipped[$f] + 1)) status="skipped $skips"
    fi
    printf 'round %d  %-48s %4ss  %s\n' "$round" "$f" "$(($(date +%s) - start))" "$status" | tee -a "$out/progress.txt" >&2
    [ "$rc" -ne 0 ] && grep -E '^\s*✖ ' "$log" | sort -u | sed 's/^/    /' | tee -a "$out/progress.txt" >&2
  done
  done_rounds=$round
done
stop_stress

{
  echo "soak summary: $done_rounds rounds, stress-ng --cpu $stress, $(date -u +%FT%TZ)"
  printf '%-48s %6s %8s %8s\n' file runs failed skipped
  for f in "${files[@]}"; do printf '%-48s %6d %8d %8d\n' "$f" "$done_rounds" "${failed[$f]}" "${skipped[$f]}"; done
} | tee "$out/summary.txt"
total=0
for f in "${files[@]}"; do total=$((total + failed[$f] + skipped[$f])); done
[ "$done_rounds" -gt 0 ] && [ "$total" -eq 0 ]
