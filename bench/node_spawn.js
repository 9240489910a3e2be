// node_spawn.js: the Node.js peer of BenchmarkExecPeers/node. For each line
// read on stdin it runs `SHELL -c true` once, the way the reference
// TypeScript exec tool does (child_process.spawn in a process group of its
// own, stdout and stderr piped and decoded into one string, the run over at
// the 'close' event), and prints the nanoseconds that took on stdout. The
// benchmark starts it once, so Node's start-up and JIT warm-up stay out of
// the figures, and alternates its runs with bgexec's.
//
//   printf '\n\n\n' | node bench/node_spawn.js [shell=/bin/sh]
'use strict';

const { spawn } = require('node:child_process');
const readline = require('node:readline');

const shell = process.argv[2] || '/bin/sh';

function runOnce() {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(shell, ['-c', 'true'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, as the reference does
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
      resolve(process.hrtime.bigint() - start);
    });
  });
}

async function main() {
  const rl = readline.createInterface({ input: process.stdin });
  for await (const _ of rl) {
    process.stdout.write(`${await runOnce()}\n`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
