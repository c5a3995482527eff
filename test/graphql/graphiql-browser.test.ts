// GraphiQL on the dev server, driven in headless Chromium: type a query, run it, read the result.
// Every request the page makes is checked to stay on the dev server: the assets come from npm.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { createApp, startServer } from '../../node/graphql/app.ts';
import { attachGraphQLWebSocket } from '../../node/graphql/websocket.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createCountriesHandler } from '../../src/index.ts';
import { needs } from '../support/prereq.ts';
import { within } from '../support/graphql-fixtures.ts';
import { until } from '../fixtures/ws/clients.ts';
import { createChatSchema } from '../../examples/chat/schema.ts';
import { countdownSchema } from '../fixtures/streams/countdown-schema.ts';

const chromiumPath = '/usr/bin/chromium';

interface Browser {
  page: Page;
  /** URLs (and WebSocket URLs) the page asked for outside `origin`; they were refused. */
  offsite: string[];
  onsite: string[];
  pageErrors: string[];
}

/** Headless Chromium with a fresh profile; everything it opens is closed and removed after the test. */
async function openBrowser(t: TestContext, origin: string, cleanups: (() => Promise<void> | void)[]): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'skiff-graphiql-chromium-'));
  let context: BrowserContext | undefined;
  // One hook, in order: the browser must be gone before its servers and its profile directory.
  t.after(async () => {
    await context?.close().catch(() => {});
    for (const cleanup of cleanups) await cleanup();
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
  const browser: Browser = { page: context.pages()[0] ?? (await context.newPage()), offsite: [], onsite: [], pageErrors: [] };
  // Anything not addressed to the dev server is refused and remembered.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) {
      browser.onsite.push(url);
      return route.continue();
    }
    browser.offsite.push(url);
    return route.abort();
  });
  browser.page.on('websocket', (socket) => {
    const url = new URL(socket.url());
    if (`http://${url.host}` !== origin) browser.offsite.push(socket.url());
  });
  browser.page.on('pageerror', (error) => browser.pageErrors.push(error.message));
  browser.page.on('console', (message) => {
    if (message.type() === 'error') browser.pageErrors.push(message.text());
  });
  browser.page.setDefaultTimeout(30_000);
  return browser;
}

/** Types `text` into GraphiQL's query editor, replacing what is there, and checks the editor holds it. */
async function typeQuery(page: Page, text: string): Promise<void> {
  const editor = page.locator('.graphiql-query-editor .CodeMirror');
  await editor.waitFor({ state: 'visible' });
  await editor.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');
  // insertText types the query as one input, so the editor's bracket auto-closing does not double braces.
  await page.keyboard.insertText(text);
  const typed = await editor.evaluate((node) => (node as unknown as { CodeMirror: { getValue(): string } }).CodeMirror.getValue());
  assert.equal(typed, text);
}

/** Waits until the result pane contains `expected`, then returns its text. */
async function resultContaining(page: Page, expected: string): Promise<string> {
  await page.waitForFunction((needle) => {
    const pane = document.querySelector('.graphiql-response .CodeMirror') as unknown as { CodeMirror?: { getValue(): string } } | null;
    return pane?.CodeMirror?.getValue().includes(needle) ?? false;
  }, expected);
  return page.locator('.graphiql-response .CodeMirror').evaluate((node) => (node as unknown as { CodeMirror: { getValue(): string } }).CodeMirror.getValue());
}

test('GraphiQL from the dev server runs a typed query in headless Chromium, offline', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { commands: [chromiumPath] })) return;
  const server = await startServer({ handler: createCountriesHandler(), port: 0, hostname: '127.0.0.1', graphiql: true });
  const browser = await openBrowser(t, new URL(server.url).origin, [() => server.close()]);
  const { page } = browser;

  const response = await page.goto(server.url);
  assert.equal(response?.status(), 200);
  assert.match(response?.headers()['content-type'] ?? '', /^text\/html/);

  await typeQuery(page, '{ country(code: "BR") { name capital currency } }');
  await page.locator('.graphiql-execute-button').click();
  const result = await resultContaining(page, 'Brazil');
  assert.deepEqual(JSON.parse(result), { data: { country: { name: 'Brazil', capital: 'Brasília', currency: 'BRL' } } });

  assert.deepEqual(browser.offsite, [], 'no request left the dev server');
  assert.ok(
    browser.onsite.some((url) => url.endsWith('/graphiql/graphiql.min.js')),
    'assets came from the dev server',
  );
  assert.deepEqual(browser.pageErrors, [], 'no script or policy errors on the page');
});

test('GraphiQL runs subscriptions over graphql-ws on the same URL', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { commands: [chromiumPath] })) return;
  const schema = countdownSchema();
  const app = createApp(createGraphQLHandler({ schema }), { graphiql: { endpoint: '/graphql' } });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
    s.once('error', reject);
    s.once('listening', () => resolve(s));
  });
  const ws = attachGraphQLWebSocket(server, { schema });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const browser = await openBrowser(t, origin, [
    () => ws.close(),
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  ]);
  const { page } = browser;
  const sockets: string[] = [];
  page.on('websocket', (socket) => sockets.push(socket.url()));

  await page.goto(`${origin}/graphql`);
  await typeQuery(page, 'subscription { countdown(from: 3) }');
  await page.locator('.graphiql-execute-button').click();
  // The pane shows each event as it arrives; the last one is 0.
  const result = await resultContaining(page, '"countdown": 0');
  assert.deepEqual(JSON.parse(result), { data: { countdown: 0 } });
  assert.deepEqual(sockets, [`ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`]);
  assert.deepEqual(browser.offsite, [], 'nothing left the dev server');
  assert.deepEqual(browser.pageErrors, [], 'no script or policy errors on the page');
});

test('GraphiQL runs subscriptions over server-sent events where the server has no WebSocket', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { commands: [chromiumPath] })) return;
  const handler = createGraphQLHandler({ schema: createChatSchema() });
  // No `subscriptions` (WebSocket) option: the page subscribes over SSE on the same URL.
  const server = await startServer({ handler, port: 0, hostname: '127.0.0.1', graphiql: true });
  const browser = await openBrowser(t, new URL(server.url).origin, [() => server.close()]);
  const { page } = browser;
  const sockets: string[] = [];
  page.on('websocket', (socket) => sockets.push(socket.url()));
  const streams: string[] = [];
  page.on('request', (request) => {
    if (request.headers().accept === 'text/event-stream') streams.push(request.url());
  });

  await page.goto(server.url);
  await typeQuery(page, 'subscription { messageAdded(room: "ui") { author text } }');
  await page.locator('.graphiql-execute-button').click();
  await until(() => handler.subscriptionStats().open === 1, 20_000, "GraphiQL's stream to open");
  const posted = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'mutation { postMessage(room: "ui", author: "test", text: "over SSE") { id } }' }),
  });
  assert.equal(posted.status, 200);
  const result = await resultContaining(page, 'over SSE');
  assert.deepEqual(JSON.parse(result), { data: { messageAdded: { author: 'test', text: 'over SSE' } } });
  assert.deepEqual(streams, [server.url], 'one event stream, to the endpoint');
  assert.deepEqual(sockets, [], 'no WebSocket');
  assert.deepEqual(browser.offsite, [], 'nothing left the dev server');
  assert.deepEqual(browser.pageErrors, [], 'no script or policy errors on the page');
});
