// Shared helpers for the end-to-end tests: serve dist/ on 127.0.0.1 and drive Debian's Chromium.
import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';

export const ROOT = new URL('../../', import.meta.url).pathname;

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

/** Serve dist/ with Python's static server (it serves .wasm with the right type). */
export async function serve() {
  const port = await freePort();
  const proc = spawn('python3', ['-m', 'http.server', '--bind', '127.0.0.1', '--directory', join(ROOT, 'dist'), String(port)], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}/`;
  for (let i = 0; i < 100; i++) {
    try { const r = await fetch(url); if (r.ok) break; } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, stop: () => proc.kill() };
}

/** A fresh headless Chromium with the flags this closed network needs. */
export async function browser() {
  const dir = mkdtempSync(join(tmpdir(), 'inferscale-e2e-'));
  return chromium.launchPersistentContext(dir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1400, height: 1000 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Record the box of every text drawn on each canvas (fillText through the current transform), in
 *  `window.drawnText[canvas id]`; must be set before the page loads. */
export async function recordCanvasText(page) {
  await page.addInitScript(() => {
    window.drawnText = {};
    const orig = CanvasRenderingContext2D.prototype.fillText;
    CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
      const id = this.canvas.id;
      const m = this.measureText(text);
      const t = this.getTransform();
      const left = x - (this.textAlign === 'center' ? m.width / 2 : this.textAlign === 'right' || this.textAlign === 'end' ? m.width : 0);
      const corners = [[left, y - m.actualBoundingBoxAscent], [left + m.width, y - m.actualBoundingBoxAscent], [left, y + m.actualBoundingBoxDescent], [left + m.width, y + m.actualBoundingBoxDescent]]
        .map(([px, py]) => [t.a * px + t.c * py + t.e, t.b * px + t.d * py + t.f]);
      const xs = corners.map((c) => c[0]); const ys = corners.map((c) => c[1]);
      (window.drawnText[id] ||= []).push({ text: String(text), x0: Math.min(...xs), x1: Math.max(...xs), y0: Math.min(...ys), y1: Math.max(...ys) });
      return orig.call(this, text, x, y, ...rest);
    };
  });
}

/** Open the lab and wait until its wasm has started; `{ canvasText: true }` records what its canvases draw. */
export async function openLab(ctx, url, { canvasText = false } = {}) {
  const page = await ctx.newPage();
  if (canvasText) await recordCanvasText(page);
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForFunction(() => window.wasmBindings !== undefined, null, { timeout: 30000 });
  await page.waitForFunction(() => document.getElementById('scenario').value.length > 10);
  return { page, errors };
}

/** Click Run and wait for the results. */
export async function runAndWait(page, timeout = 60000) {
  await page.click('#run');
  await page.waitForFunction(() => /^Done in/.test(document.getElementById('status').textContent), null, { timeout });
}

/** Click a download button; the file's suggested name, text and bytes. */
export async function download(page, selector) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  const path = await dl.path();
  return { name: dl.suggestedFilename(), text: readFileSync(path, 'utf8'), bytes: readFileSync(path) };
}

/** Share of a canvas's pixels that are not near-white: a drawn chart has ink. */
export async function inkFraction(page, id) {
  return page.evaluate((id) => {
    const c = document.getElementById(id);
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200) n++;
    return n / (c.width * c.height);
  }, id);
}

/** Record every text an element shows, in the page (a fast change cannot slip between two polls); returns a
 *  function that gives the texts seen so far. */
export async function recordTexts(page, id) {
  await page.evaluate((id) => {
    window.seenTexts = [];
    new MutationObserver(() => window.seenTexts.push(document.getElementById(id).textContent))
      .observe(document.getElementById(id), { childList: true, characterData: true, subtree: true });
  }, id);
  return () => page.evaluate(() => window.seenTexts);
}

/** The Serving Lab's scenario as its JSON editor holds it. */
export const scenario = async (page) => JSON.parse(await page.inputValue('#scenario'));

/** Select the field's text and type `text` key by key, as a user does; then Tab out of it. */
export async function typeInto(page, locator, text) {
  await locator.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');
  await page.keyboard.type(text, { delay: 5 });
  await page.keyboard.press('Tab');
}

/**
 * The study table's decisive columns (those its answer is read from), each with whether it is in view in its
 * scrolling wrapper as the page opens it — left and right edges inside — and the wrapper's overflow: wide
 * tables keep them next to the row's name.
 */
export const decisiveColumns = (page) => page.$eval('#study-table-el', (t) => {
  const wrap = t.closest('.table-wrap').getBoundingClientRect();
  const columns = [...t.querySelectorAll('thead th.decisive')].map((th) => {
    const r = th.getBoundingClientRect();
    return { label: th.title, inView: r.left >= wrap.left - 0.5 && r.right <= wrap.right + 0.5 };
  });
  return { columns, overflows: t.scrollWidth > t.closest('.table-wrap').clientWidth + 1 };
});
