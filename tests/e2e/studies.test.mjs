// End-to-end tests of the study panels in headless Chromium (dist/ served on 127.0.0.1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve, browser, openLab, download, inkFraction, recordTexts, typeInto, decisiveColumns, ROOT } from './browser.mjs';

const CLI = join(ROOT, 'target/release/inferscale');
let server, ctx;

before(async () => { server = await serve(); ctx = await browser(); });
after(async () => { await ctx?.close(); server?.stop(); });

// Run the shown study by keyboard (Run study focused, Enter): while it runs Run is disabled and the focus is on
// Cancel, and when it is done the focus is on the answer, not dropped to the page.
async function runStudy(page, timeout = 120000) {
  await page.getByRole('button', { name: 'Run study' }).focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout });
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'study-answer', 'the focus is on the answer');
  // Whatever the table's width, the columns its answer is read from are in view, beside the row's name.
  const { columns } = await decisiveColumns(page);
  for (const c of columns) assert.ok(c.inView, `${c.label} is out of view`);
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
  // Progress moves while the runs fan out (every status recorded in the page).
  const statuses = await recordTexts(page, 'study-status');
  await runStudy(page);
  const seen = await statuses();
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
    const inked = await inkFraction(page, id);
    assert.ok(inked > 0.02, `${id} has ink`);
  }
  // Sorting by a column reorders the rows and keeps the best one marked.
  // Goodput/GPU (the report's fourth column) is shown second, after the row's name, with SLO attainment: the
  // columns the answer is read from.
  const shownAt = (scol) => page.$$eval('#study-table-el th', (ths, k) => ths.findIndex((th) => th.dataset.scol === k), scol);
  assert.deepEqual((await decisiveColumns(page)).columns.map((c) => c.label), ['Goodput/GPU', 'SLO attainment']);
  assert.equal(await shownAt('3'), 1);
  await page.click('#study-table-el th[data-scol="3"]');
  await page.click('#study-table-el th[data-scol="3"]');
  const sorted = await page.$$eval('#study-table-el tbody tr', (trs) => trs.map((tr) => tr.children[1].textContent));
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

