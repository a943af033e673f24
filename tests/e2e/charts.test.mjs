// The Serving Lab's charts as a performance engineer reads them: a CDF per latency on a log axis, hover
// read-outs that are data points (equal to a row of the chart's data table), tick labels that do not overlap
// (measured from the boxes of the text the canvas drew), and an accessible name and data table per chart.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serve, browser, openLab, runAndWait, download, recordCanvasText } from './browser.mjs';

let server, ctx;
before(async () => { server = await serve(); ctx = await browser(); });
after(async () => { await ctx?.close(); server?.stop(); });

const CHARTS = ['ttft', 'tpot', 'e2e', 'queue', 'kv', 'class'];

/** A fresh page that records the text its canvases draw, and its console errors. */
async function openRecorded() {
  const page = await ctx.newPage();
  await recordCanvasText(page);
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(server.url);
  await page.waitForFunction(() => window.wasmBindings !== undefined, null, { timeout: 30000 });
  await page.waitForFunction(() => document.getElementById('scenario').value.length > 10);
  return { page, errors };
}

test('every chart: hover snaps to a data point equal to its data table, labels do not overlap, accessible name and data', async () => {
  const { page, errors } = await openRecorded();
  await page.evaluate(() => { window.drawnText = {}; });
  await runAndWait(page);
  for (const which of CHARTS) {
    const canvas = page.locator(`#chart-${which}`);
    // An accessible name that says what the chart shows, and its data as a table.
    const name = await canvas.getAttribute('aria-label');
    assert.ok(name && name.length > 20, `${which}: accessible name "${name}"`);
    assert.equal(await canvas.getAttribute('role'), 'img');
    const rows = await page.$$eval(`#data-chart-${which} tbody tr`, (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    assert.ok(rows.length > 0, `${which}: a data table`);
    // Hover at several places: each read-out is one of the table's rows.
    await canvas.scrollIntoViewIfNeeded();
    const box = await canvas.boundingBox();
    for (const fx of [0.3, 0.5, 0.8]) {
      await page.mouse.move(box.x + box.width * fx, box.y + box.height * 0.5);
      const text = await page.textContent(`#hover-chart-${which}`);
      const hit = rows.some((r) => {
        if (['ttft', 'tpot', 'e2e'].includes(which)) return text.includes(`${r[1]} of requests ≤ ${r[0]}`);
        if (which === 'class') return text === `${r[0]}: attainment ${r[1]}`;
        return text.startsWith(`time (s) ${r[0]}:`) && r.slice(1).every((v) => text.includes(v));
      });
      assert.ok(hit, `${which} at ${fx}: "${text}" is a row of the data table`);
    }
    // No two drawn labels overlap (boxes shrunk by a pixel for anti-aliasing).
    const texts = await page.evaluate((id) => window.drawnText[id] || [], `chart-${which}`);
    assert.ok(texts.length >= 5, `${which}: ${texts.length} labels drawn`);
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length; j++) {
        const a = texts[i]; const b = texts[j];
        const overlap = a.x0 + 1 < b.x1 && b.x0 + 1 < a.x1 && a.y0 + 1 < b.y1 && b.y0 + 1 < a.y1;
        assert.ok(!overlap, `${which}: "${a.text}" overlaps "${b.text}"`);
      }
    }
  }
  // The CDFs are on a log axis with time units on the ticks; the objective is in the legend.
  const ttft = (await page.evaluate(() => window.drawnText['chart-ttft'])).map((t) => t.text);
  assert.ok(ttft.some((t) => /^\d+(\.\d+)? (ms|s)$/.test(t)), `TTFT ticks carry units: ${ttft.join(' | ')}`);
  assert.ok(ttft.some((t) => /^chat SLO 1000 ms$/.test(t)), `the TTFT objective is drawn: ${ttft.join(' | ')}`);
  assert.ok(ttft.some((t) => /^p95 \d/.test(t)), 'the p95 marker is labelled');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('the request table: units in the headers, rounded cells, sortable, and a filter for requests that missed', async () => {
  const { page, errors } = await openLab(ctx, server.url);
  await runAndWait(page);
  const headers = await page.$$eval('#request-table th', (ths) => ths.map((th) => th.textContent));
  for (const h of ['TTFT (ms)', 'E2E (ms)', 'TPOT (ms)', 'queue delay (ms)', 'arrival (s)', 'prompt (tokens)']) assert.ok(headers.includes(h), `${h} in ${headers}`);
  const { text: csv } = await download(page, '#x-csv');
  const lines = csv.trim().split('\n').map((l) => l.split(','));
  const head = lines[0];
  const first = await page.$$eval('#request-table tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  const ttft = head.indexOf('ttft_s');
  assert.equal(first[ttft], (Number(lines[1][ttft]) * 1000).toFixed(1), 'TTFT in ms to a tenth');
  // Nothing overflows its cell: every cell's text fits.
  const overflow = await page.$$eval('#request-table td', (tds) => tds.filter((td) => td.scrollWidth > td.clientWidth + 1).length);
  assert.equal(overflow, 0);
  // The filter keeps exactly the requests that missed: as many as the report says did not meet their SLOs.
  const report = JSON.parse((await download(page, '#x-json')).text);
  const missed = report.classes.reduce((n, c) => n + Math.round(c.requests * (1 - c.slo_attainment)), 0);
  await page.getByRole('checkbox', { name: 'Only requests that missed an objective' }).check();
  assert.match(await page.textContent('#page-info'), new RegExp(`\\(${missed} requests that missed an objective\\)`));
  const shown = await page.$$eval('#request-table tbody tr', (trs) => trs.length);
  assert.equal(shown, Math.min(missed, 50));
  // Sorting works on the filtered rows too (by E2E, descending after two clicks).
  const e2e = head.indexOf('e2e_s');
  await page.click(`#request-table th[data-col="${e2e}"]`);
  await page.click(`#request-table th[data-col="${e2e}"]`);
  const col = await page.$$eval(`#request-table tbody td:nth-child(${e2e + 1})`, (tds) => tds.map((td) => Number(td.textContent)));
  assert.ok(col.every((v, i) => i === 0 || col[i - 1] >= v), 'descending');
  assert.match(await page.textContent('#page-info'), /requests that missed an objective/, 'the filter stays on while sorting');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('every study chart: a named image with a data table, read-outs that are its rows, labels that do not overlap', async () => {
  const { page, errors: errs } = await openRecorded();
  for (const name of ['ranking', 'capacity', 'explorer', 'paired', 'sensitivity']) {
    await page.click(`nav [data-panel="${name}"]`);
    await page.evaluate(() => { window.drawnText = {}; });
    await page.click('#study-run');
    await page.waitForFunction(() => /^Done/.test(document.getElementById('study-status').textContent), null, { timeout: 120000 });
    // Units match headers: a column whose cells carry a time unit has no other time unit in its header.
    const cols = await page.$$eval('#study-table-el th', (ths) => ths.map((th) => th.querySelector('.unit')?.textContent ?? ''));
    const cells = await page.$$eval('#study-table-el tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    cols.forEach((unit, k) => {
      const timed = cells.some((r) => / (ms|s)$/.test(r[k] ?? ''));
      if (timed) assert.ok(!/(^|[ ,(])(ms|s)([ ,)]|$)/.test(unit), `${name}: column ${k} carries its unit in its cells, yet its header says "${unit}"`);
      if (/^(req\/s|%)/.test(unit)) assert.ok(cells.every((r) => !/ (ms|s)$/.test(r[k] ?? '')), `${name}: column ${k} (${unit}) holds times`);
    });
    const ids = await page.$$eval('#study-charts canvas', (cs) => cs.map((c) => c.id));
    assert.ok(ids.length >= 1, name);
    for (const id of ids) {
      const canvas = page.locator(`#${id}`);
      assert.equal(await canvas.getAttribute('role'), 'img');
      assert.ok((await canvas.getAttribute('aria-label')).length > 20, `${name} ${id}: named`);
      const rows = await page.$$eval(`#data-${id} tbody tr`, (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
      assert.ok(rows.length > 0, `${name} ${id}: a data table`);
      await canvas.scrollIntoViewIfNeeded();
      const box = await canvas.boundingBox();
      for (const [fx, fy] of [[0.4, 0.4], [0.6, 0.6], [0.75, 0.3]]) {
        await page.mouse.move(box.x + box.width * fx, box.y + box.height * fy);
        const text = await page.textContent(`#hover-${id}`);
        if (text === '') continue; // off the plot area
        // Every value the read-out prints is one of the table's cells, and its first word names a row.
        const cells = new Set(rows.flat());
        const named = rows.some((r) => text.startsWith(`${r[0]}:`) || text.startsWith(`${r[1]} ${r[0]}:`) || text.includes(` ${r[0]}:`));
        assert.ok(named, `${name} ${id}: "${text}" names a row of the table`);
        const values = [...text.matchAll(/-?\+?[0-9][0-9.,]*( %| ms| s)?/g)].map((m) => m[0]).filter((v) => /[0-9]/.test(v));
        assert.ok(values.some((v) => cells.has(v) || [...cells].some((c) => c.endsWith(v))), `${name} ${id}: "${text}" prints the table's values`);
      }
      const texts = await page.evaluate((i) => window.drawnText[i] || [], id);
      for (let i = 0; i < texts.length; i++) {
        for (let j = i + 1; j < texts.length; j++) {
          const a = texts[i]; const b = texts[j];
          if (!a.text.trim() || !b.text.trim()) continue;
          const overlap = a.x0 + 1 < b.x1 && b.x0 + 1 < a.x1 && a.y0 + 1 < b.y1 && b.y0 + 1 < a.y1;
          assert.ok(!overlap, `${name} ${id}: "${a.text}" overlaps "${b.text}"`);
        }
      }
      // Percent ticks that say something: not every one the same (the paired chart's noise once filled its
      // width over ticks that all read "0 %").
      const ticks = texts.map((t) => t.text.trim()).filter((t) => /^[+−-]?[0-9][0-9.,]* ?%$/.test(t));
      if (ticks.length > 1) assert.ok(new Set(ticks).size > 1, `${name} ${id}: every tick reads ${ticks[0]}`);
    }
  }
  assert.deepEqual(errs, [], 'no console errors');
  await page.close();
});

/** Record every stroked line segment on each canvas, with its colour (through the current transform). */
async function recordStrokes(page) {
  await page.addInitScript(() => {
    window.strokes = {};
    const P = CanvasRenderingContext2D.prototype;
    const { beginPath, moveTo, lineTo, stroke } = P;
    const at = (c, x, y) => { const t = c.getTransform(); return [t.a * x + t.c * y + t.e, t.b * x + t.d * y + t.f]; };
    P.beginPath = function (...a) { this.__path = []; return beginPath.apply(this, a); };
    P.moveTo = function (x, y) { (this.__path ||= []).push({ move: true, p: at(this, x, y) }); return moveTo.call(this, x, y); };
    P.lineTo = function (x, y) { (this.__path ||= []).push({ move: false, p: at(this, x, y) }); return lineTo.call(this, x, y); };
    P.stroke = function (...a) {
      const path = this.__path || [];
      for (let i = 1; i < path.length; i++) {
        if (!path[i].move) (window.strokes[this.canvas.id] ||= []).push({ a: path[i - 1].p, b: path[i].p, colour: String(this.strokeStyle) });
      }
      return stroke.apply(this, a);
    };
  });
}

test('CDF legends sit off every curve, objective and marker; class SLOs and percentile objectives are drawn apart', async () => {
  const page = await ctx.newPage();
  await recordCanvasText(page);
  await recordStrokes(page);
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(server.url);
  await page.waitForFunction(() => window.wasmBindings !== undefined, null, { timeout: 30000 });
  await page.waitForFunction(() => document.getElementById('scenario').value.length > 10);
  // A p95 TTFT objective beside the classes' TTFT SLOs (added from the keyboard).
  await page.getByRole('button', { name: 'Add objective' }).focus();
  await page.keyboard.press('Enter');
  await page.evaluate(() => { window.drawnText = {}; window.strokes = {}; });
  await runAndWait(page);
  for (const which of ['ttft', 'tpot', 'e2e']) {
    const id = `chart-${which}`;
    const texts = await page.evaluate((id) => window.drawnText[id] || [], id);
    const strokes = await page.evaluate((id) => window.strokes[id] || [], id);
    const legend = texts.filter((t) => t.text === which.toUpperCase() || / SLO \d|≤|^p\d+ \d/.test(t.text));
    assert.ok(legend.length >= 4, `${which}: legend ${legend.map((t) => t.text).join(' | ')}`);
    // The grid (light lines and the faint major ones) runs under the legend's background; every other line
    // must miss its labels.
    const data = strokes.filter((s) => !/#ebebeb|rgb\(235, 235, 235\)|rgba\(0, 0, 0, 0\.2\)/i.test(s.colour));
    assert.ok(data.length > 20, `${which}: ${data.length} strokes recorded`);
    for (const t of legend) {
      for (const s of data) {
        for (let k = 0; k <= 40; k++) {
          const x = s.a[0] + (s.b[0] - s.a[0]) * k / 40; const y = s.a[1] + (s.b[1] - s.a[1]) * k / 40;
          const inside = x > t.x0 + 1 && x < t.x1 - 1 && y > t.y0 + 1 && y < t.y1 - 1;
          assert.ok(!inside, `${which}: a ${s.colour} line crosses the legend's "${t.text}"`);
        }
      }
    }
  }
  // On the TTFT CDF: the class SLOs in black dashes, the p95 objective in its own colour, and a cross.
  const colours = new Set((await page.evaluate(() => window.strokes['chart-ttft'])).map((s) => s.colour.toLowerCase()));
  assert.ok(colours.has('#000000'), [...colours].join(' '));
  assert.ok(colours.has('#be1e5a'), `the percentile objective's colour: ${[...colours].join(' ')}`);
  const ttft = (await page.evaluate(() => window.drawnText['chart-ttft'])).map((t) => t.text);
  assert.ok(ttft.includes('p95 ≤ 1000 ms'), ttft.join(' | '));
  assert.deepEqual(errors, []);
  await page.close();
});
