// The lab as a person types into it: every control through the keyboard (Playwright `keyboard.type`, never
// `fill`), errors at their fields in the user's words, and no choice that loses the working scenario.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serve, browser, openLab, runAndWait, download } from './browser.mjs';

let server, ctx;
before(async () => { server = await serve(); ctx = await browser(); });
after(async () => { await ctx?.close(); server?.stop(); });

const scenario = async (page) => JSON.parse(await page.inputValue('#scenario'));
const at = (obj, ptr) => ptr.split('/').slice(1).reduce((o, k) => (o == null ? undefined : o[k]), obj);

/** Select the field's text and type `text` key by key, as a user does; then Tab out of it. */
async function typeInto(page, locator, text, { tab = true } = {}) {
  await locator.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');
  await page.keyboard.type(text, { delay: 5 });
  if (tab) await page.keyboard.press('Tab');
}

// Every numeric control of the Serving Lab, found by its accessible name, with what to type and where the
// number must land in the scenario. Values are chosen to be valid together on the default scenario.
const NUMERIC = [
  ['Seed', '123', '/seed', 123],
  ['Rate (req/s)', '20', '/workload/arrival/rate_rps', 20],
  ['Requests', '300', '/workload/requests', 300],
  ['Prompt length (tokens)', '512', '/workload/classes/0/prompt_tokens/mean', 512],
  ['Output length (tokens)', '12.5', '/workload/classes/0/output_tokens/mean', 12.5],
  ['TTFT SLO (ms)', '800', '/workload/classes/0/slo/ttft_ms', 800],
  ['TPOT SLO (ms)', '0.9', '/workload/classes/0/slo/tpot_ms', 0.9],
  ['TP (GPUs/replica)', '2', '/hardware/tp', 2],
  ['Replicas', '3', '/cluster/replicas', 3],
  ['Max batch (seqs)', '64', '/engine/max_num_seqs', 64],
  ['Token budget (tokens/step)', '4096', '/engine/max_num_batched_tokens', 4096],
  ['Chunk (tokens)', '1024', '/engine/prefill_chunk_tokens', 1024],
  ['KV block (tokens)', '32', '/engine/block_size_tokens', 32],
  ['Memory fraction', '0.9', '/engine/gpu_memory_utilization', 0.9],
  ['Over-subscription (× KV)', '1.5', '/engine/kv_oversubscription', 1.5],
];

