// The Serving Lab's inputs a new user reaches for (issue 23): P/D pools and agent sessions as controls, the
// JSON's errors at their line and never replaced while it is broken, and a max that cuts a mean said at the
// field. Typed with the keyboard, read off the page and the scenario JSON.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serve, browser, openLab, runAndWait, download, scenario, typeInto } from './browser.mjs';

let server, ctx;
before(async () => { server = await serve(); ctx = await browser(); });
after(async () => { await ctx?.close(); server?.stop(); });

/** Toggle a checkbox from the keyboard. */
async function toggle(locator, page) {
  await locator.focus();
  await page.keyboard.press('Space');
}

test('P/D from the Serving Lab: on, pools typed, the replicas field stands aside, the run is disaggregated, off again', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const pd = page.getByRole('checkbox', { name: 'Prefill and decode on separate workers (P/D)' });
  assert.equal(await pd.isChecked(), false);
  await toggle(pd, page);
  assert.ok((await scenario(page)).cluster.disaggregation, 'the block is written');
  await typeInto(page, page.getByRole('spinbutton', { name: 'prefill workers' }), '1');
  await typeInto(page, page.getByRole('spinbutton', { name: 'decode workers' }), '2');
  await typeInto(page, page.getByRole('spinbutton', { name: 'KV link bandwidth (GB/s)' }), '25.5');
  await page.getByRole('combobox', { name: 'decode router' }).selectOption('least_kv');
  const d = (await scenario(page)).cluster.disaggregation;
  assert.equal(d.prefill.replicas, 1);
  assert.equal(d.decode.replicas, 2);
  assert.equal(d.link.bandwidth_gbps, 25.5);
  assert.deepEqual(d.decode.router, { kind: 'least_kv' });
  // The pools replace Replicas and Router, which say so by standing aside.
  assert.equal(await page.getByRole('spinbutton', { name: 'Replicas', exact: true }).isDisabled(), true);
  assert.equal(await page.getByRole('combobox', { name: 'Router', exact: true }).isDisabled(), true);
  assert.match(await page.textContent('#d-disagg'), /The pools replace Replicas and Router above: 3 GPUs in all\./);
  await typeInto(page, page.getByRole('spinbutton', { name: 'Requests', exact: true }), '300');
  await runAndWait(page, 120000);
  const report = JSON.parse((await download(page, '#x-json')).text);
  assert.deepEqual(report.setup.pools.map((p) => [p.role, p.replicas]), [['prefill', 1], ['decode', 2]]);
  // Off: the block goes, the replicas field is back.
  await toggle(pd, page);
  assert.equal((await scenario(page)).cluster.disaggregation, undefined);
  assert.equal(await page.getByRole('spinbutton', { name: 'Replicas', exact: true }).isDisabled(), false);
  assert.equal(await pd.evaluate((e) => e === document.activeElement), true, 'focus stays on the checkbox');
  assert.deepEqual(errors, []);
  await page.close();
});

