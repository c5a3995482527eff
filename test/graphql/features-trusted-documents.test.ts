// Trusted documents: operations of a manifest (Apollo's persisted query manifest, Relay's
// persisted_queries.json) run by id, sent by Apollo Client 4's PersistedQueryLink or as the draft's
// documentId; with freeform text refused, nothing else runs. The Node server reads the manifest from
// TRUSTED_DOCUMENTS at start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApolloClient, CombinedGraphQLErrors, HttpLink, InMemoryCache, gql, type ApolloLink } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createCountriesHandler } from '../../src/countries-endpoint.ts';
import type { GraphQLFetchHandler } from '../../src/handler/options.ts';
import type { ApolloPersistedQueryManifest } from '../../src/handler/trusted-documents.ts';
import { endpoint, getRequest, graphqlResponseJson, postRequest } from '../support/graphql-requests.ts';
import { createTestSchema, within } from '../support/graphql-fixtures.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const md5 = (text: string) => createHash('md5').update(text).digest('hex');

const CAPITAL = gql`
  query Capital($code: ID!) {
    country(code: $code) {
      name
      capital
    }
  }
`;
const CONTINENTS = gql`
  query Continents {
    continents {
      code
    }
  }
`;
const UNLISTED = gql`
  query Currency {
    country(code: "JP") {
      currency
    }
  }
`;

/** A fetch into `handler` that keeps every request it passes on. */
function recordingFetch(handler: GraphQLFetchHandler) {
  const sent: { method: string; url: string; body: Record<string, unknown> | null; status?: number }[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const entry: (typeof sent)[number] = { method: request.method, url: request.url, body: request.method === 'POST' ? await request.clone().json() : null };
    sent.push(entry);
    const response = await handler(request);
    entry.status = response.status;
    return response;
  };
  return { fetch, sent };
}

function apolloClient(link: ApolloLink) {
  return new ApolloClient({ link, cache: new InMemoryCache() });
}

/**
 * The manifest @apollo/generate-persisted-query-manifest writes for these operations: each body is
 * the text Apollo Client sends (its cache adds __typename), taken here from the client itself.
 */
async function manifestFor(documents: { query: ReturnType<typeof gql>; variables?: Record<string, unknown>; name: string }[]) {
  const { fetch, sent } = recordingFetch(createCountriesHandler());
  const client = apolloClient(new HttpLink({ uri: endpoint, fetch }));
  for (const { query, variables } of documents) await client.query({ query, variables, fetchPolicy: 'no-cache' });
  const manifest: ApolloPersistedQueryManifest = {
    format: 'apollo-persisted-query-manifest',
    version: 1,
    operations: sent.map(({ body }, index) => ({
      id: sha256(body!.query as string),
      name: documents[index].name,
      type: 'query',
      body: body!.query as string,
    })),
  };
  return manifest;
}

const manifest = await manifestFor([
  { query: CAPITAL, variables: { code: 'BR' }, name: 'Capital' },
  { query: CONTINENTS, name: 'Continents' },
]);

test("Apollo Client 4's PersistedQueryLink runs manifest operations by hash alone, over POST and GET", async () => {
  const handler = createCountriesHandler({ trustedDocuments: { manifest } });
  for (const useGETForHashedQueries of [false, true]) {
    const { fetch, sent } = recordingFetch(handler);
    const link = new PersistedQueryLink({ sha256, useGETForHashedQueries }).concat(new HttpLink({ uri: endpoint, fetch }));
    const client = apolloClient(link);
    const capital = await client.query({ query: CAPITAL, variables: { code: 'FR' }, fetchPolicy: 'no-cache' });
    assert.deepEqual(capital.data, { country: { __typename: 'Country', name: 'France', capital: 'Paris' } });
    const continents = await client.query({ query: CONTINENTS, fetchPolicy: 'no-cache' });
    assert.equal((continents.data as { continents: unknown[] }).continents.length, 7);
    assert.equal(sent.length, 2, 'one request per operation');
    for (const request of sent) {
      assert.equal(request.method, useGETForHashedQueries ? 'GET' : 'POST');
      assert.equal(request.status, 200);
      // No document text left the client: only the hash.
      if (request.body) assert.equal('query' in request.body, false);
      else assert.equal(new URL(request.url).searchParams.has('query'), false);
    }
  }
});

