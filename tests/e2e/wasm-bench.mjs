// The wasm/native ratio of the 100k-request benchmark run, repeated (run by hand when tuning:
// `node tests/e2e/wasm-bench.mjs [runs] [scenario file] [requests]` after `trunk build --release` and
// `cargo build --release`; by default the 100k-request run of peer-llama3-8b-h100.json).
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve, browser, openLab, runAndWait, ROOT } from './browser.mjs';

const runs = Number(process.argv[2] ?? 3);
const CLI = join(ROOT, 'target/release/inferscale');
const name = process.argv[3] ?? 'peer-llama3-8b-h100.json';
const spec = JSON.parse(readFileSync(join(ROOT, 'scenarios', name), 'utf8'));
if (process.argv[3] === undefined || process.argv[4] !== undefined) {
  spec.workload.requests = Number(process.argv[4] ?? 100000);
  if (process.argv[3] === undefined) spec.workload.arrival.rate_rps = 15.72;
}
const file = join(ROOT, 'target', process.argv[3] === undefined ? 'bench-100k.json' : `bench-${name}`);
writeFileSync(file, JSON.stringify(spec));
const server = await serve();
const ctx = await browser();
const { page } = await openLab(ctx, server.url);
const wasm = [];
for (let i = 0; i < runs; i++) {
  await page.fill('#scenario', JSON.stringify(spec));
  await page.dispatchEvent('#scenario', 'input');
  await page.waitForTimeout(300);
  await runAndWait(page, 120000);
  wasm.push(Number(await page.getAttribute('#status', 'data-simulate-ms')));
}
const native = [];
for (let i = 0; i < runs; i++) {
  const r = spawnSync(CLI, ['time', file], { cwd: ROOT, encoding: 'utf8' });
  native.push(Number(/simulate ([0-9.]+) ms/.exec(r.stderr)[1]));
}
const warm = spawnSync(CLI, ['time', file, '--repeat', String(runs)], { cwd: ROOT, encoding: 'utf8' });
const warmMs = Number(/simulate ([0-9.]+) ms/.exec(warm.stderr)[1]);
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(`wasm simulate ms: ${wasm.map((x) => x.toFixed(1)).join(' ')}; native CLI processes: ${native.map((x) => x.toFixed(1)).join(' ')}; ` +
  `median ratio ${(med(wasm) / med(native)).toFixed(2)}, best ${(Math.min(...wasm) / Math.min(...native)).toFixed(2)}, first-run ${(wasm[0] / med(native)).toFixed(2)}; ` +
  `native warm (best of ${runs} in one process) ${warmMs.toFixed(1)} ms: best wasm / warm ${(Math.min(...wasm) / warmMs).toFixed(2)}`);
await ctx.close();
server.stop();
