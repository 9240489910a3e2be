#!/bin/sh
# crosscheck.sh: runs the Node.js cross-check next to the Go benchmarks it
# mirrors, in one session, so the figures share the machine's load.
#
#   bench/crosscheck.sh            # 500 spawns, 1 GiB through a pipe
#   SPAWNS=200 BYTES=268435456 bench/crosscheck.sh
set -eu
cd "$(dirname "$0")/.."
spawns=${SPAWNS:-500}
bytes=${BYTES:-1073741824}
bin=${TMPDIR:-/tmp}/bgexec-crosscheck.test
go test -c -o "$bin" .

echo "== spawn and wait for sh -c true, $spawns times"
node bench/node_spawn.js "$spawns"
"$bin" -test.run '^$' -test.bench 'ExecTrue$/pgroup' -test.benchtime "${spawns}x" | grep '^Benchmark'

echo "== $bytes bytes of text lines through a pipe"
BGEXEC_TEST_BINARY="$bin" node bench/node_pipe.js raw "$bytes"
BGEXEC_TEST_BINARY="$bin" node bench/node_pipe.js reference "$bytes"
BGEXEC_BENCH_BYTES=$bytes "$bin" -test.run '^$' -test.bench 'IngestPipe$' -test.benchtime 1x | grep '^Benchmark'
rm -f "$bin"