test('an operation outside the manifest is refused: by hash 404 PERSISTED_QUERY_NOT_IN_LIST, as text 400 PERSISTED_QUERY_ID_REQUIRED', async () => {
  const handler = createCountriesHandler({ trustedDocuments: { manifest } });
  const { fetch, sent } = recordingFetch(handler);
  const client = apolloClient(new PersistedQueryLink({ sha256 }).concat(new HttpLink({ uri: endpoint, fetch })));
  const unlisted = await client.query({ query: UNLISTED, errorPolicy: 'all', fetchPolicy: 'no-cache' });
  assert.ok(CombinedGraphQLErrors.is(unlisted.error), String(unlisted.error));
  assert.equal(unlisted.error.errors[0].extensions?.code, 'PERSISTED_QUERY_NOT_IN_LIST');
  assert.equal(unlisted.data, undefined);
  assert.deepEqual(
    sent.map((request) => request.status),
    [404],
    'the link does not retry with the text (APQ would)',
  );

  const freeform = recordingFetch(handler);
  const plain = apolloClient(new HttpLink({ uri: endpoint, fetch: freeform.fetch }));
  // Even a listed operation's text is refused: only ids run.
  const text = await plain.query({ query: CAPITAL, variables: { code: 'BR' }, errorPolicy: 'all', fetchPolicy: 'no-cache' });
  assert.ok(CombinedGraphQLErrors.is(text.error), String(text.error));
  assert.equal(text.error.errors[0].extensions?.code, 'PERSISTED_QUERY_ID_REQUIRED');
  assert.equal(freeform.sent[0].status, 400);

  // An APQ registration (hash and text together) is freeform text too.
  const query = '{ country(code: "JP") { currency } }';
  const register = await handler(postRequest({ query, extensions: { persistedQuery: { version: 1, sha256Hash: sha256(query) } } }));
  assert.equal(register.status, 400);
  assert.equal((await register.json()).errors[0].extensions.code, 'PERSISTED_QUERY_ID_REQUIRED');
});

test('documentId (the GraphQL-over-HTTP draft) finds the same documents over POST and GET; unknown ids are 404 and never cached', async () => {
  const handler = createCountriesHandler({ trustedDocuments: { manifest } });
  const capital = manifest.operations[0];
  for (const documentId of [`sha256:${capital.id}`, capital.id, `sha256:${capital.id.toUpperCase()}`.replace('SHA256', 'sha256')]) {
    const post = await handler(postRequest({ documentId, variables: { code: 'BR' } }, { accept: graphqlResponseJson }));
    assert.equal(post.status, 200, documentId);
    assert.deepEqual(await post.json(), { data: { country: { __typename: 'Country', name: 'Brazil', capital: 'Brasília' } } });
  }
  const url = new URL(endpoint);
  url.searchParams.set('documentId', `sha256:${capital.id}`);
  url.searchParams.set('variables', JSON.stringify({ code: 'JP' }));
  const get = await handler(new Request(url));
  assert.equal(get.status, 200);
  assert.equal((await get.json()).data.country.capital, 'Tokyo');
  assert.ok(get.headers.get('etag'), 'a GET by id is cacheable like any query');

  const unknown = await handler(getRequest({}, {}));
  assert.equal(unknown.status, 400, 'neither id nor query: a request error');
  const missing = new URL(endpoint);
  missing.searchParams.set('documentId', `sha256:${'0'.repeat(64)}`);
  const notFound = await handler(new Request(missing, { headers: { accept: graphqlResponseJson } }));
  assert.equal(notFound.status, 404);
  assert.equal(notFound.headers.get('cache-control'), 'no-store');
  assert.deepEqual(await notFound.json(), {
    errors: [{ message: `No trusted document has the id "sha256:${'0'.repeat(64)}"`, extensions: { code: 'PERSISTED_QUERY_NOT_IN_LIST' } }],
  });

  const both = await handler(postRequest({ documentId: capital.id, query: capital.body, variables: { code: 'BR' } }));
  assert.equal(both.status, 400);
  assert.equal((await both.json()).errors[0].extensions.code, 'CANNOT_SEND_PQ_ID_AND_BODY');
  const badSyntax = await handler(postRequest({ documentId: 'sha256:<script>' }));
  assert.equal(badSyntax.status, 400);
  assert.match((await badSyntax.json()).errors[0].message, /Invalid documentId/);
});