test('agent sessions from the Serving Lab: on, tools as rows added, typed and removed, the run reports sessions', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await typeInto(page, page.getByRole('spinbutton', { name: 'Rate (req/s)', exact: true }), '0.2');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Requests', exact: true }), '12');
  const on = page.getByRole('checkbox', { name: 'Agent sessions (multi-turn, tool calls between turns)' });
  await toggle(on, page);
  let s = (await scenario(page)).workload.sessions;
  assert.equal(s.tools.length, 6, 'the agent example\'s tools');
  // The default model's 8k context: the example's prompts are fitted to it, so the scenario is valid at once.
  assert.equal(s.first_tokens.max, 6192);
  assert.equal(await page.textContent('#errors'), '');
  assert.equal(await page.textContent('#c-rate-unit'), 'sessions/s');
  assert.equal(await page.textContent('#c-requests-unit'), 'sessions');
  assert.equal(await page.getByRole('spinbutton', { name: 'Prompt length (tokens)' }).isDisabled(), true, 'sessions draw their own lengths');
  // Remove the first tool from the keyboard; focus stays on the Remove button now in its place.
  await page.getByRole('button', { name: 'Remove tool 1' }).focus();
  await page.keyboard.press('Enter');
  assert.equal((await scenario(page)).workload.sessions.tools.length, 5);
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Remove tool 1');
  await page.getByRole('button', { name: 'Add tool' }).focus();
  await page.keyboard.press('Enter');
  await typeInto(page, page.getByRole('textbox', { name: 'tool 6 name' }), 'deploy');
  await typeInto(page, page.getByRole('spinbutton', { name: 'tool 6 mean latency (s)' }), '12.5');
  await typeInto(page, page.getByRole('spinbutton', { name: 'tool 6 latency CV' }), '0.5');
  await page.getByRole('combobox', { name: 'retention' }).selectOption('ttl');
  await typeInto(page, page.getByRole('spinbutton', { name: 'retention: TTL (s)' }), '4');
  s = (await scenario(page)).workload.sessions;
  assert.deepEqual(s.tools[5], { name: 'deploy', weight: 1, mean_s: 12.5, cv: 0.5 });
  assert.deepEqual(s.retention, { kind: 'ttl', ttl_s: 4 });
  // A bad value is said at its row and the scenario keeps the last good one.
  await typeInto(page, page.getByRole('spinbutton', { name: 'tool 6 mean latency (s)' }), '-3');
  assert.match(await page.textContent('#errors'), /tool 6 mean latency/);
  await typeInto(page, page.getByRole('spinbutton', { name: 'tool 6 mean latency (s)' }), '12.5');
  await runAndWait(page, 120000);
  const report = JSON.parse((await download(page, '#x-json')).text);
  assert.ok(report.sessions, 'the report has its sessions section');
  assert.equal(report.sessions.sessions, 12);
  // Off: the block goes and the lengths are the classes' again.
  await toggle(on, page);
  assert.equal((await scenario(page)).workload.sessions, undefined);
  assert.equal(await page.textContent('#c-rate-unit'), 'req/s');
  assert.deepEqual(errors, []);
  await page.close();
});

