// node_spawn.js: the Node.js side of BenchmarkExecTrue. It runs `sh -c true`
// N times in the foreground the way the reference TypeScript exec tool does:
// child_process.spawn in a process group of its own, stdout and stderr
// piped and decoded into strings, the run over at the 'close' event. It
// prints one line in the format of `go test -bench`, so the two can be read
// side by side.
//
//   node bench/node_spawn.js [N=500] [shell=/bin/sh]
'use strict';

const { spawn } = require('node:child_process');

const n = Number(process.argv[2] || 500);
const shell = process.argv[3] || '/bin/sh';

function runOnce() {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(shell, ['-c', 'true'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, as the reference does
      env: { ...process.env, OPENCLAW_SHELL: 'exec' },
    });
    let output = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (s) => { output += s; });
    child.stderr.on('data', (s) => { output += s; });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) {
        reject(new Error(`exit ${code}: ${output}`));
        return;
      }
      resolve(Number(process.hrtime.bigint() - start));
    });
  });
}

function percentile(sorted, p) {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.round(p * sorted.length) - 1));
  return sorted[i];
}

async function main() {
  for (let i = 0; i < 20; i++) await runOnce(); // warm up
  const times = [];
  const wall = process.hrtime.bigint();
  for (let i = 0; i < n; i++) times.push(await runOnce());
  const total = Number(process.hrtime.bigint() - wall);
  times.sort((a, b) => a - b);
  const mean = total / n;
  console.log(
    `NodeSpawnTrue\t${n}\t${mean.toFixed(0)} ns/op\t` +
      `${(percentile(times, 0.5) / 1e3).toFixed(1)} p50-µs\t${(percentile(times, 0.99) / 1e3).toFixed(1)} p99-µs\t` +
      `${(1e9 / mean).toFixed(1)} spawns/s`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
