// Screenshots of the lab's main views, for docs/screenshots/ (run by scripts/screenshots.sh).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { serve, browser, openLab, runAndWait, typeInto, ROOT } from './browser.mjs';

const out = join(ROOT, 'docs/screenshots');
mkdirSync(out, { recursive: true });
const server = await serve();
const ctx = await browser();
const { page } = await openLab(ctx, server.url);
// The first view at 1400×900: Run must be in it.
await page.setViewportSize({ width: 1400, height: 900 });
await page.screenshot({ path: join(out, 'serving-lab-setup.png') });
await page.setViewportSize({ width: 1400, height: 1000 });
await page.selectOption('#preset', 'bursty-multitenant');
await page.locator('#details').scrollIntoViewIfNeeded();
await page.locator('#details').screenshot({ path: join(out, 'serving-lab-classes-tenants.png') });
await page.selectOption('#preset', 'default');
await runAndWait(page);
await page.locator('#diagnosis').scrollIntoViewIfNeeded();
await page.screenshot({ path: join(out, 'serving-lab-results.png'), fullPage: true });
// The parts of the results at a readable size.
await page.locator('#diagnosis').screenshot({ path: join(out, 'serving-lab-diagnosis.png') });
await page.locator('#cards').screenshot({ path: join(out, 'serving-lab-cards.png') });
await page.locator('#lab-charts').screenshot({ path: join(out, 'serving-lab-charts.png') });
await page.locator('#requests').screenshot({ path: join(out, 'serving-lab-requests.png') });
await page.locator('#d-objectives').screenshot({ path: join(out, 'serving-lab-objectives.png') });
// P/D and agent sessions as the Serving Lab's own controls, turned on from the keyboard.
for (const [name, id] of [['Prefill and decode on separate workers (P/D)', 'pd'], ['Agent sessions (multi-turn, tool calls between turns)', 'session']]) {
  const box = page.getByRole('checkbox', { name });
  await box.focus();
  await page.keyboard.press('Space');
  await page.locator(`#d-${id === 'pd' ? 'disagg' : 'sessions'}`).scrollIntoViewIfNeeded();
  await page.locator(`#d-${id === 'pd' ? 'disagg' : 'sessions'}`).screenshot({ path: join(out, `serving-lab-${id}-controls.png`) });
  await box.focus();
  await page.keyboard.press('Space');
}
// A broken JSON: the error at its line, marked in the gutter; a control typed meanwhile is held.
await page.click('#scenario');
await page.keyboard.press('Control+Home');
for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowDown');
await page.keyboard.press('End');
await page.keyboard.press('Backspace');
await page.locator('#c-rate').click();
await page.keyboard.press('Control+A');
await page.keyboard.type('7');
await page.keyboard.press('Tab');
await page.locator('.setup').scrollIntoViewIfNeeded();
await page.locator('.setup').screenshot({ path: join(out, 'serving-lab-json-error.png') });
await page.click('#scenario');
await page.keyboard.press('Control+Home');
for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowDown');
await page.keyboard.press('End');
await page.keyboard.type(',');
await page.keyboard.press('Tab');
await page.selectOption('#preset', 'kv-pressure');
// Typed as a user would: a negative rate and a cleared request count.
await page.locator('#c-rate').click();
await page.keyboard.press('Control+A');
await page.keyboard.type('-1');
await page.locator('#c-requests').click();
await page.keyboard.press('Control+A');
await page.keyboard.press('Backspace');
await page.locator('#controls').scrollIntoViewIfNeeded();
await page.screenshot({ path: join(out, 'serving-lab-invalid-input.png') });
// A 3× overload, diagnosed as capacity with the changes it tested on the same requests.
await page.selectOption('#preset', 'chat-70b-h100-tp4');
for (const [name, text] of [['Replicas', '3'], ['Rate (req/s)', '19.8']]) {
  await page.getByRole('spinbutton', { name, exact: true }).click();
  await page.keyboard.press('Control+A');
  await page.keyboard.type(text);
  await page.keyboard.press('Tab');
}
await page.click('#run');
await page.waitForFunction(() => /^Done in/.test(document.getElementById('status').textContent), null, { timeout: 120000 });
await page.locator('#diagnosis').screenshot({ path: join(out, 'serving-lab-diagnosis-overload.png') });
// The P/D comparison panel with its result, one of its inputs the panel's own (offered to the Serving Lab).
await page.selectOption('#preset', 'pd-llama3-8b-h100');
await page.click('nav [data-panel="pd"]');
await page.locator('#p-bw').click();
await page.keyboard.press('Control+A');
await page.keyboard.type('25');
await page.keyboard.press('Tab');
await page.click('#study-run');
await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 120000 });
await page.screenshot({ path: join(out, 'pd-comparison.png'), fullPage: true });
// Every other study panel, on the default scenario.
await page.click('nav [data-panel="lab"]');
await page.selectOption('#preset', 'default');
for (const name of ['ranking', 'capacity', 'explorer', 'paired', 'sensitivity']) {
  if (name === 'capacity') {
    // The replica question, typed: the fewest replicas for 6 req/s.
    await page.click('nav [data-panel="capacity"]');
    await page.getByRole('spinbutton', { name: /Or: fewest replicas for/ }).click();
    await page.keyboard.type('6');
    await page.keyboard.press('Tab');
    await page.click('#study-run');
    await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 120000 });
    await page.locator('#study-results').screenshot({ path: join(out, 'study-capacity-replicas-results.png') });
    await page.getByRole('spinbutton', { name: /Or: fewest replicas for/ }).click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    await page.keyboard.press('Tab');
  }
  await page.click(`nav [data-panel="${name}"]`);
  await page.click('#study-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 120000 });
  await page.screenshot({ path: join(out, `study-${name}.png`), fullPage: true });
  await page.locator('#study-results').screenshot({ path: join(out, `study-${name}-results.png`) });
}
// The fleet planner: three devices, colocated and a P/D unit on two devices, typed.
await page.click('nav [data-panel="fleet"]');
for (const [name, text] of [[/^Target rate/, '24'], [/^Repetitions/, '3']]) {
  await page.getByRole('spinbutton', { name }).click();
  await page.keyboard.press('Control+A');
  await page.keyboard.type(text);
  await page.keyboard.press('Tab');
}
for (const [name, text] of [[/^Devices/, '["a100-80g", "h100-sxm", "l40s"]'], [/^Layouts/, '[{"kind": "colocated"}, {"kind": "pd", "prefill": 1, "decode": 2, "decode_device": "l40s"}]']]) {
  await page.getByRole('textbox', { name }).click();
  await page.keyboard.press('Control+A');
  await page.keyboard.type(text);
  await page.keyboard.press('Tab');
}
await page.click('#study-run');
await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 300000 });
await page.locator('#study-results').screenshot({ path: join(out, 'study-fleet-results.png') });
// The Agents panels, on the shipped agent scenario.
await page.click('nav [data-panel="lab"]');
await page.selectOption('#preset', 'agent-sessions');
for (const name of ['agent-sessions', 'agent-policies', 'ttl-sweep', 'tiered-kv', 'affinity-slack', 'adaptive-tiering']) {
  await page.click(`nav [data-panel="${name}"]`);
  await page.click('#study-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 120000 });
  await page.locator('#study-results').screenshot({ path: join(out, `agents-${name}-results.png`) });
}
// The execution-learning panels, on the shipped workflow scenario.
await page.click('nav [data-panel="lab"]');
await page.selectOption('#preset', 'agent-workflows');
for (const name of ['exec-learning', 'prefetch-threshold', 'transition-decay', 'forecast', 'forecast-horizon', 'prefix-budget', 'research-summary']) {
  await page.click(`nav [data-panel="${name}"]`);
  await page.click('#study-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 120000 });
  await page.locator('#study-results').screenshot({ path: join(out, `agents-${name}-results.png`) });
}
// Repetitions typed: five whole-study runs, each figure its mean ± 95 % interval (the options and the table).
await page.click('nav [data-panel="forecast-horizon"]');
await typeInto(page, page.getByRole('spinbutton', { name: /^Repetitions/ }), '5');
await page.click('#study-run');
await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 120000 });
await page.locator('#study-params').screenshot({ path: join(out, 'study-repetitions-options.png') });
await page.locator('#study-results').screenshot({ path: join(out, 'study-repetitions-results.png') });
await typeInto(page, page.getByRole('spinbutton', { name: /^Repetitions/ }), '');
// Session classes and the Agent sessions panel's options.
await page.click('nav [data-panel="lab"]');
await page.selectOption('#preset', 'agent-mix');
await page.click('nav [data-panel="agent-sessions"]');
await page.locator('#study-params').screenshot({ path: join(out, 'agents-agent-sessions-options.png') });
await page.click('#study-run');
await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 120000 });
await page.locator('#study-results').screenshot({ path: join(out, 'agents-agent-mix-results.png') });
// The Calibration panel: the answer, the error tables and the log-axis charts, on the shipped result files.
await page.click('nav [data-panel="lab"]');
await page.selectOption('#preset', 'default');
await page.click('nav [data-panel="calibration"]');
const results = join(ROOT, 'tests/data/results');
await page.setInputFiles('#cal-files', ['vllm-runs-jsonl.json', 'vllm-current.json', 'sglang-bench-serving.jsonl', 'sglang-random-range.jsonl', 'vllm-legacy.json'].map((f) => join(results, f)));
await page.waitForFunction(() => document.querySelectorAll('#cal-cases-table tbody tr[data-set]').length >= 7, null, { timeout: 20000 });
// Knobs chosen by leave-one-out, gated at 15 %.
await page.getByRole('checkbox', { name: 'Choose by leave-one-out' }).check();
await typeInto(page, page.locator('#cal-tolerance'), '15');
await page.locator('.cal-fit').screenshot({ path: join(out, 'calibration-fit.png') });
await page.click('#cal-run');
await page.waitForFunction(() => /^Done in/.test(document.getElementById('cal-status').textContent), null, { timeout: 120000 });
await page.locator('#cal-answer').screenshot({ path: join(out, 'calibration-answer.png') });
await page.locator('#cal-mape-wrap').screenshot({ path: join(out, 'calibration-errors.png') });
await page.locator('#cal-charts').screenshot({ path: join(out, 'calibration-charts.png') });
// The Findings panel: an experiment with its chart and verdict, and one rerun on the Serving Lab's scenario.
await page.click('nav [data-panel="findings"]');
await page.click('#fd-run');
await page.waitForFunction(() => /^Done in/.test(document.getElementById('fd-status').textContent), null, { timeout: 240000 });
await page.locator('#finding-fleet').screenshot({ path: join(out, 'findings-fleet.png') });
await page.click('button[data-rerun="oversub"]');
await page.waitForFunction(() => /rerun on the Serving Lab/.test(document.getElementById('fd-status').textContent), null, { timeout: 240000 });
await page.locator('#finding-oversub').screenshot({ path: join(out, 'findings-oversub-rerun.png') });
await ctx.close();
server.stop();
console.log(`screenshots written to ${out}`);
