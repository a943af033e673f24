// End-to-end tests of the study panels in headless Chromium (dist/ served on 127.0.0.1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve, browser, openLab, ROOT } from './browser.mjs';

const CLI = join(ROOT, 'target/release/inferscale');
let server, ctx;

before(async () => { server = await serve(); ctx = await browser(); });
after(async () => { await ctx?.close(); server?.stop(); });

async function download(page, selector) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  return { name: dl.suggestedFilename(), text: readFileSync(await dl.path(), 'utf8') };
}

async function runStudy(page, timeout = 120000) {
  await page.click('#study-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout });
}

test('P/D comparison: runs over several workers, shows the table and charts, and its JSON export is the CLI\'s', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await page.selectOption('#preset', 'pd-llama3-8b-h100');
  await page.click('nav [data-panel="pd"]');
  assert.equal(await page.isVisible('#panel-study'), true);
  assert.equal(await page.isVisible('#panel-lab'), false);
  // The study's inputs are the scenario's P/D and prefix blocks.
  assert.equal(await page.inputValue('#p-prefill'), '1');
  assert.equal(await page.inputValue('#p-decode'), '3');
  assert.equal(await page.inputValue('#p-bw'), '50');
  assert.equal(await page.inputValue('#p-prefix'), '1024');
  await page.fill('#study-workers', '3');
  // Progress moves while the runs fan out.
  const seen = [];
  const watch = setInterval(async () => { try { seen.push(await page.textContent('#study-status')); } catch { /* closed */ } }, 20);
  await runStudy(page);
  clearInterval(watch);
  assert.equal(await page.getAttribute('#study-status', 'data-workers'), '3');
  assert.match(await page.textContent('#study-status'), /Done: 4 runs/);
  assert.ok(seen.some((s) => /Running/.test(s)), `progress shown: ${seen.slice(0, 5)}`);
  // The table: 4 rows with every column, the best one highlighted, a diagnosis per row.
  const rows = await page.$$eval('#study-table-el tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.equal(rows.length, 4);
  assert.deepEqual(rows.map((r) => r[0]), ['colocated', 'colocated + prefix cache', 'P/D', 'P/D + prefix cache']);
  const head = await page.$$eval('#study-table-el th', (ths) => ths.map((th) => th.textContent));
  for (const h of ['Scenario', 'GPU instances', 'Goodput', 'Goodput/GPU', 'SLO attainment', 'p95 TTFT', 'p95 E2E', 'p95 KV transfer', 'Cache hit', 'Prefill saved', 'Diagnosis']) {
    assert.ok(head.some((x) => x.startsWith(h)), `column ${h}`);
  }
  assert.equal(await page.$$eval('#study-table-el tr.best', (x) => x.length), 1);
  assert.ok(rows.every((r) => r[10].length > 20), 'a diagnosis sentence per row');
  assert.match(await page.textContent('#study-answer'), /goodput per GPU/);
  // Charts are drawn.
  for (const id of ['study-chart-0', 'study-chart-1']) {
    const inked = await page.evaluate((id) => {
      const c = document.getElementById(id);
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200) n++;
      return n / (c.width * c.height);
    }, id);
    assert.ok(inked > 0.02, `${id} has ink`);
  }
  // Sorting by a column reorders the rows and keeps the best one marked.
  await page.click('#study-table-el th[data-scol="3"]');
  await page.click('#study-table-el th[data-scol="3"]');
  const sorted = await page.$$eval('#study-table-el tbody tr', (trs) => trs.map((tr) => tr.children[3].textContent));
  assert.deepEqual(sorted, [...sorted].sort((a, b) => Number(b) - Number(a)));
  assert.equal(await page.$eval('#study-table-el tbody tr', (tr) => tr.className), 'best');
  // Exports: the JSON is the CLI's byte for byte (the CLI ran on 2 threads, the page on 3 workers).
  const json = await download(page, '#sx-json');
  assert.equal(json.name, 'inferscale-study-pd-pd-llama3-8b-h100-seed7.json');
  const cli = execFileSync(CLI, ['study', 'pd', 'scenarios/pd-llama3-8b-h100.json', '--threads', '2'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(json.text, cli);
  const csv = await download(page, '#sx-csv');
  assert.equal(csv.text, execFileSync(CLI, ['study', 'pd', 'scenarios/pd-llama3-8b-h100.json', '--format', 'csv'], { cwd: ROOT, encoding: 'utf8' }));
  const md = await download(page, '#sx-md');
  assert.match(md.text, /^# InferScale study: pd/);
  const png = await download(page, 'button[data-png="study-chart-0"]');
  assert.match(png.name, /\.png$/);
  // Panels keep their state: back to the lab and here again, the result is still there.
  await page.click('nav [data-panel="lab"]');
  assert.equal(await page.isVisible('#panel-lab'), true);
  await page.click('nav [data-panel="pd"]');
  assert.equal(await page.$$eval('#study-table-el tbody tr', (x) => x.length), 4);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('P/D comparison: inputs edit the scenario, bad ones are named, Cancel stops a long study, a link reruns it', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await page.click('nav [data-panel="pd"]');
  // The default scenario has no P/D block: the panel shows the split the study would use.
  assert.equal(await page.inputValue('#p-prefill'), '1');
  await page.fill('#p-bw', '0');
  await page.dispatchEvent('#p-bw', 'change');
  assert.match(await page.textContent('#study-errors'), /cluster\.disaggregation\.link\.bandwidth_gbps/);
  assert.equal(await page.getAttribute('#p-bw', 'aria-invalid'), 'true');
  assert.equal(await page.isDisabled('#study-run'), true);
  await page.fill('#p-bw', '12.5');
  await page.dispatchEvent('#p-bw', 'change');
  assert.equal(await page.isDisabled('#study-run'), false);
  const scenario = JSON.parse(await page.inputValue('#scenario'));
  assert.equal(scenario.cluster.disaggregation.link.bandwidth_gbps, 12.5, 'written into the Serving Lab\'s scenario');
  assert.equal(scenario.cluster.disaggregation.decode.replicas, 1);
  // A long study (4 × 200k requests) is cancelled mid-way; the page answers at once. (The scenario is
  // edited in the Serving Lab, then the P/D panel runs it.)
  const setScenario = async (v) => {
    await page.click('nav [data-panel="lab"]');
    await page.fill('#scenario', JSON.stringify(v));
    await page.dispatchEvent('#scenario', 'input');
    await page.click('nav [data-panel="pd"]');
  };
  const long = JSON.parse(await page.inputValue('#scenario'));
  long.workload.requests = 200000;
  await setScenario(long);
  assert.equal(await page.inputValue('#p-bw'), '12.5', 'the panel keeps its inputs');
  await page.click('#study-run');
  await page.waitForFunction(() => /Running/.test(document.getElementById('study-status').textContent));
  const t0 = Date.now();
  await page.click('#study-cancel');
  assert.match(await page.textContent('#study-status'), /Cancelled/);
  assert.ok(Date.now() - t0 < 2000, 'Cancel answered at once');
  assert.equal(await page.isDisabled('#study-run'), false);
  // A shorter study, then its link in a fresh page reruns it to the identical result.
  long.workload.requests = 800;
  await setScenario(long);
  await runStudy(page);
  const first = await download(page, '#sx-json');
  const href = await page.evaluate(() => location.href);
  assert.match(href, /#panel=pd&scenario=/);
  const again = await ctx.newPage();
  await again.goto(href);
  await again.waitForFunction(() => /^Done/.test(document.getElementById('study-status')?.textContent || ''), null, { timeout: 60000 });
  assert.equal(await again.isVisible('#panel-study'), true);
  const second = await download(again, '#sx-json');
  assert.equal(second.text, first.text);
  assert.deepEqual(errors, [], 'no console errors');
  await again.close();
  await page.close();
});
