// GraphiQL on the dev server, driven in headless Chromium: type a query, run it, read the result.
// Every request the page makes is checked to stay on the dev server: the assets come from npm.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { startServer } from '../../node/graphql/app.ts';
import { createCountriesHandler } from '../../src/index.ts';
import { needs } from '../support/prereq.ts';
import { within } from '../support/graphql-fixtures.ts';

const chromiumPath = '/usr/bin/chromium';
const query = '{ country(code: "BR") { name capital currency } }';

test('GraphiQL from the dev server runs a typed query in headless Chromium, offline', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { commands: [chromiumPath] })) return;
  const server = await startServer({ handler: createCountriesHandler(), port: 0, hostname: '127.0.0.1', graphiql: true });
  const origin = new URL(server.url).origin;
  const profile = mkdtempSync(join(tmpdir(), 'skiff-graphiql-chromium-'));
  let context: BrowserContext | undefined;
  // One hook, in order: the browser must be gone before its profile directory is removed.
  t.after(async () => {
    await context?.close().catch(() => {});
    await server.close();
    rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  });
  context = await within(
    30_000,
    'Chromium did not start',
    chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    }),
  );

  // Anything not addressed to the dev server is refused and remembered.
  const offsite: string[] = [];
  const onsite: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) {
      onsite.push(url);
      return route.continue();
    }
    offsite.push(url);
    return route.abort();
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(message.text());
  });
  page.setDefaultTimeout(30_000);

  const response = await page.goto(server.url);
  assert.equal(response?.status(), 200);
  assert.match(response?.headers()['content-type'] ?? '', /^text\/html/);

  const editor = page.locator('.graphiql-query-editor .CodeMirror');
  await editor.waitFor({ state: 'visible' });
  await editor.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');
  // insertText types the query as one input, so the editor's bracket auto-closing does not double braces.
  await page.keyboard.insertText(query);
  const typed = await page.evaluate(
    () => (document.querySelector('.graphiql-query-editor .CodeMirror') as unknown as { CodeMirror: { getValue(): string } }).CodeMirror.getValue(),
  );
  assert.equal(typed, query);

  await page.locator('.graphiql-execute-button').click();
  const resultPane = page.locator('.graphiql-response .CodeMirror');
  await page.waitForFunction(() => {
    const pane = document.querySelector('.graphiql-response .CodeMirror') as unknown as { CodeMirror?: { getValue(): string } } | null;
    return pane?.CodeMirror?.getValue().includes('Brazil') ?? false;
  });
  const result = await resultPane.evaluate((node) => (node as unknown as { CodeMirror: { getValue(): string } }).CodeMirror.getValue());
  assert.deepEqual(JSON.parse(result), { data: { country: { name: 'Brazil', capital: 'Brasília', currency: 'BRL' } } });

  assert.deepEqual(offsite, [], 'no request left the dev server');
  assert.ok(onsite.some((url) => url.endsWith('/graphiql/graphiql.min.js')), 'assets came from the dev server');
  assert.deepEqual(pageErrors, [], 'no script or policy errors on the page');
});
