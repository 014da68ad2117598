// Browser test rig: Debian's chromium driven by puppeteer-core (which never downloads a browser),
// and a static HTTP server for mgmt/viewer/ (Python's http.server on 127.0.0.1, an ephemeral
// port, stopped by PID) until the router serves the page itself.
//
// Environment: RT_CHROMIUM (default /usr/bin/chromium), RT_SOURCE_DIR (source root),
// RT_BROWSER_ARTIFACTS (where screenshots and downloads go; default a temp directory).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
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

// Serves dir on 127.0.0.1:<ephemeral>; resolves with {url, stop()}.
export async function startStaticServer(dir) {
  let argv = ['/usr/bin/python3', '-u', '-m', 'http.server', '0', '--bind', '127.0.0.1',
    '--directory', dir];
  if (fs.existsSync('/usr/bin/setpriv')) {
    argv = ['/usr/bin/setpriv', '--pdeathsig', 'KILL', '--', ...argv];
  }
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
  proc.stderr.setEncoding('utf8').on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  const deadline = Date.now() + 10000;
  let port = null;
  while (!port) {
    const m = /port (\d+)/.exec(out);
    if (m) port = Number(m[1]);
    else if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`static server did not start\n${out}${err}`);
    } else await sleep(20);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await Promise.race([exited, sleep(3000)]);
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    },
  };
}

// Launches headless chromium with a fresh profile; resolves with {browser, stop()}.
export async function launchBrowser() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'wampscope-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: process.env.RT_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    userDataDir: profile,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      `--user-data-dir=${profile}`],
    defaultViewport: { width: 1500, height: 900 },
  });
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
