// End-to-end tests of the Findings panel in headless Chromium: the report computed in the page's worker is
// `inferscale report`'s byte for byte (Markdown and JSON), every experiment is shown with its chart and
// verdict, an experiment reruns on the Serving Lab's scenario (or says why it cannot), and Cancel stops a run.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve, browser, openLab, download, typeInto, runAndWait, ROOT } from './browser.mjs';

const CLI = join(ROOT, 'target/release/inferscale');
let server, ctx;

before(async () => { server = await serve(); ctx = await browser(); });
after(async () => { await ctx?.close(); server?.stop(); });

/** Share of a canvas's pixels drawn opaque and not near-white (a canvas never drawn is transparent). */
const drawn = (page, id) => page.evaluate((id) => {
  const c = document.getElementById(id);
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i + 3] === 255 && (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200)) n++;
  return n / (d.length / 4);
}, id);

const cli = (args) => execFileSync(CLI, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 30 });

async function openFindings() {
  const opened = await openLab(ctx, server.url, { canvasText: true });
  await opened.page.click('nav [data-panel="findings"]');
  assert.equal(await opened.page.isVisible('#panel-findings'), true);
  return opened;
}

async function runReport(page) {
  await page.click('#fd-run');
  // The report's runs shared among the page's workers, one per core: about three minutes on a 2-core machine.
  await page.waitForFunction(() => /^Done in/.test(document.getElementById('fd-status').textContent), null, { timeout: 480000 });
}