test("Relay's persisted_queries.json: ids (MD5) sent as documentId; a mutation by id over GET is 405", async () => {
  const query = 'query AppQuery { hello }';
  const mutation = 'mutation AppMutation { increment }';
  const relay = { [md5(query)]: query, [md5(mutation)]: mutation };
  const handler = createGraphQLHandler({ schema: createTestSchema().schema, trustedDocuments: { manifest: relay } });
  const answered = await handler(postRequest({ documentId: md5(query) }));
  assert.equal(answered.status, 200);
  assert.deepEqual(await answered.json(), { data: { hello: 'Hello, world' } });
  const mutated = await handler(postRequest({ documentId: md5(mutation) }));
  assert.equal((await mutated.json()).data.increment, 1);
  const overGet = new URL(endpoint);
  overGet.searchParams.set('documentId', md5(mutation));
  const refused = await handler(new Request(overGet));
  assert.equal(refused.status, 405);
  assert.equal(refused.headers.get('allow'), 'POST');
});

test("freeform 'listed' runs manifest texts sent as text, 'allowed' (and development) runs anything with APQ, a function decides per request", async () => {
  const capital = manifest.operations[0];
  const listed = createCountriesHandler({ trustedDocuments: { manifest, freeform: 'listed' } });
  assert.equal((await listed(postRequest({ query: capital.body, variables: { code: 'BR' } }))).status, 200);
  const other = await listed(postRequest({ query: '{ continents { code } }' }));
  assert.equal(other.status, 403);
  assert.equal((await other.json()).errors[0].extensions.code, 'QUERY_NOT_IN_SAFELIST');

  const query = '{ country(code: "JP") { currency } }';
  const persisted = { persistedQuery: { version: 1, sha256Hash: sha256(query) } };
  for (const handler of [
    createCountriesHandler({ trustedDocuments: { manifest, freeform: 'allowed' } }),
    // GraphiQL in development runs whatever is typed into it.
    createCountriesHandler({ trustedDocuments: { manifest }, development: true }),
  ]) {
    assert.deepEqual(await (await handler(postRequest({ query }))).json(), { data: { country: { currency: 'JPY' } } });
    // Automatic persisted queries work as without trusted documents: a miss, a registration, a hit.
    assert.equal((await (await handler(postRequest({ extensions: persisted }))).json()).errors[0].extensions.code, 'PERSISTED_QUERY_NOT_FOUND');
    assert.equal((await handler(postRequest({ query, extensions: persisted }))).status, 200);
    assert.deepEqual(await (await handler(postRequest({ extensions: persisted }))).json(), { data: { country: { currency: 'JPY' } } });
    // Manifest hashes need no registration.
    const byHash = await handler(postRequest({ variables: { code: 'BR' }, extensions: { persistedQuery: { version: 1, sha256Hash: capital.id } } }));
    assert.equal((await byHash.json()).data.country.name, 'Brazil');
  }

  const byHeader = createCountriesHandler({ trustedDocuments: { manifest, freeform: (request) => request.headers.get('x-internal-tool') === 'yes' } });
  assert.equal((await byHeader(postRequest({ query }, { 'x-internal-tool': 'yes' }))).status, 200);
  assert.equal((await byHeader(postRequest({ query }))).status, 400);
});