test('the agent panels run without the example: they add its sessions as their own input and say so', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const before = await page.inputValue('#scenario');
  await page.click('nav [data-panel="agent-sessions"]');
  await page.waitForSelector('#study-own:not([hidden])');
  assert.match(await page.textContent('#study-own'), /\/workload\/sessions \(the agent example's: the Serving Lab's scenario has no sessions\)/);
  assert.equal(await page.textContent('#study-errors'), '');
  assert.equal(await page.isDisabled('#study-run'), false);
  assert.equal(await page.inputValue('#g-turns'), '10', 'the example\'s mean turns');
  assert.equal(await page.inputValue('#scenario'), before, 'the Serving Lab\'s scenario is unchanged');
  // "Use in Serving Lab" takes them there (undoable).
  await page.click('#study-use-in-lab');
  assert.ok((await scenario(page)).workload.sessions, 'now the Serving Lab has them');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a broken JSON: its error at its line, kept while a control is typed, the control applied once it parses', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  // Delete the comma after "seed": 42 (line 4) with the keyboard.
  await page.click('#scenario');
  await page.keyboard.press('Control+Home');
  for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowDown');
  await page.keyboard.press('End');
  await page.keyboard.press('Backspace');
  const list = page.locator('#errors');
  assert.match(await list.textContent(), /the scenario JSON: line 5, column 3: expected `,` or `}`/);
  assert.equal(await page.textContent('#scenario-lines mark'), '5', 'the gutter marks line 5');
  // A control typed now keeps its text, says why it is not applied, and the JSON's error stays.
  await typeInto(page, page.getByRole('spinbutton', { name: 'Rate (req/s)', exact: true }), '7');
  assert.equal(await page.inputValue('#c-rate'), '7');
  assert.match(await page.textContent('#msg-c-rate'), /not applied yet: the scenario JSON has an error at line 5/);
  assert.match(await list.textContent(), /line 5, column 3: expected `,` or `}`/, 'the parser\'s error is not replaced');
  assert.equal(await page.isDisabled('#run'), true);
  // "Go to line 5" selects that line in the editor.
  await page.getByRole('button', { name: 'Go to line 5' }).click();
  const selected = await page.evaluate(() => { const t = document.getElementById('scenario'); return [document.activeElement === t, t.value.slice(t.selectionStart, t.selectionEnd)]; });
  assert.deepEqual(selected, [true, '  "workload": {']);
  // Put the comma back and leave the editor: the JSON parses, the typed rate is applied.
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('End');
  await page.keyboard.type(',');
  await page.keyboard.press('Tab');
  await page.waitForFunction(() => JSON.parse(document.getElementById('scenario').value).workload.arrival.rate_rps === 7);
  assert.equal(await list.textContent(), '');
  assert.equal(await page.locator('#scenario-lines mark').count(), 0);
  assert.equal(await page.isDisabled('#run'), false);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a max that cuts the mean is said at the field, in the diagnosis and in the Markdown setup', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await typeInto(page, page.getByRole('spinbutton', { name: 'Prompt length (tokens)' }), '2000');
  const note = /max 4096 cuts the mean of 2000 to 18\d\d tokens/;
  assert.match(await page.textContent('#note-c-prompt'), note);
  assert.match(await page.textContent('#d-classes'), note, 'and at the class row\'s max');
  // Raising the max takes the cut away; with the largest output it now passes the model's context, said there.
  await typeInto(page, page.getByRole('spinbutton', { name: 'class 1 prompt max (tokens)' }), '32768');
  const past = await page.textContent('#note-c-prompt');
  assert.doesNotMatch(past, note);
  assert.match(past, /max 32768 \+ output up to 2048 passes engine\.max_model_len 8192 \(the model's context\): requests drawn past it are refused at arrival/);
  await typeInto(page, page.getByRole('spinbutton', { name: 'class 1 prompt max (tokens)' }), '6144');
  assert.doesNotMatch((await page.textContent('#d-classes')), /passes engine\.max_model_len/);
  await typeInto(page, page.getByRole('spinbutton', { name: 'class 1 prompt max (tokens)' }), '4096');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Requests', exact: true }), '300');
  await runAndWait(page);
  assert.match(await page.textContent('#diagnosis'), /⚠ Lengths: workload\.classes\[0\]\.prompt_tokens: max 4096 cuts the mean of 2000 to 18\d\d tokens/);
  const md = await download(page, '#x-md');
  assert.match(md.text, /\*\*Lengths:\*\* workload\.classes\[0\]\.prompt_tokens: max 4096 cuts the mean of 2000 to 18\d\d tokens\./);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the design explorer compares layouts at the Serving Lab\'s GPU count and names those that differ', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await typeInto(page, page.getByRole('spinbutton', { name: 'Replicas', exact: true }), '4');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Requests', exact: true }), '300');
  await page.click('nav [data-panel="explorer"]');
  await page.click('#study-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 120000 });
  const head = await page.$$eval('#study-table-el thead th', (ths) => ths.map((th) => th.textContent));
  const g = head.findIndex((h) => h.startsWith('GPU instances'));
  const rows = await page.$$eval('#study-table-el tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.ok(rows.length >= 14, `${rows.length} candidates`);
  for (const r of rows) assert.equal(r[g], r[0] === 'replicas +1' ? '5' : '4', `${r[0]}: ${r[g]} GPUs`);
  const names = rows.map((r) => r[0]);
  for (const n of ['P/D 2:2', 'P/D 1:3', 'TP ×2, replicas ×½']) assert.ok(names.includes(n), names.join(', '));
  assert.match(await page.textContent('#study-notes'), /GPU counts: every candidate uses the baseline's 4 GPUs .* but replicas \+1 \(5 GPUs\)/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the serving front end from the Serving Lab: typed, refused out of range at its field, cleared to none; a burst waits in it', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const perRequest = page.getByRole('spinbutton', { name: 'Front end (ms/request)', exact: true });
  const perToken = page.getByRole('spinbutton', { name: 'Front end (µs/prompt token)', exact: true });
  assert.equal((await scenario(page)).engine.frontend, undefined, 'off by default');
  assert.equal(await perRequest.inputValue(), '');
  await typeInto(page, perRequest, '4.5');
  await typeInto(page, perToken, '1.2e1');
  assert.deepEqual((await scenario(page)).engine.frontend, { per_request_ms: 4.5, per_prompt_token_us: 12 });
  // Out of range: the validator's words at the field, the run refused until fixed.
  for (const bad of ['-1', '1e308', '10001']) {
    await typeInto(page, perRequest, bad);
    assert.match(await page.textContent('#msg-c-frontend'), /^Front end \(ms\/request\): must be between 0 and 10000 \(got /, bad);
    assert.equal(await page.isDisabled('#run'), true, bad);
  }
  // A burst of 40 requests: the 40th waits for the 39 ahead of it in the front end (≥ 40 × 1 s, its own included), which
  // the same burst without a front end does not come near.
  await page.getByRole('combobox', { name: 'Arrivals', exact: true }).selectOption('burst');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Requests', exact: true }), '40');
  const ttftMax = async () => {
    await runAndWait(page, 60000);
    return JSON.parse((await download(page, '#x-json')).text).summary.ttft_s.max;
  };
  await typeInto(page, perRequest, '');
  await typeInto(page, perToken, '');
  const without = await ttftMax();
  await typeInto(page, perRequest, '1000');
  assert.equal(await page.locator('#msg-c-frontend').count(), 0);
  const withFront = await ttftMax();
  assert.ok(withFront >= 40 && without < 40, `TTFT max ${withFront} s with the front end, ${without} s without`);
  // Cleared: no front end time left (an empty object is no front end).
  await typeInto(page, perRequest, '');
  await typeInto(page, perToken, '');
  const fe = (await scenario(page)).engine.frontend;
  assert.ok(fe === undefined || Object.keys(fe).length === 0, JSON.stringify(fe));
  assert.equal(await page.textContent('#errors'), '');
  assert.deepEqual(errors, []);
  await page.close();
});

test("a step's host work from the Serving Lab: typed, refused out of range at its field, overlapped; a run's steps take the host's time", async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const perStep = page.getByRole('spinbutton', { name: 'Host work (µs/step)', exact: true });
  const perSeq = page.getByRole('spinbutton', { name: 'Host work (µs/seq)', exact: true });
  const overlapped = page.getByRole('checkbox', { name: 'Host work overlapped', exact: true });
  assert.equal((await scenario(page)).engine.step_cpu, undefined, 'off by default');
  await typeInto(page, perSeq, '2.5');
  await typeInto(page, perStep, '1e3');
  await overlapped.check();
  assert.deepEqual((await scenario(page)).engine.step_cpu, { per_step_us: 1000, per_seq_us: 2.5, overlapped: true });
  for (const bad of ['-1', '1e308', '100001']) {
    await typeInto(page, perSeq, bad);
    assert.match(await page.textContent('#msg-c-cpu-seq'), /^Host work \(µs\/seq\): must be between 0 and 100000 \(got /, bad);
    assert.equal(await page.isDisabled('#run'), true, bad);
  }
  await typeInto(page, perSeq, '0');
  assert.equal(await page.locator('#msg-c-cpu-seq').count(), 0);
  // A host second a step, overlapped, outlasts any GPU step: every token then takes about a second.
  await page.getByRole('combobox', { name: 'Arrivals', exact: true }).selectOption('burst');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Requests', exact: true }), '20');
  await typeInto(page, perStep, '1000000');
  await runAndWait(page, 60000);
  const tpot = JSON.parse((await download(page, '#x-json')).text).summary.tpot_s.mean;
  assert.ok(Math.abs(tpot - 1) < 1e-3, `TPOT ${tpot} s with a host second a step`);
  await typeInto(page, perStep, '');
  await typeInto(page, perSeq, '');
  await overlapped.uncheck();
  const cpu = (await scenario(page)).engine.step_cpu;
  assert.ok(cpu === undefined || (cpu.per_step_us ?? 0) + (cpu.per_seq_us ?? 0) === 0, JSON.stringify(cpu));
  assert.equal(await page.textContent('#errors'), '');
  assert.deepEqual(errors, []);
  await page.close();
});
