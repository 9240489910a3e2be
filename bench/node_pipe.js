// node_pipe.js: the Node.js peer of BenchmarkIngestPipe. For each line read
// on stdin it runs `SHELL -c CMDLINE` once (the benchmark passes the same
// producer command line bgexec runs) with stdout on a pipe, reads it to the
// end, and prints "<nanoseconds> <bytes>" on stdout:
//
//   bytes      counts the bytes of each Buffer chunk, nothing else: the
//              cheapest a Node reader can be.
//   reference  what the reference TypeScript registry does with output:
//              decode each chunk to a string, clean it (ANSI escapes and
//              control characters removed), append it to a pending list
//              capped per stream, and keep the aggregate as the last
//              maxOutputChars characters of aggregate+chunk.
//
// A whole large output cannot be one string in Node (V8 strings stop at
// 2^29-24 characters), which is why the reference keeps capped strings.
//
//   echo | node bench/node_pipe.js bytes|reference SHELL CMDLINE
'use strict';

const { spawn } = require('node:child_process');
const readline = require('node:readline');

const [mode, shell, cmdline] = process.argv.slice(2);
if (!['bytes', 'reference'].includes(mode) || !shell || !cmdline) {
  console.error('usage: node bench/node_pipe.js bytes|reference SHELL CMDLINE');
  process.exit(2);
}

const maxOutputChars = 200000; // PI_BASH_MAX_OUTPUT_CHARS default
const pendingMaxChars = 30000; // OPENCLAW_BASH_PENDING_MAX_OUTPUT_CHARS default

// eslint-disable-next-line no-control-regex
const ansi = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])/g;
// eslint-disable-next-line no-control-regex
const controls = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\p{Cf}/gu;

function clean(s) {
  return s.replace(ansi, '').replace(controls, '');
}

function runOnce() {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(shell, ['-c', cmdline], { stdio: ['ignore', 'pipe', 'inherit'] });
    let bytes = 0;
    let aggregated = '';
    const pending = [];
    let pendingChars = 0;
    if (mode === 'bytes') {
      child.stdout.on('data', (buf) => { bytes += buf.length; });
    } else {
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk) => {
        const text = clean(chunk);
        bytes += Buffer.byteLength(chunk); // for the byte count only
        pending.push(text);
        pendingChars += text.length;
        while (pendingChars > pendingMaxChars && pending.length > 0) {
          const over = pendingChars - pendingMaxChars;
          if (pending[0].length <= over) {
            pendingChars -= pending.shift().length;
          } else {
            pending[0] = pending[0].slice(over);
            pendingChars -= over;
          }
        }
        const next = aggregated + text;
        aggregated = next.length > maxOutputChars ? next.slice(next.length - maxOutputChars) : next;
      });
    }
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) {
        reject(new Error(`producer exited ${code}`));
        return;
      }
      resolve(`${process.hrtime.bigint() - start} ${bytes}`);
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