test('a manifest that is neither format, or names one id twice, is refused when the handler is made', () => {
  const make = (value: unknown) => () => createCountriesHandler({ trustedDocuments: { manifest: value as never } });
  assert.throws(make([]), /no manifest given/);
  assert.throws(make('persisted.json'), /must be an object/);
  assert.throws(make({ format: 'apollo-persisted-query-manifest', version: 2, operations: [] }), /not an Apollo persisted query manifest/);
  assert.throws(make({ format: 'apollo-persisted-query-manifest', version: 1, operations: [{ id: 'a' }] }), /operation 0 \(id "a"\) has no document text/);
  assert.throws(make({ abc: 42 }), /entry "abc" \(id "abc"\) has no document text/);
  assert.throws(make([{ a: '{ a }' }, { a: '{ b }' }]), /id "a" names two different documents/);
  assert.throws(
    () => createCountriesHandler({ trustedDocuments: { manifest, freeform: 'some' as never } }),
    /freeform must be one of refused, listed, allowed/,
  );
});

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

function runServeScript(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'node/graphql/serve.ts'], {
    cwd: repoRoot,
    env: { ...process.env, NODE_ENV: '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = new Promise<string>((resolve, reject) => {
    const check = () => {
      const match = /(http:\/\/\S+\/graphql)/.exec(output);
      if (match) resolve(match[1]);
    };
    child.stdout.on('data', check);
    exited.then((code) => reject(new Error(`serve.ts exited with ${code}:\n${output}`)));
  });
  url.catch(() => {}); // a server expected to refuse its settings never prints one
  return { child, exited, url, output: () => output };
}

test('the Node server reads TRUSTED_DOCUMENTS at start, and refuses a missing or malformed manifest', { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-trusted-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'persisted-query-manifest.json');
  writeFileSync(path, JSON.stringify(manifest));

  for (const development of [false, true]) {
    const server = runServeScript({ PORT: '0', HOST: '127.0.0.1', TRUSTED_DOCUMENTS: path, NODE_ENV: development ? 'development' : '' });
    t.after(() => {
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
    });
    const url = await within(20_000, 'serve.ts did not print its URL', server.url);
    const post = (body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const byId = await post({ documentId: `sha256:${manifest.operations[1].id}` });
    assert.equal(byId.status, 200);
    assert.equal((await byId.json()).data.continents.length, 7);
    const freeform = await post({ query: '{ continents { code } }' });
    // In development GraphiQL (and anything else) runs freeform text; otherwise only ids run.
    assert.equal(freeform.status, development ? 200 : 400, server.output());
    server.child.kill('SIGTERM');
    assert.equal(await within(10_000, 'serve.ts did not exit on SIGTERM', server.exited), 0);
  }

  const missing = runServeScript({ PORT: '0', TRUSTED_DOCUMENTS: join(dir, 'nope.json') });
  assert.equal(await within(20_000, 'serve.ts did not exit', missing.exited), 2);
  assert.match(missing.output(), /Invalid setting: TRUSTED_DOCUMENTS names a file that cannot be read/);
  writeFileSync(path, JSON.stringify({ format: 'apollo-persisted-query-manifest', version: 1, operations: [{ id: 'x' }] }));
  const malformed = runServeScript({ PORT: '0', TRUSTED_DOCUMENTS: path });
  assert.equal(await within(20_000, 'serve.ts did not exit', malformed.exited), 2);
  assert.match(malformed.output(), /TRUSTED_DOCUMENTS .*operation 0 \(id "x"\) has no document text/);
  const freeformAlone = runServeScript({ PORT: '0', TRUSTED_DOCUMENTS_FREEFORM: 'listed' });
  assert.equal(await within(20_000, 'serve.ts did not exit', freeformAlone.exited), 2);
  assert.match(freeformAlone.output(), /TRUSTED_DOCUMENTS_FREEFORM needs TRUSTED_DOCUMENTS/);
});
