// The answers a user acts on (issue 23), as a new user reaches them: typed with the keyboard, read off the page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve, browser, openLab, runAndWait, download, recordTexts, scenario, typeInto, ROOT } from './browser.mjs';

/** `inferscale run` on a scenario as the page holds it: its JSON report. */
function cliRun(spec) {
  const file = join(ROOT, 'target', 'e2e-answers-scenario.json');
  writeFileSync(file, JSON.stringify(spec));
  return JSON.parse(execFileSync(join(ROOT, 'target/release/inferscale'), ['run', file], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 30 }));
}

let server, ctx;
before(async () => { server = await serve(); ctx = await browser(); });
after(async () => { await ctx?.close(); server?.stop(); });

test('finding 1: a 2.8× overload is diagnosed as capacity, and the replicas that meet the objectives are measured', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await page.getByRole('combobox', { name: 'Example' }).selectOption('chat-70b-h100-tp4');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Replicas', exact: true }), '1');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Rate (req/s)', exact: true }), '19.8');
  const s = await scenario(page);
  assert.equal(s.cluster.replicas, 1);
  assert.equal(s.workload.arrival.rate_rps, 19.8);
  const seen = await recordTexts(page, 'status');
  await runAndWait(page, 120000);
  // While the advice is tested the status says which change runs, and its progress starts over.
  const status = await seen();
  assert.ok(status.some((t) => /^Testing the advice on the same requests: 4 replicas \(from 1\): \d+ of \d+ requests done/.test(t)), status.slice(-8).join('\n'));
  assert.ok(status.some((t) => /^Running: \d+ of \d+ requests done/.test(t)), 'the scenario\'s own run first');
  assert.ok(status.some((t) => /^Measuring sustained capacity, run \d+ of about \d+ \(the highest rate served stably\): \d+ of 20000 requests done/.test(t)), status.slice(-8).join('\n'));
  const d = page.locator('#diagnosis');
  assert.equal(await d.locator('h3').textContent(), 'Diagnosis: capacity');
  // ρ against sustained capacity (the CLI's figure), beside offered ÷ served, which understates the overload
  // where cheap requests are served first.
  const cliReport = cliRun(s);
  const rho = cliReport.diagnosis.rho.toFixed(2);
  assert.match(await d.locator('.regime').textContent(), new RegExp(`^Regime: over capacity \\(ρ = ${rho} of sustained capacity; [0-9.]+× offered ÷ served\\) · limit: batch cap$`));
  assert.match(await d.textContent(), new RegExp(`is ρ = ${rho} of this configuration's sustained capacity`));
  assert.match(await d.textContent(), /A capacity problem: 19\.98 req\/s offered, 7\.20 req\/s served over the steady window\./);
  // The advice leads with what was measured on the same requests, and the table shows each run.
  assert.match(await d.textContent(), /Most likely to help: Measured on the same requests: 5 replicas \(from 1\): objectives met/);
  const table = page.getByRole('table', { name: 'Changes tested on the same requests' });
  const rows = await table.locator('tbody tr').allTextContents();
  assert.ok(rows.length >= 3, rows.join('\n'));
  assert.match(rows[0], /^4 replicas \(from 1\)still missed/);
  assert.ok(rows.some((r) => /^5 replicas \(from 1\)objectives met/.test(r)), rows.join('\n'));
  // Never advice that contradicts the numbers beside it: no "memory" verdict, no "add KV" first.
  assert.doesNotMatch(await d.locator('h3').textContent(), /memory/);
  // The Markdown export carries the same table.
  const md = await download(page, '#x-md');
  assert.match(md.text, /\| 5 replicas \(from 1\) \| objectives met \|/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('finding 4 (hidden-state audit): typing into every input of every study panel leaves the Serving Lab\'s scenario unchanged', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  // The agent panels need the agent scenario; the rest run on the default one. Each is audited on both.
  for (const example of ['default', 'agent-sessions']) {
    await page.click('nav [data-panel="lab"]');
    await page.getByRole('combobox', { name: 'Example' }).selectOption(example);
    const before = await page.inputValue('#scenario');
    const panels = await page.$$eval('nav [data-panel]', (a) => a.map((x) => x.dataset.panel).filter((p) => p !== 'lab' && p !== 'calibration'));
    assert.ok(panels.length >= 10, panels.join(','));
    let changed = 0;
    for (const p of panels) {
      await page.click(`nav [data-panel="${p}"]`);
      const ids = await page.$$eval('#study-params [data-ptr^="/"]', (els) => els.filter((e) => !e.disabled && e.offsetParent !== null).map((e) => e.id));
      for (const id of ids) {
        const el = page.locator(`#${id}`);
        // A kind chosen above may hide or disable its numbers.
        if (!(await el.isVisible()) || (await el.isDisabled())) continue;
        const tag = await el.evaluate((e) => e.tagName);
        if (tag === 'SELECT') {
          const options = await el.evaluate((e) => [...e.options].map((o) => o.value));
          const now = await el.inputValue();
          const other = options.find((o) => o !== now);
          if (other === undefined) continue;
          await el.focus();
          await el.selectOption(other);
        } else if (tag === 'TEXTAREA') {
          await el.click();
          await page.keyboard.press('End');
          await page.keyboard.type(' ');
          await page.keyboard.press('Tab');
        } else {
          const now = await el.inputValue();
          await el.click();
          await page.keyboard.press('Control+A');
          await page.keyboard.press('Backspace');
          await page.keyboard.type(String((Number(now) || 1) + 1));
          await page.keyboard.press('Tab');
        }
        changed++;
        assert.equal(await page.inputValue('#scenario'), before, `${p}: #${id} changed the Serving Lab's scenario`);
      }
    }
    assert.ok(changed >= 20, `${example}: ${changed} inputs changed`);
    // The panel's own inputs are offered to the Serving Lab, never applied behind its back.
    assert.equal(await page.inputValue('#scenario'), before);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

/** The Serving Lab on the 70B example at `replicas` and 19.8 req/s, typed. */
async function seventyB(page, replicas) {
  await page.click('nav [data-panel="lab"]');
  await page.getByRole('combobox', { name: 'Example' }).selectOption('chat-70b-h100-tp4');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Replicas', exact: true }), String(replicas));
  await typeInto(page, page.getByRole('spinbutton', { name: 'Rate (req/s)', exact: true }), '19.8');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Requests', exact: true }), '2000');
}

async function runStudy(page) {
  await page.click('#study-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 240000 });
}

const headers = (page) => page.$$eval('#study-table-el thead th', (ths) => ths.map((th) => th.textContent));

test('finding 2: the capacity planner states its criterion, shows every objective, and compares steady with steady', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await seventyB(page, 3);
  await page.click('nav [data-panel="capacity"]');
  await typeInto(page, page.getByRole('spinbutton', { name: /^Or: fewest replicas for/ }), '20');
  const reps = page.getByRole('spinbutton', { name: /^Repetitions/ });
  await typeInto(page, reps, '2');
  await runStudy(page);
  const answer = await page.textContent('#study-answer');
  assert.match(answer, /^Answer: \d+ replicas \(\d+ GPUs\) carry 20 req\/s: the fewest at which ≥ 99\.0 % of requests meet their class's SLO \(interactive: TTFT ≤ 1500 ms, TPOT ≤ 80\.0 ms; batch: E2E ≤ 120\.0 s\), and the waiting queue does not grow in every one of 2 repetitions; \d+ replicas failed \(/);
  const h = await headers(page);
  for (const want of ['Steady throughput', 'Steady goodput', 'p95 TPOT']) assert.ok(h.some((x) => x.startsWith(want)), `${want} in ${h.join(' | ')}`);
  assert.ok(!h.some((x) => /^Goodput/.test(x)), 'no whole-run goodput beside steady throughput');
  assert.match(await page.textContent('#study-results'), /A run passes when all of these hold, each a separate criterion/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('finding 3: the ranking separates policies on latency with units, and says why identical rows are identical', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await seventyB(page, 2);
  await page.click('nav [data-panel="ranking"]');
  await typeInto(page, page.getByRole('spinbutton', { name: /^Repetitions/ }), '3');
  await runStudy(page);
  const answer = await page.textContent('#study-answer');
  assert.match(answer, /ranks first: SLO attainment [0-9.]+ % \([0-9.]+ – [0-9.]+ %\), goodput [0-9.]+ req\/s, p95 TTFT [0-9.]+ (s|ms) .* It is ahead of .* on /);
  const rows = await page.$$eval('#study-table-el tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  const h = await headers(page);
  const versus = h.findIndex((x) => x.startsWith('Versus the best'));
  const sjf = rows.find((r) => r[1] === 'SJF (predicted output)');
  assert.equal(sjf[versus], 'worse', 'SJF and FCFS differ by tens of seconds of p95 TTFT: not a tie');
  const notes = await page.textContent('#study-results');
  assert.match(notes, /Ranked by SLO attainment, then goodput, then p95 TTFT, then p95 TPOT/);
  assert.match(notes, /give identical results on every repetition \(FCFS, DRR \(tenants\)[,)].*order this workload.s queue alike/);
  // The paired experiment's answer carries units, and its chart's axis never reads "-0 %".
  await page.click('nav [data-panel="paired"]');
  await runStudy(page);
  assert.match(await page.textContent('#study-answer'), /SLO attainment (better|worse|not distinguishable)[^;]* %[^;]*pp/);
  assert.match(await page.textContent('#study-answer'), /Goodput [^;]* req\/s/);
  assert.doesNotMatch(await page.textContent('#study-results'), /-0 %|−0 %/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('finding 5: Add class, Remove, Add objective and Undo keep the keyboard focus on or next to the control', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const active = () => page.evaluate(() => {
    const e = document.activeElement;
    return `${e.id || e.tagName}|${e.getAttribute('data-act') || ''}|${e.getAttribute('data-i') || ''}`;
  });
  const press = async (selector) => {
    await page.locator(selector).focus();
    await page.keyboard.press('Enter');
  };
  const classes = async () => (await scenario(page)).workload.classes.length;
  assert.equal(await classes(), 2);
  await press('[data-act="add-class"]');
  assert.equal(await classes(), 3);
  assert.equal(await active(), 'BUTTON|add-class|', 'focus stays on Add class');
  await press('[data-act="del-class"][data-i="1"]');
  assert.equal(await classes(), 2);
  assert.equal(await active(), 'BUTTON|del-class|1', 'focus on the Remove now in the removed row\'s place');
  await press('[data-act="del-class"][data-i="1"]');
  assert.equal(await classes(), 1);
  assert.equal(await active(), 'BUTTON|add-class|', 'the last class cannot be removed: focus goes to Add class');
  await press('[data-act="add-objective"]');
  assert.equal((await scenario(page)).objectives.percentiles.length, 1);
  assert.equal(await active(), 'BUTTON|add-objective|');
  await press('[data-act="del-objective"][data-i="0"]');
  assert.equal(await active(), 'BUTTON|add-objective|');
  await page.getByRole('combobox', { name: 'Example' }).selectOption('kv-pressure');
  await press('#undo');
  assert.equal((await scenario(page)).workload.classes.length, 1, 'Undo brought back the edited scenario');
  assert.equal(await active(), 'preset||', 'focus on the Example select after Undo hides itself');
  assert.deepEqual(errors, []);
  await page.close();
});

test('finding 5: sensitivity cells in the reports\' seconds format, and no unit said twice in a study table header', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await typeInto(page, page.getByRole('spinbutton', { name: 'Requests', exact: true }), '300');
  await page.click('nav [data-panel="sensitivity"]');
  await runStudy(page);
  const head = await page.$$eval('#study-table-el thead th', (ths) => ths.map((th) => th.textContent));
  const rows = await page.$$eval('#study-table-el tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  for (const h of ['p95 TTFT delta', 'p95 E2E delta']) {
    const k = head.indexOf(h);
    assert.ok(k >= 0, head.join(' | '));
    // ms below 10 s with at most one decimal, else s with two or three: never "−5060.114 ms".
    for (const r of rows) assert.match(r[k], /^-?(\d{1,4}(\.\d)? ms|\d+\.\d{1,3} s)$/, `${h}: "${r[k]}"`);
  }
  for (const h of head) assert.doesNotMatch(h, /(\S+·\S+|ms|req\/s).*\1/, `a unit said twice: "${h}"`);
  // The agent policies' HBM column, on the agent example: its unit once.
  await page.click('nav [data-panel="lab"]');
  await page.getByRole('combobox', { name: 'Example' }).selectOption('agent-sessions');
  await page.click('nav [data-panel="agent-policies"]');
  await page.click('#study-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 180000 });
  const agentHead = await page.$$eval('#study-table-el thead th', (ths) => ths.map((th) => th.textContent));
  assert.ok(agentHead.includes('HBM held GB·s'), agentHead.join(' | '));
  assert.deepEqual(errors, []);
  await page.close();
});
