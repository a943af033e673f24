// The fleet planner's panel end to end in headless Chromium: its options typed with the keyboard, progress
// with the time left, Cancel, the table with the cheapest passing row marked, the chart drawn, and the JSON
// export equal to the CLI's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve, browser, openLab, download, recordTexts, decisiveColumns, ROOT } from './browser.mjs';

const CLI = join(ROOT, 'target/release/inferscale');
let server, ctx;

before(async () => { server = await serve(); ctx = await browser(); });
after(async () => { await ctx?.close(); server?.stop(); });

async function setLabScenario(page, v) {
  await page.click('nav [data-panel="lab"]');
  await page.fill('#scenario', JSON.stringify(v));
  await page.dispatchEvent('#scenario', 'input');
}

/** Select a field's text and type `text` over it, as a person would. */
async function typeOver(page, locator, text) {
  await locator.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.type(text);
  await page.keyboard.press('Tab');
}

async function optionsInLink(page) {
  const m = /params=([^&]*)&scenario=/.exec(await page.evaluate(() => location.hash));
  return m ? decodeURIComponent(m[1]) : '{}';
}

/** Share of a canvas's pixels drawn opaque and not near-white (a canvas never drawn is transparent). */
async function opaqueInk(page, id) {
  return page.$eval(`#${id}`, (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 200 && (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200)) n++;
    return n / (d.length / 4);
  });
}

