// Opens every page of a built streamlab site in headless Chromium at 1280x900, from file://, with JavaScript
// off, and fails if anything does not load, anything reaches for the network, a link points nowhere, a results
// page lacks its charts and data tables, an element runs past the viewport's right edge (unless a scroll box
// holds it), or the index's verdict table does not start on the first screen. Usage: node check.mjs SITE_DIR
// (CHROMIUM=path optional).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const site = path.resolve(process.argv[2] ?? '');
if (!process.argv[2] || !fs.existsSync(path.join(site, 'index.html'))) {
  console.error(`usage: node check.mjs SITE_DIR (no index.html in ${site})`);
  process.exit(2);
}
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const shots = process.env.SITE_CHECK_SCREENSHOTS; // optional: a directory for full-page and first-screen PNGs

function walk(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? walk(p) : [p];
  });
}

const pages = walk(site).filter((f) => f.endsWith('.html')).sort();
const idsOf = new Map(); // file -> Set of element ids, read from the HTML for cross-page anchors
function idsIn(file) {
  if (!idsOf.has(file)) {
    const html = fs.readFileSync(file, 'utf8');
    idsOf.set(file, new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1])));
  }
  return idsOf.get(file);
}

// A results page: the latest page of a matrix, or a matrix page inside a run.
const isMatrixPage = (rel) => /^matrix\/[^/]+\.html$/.test(rel) || /^runs\/[^/]+\/(?!index\.html)[^/]+\.html$/.test(rel);

const browser = await chromium.launch({
  executablePath,
  headless: true,
  // Scrollbars that take room, as a desktop reader's do: 100vw then counts one, and a page that fits only without it
  // is caught.
  ignoreDefaultArgs: ['--hide-scrollbars'],
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
});
const VIEWPORT = { width: 1280, height: 900 };
const context = await browser.newContext({ javaScriptEnabled: false, viewport: VIEWPORT });
const failures = [];
let charts = 0;
let tables = 0;

// One tab for every page: a new tab per page started a renderer process per page, most of the check's CPU.
// What a page does while loading goes to the problems of the page being checked.
let problems = [];
const page = await context.newPage();
await page.route('**/*', (route) => {
  const url = route.request().url();
  if (url.startsWith('file://') || url.startsWith('data:')) return route.continue();
  problems.push(`reached for the network: ${url}`);
  return route.abort();
});
page.on('requestfailed', (r) => problems.push(`failed to load ${r.url()}: ${r.failure()?.errorText}`));
page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));

for (const file of pages) {
  const rel = path.relative(site, file).split(path.sep).join('/');
  problems = [];

  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  const facts = await page.evaluate(() => ({
    title: document.title,
    scripts: document.querySelectorAll('script').length,
    styled: getComputedStyle(document.body).marginTop === '0px' && getComputedStyle(document.querySelector('main')).maxWidth !== 'none',
    charts: [...document.querySelectorAll('svg.chart')].map((s) => {
      const box = s.getBoundingClientRect();
      const next = s.closest('figure')?.nextElementSibling;
      return { w: box.width, h: box.height, bars: s.querySelectorAll('rect.bar, rect.ref, rect.forest-point, text.missing').length, table: next?.tagName === 'TABLE' && next.querySelectorAll('tbody tr').length };
    }),
    tables: document.querySelectorAll('table').length,
    links: [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')),
    h1: document.querySelector('h1')?.textContent ?? '',
    // Elements whose right edge passes the viewport's, unless an ancestor that scrolls or clips holds them.
    wide: [...document.querySelectorAll('body *')].filter((e) => {
      if (e.getBoundingClientRect().right <= window.innerWidth + 1) return false;
      for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
        if (getComputedStyle(a).overflowX !== 'visible' && a.getBoundingClientRect().right <= window.innerWidth + 1) return false;
      }
      return true;
    }).slice(0, 3).map((e) => `${e.tagName.toLowerCase()}${e.className && typeof e.className === 'string' ? '.' + e.className.split(' ').join('.') : ''} (right edge ${Math.round(e.getBoundingClientRect().right)} px)`),
    pageWidth: document.documentElement.scrollWidth,
    firstVerdictTop: document.querySelector('table.claims tbody tr')?.getBoundingClientRect().top ?? null,
  }));

  if (!facts.title) problems.push('no <title>');
  if (!facts.h1) problems.push('no <h1>');
  if (facts.scripts) problems.push(`${facts.scripts} <script> element(s): pages must not need JavaScript`);
  if (!facts.styled) problems.push('style.css did not apply');
  facts.charts.forEach((c, i) => {
    if (!(c.w > 100 && c.h > 40)) problems.push(`chart ${i + 1} is not rendered (${c.w}x${c.h})`);
    if (!c.bars) problems.push(`chart ${i + 1} draws nothing`);
    if (!c.table) problems.push(`chart ${i + 1} is not followed by a data table with rows`);
  });
  if (isMatrixPage(rel) && facts.charts.length === 0) problems.push('a results page without charts');
  if (facts.wide.length || facts.pageWidth > VIEWPORT.width) {
    problems.push(`wider than a ${VIEWPORT.width} px viewport (page ${facts.pageWidth} px): ${facts.wide.join(', ')}`);
  }
  if (rel === 'index.html' && facts.firstVerdictTop === null) problems.push('no verdict table (table.claims)');
  if (rel === 'index.html' && facts.firstVerdictTop >= VIEWPORT.height) {
    problems.push(`the verdict table's first row starts at ${Math.round(facts.firstVerdictTop)} px, below the first ${VIEWPORT.height} px`);
  }
  for (const href of facts.links) {
    if (/^[a-z]+:/i.test(href) && !href.startsWith('file:')) {
      problems.push(`absolute link ${href}: the site must work offline`);
      continue;
    }
    const [target, hash] = href.split('#');
    const targetFile = target ? fileURLToPath(new URL(target, pathToFileURL(file))) : file;
    if (!fs.existsSync(targetFile)) { problems.push(`broken link ${href}`); continue; }
    if (hash && targetFile.endsWith('.html') && !idsIn(targetFile).has(hash)) problems.push(`link ${href}: no id "${hash}" there`);
  }
  // Printable: charts keep their size on paper.
  if (facts.charts.length) {
    await page.emulateMedia({ media: 'print' });
    const printed = await page.evaluate(() => [...document.querySelectorAll('svg.chart')].every((s) => s.getBoundingClientRect().height > 40));
    if (!printed) problems.push('charts collapse when printed');
    await page.emulateMedia({ media: 'screen' });
  }
  if (shots) {
    fs.mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: path.join(shots, rel.replaceAll('/', '__') + '.png'), fullPage: true });
    // The first screen as a reader at 1280x900 meets it.
    await page.screenshot({ path: path.join(shots, rel.replaceAll('/', '__') + '.first.png') });
  }
  charts += facts.charts.length;
  tables += facts.tables;
  if (problems.length) failures.push(...problems.map((p) => `${rel}: ${p}`));
  console.log(`${problems.length ? 'FAIL' : 'ok  '} ${rel} (${facts.charts.length} charts, ${facts.tables} tables)`);
}
await browser.close();

console.log(`site check: ${pages.length} pages, ${charts} charts, ${tables} tables`);
if (failures.length) {
  console.error(failures.join('\n'));
  console.error(`site check failed: ${new Set(failures.map((f) => f.split(':')[0])).size} of ${pages.length} pages have problems`);
  process.exit(1);
}