test('typing into every numeric control puts exactly the typed number in the field and the scenario', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  for (const [name, text, ptr, want] of NUMERIC) {
    const field = page.getByRole('spinbutton', { name, exact: true });
    await typeInto(page, field, text, { tab: false });
    // While the user is still in the field, nothing rewrites it.
    assert.equal(await field.inputValue(), text, `${name}: the field holds what was typed`);
    assert.equal(at(await scenario(page), ptr), want, `${name}: the scenario holds ${want}`);
    await page.keyboard.press('Tab');
    assert.equal(Number(await field.inputValue()), want, `${name}: after leaving the field it still reads ${want}`);
    assert.equal(at(await scenario(page), ptr), want, `${name}: still ${want} after Tab`);
  }
  // Exponents, and backspacing over a typo.
  const rate = page.getByRole('spinbutton', { name: 'Rate (req/s)', exact: true });
  await typeInto(page, rate, '1e1', { tab: false });
  assert.equal(at(await scenario(page), '/workload/arrival/rate_rps'), 10);
  await page.keyboard.press('Backspace');
  await page.keyboard.type('2');
  assert.equal(await rate.inputValue(), '1e2');
  assert.equal(at(await scenario(page), '/workload/arrival/rate_rps'), 100);
  // Mid-exponent ("1e") is not a number yet: the scenario keeps the last number the text meant ("1") and
  // Run waits.
  await typeInto(page, rate, '1e', { tab: false });
  assert.equal(at(await scenario(page), '/workload/arrival/rate_rps'), 1);
  assert.equal(await page.isDisabled('#run'), true);
  await page.keyboard.type('1');
  assert.equal(at(await scenario(page), '/workload/arrival/rate_rps'), 10);
  assert.equal(await page.isDisabled('#run'), false);
  // The checkbox and the selects, by keyboard too.
  await page.getByRole('checkbox', { name: 'Chunked prefill', exact: true }).focus();
  await page.keyboard.press('Space');
  assert.equal((await scenario(page)).engine.chunked_prefill, false);
  await page.keyboard.press('Space');
  assert.equal((await scenario(page)).engine.chunked_prefill, true);
  for (const [name, value, ptr] of [['Model', 'llama-3-70b', '/model/preset'], ['Device', 'h100-sxm', '/hardware/device'],
    ['Scheduler', 'sjf', '/scheduler/kind'], ['Router', 'least_outstanding', '/cluster/router/kind'], ['Admission', 'none', '/admission/kind']]) {
    await page.getByRole('combobox', { name, exact: true }).selectOption(value);
    assert.equal(at(await scenario(page), ptr), value, name);
  }
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('generated rows take typed numbers too', async () => {
  const { page } = await openLab(ctx, server.url);
  await page.getByRole('combobox', { name: 'Arrivals' }).selectOption('on_off');
  const off = page.locator('[data-ptr="/workload/arrival/mean_off_s"]');
  await typeInto(page, off, '12.5');
  assert.equal((await scenario(page)).workload.arrival.mean_off_s, 12.5);
  assert.equal(await off.inputValue(), '12.5');
  const w = page.locator('[data-ptr="/workload/classes/0/weight"]');
  await typeInto(page, w, '20');
  assert.equal((await scenario(page)).workload.classes[0].weight, 20);
  assert.equal(await w.inputValue(), '20');
  await page.close();
});

test('errors are shown at their field in plain words, summarised beside Run, and go away when fixed', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  // Clearing an objective means "no objective".
  const tpot = page.getByRole('spinbutton', { name: 'TPOT SLO (ms)', exact: true });
  await typeInto(page, tpot, '');
  assert.equal((await scenario(page)).workload.classes[0].slo.tpot_ms, undefined, 'cleared TPOT SLO: no objective');
  assert.equal(await page.isDisabled('#run'), false);
  assert.doesNotMatch(await page.textContent('#errors'), /invalid type|expected f64/);
  // Clearing a required field says what to enter, at the field and beside Run; the scenario keeps its value.
  const rate = page.getByRole('spinbutton', { name: 'Rate (req/s)', exact: true });
  const before = (await scenario(page)).workload.arrival.rate_rps;
  await typeInto(page, rate, '');
  assert.equal((await scenario(page)).workload.arrival.rate_rps, before);
  assert.equal(await page.textContent('#msg-c-rate'), 'Rate (req/s): enter a number');
  assert.equal(await rate.getAttribute('aria-invalid'), 'true');
  assert.equal(await page.isDisabled('#run'), true);
  assert.match(await page.textContent('#status'), /^Cannot run: fix Rate \(req\/s\)/);
  assert.equal(await rate.inputValue(), '', 'the field is not refilled behind the user\'s back');
  // A value out of range: the validator's words, led by the field's name.
  await typeInto(page, rate, '-3');
  assert.match(await page.textContent('#msg-c-rate'), /^Rate \(req\/s\): must be > 0/);
  // Fixed: the marker and the message go away.
  await typeInto(page, rate, '5');
  assert.equal(await page.locator('#msg-c-rate').count(), 0);
  assert.equal(await rate.getAttribute('aria-invalid'), 'false');
  assert.equal(await page.isDisabled('#run'), false);
  assert.equal(await page.textContent('#status'), 'Ready');
  // A type error typed into the JSON editor is said in words too.
  const text = (await page.inputValue('#scenario')).replace(/"ttft_ms": [0-9.]+/, '"ttft_ms": ""');
  await page.fill('#scenario', text);
  await page.dispatchEvent('#scenario', 'input');
  assert.match(await page.textContent('#errors'), /expected a number, got an empty text ""/);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('an example, a broken import or a bad trace never loses the working scenario', async () => {
  const { page } = await openLab(ctx, server.url);
  await typeInto(page, page.getByRole('spinbutton', { name: 'Seed', exact: true }), '777');
  const mine = await page.inputValue('#scenario');
  // A broken file is refused; nothing changes.
  await page.setInputFiles('#c-import', { name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{"workload": ') });
  await page.waitForFunction(() => !document.getElementById('notice').hidden);
  assert.match(await page.textContent('#notice'), /broken\.json was not imported: it is not valid JSON.*Your scenario is unchanged/);
  assert.equal(await page.inputValue('#scenario'), mine);
  // A bad trace is refused; Rate and Requests stay.
  await page.setInputFiles('#c-trace', { name: 'bad.csv', mimeType: 'text/csv', buffer: Buffer.from('arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,abc,10\n') });
  await page.waitForFunction(() => /bad\.csv was not loaded/.test(document.getElementById('notice').textContent));
  assert.equal(await page.inputValue('#scenario'), mine);
  assert.equal(await page.getByRole('spinbutton', { name: 'Rate (req/s)', exact: true }).isDisabled(), false);
  assert.notEqual(await page.getByRole('spinbutton', { name: 'Requests', exact: true }).inputValue(), '');
  // Choosing an example replaces the scenario, and Undo brings it back.
  await page.getByRole('combobox', { name: 'Example' }).selectOption('kv-pressure');
  assert.match(await page.inputValue('#scenario'), /"kv-pressure"/);
  await page.getByRole('button', { name: /^Undo/ }).click();
  assert.equal(JSON.parse(await page.inputValue('#scenario')).seed, 777);
  assert.deepEqual(JSON.parse(await page.inputValue('#scenario')), JSON.parse(mine));
  await page.close();
});

test('the name follows what is run, and the results and the report say what was run', async () => {
  const { page } = await openLab(ctx, server.url);
  await page.getByRole('combobox', { name: 'Model' }).selectOption('llama-3-70b');
  await page.getByRole('combobox', { name: 'Device' }).selectOption('h100-sxm');
  await typeInto(page, page.getByRole('spinbutton', { name: 'TP (GPUs/replica)', exact: true }), '4');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Replicas', exact: true }), '2');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Rate (req/s)', exact: true }), '20');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Requests', exact: true }), '400');
  const s = await scenario(page);
  assert.equal(s.name, 'llama-3-70b-h100-sxm-tp4x2-20rps');
  assert.match(s.description, /Derived from the example "default"/);
  await runAndWait(page);
  // The results took focus.
  assert.equal(await page.evaluate(() => document.activeElement.id), 'diagnosis-title');
  assert.match(await page.textContent('#ran'), /llama-3-70b on 8 × h100-sxm \(TP 4 × 2 replicas\) · offered [0-9.]+ req\/s · 400 requests/);
  const json = await download(page, '#x-json');
  assert.equal(json.name, 'inferscale-llama-3-70b-h100-sxm-tp4x2-20rps-seed42.json');
  const md = await download(page, '#x-md');
  assert.match(md.text, /\*\*Setup:\*\* llama-3-70b on 8 × h100-sxm \(TP 4 × 2 replicas\); offered [0-9.]+ req\/s\./);
  assert.match(md.text, /\| offered rate \| [0-9.]+ req\/s \|/);
  // The offered and achieved rates are on cards.
  for (const k of ['Offered rate', 'Achieved (steady)']) assert.match(await page.textContent(`.card[data-metric="${k}"] .v`), /req\/s$/);
  // A name the user wrote stays.
  await page.fill('#scenario', (await page.inputValue('#scenario')).replace('"llama-3-70b-h100-sxm-tp4x2-20rps"', '"my-fleet"'));
  await page.dispatchEvent('#scenario', 'input');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Replicas', exact: true }), '3');
  assert.equal((await scenario(page)).name, 'my-fleet');
  await page.close();
});

test('Run is visible without scrolling on a 1400×900 window and a few Tab stops away', async () => {
  const { page } = await openLab(ctx, server.url);
  await page.setViewportSize({ width: 1400, height: 900 });
  const box = await page.locator('#run').boundingBox();
  assert.ok(box && box.y + box.height <= 900, `Run at y = ${box?.y}`);
  // Reachable in a few Tab stops: without the skip link, Run comes right after the sidebar (the skip link and
  // the examples select first).
  let stops = 0;
  while (stops < 20 && await page.evaluate(() => document.activeElement.id) !== 'run') { await page.keyboard.press('Tab'); stops++; }
  const links = await page.$$eval('nav a', (a) => a.length);
  assert.ok(stops <= links + 2, `Run after ${stops} Tab stops (${links} sidebar links)`);
  // And the first stop of a fresh page is "Skip to Run", which focuses Run and leaves the URL alone.
  await page.reload();
  await page.waitForFunction(() => document.getElementById('scenario').value.length > 10);
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'skip-run');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'run');
  assert.doesNotMatch(page.url(), /#run/);
  await page.close();
});

test('objectives as users write them: a typed "p95 TTFT ≤ 800 ms" and attainment target reach the cards, charts and diagnosis', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await typeInto(page, page.locator('[data-ptr="/objectives/attainment_target"]'), '0.95');
  await page.getByRole('button', { name: 'Add objective' }).click();
  await typeInto(page, page.getByRole('spinbutton', { name: 'objective 1 bound (ms)' }), '800');
  await page.getByRole('combobox', { name: 'objective 1 metric' }).selectOption('ttft');
  const s = await scenario(page);
  assert.equal(s.objectives.attainment_target, 0.95);
  assert.deepEqual(s.objectives.percentiles, [{ metric: 'ttft', percentile: 95, max_ms: 800 }]);
  // A bad class name is named at its field.
  await typeInto(page, page.getByRole('textbox', { name: 'objective 1 class' }), 'chta');
  assert.match(await page.textContent('#errors'), /no class is named "chta"; did you mean "chat"\?/);
  assert.equal(await page.isDisabled('#run'), true);
  await typeInto(page, page.getByRole('textbox', { name: 'objective 1 class' }), '');
  assert.equal(await page.isDisabled('#run'), false);
  await runAndWait(page);
  const card = page.locator('.card[data-metric="p95 TTFT ≤ 800 ms"] .v');
  assert.match(await card.textContent(), /ms$/);
  const report = JSON.parse((await download(page, '#x-json')).text);
  assert.equal(report.objectives.attainment_target, 0.95);
  assert.equal(report.objectives.percentiles[0].value_s, report.summary.ttft_s.p95);
  const met = report.objectives.percentiles[0].met;
  assert.equal(await page.getAttribute('.card[data-metric="p95 TTFT ≤ 800 ms"]', 'class'), `card ${met ? 'good' : 'bad'}`);
  assert.match(await page.textContent('.card[data-metric="SLO attainment"] .k'), /target 95\.0 %/);
  if (!met) assert.match(await page.textContent('#diagnosis'), /p95 TTFT ≤ 800 ms \(measured/);
  assert.match(await page.getAttribute('#chart-ttft', 'aria-label'), /p95 ≤ 800 ms/);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('every generated row field and the remaining controls take typed input as typed', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  // Gamma arrivals by keyboard, then its CV typed.
  await page.getByRole('combobox', { name: 'Arrivals', exact: true }).selectOption('gamma');
  const cv = page.getByRole('spinbutton', { name: 'Gap CV', exact: true });
  assert.equal(await cv.isDisabled(), false);
  await typeInto(page, cv, '1.5');
  assert.equal((await scenario(page)).workload.arrival.cv, 1.5);
  for (const [name, value, ptr] of [['Order estimate', 'class_mean', '/estimator/order/kind'], ['Reserve estimate', 'zero', '/estimator/reserve/kind']]) {
    await page.getByRole('combobox', { name, exact: true }).selectOption(value);
    assert.equal(at(await scenario(page), ptr), value, name);
  }
  // Every numeric field of the generated rows: retype what it shows, then a new number, by keyboard.
  const fields = await page.$$eval('#details input[type=number][data-ptr]', (xs) => xs.filter((x) => !x.disabled).map((x) => [x.getAttribute('data-ptr'), x.getAttribute('data-ty'), x.value]));
  assert.ok(fields.length >= 15, `${fields.length} generated numeric fields`);
  for (const [ptr, ty, shown] of fields) {
    const field = page.locator(`[data-ptr="${ptr}"]`);
    if (shown === '') continue; // an optional field left empty (no objective): typed below
    await typeInto(page, field, shown);
    assert.equal(await field.inputValue(), shown, `${ptr}: the field still reads what was typed`);
    // Retyping the same text changes nothing (a field left at its default may be absent from the JSON).
    const same = at(await scenario(page), ptr);
    assert.ok(same === undefined || same === Number(shown), `${ptr}: the scenario holds ${shown} (got ${same})`);
    const other = ty === 'int' ? String(Number(shown) + 1) : String(Number(shown) * 1.5);
    await typeInto(page, field, other);
    const got = at(await scenario(page), ptr);
    if (await page.isDisabled('#run')) {
      // The new value is out of its range: said at the field, and the scenario kept the typed number.
      assert.equal(got, Number(other), `${ptr}: invalid values are kept for the validator to name`);
    } else {
      assert.equal(got, Number(other), `${ptr}: typed ${other}`);
    }
    await typeInto(page, field, shown);
    assert.equal(at(await scenario(page), ptr), Number(shown), `${ptr}: back to ${shown}`);
  }
  // An optional SLO left empty is typed into and cleared again.
  const e2e = page.locator('[data-ptr="/workload/classes/0/slo/e2e_ms"]');
  await typeInto(page, e2e, '25000');
  assert.equal((await scenario(page)).workload.classes[0].slo.e2e_ms, 25000);
  await typeInto(page, e2e, '');
  assert.equal((await scenario(page)).workload.classes[0].slo.e2e_ms, undefined);
  assert.equal(await page.isDisabled('#run'), false);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('the page has a Content-Security-Policy: injected inline script does not run, the lab still does', async () => {
  const { page } = await openLab(ctx, server.url);
  const policy = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
  assert.match(policy, /script-src 'self' 'sha256-[A-Za-z0-9+/=]+' 'wasm-unsafe-eval'/);
  assert.doesNotMatch(policy.split(';').find((d) => d.trim().startsWith('script-src')), /unsafe-inline/);
  const ran = await page.evaluate(() => {
    const s = document.createElement('script');
    s.textContent = 'window.injected = true';
    document.body.appendChild(s);
    const img = document.createElement('div');
    img.innerHTML = '<img src="x" onerror="window.injected = true">';
    document.body.appendChild(img);
    return new Promise((r) => setTimeout(() => r(window.injected === true), 200));
  });
  assert.equal(ran, false, 'inline script and inline handlers are refused');
  await runAndWait(page);
  await page.close();
});

test('a run past the lab\'s budget is refused at Requests with the estimate, typed or from a shared link, and nothing crashes', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const requests = page.getByRole('spinbutton', { name: 'Requests', exact: true });
  await typeInto(page, requests, '50000000');
  const msg = await page.textContent('#msg-c-requests');
  assert.match(msg, /^Requests: this run would need about [0-9.]+ GB of memory .*over the budget of 1\.5 GB/, msg);
  assert.match(msg, /the command line runs larger ones/);
  assert.equal(await page.isDisabled('#run'), true);
  await typeInto(page, requests, '2000');
  assert.equal(await page.locator('#msg-c-requests').count(), 0);
  assert.equal(await page.isDisabled('#run'), false);
  // A shared link that asks for the same: the page opens, says why, and runs nothing.
  const big = JSON.parse(await page.inputValue('#scenario'));
  big.workload.requests = 50000000;
  const link = `${server.url}#scenario=${encodeURIComponent(JSON.stringify(big))}`;
  const other = await ctx.newPage();
  await other.goto(link);
  await other.waitForFunction(() => document.getElementById('run') && document.getElementById('run').disabled);
  assert.match(await other.textContent('#errors'), /over the budget of 1\.5 GB/);
  await other.close();
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('a closed loop of clients is chosen, typed and run; a burst too', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await page.getByRole('combobox', { name: 'Arrivals' }).selectOption('closed_loop');
  assert.deepEqual((await scenario(page)).workload.arrival, { kind: 'closed_loop', clients: 16, think_s: 0 });
  assert.equal(await page.isDisabled('#c-rate'), true, 'a closed loop has no rate to set');
  const clients = page.locator('[data-ptr="/workload/arrival/clients"]');
  await typeInto(page, clients, '32');
  await typeInto(page, page.locator('[data-ptr="/workload/arrival/think_s"]'), '0.5');
  assert.deepEqual((await scenario(page)).workload.arrival, { kind: 'closed_loop', clients: 32, think_s: 0.5 });
  await typeInto(page, clients, '0');
  assert.match(await page.textContent('#errors'), /clients/);
  assert.equal(await page.isDisabled('#run'), true);
  await typeInto(page, clients, '8');
  await runAndWait(page);
  assert.match(await page.textContent('#diagnosis'), /a closed loop of 8 clients \(think time 0\.5 s\)/);
  await page.getByRole('combobox', { name: 'Arrivals' }).selectOption('burst');
  await runAndWait(page);
  assert.match(await page.textContent('#diagnosis'), /a burst at t = 0/);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('the feasibility admission is chosen by keyboard and runs', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  const admission = page.getByRole('combobox', { name: 'Admission', exact: true });
  await admission.focus();
  // Down the list from "Admit all" until the feasibility check is chosen, as a keyboard user would.
  for (let i = 0; i < 12 && (await admission.inputValue()) !== 'feasible'; i++) await page.keyboard.press('ArrowDown');
  assert.equal(await admission.inputValue(), 'feasible');
  assert.deepEqual((await scenario(page)).admission, { kind: 'feasible', slack: 1 });
  assert.equal(await page.isDisabled('#run'), false);
  await runAndWait(page);
  assert.match(await page.textContent('#results'), /reject|turned away|admission/i, 'the results say what admission did');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
