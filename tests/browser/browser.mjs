// Browser test rig: Debian's chromium driven by puppeteer-core (which never downloads a browser),
// and router configs whose web transport serves the trace viewer next to WAMP at /ws.
//
// Environment: RT_CHROMIUM (default /usr/bin/chromium), RT_SOURCE_DIR (source root),
// RT_BROWSER_ARTIFACTS (where screenshots and downloads go; default a temp directory).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import puppeteer from 'puppeteer-core';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function artifactsDir() {
  const dir = process.env.RT_BROWSER_ARTIFACTS ||
    path.join(os.tmpdir(), 'wampscope-browser-artifacts');
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

// A copy of the router config configs/<name> whose web transport (the one with the "ws" path)
// also serves the trace viewer at /trace/ ("wampscope-trace-viewer"), written to a temporary
// directory; resolves with {config, cleanup()}, config being the copy's path relative to the
// source root (what startRouter() takes).
export function viewerConfig(name) {
  const src = process.env.RT_SOURCE_DIR;
  assert.ok(src, 'RT_SOURCE_DIR must be set (run via ctest)');
  const cfg = JSON.parse(fs.readFileSync(path.join(src, 'configs', name), 'utf8'));
  const web = cfg.workers[0].transports.find((t) => t.type === 'web' && t.paths?.ws);
  assert.ok(web, `configs/${name} has no web transport with a ws path`);
  web.paths.trace = { type: 'wampscope-trace-viewer' };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wampscope-viewer-config-'));
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(cfg));
  return {
    config: path.relative(src, file),
    cleanup() {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// The viewer's address on a router started with a viewerConfig() copy: the HTTP side of its
// WebSocket URL (ws://127.0.0.1:<port>/ws -> http://127.0.0.1:<port>/trace/).
export function viewerUrl(router) {
  const u = new URL(router.url);
  assert.equal(u.pathname, '/ws');
  return `http://${u.host}/trace/`;
}

// Launches headless chromium with a fresh profile; resolves with {browser, stop()}.
// The first start of chromium on a fresh machine can be slow (its font cache is built, its files
// are read from disk for the first time, other tests load both cores): each attempt may take up
// to LAUNCH_TIMEOUT_MS, and a start that times out is tried once more with a new profile, its
// stderr shown. `make test` also starts chromium once before the tests (Makefile, chromium-warm).
const LAUNCH_TIMEOUT_MS = 90000;

async function launchOnce(dumpio) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'wampscope-chromium-'));
  try {
    const browser = await puppeteer.launch({
      executablePath: process.env.RT_CHROMIUM || '/usr/bin/chromium',
      headless: true,
      userDataDir: profile,
      timeout: LAUNCH_TIMEOUT_MS,
      dumpio,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        `--user-data-dir=${profile}`],
      defaultViewport: { width: 1500, height: 900 },
    });
    return { browser, profile };
  } catch (e) {
    fs.rmSync(profile, { recursive: true, force: true });
    throw e;
  }
}

export async function launchBrowser() {
  let launched;
  try {
    launched = await launchOnce(false);
  } catch (e) {
    console.error(`# chromium did not start (${e.message}); trying once more, its output follows`);
    launched = await launchOnce(true);
  }
  const { browser, profile } = launched;
  return {
    browser,
    async stop() {
      try {
        await browser.close();
      } finally {
        fs.rmSync(profile, { recursive: true, force: true });
      }
    },
  };
}

// Collects console errors, page errors and failed requests of page into problems.
export function watchPage(page, problems) {
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
}

// Clicks selector until check() (async) is truthy; fails with what after ms. A live view may
// re-render the element between finding and clicking it (a new batch of records redraws the
// table), which loses a single click: the click is repeated every half second until it takes.
export async function clickUntil(page, selector, check, what, ms = 15000) {
  let clickedAt = 0;
  return until(async () => {
    if (await check()) return true;
    if (Date.now() - clickedAt >= 500) {
      clickedAt = Date.now();
      const el = await page.$(selector);
      if (el) await el.click().catch(() => {});
    }
    return check();
  }, what, ms);
}

// Polls fn (async) until it returns a truthy value; fails with what after ms.
export async function until(fn, what, ms = 15000) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await sleep(50);
  }
}

// A fresh directory name under the artifacts directory that chrome (launchBrowser()'s) downloads
// to from now on; returns its path.
export async function downloadsTo(chrome, name) {
  const dir = path.join(artifactsDir(), name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const cdp = await chrome.browser.target().createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: dir });
  return dir;
}

// Clicks selector on page and returns the items of the JSON Lines file it downloads, file (any
// earlier one removed first).
export async function downloadJsonl(page, selector, file) {
  fs.rmSync(file, { force: true });
  // Clicked in the page (the element's click()), not with the mouse: the live stats beside the
  // button change width as records arrive, and a mouse click at where the button was a moment
  // before can land beside it (no download then, and a wait that times out).
  await page.$eval(selector, (b) => b.click());
  await until(() => fs.existsSync(file), 'the download');
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
}

// Calls publish() in bursts, a burst a millisecond, while until() retries attempt(tune) (what,
// ms as for until()); returns attempt's truthy answer. attempt() tunes the bursts: tune(1)
// doubles them (it met too little), tune(-1) halves them (too much).
export async function whilePublishing(publish, attempt, what, ms = 60000) {
  let pressing = true, burst = 2;
  const tune = (more) => {
    burst = more > 0 ? Math.min(burst * 2, 300) : Math.max(1, Math.floor(burst / 2));
  };
  const pressure = (async () => {
    while (pressing) {
      for (let k = 0; k < burst; k++) publish();
      await sleep(1);
    }
  })();
  try {
    return await until(() => attempt(tune), what, ms);
  } finally {
    pressing = false;
    await pressure;
  }
}
