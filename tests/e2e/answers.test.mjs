// The answers a user acts on (issue 23), as a new user reaches them: typed with the keyboard, read off the page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serve, browser, openLab, runAndWait, download } from './browser.mjs';

let server, ctx;
before(async () => { server = await serve(); ctx = await browser(); });
after(async () => { await ctx?.close(); server?.stop(); });

const scenario = async (page) => JSON.parse(await page.inputValue('#scenario'));

/** Select the field's text and type `text` key by key, as a user does; then Tab out of it. */
async function typeInto(page, locator, text) {
  await locator.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');
  await page.keyboard.type(text, { delay: 5 });
  await page.keyboard.press('Tab');
}

test('finding 1: a 3× overload is diagnosed as capacity, and the replicas that meet the objectives are measured', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await page.getByRole('combobox', { name: 'Example' }).selectOption('chat-70b-h100-tp4');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Replicas', exact: true }), '3');
  await typeInto(page, page.getByRole('spinbutton', { name: 'Rate (req/s)', exact: true }), '19.8');
  const s = await scenario(page);
  assert.equal(s.cluster.replicas, 3);
  assert.equal(s.workload.arrival.rate_rps, 19.8);
  await runAndWait(page, 120000);
  const d = page.locator('#diagnosis');
  assert.equal(await d.locator('h3').textContent(), 'Diagnosis: capacity');
  assert.match(await d.locator('.regime').textContent(), /^Regime: over capacity \([0-9.]+× offered ÷ served\) · limit: batch cap$/);
  assert.match(await d.textContent(), /A capacity problem: 20\.01 req\/s offered, 14\.61 req\/s served over the steady window\./);
  // The advice leads with what was measured on the same requests, and the table shows each run.
  assert.match(await d.textContent(), /Most likely to help: Measured on the same requests: 8 replicas \(from 3\): objectives met/);
  const table = page.getByRole('table', { name: 'Changes tested on the same requests' });
  const rows = await table.locator('tbody tr').allTextContents();
  assert.ok(rows.length >= 3, rows.join('\n'));
  assert.match(rows[0], /^5 replicas \(from 3\)still overloaded/);
  assert.ok(rows.some((r) => /^8 replicas \(from 3\)objectives met/.test(r)), rows.join('\n'));
  // Never advice that contradicts the numbers beside it: no "memory" verdict, no "add KV" first.
  assert.doesNotMatch(await d.locator('h3').textContent(), /memory/);
  // The Markdown export carries the same table.
  const md = await download(page, '#x-md');
  assert.match(md.text, /\| 8 replicas \(from 3\) \| objectives met \|/);
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
