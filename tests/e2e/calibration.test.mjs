// End-to-end tests of the Calibration panel in headless Chromium (dist/ served on 127.0.0.1): result files
// chosen as a user chooses them, the cases and their notes, training marks toggled with the keyboard, the
// run, the charts, and exports equal to the CLI's on the same files.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve, browser, openLab, download, inkFraction, ROOT } from './browser.mjs';

const CLI = join(ROOT, 'target/release/inferscale');
const RESULTS = join(ROOT, 'tests/data/results');
const FILES = ['vllm-runs-jsonl.json', 'vllm-current.json', 'sglang-bench-serving.jsonl', 'vllm-legacy.json', 'broken.jsonl'];
let server, ctx;

before(async () => { server = await serve(); ctx = await browser(); });
after(async () => { await ctx?.close(); server?.stop(); });

/** The CLI in the results folder, so that case ids are the bare file names the page sees. */
function cli(args) {
  return execFileSync(CLI, args, { cwd: RESULTS, encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
}

async function openCalibration() {
  const opened = await openLab(ctx, server.url);
  await opened.page.click('nav [data-panel="calibration"]');
  assert.equal(await opened.page.isVisible('#panel-calibration'), true);
  assert.equal(await opened.page.isVisible('#panel-lab'), false);
  return opened;
}

async function importFiles(page, names) {
  await page.setInputFiles('#cal-files', names.map((f) => join(RESULTS, f)));
  await page.waitForFunction((n) => document.querySelectorAll('#cal-cases-table tbody tr[data-set]').length >= n && !/Reading/.test(document.getElementById('cal-status').textContent), 6, { timeout: 20000 });
}

async function runCalibration(page) {
  await page.click('#cal-run');
  await page.waitForFunction(() => /^Done in/.test(document.getElementById('cal-status').textContent), null, { timeout: 120000 });
}

test('with nothing imported the panel says how to produce the files, and Run waits for them', async () => {
  const { page, errors } = await openCalibration();
  assert.match(await page.textContent('#cal-how'), /vllm bench serve .*--save-result.*sglang\.bench_serving/s);
  assert.equal(await page.isDisabled('#cal-run'), true);
  assert.equal(await page.isDisabled('#cal-cancel'), true);
  assert.equal(await page.isVisible('#cal-results'), false);
  assert.match(await page.textContent('#cal-scenario'), /default: llama-3-8b on a100-80g/);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('result files import with their notes; a bad file names its line and key; the run equals `inferscale calibrate`', async () => {
  const { page, errors } = await openCalibration();
  await importFiles(page, FILES);
  const bundle = JSON.parse(cli(['import', ...FILES]));
  const rows = await page.$$eval('#cal-cases-table tbody tr[data-set]', (trs) => trs.map((tr) => tr.children[1].textContent));
  assert.deepEqual(rows, bundle.cases.map((c) => c.id), 'the same cases as `inferscale import`, in order');
  assert.match(await page.textContent('#cal-cases'), /request_rate inf under max_concurrency 32: closed loop/);
  assert.match(await page.textContent('#cal-import-errors'), /broken\.jsonl:2: `duration`: must be a finite number/);
  assert.equal(await page.isVisible('#cal-how'), false);
  // The exported bundle is the CLI's.
  const b = await download(page, '#cal-bundle');
  assert.equal(b.text, cli(['import', ...FILES]));
  // The default split: every other case by offered load, as the CLI's default.
  await runCalibration(page);
  const exported = await download(page, '#cx-json');
  writeFileSync(join(ROOT, 'target', 'e2e-bundle.json'), b.text);
  const cliJson = cli(['calibrate', join(ROOT, 'target', 'e2e-bundle.json'), '--scenario', join(ROOT, 'scenarios/default.json')]);
  assert.equal(exported.text, cliJson, 'browser JSON export equals `inferscale calibrate` byte for byte');
  assert.match(exported.name, /^inferscale-calibration-default\.json$/);
  const cal = JSON.parse(cliJson);
  assert.match(await page.textContent('#cal-answer'), new RegExp(`prefill × ${cal.fitted.prefill.toFixed(3)}, decode × ${cal.fitted.decode.toFixed(3)}`));
  assert.equal(await page.$$eval('#cal-rows tbody tr', (t) => t.length), cal.rows.length);
  assert.match(await page.textContent('#cal-rows'), /held out: (within|better|worse)/);
  assert.match(await page.textContent('#cal-notes'), /cannot fix a scheduler/);
  // Which model to use comes first, as the CLI's verdict says it; then the errors held out and left out.
  const answer = await page.textContent('#cal-answer');
  assert.ok(answer.includes(`Use the ${cal.recommended} model. ${cal.verdict}`), answer);
  const headline = await page.textContent('#cal-headline');
  assert.match(headline, /Held out/);
  assert.match(headline, /Leave-one-out \(training cases\)/);
  const metrics = new Set(cal.rows.map((r) => r.metric));
  assert.equal(await page.$$eval('#cal-charts canvas', (c) => c.length), metrics.size, 'one chart per metric compared');
  assert.ok(metrics.has('TTFT mean') && metrics.has('E2E mean'), [...metrics].join(', '));
  for (const id of ['cal-chart-0', 'cal-chart-1', 'cal-chart-2']) {
    assert.ok(await inkFraction(page, id) > 0.02, `${id} is drawn`);
  }
  const csv = await download(page, '#cx-csv');
  assert.equal(csv.text, cli(['calibrate', join(ROOT, 'target', 'e2e-bundle.json'), '--scenario', join(ROOT, 'scenarios/default.json'), '--format', 'csv']));
  const md = await download(page, '#cx-md');
  assert.match(md.text, /^# Calibration/);
  // "Clear cases" clears the answer with them: it answered for cases no longer in the table.
  await page.click('#cal-clear');
  assert.equal(await page.isVisible('#cal-results'), false, 'no answer outlives its cases');
  assert.equal(await page.textContent('#cal-answer'), '');
  // The panel's own exported bundle imports back: the same cases, in order (it was refused as a result file).
  await page.setInputFiles('#cal-files', join(ROOT, 'target', 'e2e-bundle.json'));
  await page.waitForFunction((n) => document.querySelectorAll('#cal-cases-table tbody tr[data-set]').length === n, bundle.cases.length, { timeout: 20000 });
  const again = await page.$$eval('#cal-cases-table tbody tr[data-set]', (trs) => trs.map((tr) => tr.children[1].textContent));
  assert.deepEqual(again, bundle.cases.map((c) => c.id));
  assert.equal(await page.textContent('#cal-import-errors'), '');
  assert.equal((await download(page, '#cal-bundle')).text, b.text, 'and exports as it came');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('files chosen together keep their order, whatever finishes reading first; a file chosen twice is read once', async () => {
  const { page, errors } = await openCalibration();
  // The largest file first: sent as each read finished, the small ones used to overtake it.
  const order = ['sglang-bench-serving.jsonl', 'vllm-current.json', 'vllm-legacy.json', 'vllm-runs-jsonl.json'];
  await page.setInputFiles('#cal-files', [...order, 'vllm-legacy.json'].map((f) => join(RESULTS, f)));
  await page.waitForFunction(() => document.querySelectorAll('#cal-cases-table tbody tr[data-set]').length >= 6 && !/Reading/.test(document.getElementById('cal-status').textContent), null, { timeout: 20000 });
  const rows = await page.$$eval('#cal-cases-table tbody tr[data-set]', (trs) => trs.map((tr) => tr.children[1].textContent));
  assert.deepEqual(rows, JSON.parse(cli(['import', ...order])).cases.map((c) => c.id));
  assert.match(await page.textContent('#cal-import-errors'), /vllm-legacy\.json: chosen twice; read once/);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('an inference-perf stage report chosen with its config.yaml takes the server, the outputs and the cycled prompts from it, as the CLI does', async () => {
  const { page, errors } = await openCalibration();
  const run = join(ROOT, 'tests/data/inference-perf-run');
  const names = ['stage_0_lifecycle_metrics.json', 'config.yaml'];
  await page.setInputFiles('#cal-files', names.map((f) => join(run, f)));
  await page.waitForFunction(() => document.querySelectorAll('#cal-cases-table tbody tr[data-set]').length >= 1 && !/Reading/.test(document.getElementById('cal-status').textContent), null, { timeout: 20000 });
  const cases = await page.textContent('#cal-cases');
  assert.match(cases, /settings from config\.yaml/);
  assert.match(cases, /100 distinct prompts \(10 groups × 10 prompts/);
  assert.match(cases, /shared_prefix\.output_len = 248 tokens/);
  assert.equal(await page.textContent('#cal-import-errors'), '');
  const b = await download(page, '#cal-bundle');
  const cliBundle = execFileSync(CLI, ['import', ...names], { cwd: run, encoding: 'utf8' });
  assert.equal(b.text, cliBundle, 'the bundle is `inferscale import`\'s on the same two files');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('training marks toggle from the keyboard and the run trains on exactly those cases', async () => {
  const { page, errors } = await openCalibration();
  await importFiles(page, FILES.slice(0, 4));
  const box = page.getByRole('checkbox', { name: 'Train on vllm-legacy.json' });
  const was = await box.isChecked();
  await box.focus();
  await page.keyboard.press('Space');
  assert.equal(await box.isChecked(), !was);
  const train = await page.$$eval('#cal-cases-table tbody tr[data-set]', (trs) => trs.filter((tr) => tr.querySelector('input').checked).map((tr) => tr.children[1].textContent));
  assert.ok(train.includes('vllm-legacy.json') !== was);
  await runCalibration(page);
  const exported = await download(page, '#cx-json');
  const bundle = join(ROOT, 'target', 'e2e-bundle4.json');
  writeFileSync(bundle, cli(['import', ...FILES.slice(0, 4)]));
  assert.equal(exported.text, cli(['calibrate', bundle, '--scenario', join(ROOT, 'scenarios/default.json'), '--train', train.join(',')]));
  // An extra knob, ticked from the keyboard, is fitted as `--fit` fits it.
  const knob = page.getByRole('checkbox', { name: 'Request overhead' });
  await knob.focus();
  await page.keyboard.press('Space');
  await runCalibration(page);
  const withKnob = await download(page, '#cx-json');
  assert.equal(withKnob.text, cli(['calibrate', bundle, '--scenario', join(ROOT, 'scenarios/default.json'), '--train', train.join(','), '--fit', 'request_overhead']));
  assert.match(await page.textContent('#cal-answer'), /request overhead \+ [\d.]+ ms/);
  // The gate's tolerance, typed: out of range or not a number is marked at the field and nothing runs; fixed,
  // the mark goes. With "Choose by leave-one-out" ticked too, the run is `--fit auto,request_overhead`'s.
  const tolerance = page.getByRole('textbox', { name: /Gate tolerance/ });
  for (const bad of ['0', '1e308', '-5', 'abc']) {
    await tolerance.focus();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    await page.keyboard.type(bad);
    assert.equal(await tolerance.getAttribute('aria-invalid'), 'true', bad);
    assert.equal(await page.inputValue('#cal-tolerance'), bad, 'what was typed stays');
    await page.click('#cal-run');
    assert.match(await page.textContent('#cal-errors'), /Gate tolerance \(%\): /, bad);
    assert.match(await page.textContent('#cal-status'), /^Done in /, `${bad}: nothing ran`);
  }
  await tolerance.focus();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');
  await page.keyboard.type('7.5');
  assert.equal(await tolerance.getAttribute('aria-invalid'), 'false');
  const auto = page.getByRole('checkbox', { name: 'Choose by leave-one-out' });
  await auto.focus();
  await page.keyboard.press('Space');
  await runCalibration(page);
  const gated = await download(page, '#cx-json');
  assert.equal(gated.text, cli(['calibrate', bundle, '--scenario', join(ROOT, 'scenarios/default.json'), '--train', train.join(','), '--fit', 'auto,request_overhead', '--tolerance-pct', '7.5']));
  const gate = JSON.parse(gated.text).gate;
  assert.equal(gate.tolerance, 0.075);
  assert.match(await page.textContent('#cal-headline'), new RegExp(`Gate: the ${gate.model} model, ${gate.over}, within 7\\.5 %`));
  assert.match(await page.textContent('#cal-headline'), /Knobs tried: none/);
  // Unmarking every case leaves nothing to fit on: Run says why and stays off.
  for (const b of await page.getByRole('checkbox', { name: /^Train on / }).all()) {
    if (await b.isChecked()) { await b.focus(); await page.keyboard.press('Space'); }
  }
  assert.equal(await page.isDisabled('#cal-run'), true);
  assert.match(await page.textContent('#cal-errors'), /mark at least one case for training/);
  // The headers sort the table.
  await page.click('#cal-rows th:has-text("Calibrated APE")');
  const apes = await page.$$eval('#cal-rows tbody tr', (trs) => trs.map((tr) => parseFloat(tr.children[7].textContent)));
  assert.deepEqual(apes, [...apes].sort((a, b) => a - b));
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('a long calibration shows its progress and Cancel stops it at once; the page stays usable', async () => {
  // Twelve runs of 2,000 prompts each: long enough to cancel midway.
  const template = JSON.parse(readFileSync(join(RESULTS, 'vllm-current.json'), 'utf8'));
  const files = [];
  for (let i = 0; i < 12; i++) {
    const run = { ...template, request_rate: 1 + i, num_prompts: 2000, completed: 2000, total_input_tokens: 2000 * 1024, total_output_tokens: 2000 * 250 };
    const f = join(ROOT, 'target', `e2e-long-${i}.json`);
    writeFileSync(f, JSON.stringify(run));
    files.push(f);
  }
  const { page, errors } = await openCalibration();
  await page.setInputFiles('#cal-files', files);
  await page.waitForFunction(() => document.querySelectorAll('#cal-cases-table tbody tr[data-set]').length === 12, null, { timeout: 20000 });
  await page.click('#cal-run');
  await page.waitForFunction(() => /^Running: \d+ of about \d+ simulations/.test(document.getElementById('cal-status').textContent), null, { timeout: 30000 });
  assert.equal(await page.isDisabled('#cal-cancel'), false);
  const t0 = Date.now();
  await page.click('#cal-cancel');
  assert.match(await page.textContent('#cal-status'), /Cancelled/);
  assert.ok(Date.now() - t0 < 1000, 'Cancel answers at once');
  assert.equal(await page.isDisabled('#cal-run'), false);
  assert.equal(await page.isVisible('#cal-results'), false, 'no result was made');
  // A fresh worker takes the next run: a small one completes.
  await page.click('#cal-clear');
  await importFiles(page, FILES.slice(0, 4));
  await runCalibration(page);
  assert.equal(await page.isVisible('#cal-results'), true);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
