#!/usr/bin/env bash
# run_target.sh: one libFuzzer run of a tests/fuzz target, as `make fuzz` runs each (several at
# once, one per core). Starts from the committed seeds and regressions, keeps what it discovers
# in DIR/corpus/TARGET (never in the source tree), writes a crashing input to DIR/crashes/TARGET/
# and the log to DIR/TARGET.log. Prints the log's tail and exits 1 on a failure.
#
# Usage: tests/fuzz/run_target.sh DIR TARGET SECONDS   (run from the repository's top; the
#        sanitizer options come from the environment)
set -uo pipefail
dir=$1 t=$2 secs=$3
mkdir -p "$dir/corpus/$t" "$dir/crashes/$t"
if ! "$dir/tests/fuzz/$t" -max_total_time="$secs" -print_final_stats=1 \
    -artifact_prefix="$dir/crashes/$t/" \
    "$dir/corpus/$t" "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" 2>"$dir/$t.log"; then
    tail -n 60 "$dir/$t.log"
    echo "fuzz: $t failed; the input is in $dir/crashes/$t/"
    exit 1
fi
echo "fuzz: $t for $secs s:" \
    $(grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$dir/$t.log" | tr -s ' ')
