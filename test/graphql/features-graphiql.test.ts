// GraphiQL's routes on the dev server, without a browser: which requests get the page, its assets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createApp } from '../../node/graphql/app.ts';
import { createCountriesHandler } from '../../src/index.ts';

const app = createApp(createCountriesHandler(), { graphiql: true });
const browserAccept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

test('a browser gets the GraphiQL page, GraphQL clients still get GraphQL', async () => {
  const page = await app.request('/graphql', { headers: { accept: browserAccept } });
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  const csp = page.headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /script-src 'self'(;|$)/, 'no inline or remote scripts');
  const html = await page.text();
  assert.ok(!/https?:\/\//.test(html), 'the page names no other host');
  for (const asset of ['graphiql.min.js', 'graphiql.min.css', 'react.production.min.js', 'react-dom.production.min.js', 'start.js']) {
    assert.ok(html.includes(`/graphiql/${asset}`), asset);
  }

  for (const accept of ['application/json', '*/*', 'application/graphql-response+json', 'text/html;q=0, application/json']) {
    const res = await app.request(`/graphql?query=${encodeURIComponent('{ __typename }')}`, { headers: { accept } });
    assert.equal(res.status, 200, accept);
    assert.deepEqual(await res.json(), { data: { __typename: 'Query' } }, accept);
  }
  const post = await app.request('/graphql', {
    method: 'POST',
    headers: { accept: browserAccept, 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ __typename }' }),
  });
  assert.deepEqual(await post.json(), { data: { __typename: 'Query' } }, 'POST is always GraphQL');
});

test('assets are served from the npm packages, with ETag revalidation; unknown ones are 404', async () => {
  const script = await app.request('/graphiql/graphiql.min.js');
  assert.equal(script.status, 200);
  assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/);
  assert.ok((await script.arrayBuffer()).byteLength > 100_000);
  const etag = script.headers.get('etag');
  assert.ok(etag);
  assert.equal((await app.request('/graphiql/graphiql.min.js', { headers: { 'if-none-match': etag } })).status, 304);
  const start = await app.request('/graphiql/start.js');
  assert.equal(start.status, 200);
  assert.match(await start.text(), /GraphiQL/);
  const page = await (await app.request('/graphql', { headers: { accept: browserAccept } })).text();
  assert.ok(page.includes('data-endpoint="/graphql"'), 'the page queries the endpoint it was served on');
  assert.equal((await app.request('/graphiql/nothing.js')).status, 404);
  assert.equal((await app.request('/graphiql/graphiql.min.js', { method: 'POST' })).status, 405);
});

test('without graphiql the dev server has no page and no assets', async () => {
  const plain = createApp(createCountriesHandler());
  assert.equal((await plain.request('/graphiql/graphiql.min.js')).status, 404);
  const res = await plain.request('/graphql', { headers: { accept: browserAccept } });
  assert.notEqual(res.headers.get('content-type')?.startsWith('text/html'), true);
});