test('the panel\'s report is `inferscale report` byte for byte, each experiment with its chart and verdict; an experiment reruns on the Serving Lab\'s scenario', async () => {
  const { page, errors } = await openFindings();
  await runReport(page);
  // The committed report is `inferscale report`'s (md and json) byte for byte — the native test
  // docs_results_md_is_the_report_byte_for_byte holds that — so the exports are compared with it rather than
  // with the CLI run twice more (three CPU-minutes of CI).
  const md = await download(page, '#fx-md');
  assert.equal(md.name, 'inferscale-findings.md');
  assert.equal(md.text, readFileSync(join(ROOT, 'docs/results.md'), 'utf8'), 'the Markdown export is the CLI\'s');
  const json = await download(page, '#fx-json');
  assert.equal(json.text, readFileSync(join(ROOT, 'docs/results.json'), 'utf8'), 'the JSON export is the CLI\'s');
  const report = JSON.parse(json.text);
  const shown = await page.$$eval('#fd-report article.finding', (as) => as.map((a) => a.id));
  assert.deepEqual(shown, report.sections.map((s) => `finding-${s.id}`));
  for (const s of report.sections.filter((s) => s.chart)) {
    const id = `fd-chart-${s.id}`;
    assert.ok(await drawn(page, id) > 0.01, `${s.id}'s chart is drawn`);
    // Every label inside its canvas: a long bar name is neither cut at the edge nor drawn over the bars.
    const width = await page.$eval(`#${id}`, (c) => c.width);
    // Shown at most at the size it is drawn: a canvas stretched over a wide report is a blurry chart.
    const shownWidth = await page.$eval(`#${id}`, (c) => c.getBoundingClientRect().width);
    assert.ok(shownWidth <= width + 0.5, `${s.id}: a ${width}-pixel chart stretched to ${shownWidth.toFixed(0)} px`);
    for (const t of await page.evaluate((i) => window.drawnText[i] || [], id)) {
      assert.ok(t.x0 >= -0.5 && t.x1 <= width + 0.5, `${s.id}: "${t.text}" drawn at ${t.x0.toFixed(0)}…${t.x1.toFixed(0)}, outside 0…${width}`);
    }
  }
  // Each experiment's robustness table, apart from its results: the setups its verdicts were rerun on, and
  // whether each verdict holds on all of them or depends on one.
  const robust = report.sections.filter((s) => s.robustness);
  assert.ok(robust.length >= 10, `${robust.length} robustness tables`);
  for (const s of robust) {
    const region = page.getByRole('region', { name: `Robustness of experiment ${s.id}` });
    const rows = await region.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent.replaceAll('\u00a0', ' '))));
    assert.deepEqual(rows, s.robustness.rows, `${s.id}'s robustness table`);
    assert.ok(rows.length >= 3, s.id);
    assert.equal(await region.locator('.robustness-summary').textContent(), s.robustness.summary.replaceAll('`', ''));
  }
  const verdicts = await page.$$eval('#fd-report .verdict', (vs) => vs.map((v) => v.textContent));
  // A section's only claim is named by its section; several are each named on their verdict.
  const alone = (p) => report.predictions.filter((q) => q.section === p.section).length === 1;
  assert.deepEqual(verdicts, report.predictions.map((p) => (alone(p) ? `Verdict: ${p.verdict}.` : `Verdict (${p.id}): ${p.verdict}.`)));
  // The tally counts the predictions; the audits (an identity, a claim whose answer was known) stand apart.
  const predictions = report.predictions.filter((p) => p.kind === 'prediction');
  const audits = report.predictions.filter((p) => p.kind === 'audit');
  assert.ok(audits.length >= 2 && predictions.length >= 10);
  const tally = await page.textContent('#fd-report');
  assert.match(tally, new RegExp(`Registered predictions: ${predictions.length}\\. Held: `));
  const listed = await page.$$eval('#fd-report ul.audits li code', (cs) => cs.map((c) => c.textContent));
  assert.deepEqual(listed, audits.map((p) => p.id));
  assert.equal(await page.textContent('#fd-report p.multiplicity'), report.multiplicity, 'the tally says how many intervals it shows');
  for (const p of report.predictions) {
    const heading = p.kind === 'audit' ? 'Audit' : 'Registered prediction';
    assert.ok(tally.includes(`${heading} (${p.id}).`), `${p.id} is shown as a ${p.kind}`);
  }
  // The Serving Lab's scenario, edited from the keyboard: two replicas. The formation experiment reruns on it.
  await page.click('nav [data-panel="lab"]');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Replicas', exact: true }), '2');
  await page.click('nav [data-panel="findings"]');
  // By keyboard: the rerun replaces the report's HTML (its button too), and the focus lands on the rerun.
  await page.locator('button[data-rerun="formation"]').focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /rerun on the Serving Lab/.test(document.getElementById('fd-status').textContent), null, { timeout: 240000 });
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'rerun-formation', 'the focus is on the rerun');
  const rerun = await page.textContent('#rerun-formation');
  assert.match(rerun, /On the Serving Lab's scenario/);
  assert.match(rerun, /the Serving Lab's scenario “[^”]+” \(in place of scenarios\/peer-llama3-8b-h100\.json\)/);
  // The rerun is `inferscale report --only formation --on` the lab's scenario: the same table.
  const scenario = join(ROOT, 'target', 'e2e-findings-base.json');
  writeFileSync(scenario, await page.$eval('#scenario', (t) => t.value));
  assert.match(readFileSync(scenario, 'utf8'), /"replicas": 2/, 'the typed replicas are in the scenario');
  const one = JSON.parse(cli(['report', '--only', 'formation', '--on', scenario, '--format', 'json']));
  const cells = await page.$$eval('#rerun-formation > .table-wrap table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent.replaceAll('\u00a0', ' '))));
  assert.deepEqual(cells, one.sections[0].rows);
  const robustCells = await page.$$eval('#rerun-formation section.robustness tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent.replaceAll('\u00a0', ' '))));
  assert.deepEqual(robustCells, one.sections[0].robustness.rows, 'the rerun is rerun on the setups too');
  assert.match(rerun, /Verdict: (held|contradicted|inconclusive)\./);
  assert.ok(await drawn(page, 'fd-rerun-chart-formation') > 0.01, 'the rerun\'s chart is drawn');
  // The agent experiment cannot run on a scenario without sessions, and says so where it would show.
  await page.locator('button[data-rerun="retention"]').focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /Not rerun/.test(document.getElementById('rerun-retention').textContent), null, { timeout: 60000 });
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'rerun-retention', 'the focus is on why not');
  assert.match(await page.textContent('#rerun-retention'), /needs agent sessions \(workload\.sessions\)/);
  // The report itself is unchanged by the reruns.
  assert.equal((await download(page, '#fx-md')).text, md.text);
  await page.screenshot({ path: join(ROOT, 'target', 'findings.png'), fullPage: false });
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('the report shows its progress and Cancel stops it at once; the page stays usable', async () => {
  const { page, errors } = await openFindings();
  assert.equal(await page.isDisabled('#fd-cancel'), true);
  await page.click('#fd-run');
  await page.waitForFunction(() => /^Running on .*: \d+ of \d+ experiment runs/.test(document.getElementById('fd-status').textContent), null, { timeout: 60000 });
  // The runs are shared among one worker per core (at most 8).
  const cores = Math.min(8, Math.max(1, await page.evaluate(() => navigator.hardwareConcurrency)));
  assert.match(await page.textContent('#fd-status'), new RegExp(`^Running on ${cores === 1 ? 'one worker' : `${cores} workers`}: `));
  const t0 = Date.now();
  await page.click('#fd-cancel');
  assert.match(await page.textContent('#fd-status'), /Cancelled/);
  assert.ok(Date.now() - t0 < 1000, 'Cancel answers at once');
  assert.equal(await page.isDisabled('#fd-run'), false);
  assert.equal(await page.isVisible('#fd-results'), false, 'no report was made');
  // The Serving Lab still runs.
  await page.click('nav [data-panel="lab"]');
  await runAndWait(page);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