test('P/D comparison: inputs are the panel\'s own (the lab\'s scenario unchanged until "Use in Serving Lab"), bad ones are named, Cancel stops a long study, a link reruns it', async () => {
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
  assert.equal(scenario.cluster.disaggregation, undefined, 'the Serving Lab\'s scenario is unchanged');
  assert.equal(await page.isVisible('#study-own'), true);
  assert.match(await page.textContent('#study-own-fields'), /\/cluster\/disaggregation/);
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
  assert.match(href, /#panel=pd&params=.*&scenario=/);
  const again = await ctx.newPage();
  await again.goto(href);
  await again.waitForFunction(() => /^Done/.test(document.getElementById('study-status')?.textContent || ''), null, { timeout: 60000 });
  assert.equal(await again.isVisible('#panel-study'), true);
  const second = await download(again, '#sx-json');
  assert.equal(second.text, first.text);
  // "Use in Serving Lab" writes the panel's inputs into the lab's scenario, and the lab's Undo takes them back.
  await page.getByRole('button', { name: 'Use in Serving Lab' }).focus();
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'study-status', 'the focus is on what it did');
  assert.match(await page.textContent('#study-status'), /The Serving Lab now runs this panel's inputs/);
  const used = JSON.parse(await page.inputValue('#scenario'));
  assert.equal(used.cluster.disaggregation.link.bandwidth_gbps, 12.5);
  assert.equal(await page.isVisible('#study-own'), false);
  await page.click('nav [data-panel="lab"]');
  await page.getByRole('button', { name: /^Undo the P\/D comparison inputs/ }).click();
  assert.equal(JSON.parse(await page.inputValue('#scenario')).cluster.disaggregation, undefined);
  assert.deepEqual(errors, [], 'no console errors');
  await again.close();
  await page.close();
});

/** The options the panel ran with, from its link (`#panel=NAME&params=…&scenario=…`). */
async function optionsInLink(page) {
  const hash = await page.evaluate(() => location.hash);
  const m = /params=([^&]*)&scenario=/.exec(hash);
  return m ? decodeURIComponent(m[1]) : '{}';
}

async function setLabScenario(page, v) {
  await page.click('nav [data-panel="lab"]');
  await page.fill('#scenario', JSON.stringify(v));
  await page.dispatchEvent('#scenario', 'input');
}

const PANELS = [
  ['ranking', /ranks first/],
  ['capacity', /is the highest rate at which/],
  ['explorer', /frontier/],
  ['paired', /paired repetitions/],
  ['sensitivity', /nominal profile/],
];

/**
 * One study panel end to end: a long version cancelled mid-way (the panel stays usable), then `base` run with
 * its progress recorded, its answer, table and chart checked, and its JSON export compared with the CLI's on
 * `file`. Returns the browser's wall time of the run, ms.
 */
async function cancelThenMatchCli(page, name, answer, { file, base, long, minRows, exportName }) {
  await setLabScenario(page, long);
  await page.click(`nav [data-panel="${name}"]`);
  await page.fill('#study-workers', '2');
  await page.click('#study-run');
  await page.waitForFunction(() => /Running/.test(document.getElementById('study-status').textContent));
  await page.click('#study-cancel');
  assert.match(await page.textContent('#study-status'), /Cancelled/, name);
  assert.equal(await page.isDisabled('#study-run'), false, name);
  await setLabScenario(page, base);
  await page.click(`nav [data-panel="${name}"]`);
  const statuses = await recordTexts(page, 'study-status');
  const t0 = Date.now();
  await runStudy(page);
  const ms = Date.now() - t0;
  const seen = await statuses();
  assert.ok(seen.some((s) => /Running: \d+ of \d+ runs/.test(s)), `${name}: progress shown (${seen.slice(0, 4)})`);
  assert.match(await page.textContent('#study-answer'), answer, name);
  assert.ok(await page.$$eval('#study-table-el tbody tr', (x) => x.length) >= minRows, name);
  assert.ok(await inkFraction(page, 'study-chart-0') > 0.02, `${name}: chart drawn`);
  const json = await download(page, '#sx-json');
  assert.match(json.name, new RegExp(`^inferscale-study-${name}-${exportName}\\.json$`));
  const params = await optionsInLink(page);
  const cli = execFileSync(CLI, ['study', name, file, '--params', params, '--threads', '1'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(json.text, cli, `${name}: the browser's JSON equals the CLI's`);
  return ms;
}

test('every study panel: progress, Cancel, a result, and a JSON export equal to the CLI\'s', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const base = JSON.parse(readFileSync(join(ROOT, 'scenarios/default.json'), 'utf8'));
  // Long enough that Cancel lands mid-run on a busy machine: paired's 20 runs of 60,000 requests once finished
  // (1.6 s on 2 workers) before the click did.
  const long = { ...base, workload: { ...base.workload, requests: 400000 } };
  for (const [name, answer] of PANELS) {
    await cancelThenMatchCli(page, name, answer, { file: 'scenarios/default.json', base, long, minRows: 1, exportName: 'default-seed42' });
  }
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

const AGENT_PANELS = [
  ['agent-sessions', /p95 turn TTFT .* over \d+ turns of \d+ sessions/],
  ['agent-policies', /has the lowest p95 turn TTFT/],
  ['ttl-sweep', /is the knee/],
  ['tiered-kv', /lowest p95 turn TTFT without a budget/],
  ['affinity-slack', /gives the lowest p95 turn TTFT/],
  ['adaptive-tiering', /has the lowest p95 turn TTFT.*Learned per tool, the gap estimate agrees with the oracle's choice on \d+ %/],
];

test('every Agents study panel, on the shipped agent scenario: progress, Cancel, a result, and the CLI\'s JSON', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const base = JSON.parse(readFileSync(join(ROOT, 'scenarios/agent-sessions.json'), 'utf8'));
  // The sidebar has an Agents group.
  const agents = await page.$$eval('nav h2', (hs) => hs.map((h) => h.textContent));
  assert.ok(agents.includes('Agents'), agents.join(', '));
  // On a scenario without sessions the panel takes the agent example's as its own input, and says so.
  await page.click('nav [data-panel="ttl-sweep"]');
  assert.match(await page.textContent('#study-own'), /\/workload\/sessions \(the agent example's/);
  assert.equal(await page.textContent('#study-errors'), '');
  assert.equal(await page.isDisabled('#study-run'), false, 'it runs without loading the example');
  const long = { ...base, workload: { ...base.workload, requests: 4000 } };
  for (const [name, answer] of AGENT_PANELS) {
    const ms = await cancelThenMatchCli(page, name, answer, { file: 'scenarios/agent-sessions.json', base, long, minRows: 4, exportName: 'agent-sessions-seed7' });
    console.log(`# ${name} on agent-sessions: ${ms} ms in the browser with 2 workers`);
  }
  // Tiered KV's second table: the same five policies at each of the four budgets, under its title.
  await page.click('nav [data-panel="tiered-kv"]');
  assert.equal(await page.$$eval('#study-table-el tbody tr', (x) => x.length), 5);
  const budgetRows = await page.$$eval('#study-table-1 tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.equal(budgetRows.length, 20);
  assert.deepEqual(budgetRows.slice(0, 5).map((r) => r[2]), ['1', '1', '1', '1', '1'], 'a set value shows as written');
  assert.equal(budgetRows[19][2], '0.1');
  assert.match(await page.textContent('#study-table'), /Under a shrinking HBM budget per replica/);
  // Adaptive tiering: six policies, the α sweep under its title; α and the shift typed, checked at their field.
  await page.click('nav [data-panel="adaptive-tiering"]');
  assert.equal(await page.$$eval('#study-table-el tbody tr', (x) => x.length), 6);
  assert.equal(await page.$$eval('#study-table-1 tbody tr', (x) => x.length), 5);
  assert.match(await page.textContent('#study-table'), /The estimate's weight α/);
  const alpha = page.getByRole('spinbutton', { name: /EWMA weight/ });
  await typeInto(page, alpha, '0');
  assert.match(await page.textContent('#study-errors'), /study\.adaptive-tiering\.alpha/);
  assert.equal(await page.isDisabled('#study-run'), true);
  assert.equal(await alpha.inputValue(), '0', 'nothing typed is lost');
  await typeInto(page, alpha, '3e-1');
  assert.equal(await page.textContent('#study-errors'), '');
  const shift = page.getByRole('textbox', { name: /Tool shift/ });
  await typeInto(page, shift, '{"tool": "nope", "at_s": 100, "factor": 3}');
  assert.match(await page.textContent('#study-errors'), /study\.adaptive-tiering\.shift\.tool.*no tool is named "nope"/);
  await typeInto(page, shift, '{"tool": "grep", "at_s": 100, "factor": 3}');
  assert.equal(await page.textContent('#study-errors'), '');
  await typeInto(page, shift, '');
  assert.equal(await page.textContent('#study-errors'), '', 'empty: the default shift');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('Agent sessions panel: retention, router and host tier are selects with their numbers, typed and checked by the core', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await page.selectOption('#preset', 'agent-sessions');
  await page.click('nav [data-panel="agent-sessions"]');
  const lab = await page.inputValue('#scenario');
  // The panel's inputs are its own: the scenario it runs is shown beside them; the lab's stays as it was.
  const scenario = async () => JSON.parse(await page.textContent('#study-own-text'));
  const retention = page.getByRole('combobox', { name: /Retention/ });
  const ttl = page.getByRole('spinbutton', { name: /^TTL/ });
  const router = page.getByRole('combobox', { name: /Router/ });
  const slack = page.getByRole('spinbutton', { name: /Affinity slack/ });
  const host = page.getByRole('combobox', { name: /Host tier/ });
  const capacity = page.getByRole('spinbutton', { name: /Host capacity/ });
  const typeInto = async (field, text) => {
    await field.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    await page.keyboard.type(text);
    await page.keyboard.press('Tab');
  };
  // The shipped scenario, shown: TTL 10 s, sticky (no slack to set), a 256 GB host tier.
  assert.equal(await retention.inputValue(), 'ttl');
  assert.equal(await ttl.inputValue(), '10');
  assert.equal(await router.inputValue(), 'sticky');
  assert.equal(await slack.isVisible(), false, 'sticky takes no slack');
  assert.equal(await host.inputValue(), 'host');
  assert.equal(await capacity.inputValue(), '256');
  // Another kind drops the TTL, from the field and the scenario; back to TTL writes its default.
  await retention.selectOption('retain');
  assert.equal(await ttl.isVisible(), false);
  assert.deepEqual((await scenario()).workload.sessions.retention, { kind: 'retain' });
  await retention.selectOption('ttl');
  assert.equal(await ttl.inputValue(), '10');
  await typeInto(ttl, '2.5');
  assert.deepEqual((await scenario()).workload.sessions.retention, { kind: 'ttl', ttl_s: 2.5 });
  await typeInto(ttl, '1e-300');
  assert.equal((await scenario()).workload.sessions.retention.ttl_s, 1e-300);
  assert.equal(await page.isDisabled('#study-run'), false);
  // Out of range: refused at the TTL field, Run disabled; nothing typed is lost.
  await typeInto(ttl, '-1');
  assert.match(await page.textContent('#study-errors'), /workload\.sessions\.retention\.ttl_s/);
  assert.equal(await ttl.getAttribute('aria-invalid'), 'true');
  assert.equal(await page.isDisabled('#study-run'), true);
  assert.equal(await ttl.inputValue(), '-1');
  await typeInto(ttl, '');
  assert.deepEqual((await scenario()).workload.sessions.retention, { kind: 'ttl' }, 'empty: no expiry');
  // Bounded affinity shows its slack, with a default; typed, it reaches the scenario.
  await router.selectOption('bounded_affinity');
  assert.equal(await slack.inputValue(), '50');
  await typeInto(slack, '20');
  assert.deepEqual((await scenario()).cluster.router, { kind: 'bounded_affinity', slack_ms: 20 });
  // No host tier: the block goes; host offload then needs one, said at the Retention select.
  await host.selectOption('none');
  assert.equal((await scenario()).engine.host_kv, undefined);
  assert.equal(await capacity.isVisible(), false);
  await retention.selectOption('host_offload');
  assert.match(await page.textContent('#study-errors'), /workload\.sessions\.retention: host_offload .*needs engine\.host_kv/);
  assert.equal(await retention.getAttribute('aria-invalid'), 'true');
  await host.selectOption('host');
  assert.deepEqual((await scenario()).engine.host_kv, { capacity_gb: 256, bandwidth_gbps: 25, latency_ms: 0.05 });
  await typeInto(capacity, '0.5');
  assert.equal((await scenario()).engine.host_kv.capacity_gb, 0.5);
  assert.equal(await page.isDisabled('#study-run'), false);
  await runStudy(page);
  assert.match(await page.textContent('#study-answer'), /p95 turn TTFT .* over \d+ turns of 200 sessions/);
  assert.equal(await page.inputValue('#scenario'), lab, 'the Serving Lab\'s scenario is unchanged');
  // With session classes, a field of the sessions' own says which classes take it, and is disabled when
  // every class sets its own; the result has each class's rows.
  await page.click('nav [data-panel="lab"]');
  await page.selectOption('#preset', 'agent-mix');
  await page.click('nav [data-panel="agent-sessions"]');
  assert.match(await page.textContent('#study-scenario'), /session classes chat, quick_fix, feature/);
  assert.equal(await page.getByRole('spinbutton', { name: /^Turns mean/ }).isDisabled(), true);
  const first = page.getByRole('spinbutton', { name: /First prompt/ });
  assert.equal(await first.isDisabled(), false);
  assert.match(await first.getAttribute('title'), /used by the session classes quick_fix$/);
  await runStudy(page);
  const figures = await page.$$eval('#study-table-el tbody tr', (trs) => trs.map((tr) => tr.children[0].textContent));
  for (const c of ['chat', 'quick_fix', 'feature']) assert.ok(figures.includes(`${c}: p95 turn TTFT`), figures.join(' | '));
  assert.ok(await inkFraction(page, 'study-chart-2') > 0.01, 'the by-class chart is drawn');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('a session trace uploads in the Serving Lab and the Agent sessions study replays it; a malformed one is named and changes nothing', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await page.selectOption('#preset', 'agent-sessions');
  const scenario = async () => JSON.parse(await page.inputValue('#scenario'));
  assert.equal(await page.inputValue('#c-router'), 'sticky', 'the Serving Lab shows the session routers too');
  await page.setInputFiles('#c-session-trace', join(ROOT, 'scenarios/traces/sample-sessions.jsonl'));
  await page.waitForFunction(() => document.getElementById('scenario').value.includes('"sample-sessions.jsonl"'));
  const s = (await scenario()).workload.sessions;
  assert.deepEqual(s.trace, { path: 'sample-sessions.jsonl', format: 'auto' });
  for (const k of ['turns', 'first_tokens', 'new_tokens', 'output_tokens', 'tools']) assert.equal(s[k], undefined, `${k} comes from the trace`);
  assert.deepEqual(s.retention, { kind: 'ttl', ttl_s: 10 }, 'the retention policy stays');
  assert.equal(await page.isDisabled('#run'), false);
  // A malformed trace: named by line and key; the scenario keeps the trace it had.
  const bad = '{"id": "a", "turns": [{"new_tokens": 10, "output_tokens": 5}]}\n{"id": "b", "turns": [{"new_tokens": -3, "output_tokens": 5}]}\n';
  await page.setInputFiles('#c-session-trace', { name: 'bad.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(bad) });
  await page.waitForFunction(() => !document.getElementById('notice').hidden);
  assert.match(await page.textContent('#notice'), /Session trace bad\.jsonl was not loaded: workload\.sessions\.trace: line 2.*new_tokens/);
  assert.equal(await page.getAttribute('#c-session-trace', 'aria-invalid'), 'true');
  assert.deepEqual((await scenario()).workload.sessions.trace, { path: 'sample-sessions.jsonl', format: 'auto' });
  // The study replays the recorded sessions: 24 of them, 215 turns.
  await page.click('nav [data-panel="agent-sessions"]');
  await runStudy(page);
  assert.match(await page.textContent('#study-answer'), /over 215 turns of 24 sessions/);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('study options are validated by the core and named on their field', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await page.click('nav [data-panel="capacity"]');
  // The field is the core's description of the option: its label, and its bound as the input's limits.
  const target = page.getByRole('spinbutton', { name: /^SLO attainment target/ });
  assert.equal(await target.getAttribute('min'), '0');
  assert.equal(await target.getAttribute('max'), '1');
  await typeInto(page, target, '1.5');
  assert.match(await page.textContent('#study-errors'), /study\.capacity\.target/);
  assert.equal(await target.getAttribute('aria-invalid'), 'true');
  assert.equal(await page.isDisabled('#study-run'), true);
  await typeInto(page, target, '0.95');
  assert.equal(await page.isDisabled('#study-run'), false);
  await page.click('nav [data-panel="explorer"]');
  const candidates = page.getByRole('textbox', { name: /^Candidates/ });
  await typeInto(page, candidates, '[]');
  assert.match(await page.textContent('#study-errors'), /study\.explorer\.candidates/);
  await typeInto(page, candidates, '[{"name": "bigger batch", "set": {"/engine/max_num_seqs": 512}}, {"name": "two replicas", "set": {"/cluster/replicas": 2}}]');
  assert.equal(await page.isDisabled('#study-run'), false);
  await runStudy(page);
  const names = await page.$$eval('#study-table-el tbody tr', (trs) => trs.map((tr) => tr.children[0].textContent));
  assert.deepEqual(names, ['bigger batch', 'two replicas']);
  // The link carries the options: a fresh page reruns the same study.
  const href = await page.evaluate(() => location.href);
  const first = await download(page, '#sx-json');
  const again = await ctx.newPage();
  await again.goto(href);
  await again.waitForFunction(() => /^Done/.test(document.getElementById('study-status')?.textContent || ''), null, { timeout: 60000 });
  assert.equal((await download(again, '#sx-json')).text, first.text);
  assert.deepEqual(errors, [], 'no console errors');
  await again.close();
  await page.close();
});

test('benchmark (printed, not asserted): capacity planner (R = 5) and design explorer on a 10k-request scenario, 1 and all workers, browser and native', async () => {
  const { page } = await openLab(ctx, server.url);
  const base = JSON.parse(readFileSync(join(ROOT, 'scenarios/default.json'), 'utf8'));
  const spec = { ...base, workload: { ...base.workload, requests: 10000 } };
  const file = join(ROOT, 'target', 'bench-study-10k.json');
  writeFileSync(file, JSON.stringify(spec));
  await setLabScenario(page, spec);
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  const rows = [];
  for (const name of ['capacity', 'explorer']) {
    await page.click(`nav [data-panel="${name}"]`);
    for (const workers of [1, cores]) {
      await page.fill('#study-workers', String(workers));
      await runStudy(page);
      const ms = Number(await page.getAttribute('#study-status', 'data-run-ms'));
      const runs = /Done: (\d+) runs/.exec(await page.textContent('#study-status'))[1];
      const params = await optionsInLink(page);
      const t0 = process.hrtime.bigint();
      execFileSync(CLI, ['study', name, file, '--params', params, '--threads', String(workers)], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
      const nativeMs = Number(process.hrtime.bigint() - t0) / 1e6;
      rows.push(`# study ${name} (10k requests, ${runs} runs), ${workers} worker(s): browser ${ms.toFixed(0)} ms, native ${nativeMs.toFixed(0)} ms (target: browser < 2000 ms)`);
    }
  }
  for (const r of rows) console.log(r);
  await page.close();
});

test('capacity planner: "how many replicas for this load?" typed with the keyboard, answered by simulation, JSON equal to the CLI\'s', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const base = JSON.parse(readFileSync(join(ROOT, 'scenarios/default.json'), 'utf8'));
  await setLabScenario(page, { ...base, workload: { ...base.workload, requests: 600 } });
  await page.click('nav [data-panel="capacity"]');
  const field = page.getByRole('spinbutton', { name: /Or: fewest replicas for/ });
  await field.click();
  await page.keyboard.type('12.5');
  await page.keyboard.press('Tab');
  const reps = page.getByRole('spinbutton', { name: /^Repetitions/ });
  await reps.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.type('2');
  await page.keyboard.press('Tab');
  await runStudy(page);
  assert.match(await page.textContent('#study-answer'), /^Answer: \d+ replicas? \(\d+ GPUs\) (carry|already passes at) 12\.5 req\/s/);
  const head = await page.$$eval('#study-table-el th', (ths) => ths.map((th) => th.textContent));
  assert.ok(head[0].startsWith('Replicas'), head.join(' | '));
  const json = await download(page, '#sx-json');
  const params = await optionsInLink(page);
  assert.equal(JSON.parse(params).target_rps, 12.5);
  writeFileSync(join(ROOT, 'target/e2e-capacity-replicas.json'), JSON.stringify({ ...base, workload: { ...base.workload, requests: 600 } }));
  const cli = execFileSync(CLI, ['study', 'capacity', 'target/e2e-capacity-replicas.json', '--params', params, '--threads', '1'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(json.text, cli, 'the browser\'s JSON equals the CLI\'s');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

const WORKFLOW_PANELS = [
  ['exec-learning', /has the lowest p95 TTFT, .* with the prefix cache alone; its steps find their role's prefix \d+ %/],
  ['prefetch-threshold', /Threshold [\d.]+ has the lowest p95 TTFT/],
  ['transition-decay', /names the next role best after the shift: \d+ % \(cumulative counts: \d+ %\)/],
  ['forecast', /has the lowest p95 TTFT, .*Forecasting \d+ steps ahead, the threshold plan wants \d+ % of the next \d+ steps' roles in HBM/],
  ['forecast-horizon', /^Answer: Horizon \d+ has the lowest p95 TTFT/],
  ['prefix-budget', /The fastest plan at each budget: 0\.25 × — /],
  ['research-summary', /ranks first: median p95 TTFT \d+ ms over 10 seeds \(95 % CI of the mean \d+ ms – \d+ ms\)/],
];

test('every execution-learning panel, on the shipped workflow scenario: progress, Cancel, a result, the CLI\'s JSON; a bad option typed is named at its field', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const base = JSON.parse(readFileSync(join(ROOT, 'scenarios/agent-workflows.json'), 'utf8'));
  // On a scenario without a workflow the panel takes the workflow example's sessions as its own input.
  await setLabScenario(page, JSON.parse(readFileSync(join(ROOT, 'scenarios/agent-sessions.json'), 'utf8')));
  await page.click('nav [data-panel="exec-learning"]');
  assert.equal(await page.textContent('#study-errors'), '');
  assert.equal(await page.isDisabled('#study-run'), false, 'it runs without loading the example');
  const long = { ...base, workload: { ...base.workload, requests: 4000 } };
  for (const [name, answer] of WORKFLOW_PANELS) {
    const ms = await cancelThenMatchCli(page, name, answer, { file: 'scenarios/agent-workflows.json', base, long, minRows: 5, exportName: 'agent-workflows-seed11' });
    console.log(`# ${name} on agent-workflows: ${ms} ms in the browser with 2 workers`);
  }
  // The clairvoyant row is a bound: set apart, never the best row.
  await page.click('nav [data-panel="forecast"]');
  const bound = await page.$$eval('#study-table-el tbody tr.bound', (rows) => rows.map((r) => r.cells[0].textContent));
  assert.equal(bound.length, 1);
  assert.match(bound[0], /^clairvoyant/);
  await page.click('nav [data-panel="exec-learning"]');
  const threshold = page.getByRole('spinbutton', { name: /^Threshold/ });
  await typeInto(page, threshold, '2');
  assert.match(await page.textContent('#study-errors'), /study\.exec-learning\.threshold/);
  assert.equal(await page.isDisabled('#study-run'), true);
  assert.equal(await threshold.inputValue(), '2', 'nothing typed is lost');
  await typeInto(page, threshold, '2.5e-1');
  assert.equal(await page.textContent('#study-errors'), '');
  const decays = page.getByRole('textbox', { name: /Decays/ });
  await page.click('nav [data-panel="transition-decay"]');
  await typeInto(page, decays, '[1, 0]');
  assert.match(await page.textContent('#study-errors'), /study\.transition-decay\.decays\[1\]/);
  await typeInto(page, decays, '[1, 0.9]');
  assert.equal(await page.textContent('#study-errors'), '');
  // A multi-step forecast looks further than the next step: 1 is named at its field, 4 is taken.
  await page.click('nav [data-panel="forecast"]');
  const horizon = page.getByRole('spinbutton', { name: /^Horizon/ });
  await typeInto(page, horizon, '1');
  assert.match(await page.textContent('#study-errors'), /study\.forecast\.horizon: must be an integer from 2 to 16/);
  await typeInto(page, horizon, '4');
  assert.equal(await page.textContent('#study-errors'), '');
  const budgets = page.getByRole('textbox', { name: /Budgets/ });
  await page.click('nav [data-panel="prefix-budget"]');
  await typeInto(page, budgets, '[0.5, 1e308]');
  assert.match(await page.textContent('#study-errors'), /study\.prefix-budget\.budgets\[1\]/);
  await typeInto(page, budgets, '[0.25, 1]');
  assert.equal(await page.textContent('#study-errors'), '');
  // The research summary's seeds and the oracle's grid, typed.
  await page.click('nav [data-panel="research-summary"]');
  const seeds = page.getByRole('spinbutton', { name: /^Seeds/ });
  await typeInto(page, seeds, '1');
  assert.match(await page.textContent('#study-errors'), /study\.research-summary\.seeds: must be an integer from 2 to 64/);
  await typeInto(page, seeds, '12');
  assert.equal(await page.textContent('#study-errors'), '');
  const grid = page.getByRole('textbox', { name: /Oracle grid: thresholds/ });
  await typeInto(page, grid, '[0.2, -1]');
  assert.match(await page.textContent('#study-errors'), /study\.research-summary\.grid_thresholds\[1\]/);
  await typeInto(page, grid, '[0.2]');
  assert.equal(await page.textContent('#study-errors'), '');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('Repetitions typed in a study panel: bad counts named at the field, the table shows mean ± interval and sorts by the mean, the CSV carries the interval\'s ends, the JSON is the CLI\'s', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const base = JSON.parse(readFileSync(join(ROOT, 'scenarios/agent-workflows.json'), 'utf8'));
  const small = { ...base, workload: { ...base.workload, requests: 120 } };
  await setLabScenario(page, small);
  // research-summary repeats over its own seeds: no second field.
  await page.click('nav [data-panel="research-summary"]');
  assert.equal(await page.getByRole('spinbutton', { name: /^Repetitions/ }).count(), 0);
  await page.click('nav [data-panel="prefetch-threshold"]');
  await typeInto(page, page.getByRole('textbox', { name: /^Thresholds/ }), '[0.1, 0.5]');
  const reps = page.getByRole('spinbutton', { name: /^Repetitions/ });
  assert.equal(await reps.inputValue(), '', 'once, until typed');
  for (const bad of ['0', '21', '2.5', '-3']) {
    await typeInto(page, reps, bad);
    assert.match(await page.textContent('#study-errors'), /study\.prefetch-threshold\.repetitions: must be an integer from 1 to 20/, bad);
    assert.equal(await page.isDisabled('#study-run'), true, bad);
    assert.equal(await reps.inputValue(), bad, 'nothing typed is lost');
  }
  await typeInto(page, reps, '3');
  assert.equal(await page.textContent('#study-errors'), '');
  await runStudy(page);
  assert.match(await page.textContent('#study-answer'), /^Answer: Over 3 repetitions, Threshold 0\.[15] is the best row \(best in \d of 3\)/);
  const cells = () => page.$$eval('#study-table-el tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  const rows = await cells();
  assert.equal(rows.length, 2);
  assert.deepEqual(rows.map((r) => r[0]), ['0.1', '0.5'], 'the set thresholds stay as set');
  assert.match(rows[0][1], /^\d+ ms ± \d+(\.\d)? ms$/, 'p95 TTFT as mean ± half-width');
  // Sorting by p95 TTFT orders the rows by the mean, both ways.
  const mean = (r) => parseFloat(r[1]);
  await page.click('#study-table-el th[data-scol="1"]');
  let sorted = await cells();
  assert.ok(mean(sorted[0]) <= mean(sorted[1]), `${sorted.map((r) => r[1])}`);
  await page.click('#study-table-el th[data-scol="1"]');
  sorted = await cells();
  assert.ok(mean(sorted[0]) >= mean(sorted[1]), `${sorted.map((r) => r[1])}`);
  const csv = await download(page, '#sx-csv');
  assert.match(csv.text.split('\n')[0], /p95 TTFT \(s\),p95 TTFT 95 % low,p95 TTFT 95 % high/);
  const json = await download(page, '#sx-json');
  const params = await optionsInLink(page);
  assert.equal(JSON.parse(params).repetitions, 3, 'the link carries the repetitions');
  writeFileSync('/tmp/inferscale-e2e-small-workflows.json', JSON.stringify(small));
  const cli = execFileSync(CLI, ['study', 'prefetch-threshold', '/tmp/inferscale-e2e-small-workflows.json', '--params', params], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(json.text, cli, 'the browser\'s JSON equals the CLI\'s');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
