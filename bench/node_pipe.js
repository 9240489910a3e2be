// node_pipe.js: the Node.js side of BenchmarkIngestPipe. It runs a producer
// command (by default the Go test binary's print-block helper, 1 GiB of
// 100-byte text lines) and reads its stdout:
//
//   raw        counts the bytes of each Buffer chunk, nothing else: the
//              physical baseline for Node.
//   reference  what the reference TypeScript registry does with output:
//              decode each chunk to a string, clean it (ANSI escapes and
//              control characters removed), append it to a pending list
//              capped per stream, and keep the aggregate as the last
//              maxOutputChars characters of aggregate+chunk.
//
// A whole 1 GiB output cannot be one string in Node (V8 strings stop at
// 2^29-24 characters), which is why the reference keeps capped strings.
//
//   BGEXEC_TEST_BINARY=/tmp/bgexec.test node bench/node_pipe.js [raw|reference] [bytes=1073741824]
'use strict';

const { spawn } = require('node:child_process');

const mode = process.argv[2] || 'reference';
const size = Number(process.argv[3] || 1 << 30);
const binary = process.env.BGEXEC_TEST_BINARY;
if (!binary) {
  console.error('set BGEXEC_TEST_BINARY to a test binary built with `go test -c`');
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

function run() {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(binary, ['print-block', String(size)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, BGEXEC_TEST_HELPER: '1' },
    });
    let bytes = 0;
    let total = 0;
    let aggregated = '';
    const pending = [];
    let pendingChars = 0;
    if (mode === 'raw') {
      child.stdout.on('data', (buf) => { bytes += buf.length; });
    } else {
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk) => {
        const text = clean(chunk);
        bytes += Buffer.byteLength(chunk); // for the throughput figure only
        total += text.length;
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
      const ns = Number(process.hrtime.bigint() - start);
      if (code !== 0) {
        reject(new Error(`producer exited ${code}`));
        return;
      }
      resolve({ ns, bytes, total, kept: aggregated.length });
    });
  });
}

async function main() {
  const r = await run();
  if (r.bytes !== size) throw new Error(`read ${r.bytes} bytes, want ${size}`);
  console.log(
    `NodePipe/${mode}\t1\t${r.ns} ns/op\t${(size / 1e6 / (r.ns / 1e9)).toFixed(2)} MB/s` +
      (mode === 'raw' ? '' : `\t${r.kept} kept-chars`),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