test('fleet planner: options typed, progress with time left, Cancel, the cheapest row marked, JSON equal to the CLI\'s', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const base = JSON.parse(readFileSync(join(ROOT, 'scenarios/default.json'), 'utf8'));
  const small = { ...base, workload: { ...base.workload, requests: 500 } };
  // A long search first: cancelled mid-way, the panel stays usable.
  await setLabScenario(page, { ...base, workload: { ...base.workload, requests: 40000 } });
  await page.click('nav [data-panel="fleet"]');
  assert.equal(await page.textContent('#panel-study h2'), 'Fleet planner');
  await typeOver(page, page.getByRole('spinbutton', { name: /^Target rate/ }), '24');
  await typeOver(page, page.getByRole('spinbutton', { name: /^Repetitions/ }), '2');
  await typeOver(page, page.getByRole('textbox', { name: /^Devices/ }), '["a100-80g", "h100-sxm", "l40s"]');
  await typeOver(page, page.getByRole('textbox', { name: /^Layouts/ }),
    '[{"kind": "colocated"}, {"kind": "pd", "prefill": 1, "decode": 2, "decode_device": "l40s"}]');
  await page.fill('#study-workers', '2');
  await page.click('#study-run');
  await page.waitForFunction(() => /Running/.test(document.getElementById('study-status').textContent));
  const t = Date.now();
  await page.click('#study-cancel');
  assert.match(await page.textContent('#study-status'), /Cancelled/);
  assert.ok(Date.now() - t < 1000, 'Cancel answers at once');
  assert.equal(await page.isDisabled('#study-run'), false);
  // A bad option typed is named at its field as it is typed, and Run waits for a good one.
  await typeOver(page, page.getByRole('textbox', { name: /^Devices/ }), '["h9000"]');
  await page.waitForFunction(() => /unknown device/.test(document.getElementById('study-errors').textContent));
  assert.match(await page.textContent('#study-errors'), /study\.fleet\.devices\[0\].*unknown device `h9000`/);
  assert.equal(await page.isDisabled('#study-run'), true);
  await typeOver(page, page.getByRole('textbox', { name: /^Devices/ }), '["a100-80g", "h100-sxm", "l40s"]');
  // The search that counts, on a small scenario, its progress recorded.
  await setLabScenario(page, small);
  await page.click('nav [data-panel="fleet"]');
  assert.equal(await page.inputValue('#o-fleet-target-rps'), '24', 'the typed options are kept');
  const statuses = await recordTexts(page, 'study-status');
  await page.click('#study-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 300000 });
  const seen = await statuses();
  assert.ok(seen.some((s) => /Running: \d+ of \d+ runs done, about \d+ s left/.test(s)), `progress with time left: ${seen.slice(0, 4)}`);
  const answer = await page.textContent('#study-answer');
  assert.match(answer, /^Answer: .+: \d+ replicas? \(\d+ GPUs; the units a seed needs lie in \d+ – \d+ at 95 %\), \$[\d.]+\/h/);
  const rows = await page.$$eval('#study-table-el tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.equal(rows.length, 6, 'three devices × two layouts');
  const head = await page.$$eval('#study-table-el th', (ths) => ths.map((th) => th.textContent));
  for (const h of ['Candidate', 'Device(s)', 'TP', 'Layout', 'Replicas', 'GPUs', '$/h', '$/M input tokens', '$/M output tokens', 'Capacity/replica', 'Attainment at target', 'P(objectives met)', 'p95 TTFT', 'p95 E2E', 'Diagnosis', 'Status']) {
    assert.ok(head.some((x) => x.startsWith(h)), `column ${h}: ${head.join(' | ')}`);
  }
  // Twenty-two columns overflow the page; the ones the answer is read from stay in view beside the candidate.
  const decisive = await decisiveColumns(page);
  assert.ok(decisive.overflows, 'the fleet table is wider than its place');
  assert.deepEqual(decisive.columns.map((c) => [c.label, c.inView]), [['$/h', true], ['P(objectives met)', true], ['P(met), 95 % interval', true], ['Status', true]]);
  assert.deepEqual(head.slice(0, 5).map((h) => h.split(' ')[0]), ['Candidate', '$/h', 'P(objectives', 'P(met),', 'Status']);
  const best = await page.$$eval('#study-table-el tr.best', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.equal(best.length, 1);
  assert.ok(best[0].includes('cheapest passing'), best[0].join(' | '));
  assert.ok(rows.some((r) => r.includes('h100-sxm → l40s')), 'a P/D unit on two devices');
  assert.ok(await opaqueInk(page, 'study-chart-0') > 0.005, 'the cost vs p95 TTFT chart is drawn');
  // The JSON export is the CLI's on the same scenario and options.
  const json = await download(page, '#sx-json');
  const params = await optionsInLink(page);
  assert.deepEqual(JSON.parse(params).devices, ['a100-80g', 'h100-sxm', 'l40s']);
  writeFileSync(join(ROOT, 'target/e2e-fleet.json'), JSON.stringify(small));
  const cli = execFileSync(CLI, ['study', 'fleet', 'target/e2e-fleet.json', '--params', params, '--threads', '1'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(json.text, cli, 'the browser\'s JSON equals the CLI\'s');
  await page.screenshot({ path: join(ROOT, 'target/e2e-fleet.png'), fullPage: true });
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('benchmark (printed, not asserted): the 48-candidate × 3-repetition fleet search in the panel, 2 workers, beside the CLI', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await setLabScenario(page, JSON.parse(readFileSync(join(ROOT, 'scenarios/default.json'), 'utf8')));
  await page.click('nav [data-panel="fleet"]');
  await typeOver(page, page.getByRole('spinbutton', { name: /^Target rate/ }), '40');
  await typeOver(page, page.getByRole('spinbutton', { name: /^Repetitions/ }), '3');
  await typeOver(page, page.getByRole('textbox', { name: /^Devices/ }), '["a100-80g", "h100-sxm", "h200", "l40s"]');
  await typeOver(page, page.getByRole('textbox', { name: /^TP degrees/ }), '[1, 2]');
  await typeOver(page, page.getByRole('textbox', { name: /^Layouts/ }), '[{"kind": "colocated"}, {"kind": "pd", "prefill": 1, "decode": 1}]');
  await typeOver(page, page.getByRole('textbox', { name: /^Batch caps/ }), '[64, 128, 256]');
  await page.fill('#study-workers', '2');
  const statuses = await recordTexts(page, 'study-status');
  const t0 = Date.now();
  await page.click('#study-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 600000 });
  const browserMs = Date.now() - t0;
  const seen = await statuses();
  assert.equal(await page.$$eval('#study-table-el tbody tr', (x) => x.length), 48);
  const params = await optionsInLink(page);
  const t1 = Date.now();
  execFileSync(CLI, ['study', 'fleet', 'scenarios/default.json', '--params', params, '--threads', '2'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
  const cliMs = Date.now() - t1;
  const left = seen.filter((s) => /s left/.test(s)).slice(0, 3);
  console.log(`fleet search, 48 candidates × 3 repetitions, default.json: browser (2 workers) ${(browserMs / 1000).toFixed(1)} s — ${await page.textContent('#study-status')}; CLI (2 threads) ${(cliMs / 1000).toFixed(1)} s; first estimates shown: ${left.join(' | ')}`);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
