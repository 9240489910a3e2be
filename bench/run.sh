#!/bin/sh
# run.sh: runs the figures of BENCHMARKS.md, each COUNT times (default 5),
# from one test binary, one figure after the other, then summarises them
# with bench/benchsum (median, mean and min–max per metric; the targets).
#
#   bench/run.sh                     # every figure, 5 runs each
#   bench/run.sh exec poll-idle      # only the figures named
#   QUICK=1 COUNT=1 bench/run.sh     # a smoke run: a few iterations, 500 held
#                                    # sessions, 16 MiB of pipe ingest
#
# Output goes to $OUT (default /tmp/bgexec-bench-<UTC time>): raw.txt (the
# go test -v output), env.txt (machine, commit, load average before and
# after) and summary.md. The C baselines are compiled with cc when present
# (else skipped); the Node peers need node (else skipped).
set -eu
cd "$(dirname "$0")/.."
count=${COUNT:-5}
quick=${QUICK:-}
out=${OUT:-${TMPDIR:-/tmp}/bgexec-bench-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out/cbin"

if [ -n "$quick" ]; then
	export BGEXEC_BENCH_HELD="${BGEXEC_BENCH_HELD:-500}"
	export BGEXEC_BENCH_BYTES="${BGEXEC_BENCH_BYTES:-16777216}"
fi

if command -v cc >/dev/null 2>&1; then
	cc -O2 -o "$out/cbin/spawn" bench/spawn.c
	cc -O2 -o "$out/cbin/readloop" bench/readloop.c
	export BGEXEC_BENCH_CBIN="$out/cbin"
else
	echo "run.sh: no cc: the C baselines (spawn, readloop) are skipped" >&2
fi
command -v node >/dev/null 2>&1 || echo "run.sh: no node: the Node peers are skipped (apt-get install -y nodejs)" >&2

go test -c -o "$out/bgexec.test" .

machine() {
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
}
{
	machine
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) online)"
	echo "kernel: $(uname -sr)"
	echo "go: $(go version)"
	echo "node: $(node --version 2>/dev/null || echo absent)"
	echo "cc: $(cc --version 2>/dev/null | head -n1 || echo absent)"
	echo "shell: /bin/sh -> $(readlink -f /bin/sh)"
	echo "RLIMIT_NOFILE: soft $(ulimit -Sn), hard $(ulimit -Hn)"
	echo "count: $count${quick:+ (quick)}"
} >"$out/env.txt"

# figure: name, -bench pattern, -benchtime, quick -benchtime.
figures='
poll-idle       ^BenchmarkPoll$/^idle$      200x  5x
poll-new        ^BenchmarkPoll$/^new$       300x  5x
log             ^BenchmarkLog$              100x  5x
held            ^BenchmarkHeld$             200x  5x
ingest-pipe     ^BenchmarkIngestPipe$       10x   3x
heap            ^BenchmarkHeapPerSession$   1x    1x
exec            ^BenchmarkExec$             300x  10x
exec-concurrent ^BenchmarkExecConcurrent$   10x   2x
exec-peers      ^BenchmarkExecPeers$        300x  10x
exec-floor      ^BenchmarkExecFloor$        300x  10x
ingest-pty      ^BenchmarkIngestPTY$        3x    1x
idle-sessions   ^BenchmarkIdleSessions$     1x    1x
busy-host       ^BenchmarkBusyHost$         20x   3x
latency         ^BenchmarkLatency$          300x  10x
sandbox-paired  ^BenchmarkSandboxExecPaired$ 40x  5x
sandbox-burst   ^BenchmarkSandboxBurst$     20x   2x
'
echo "$figures" | while read -r name pattern benchtime quicktime; do
	[ -n "$name" ] || continue
	if [ $# -gt 0 ]; then
		want=
		for a in "$@"; do [ "$a" = "$name" ] && want=1; done
		[ -n "$want" ] || continue
	fi
	[ -n "$quick" ] && benchtime=$quicktime
	echo "== $name: -bench '$pattern' -benchtime $benchtime -count $count" >&2
	"$out/bgexec.test" -test.run '^$' -test.bench "$pattern" -test.benchtime "$benchtime" \
		-test.count "$count" -test.timeout 0 -test.v >>"$out/raw.txt" 2>&1 || echo "run.sh: $name failed (see $out/raw.txt)" >&2
done

echo "after: $(machine | tr '\n' ' ')" >>"$out/env.txt"
go run ./bench/benchsum "$out/raw.txt" >"$out/summary.md"
cat "$out/env.txt"
echo
cat "$out/summary.md"
echo >&2
echo "run.sh: results in $out" >&2
