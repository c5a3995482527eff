// Apollo Federation's gateway takes the countries endpoint as a subgraph: it composes a supergraph
// from our `_service { sdl }`, answers plain queries with our data, and fetches Country entities
// through our `_entities` for a second subgraph that extends Country by its key. @apollo/gateway
// wants graphql 16 and the repository installs 17, so the gateway gets its own install (gateway,
// subgraph, server, graphql 16) in a prefix under the temp dir keyed by those versions, and runs in
// a child process from there (test/fixtures/federation/gateway.mjs); our endpoint runs in this
// process, on the Node server, with its request log and a record of every operation it received.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startServer, type AppHandler } from '../../node/graphql/app.ts';
import { createRequestLog, type RequestLogEntry } from '../../node/graphql/logging.ts';
import { createCountriesHandler } from '../../src/index.ts';
import { unavailable, which } from '../support/prereq.ts';
import { scaled } from '../support/time-scale.ts';

const here = dirname(fileURLToPath(import.meta.url));
const gatewayScript = join(here, '..', 'fixtures', 'federation', 'gateway.mjs');

/** Pinned, so the cached prefix is keyed by exactly what it holds. */
const versions = {
  '@apollo/gateway': '2.14.4',
  '@apollo/subgraph': '2.15.1',
  '@apollo/server': '5.5.1',
  graphql: '16.15.0',
} as const;

/** What the fixture's second subgraph knows: visits per featured country. */
const visits: Record<string, number> = { BR: 120, JP: 310, NZ: 45 };

/** The prefix holding the gateway's install, made once per set of versions; a reason when npm could not install it. */
async function federationPrefix(): Promise<{ dir: string } | { failed: string }> {
  const key = Object.entries(versions)
    .map(([name, version]) => `${name.replace(/^@apollo\//, '')}-${version}`)
    .join('_');
  const root = join(tmpdir(), 'skiff-apollo-federation');
  const dir = join(root, key);
  const marker = join(dir, '.skiff-complete');
  if (existsSync(marker)) return { dir };
  // The npm of the Node running this test, else the one on PATH.
  const npm = [join(dirname(process.execPath), 'npm')].find((file) => existsSync(file)) ?? which('npm');
  if (npm === undefined) return { failed: 'no npm next to node or on PATH to install @apollo/gateway with' };
  await mkdir(root, { recursive: true });
  const staging = await mkdtemp(join(root, `${key}.partial-`));
  try {
    await writeFile(join(staging, 'package.json'), `${JSON.stringify({ private: true, dependencies: versions }, null, 2)}\n`);
    await promisify(execFile)(npm, ['install', '--prefix', staging, '--no-audit', '--no-fund', '--ignore-scripts', '--prefer-offline'], {
      cwd: staging,
      timeout: scaled(5 * 60_000),
      maxBuffer: 16 * 1024 * 1024,
    });
    await writeFile(join(staging, '.skiff-complete'), `${JSON.stringify(versions)}\n`);
    await rename(staging, dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another run finished the same install first: use that one.
      if (!existsSync(marker)) throw error;
    });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    const said = (stderr || message)
      .split('\n')
      .filter((line) => !/^npm error\s+at /.test(line))
      .join('\n')
      .trim();
    return {
      failed: `npm could not install ${Object.entries(versions)
        .map(([n, v]) => `${n}@${v}`)
        .join(' ')}: ${said.slice(0, 1500)}`,
    };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  // Installs for other versions are dead weight now.
  for (const entry of await readdir(root)) {
    if (entry !== key && !entry.includes('.partial-')) await rm(join(root, entry), { recursive: true, force: true });
  }
  return { dir };
}

interface Received {
  query: string;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
}

interface GatewayProcess {
  gateway: string;
  supergraphSdl: string;
  stop(): Promise<void>;
}

/** Starts the fixture from a directory whose node_modules is the prefix's; resolves once it printed its URLs. */
async function startGateway(prefix: string, countriesUrl: string): Promise<GatewayProcess> {
  const runDir = await mkdtemp(join(tmpdir(), 'skiff-federation-run-'));
  await copyFile(gatewayScript, join(runDir, 'gateway.mjs'));
  await symlink(join(prefix, 'node_modules'), join(runDir, 'node_modules'), 'dir');
  const { NODE_TEST_CONTEXT: _, APOLLO_KEY: __, APOLLO_GRAPH_REF: ___, ...env } = process.env;
  const child: ChildProcess = spawn(process.execPath, [join(runDir, 'gateway.mjs'), countriesUrl], { cwd: runDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d).slice(0, 64 * 1024)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), scaled(5000));
      await exited;
      clearTimeout(timer);
    }
    await rm(runDir, { recursive: true, force: true });
  };
  const bound = scaled(90_000);
  try {
    const line = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the gateway printed no URLs within ${bound} ms`)), bound);
      child.stdout!.on('data', (d: Buffer) => {
        stdout += d;
        const end = stdout.indexOf('\n');
        if (end >= 0) {
          clearTimeout(timer);
          resolve(stdout.slice(0, end));
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the gateway exited (${code ?? signal}) before it was ready`));
      });
    });
    const ready = JSON.parse(line) as { gateway: string; supergraphSdl: string };
    return { gateway: ready.gateway, supergraphSdl: ready.supergraphSdl, stop };
  } catch (error) {
    await stop();
    const shown = stderr.length > 5000 ? `${stderr.slice(0, 3500)}\n[...]\n${stderr.slice(-1500)}` : stderr;
    throw new Error(`${(error as Error).message}; its stderr:\n${shown}`);
  }
}

async function post(url: string, query: string): Promise<any> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
    body: JSON.stringify({ query }),
    signal: AbortSignal.timeout(scaled(30_000)),
  });
  const text = await response.text();
  assert.equal(response.status, 200, `${url} answered ${response.status}: ${text.slice(0, 2000)}`);
  return JSON.parse(text);
}

/** The data of a result that must have no errors (the gateway reports some under extensions.valueCompletion). */
function dataOf(result: any): any {
  assert.ok(result.data && result.errors === undefined, `expected data without errors, got ${JSON.stringify(result).slice(0, 3000)}`);
  return result.data;
}

test('the Apollo gateway composes the endpoint as a subgraph and fetches entities from it', { timeout: scaled(10 * 60_000) }, async (t) => {
  const prefix = await federationPrefix();
  if ('failed' in prefix) return unavailable(t, prefix.failed);

  // Our endpoint, as `npm start` serves it: the request log names each operation it answered.
  const received: Received[] = [];
  const logLines: RequestLogEntry[] = [];
  const log = createRequestLog({ write: (line) => logLines.push(JSON.parse(line) as RequestLogEntry) })!;
  const countries = createCountriesHandler({ onResponse: log.onResponse });
  const handler: AppHandler = async (request) => {
    if (request.method === 'POST') {
      const body = (await request
        .clone()
        .json()
        .catch(() => null)) as Received | null;
      if (body && typeof body.query === 'string') received.push(body);
    }
    return countries(request);
  };
  const server = await startServer({ handler, log, port: 0, hostname: '127.0.0.1' });
  t.after(() => server.close());

  const gateway = await startGateway(prefix.dir, server.url);
  t.after(() => gateway.stop());

  await t.test('composition succeeds from our _service.sdl', () => {
    assert.ok(
      received.some((r) => /\b_service\s*\{\s*sdl\s*\}/.test(r.query)),
      'the gateway composed without asking our endpoint for _service { sdl }',
    );
    const sdl = gateway.supergraphSdl;
    assert.match(sdl, /join__Graph[^]*COUNTRIES @join__graph\(name: "countries"/);
    // Our three entities are keyed by code in our subgraph; the second subgraph's Country shares the key.
    for (const type of ['Continent', 'Language']) {
      assert.match(
        sdl,
        new RegExp(`type ${type}\\s+@join__type\\(graph: COUNTRIES, key: "code"\\)\\s*\\{`),
        `${type} is not an entity of ours in the supergraph`,
      );
    }
    assert.match(sdl, /type Country\s+@join__type\(graph: COUNTRIES, key: "code"\)\s+@join__type\(graph: VISITS, key: "code"\)\s*\{/);
    assert.match(sdl, /visits: Int @join__field\(graph: VISITS\)/);
    assert.match(sdl, /featuredCountries: \[Country!\]! @join__field\(graph: VISITS\)/);
  });

  await t.test('a query through the gateway gives what the endpoint gives directly', async () => {
    const query = `query AllCountries {
      countries { code name native capital currency currencies phone emoji
        continent { code name }
        languages { code name native rtl } }
      country(code: "BR") { name continent { code countries { code } } }
    }`;
    const direct = await post(server.url, query);
    const viaGateway = await post(gateway.gateway, query);
    assert.equal(dataOf(direct).countries.length, 252);
    assert.deepEqual(viaGateway, direct);
  });

  await t.test('an entity query makes the gateway fetch Country entities through our _entities', async () => {
    const entitiesBefore = received.filter((r) => r.query.includes('_entities')).length;
    const result = await post(
      gateway.gateway,
      `query Featured { featuredCountries { code visits name capital continent { code name } languages { code name } } }`,
    );
    const direct = await post(
      server.url,
      `{ countries(filter: { code: { in: ["BR", "JP", "NZ"] } }) { code name capital continent { code name } languages { code name } } }`,
    );
    assert.equal(dataOf(direct).countries.length, 3);
    assert.deepEqual(
      dataOf(result).featuredCountries,
      direct.data.countries.map((country: { code: string }) => ({ ...country, visits: visits[country.code] })),
    );

    // The query plan's entity fetch reached our endpoint: one _entities operation with the three references.
    const entityFetches = received.filter((r) => r.query.includes('_entities')).slice(entitiesBefore);
    assert.equal(entityFetches.length, 1, `expected one _entities fetch, got:\n${JSON.stringify(entityFetches, null, 2)}`);
    assert.deepEqual(
      entityFetches[0].variables?.representations,
      ['BR', 'JP', 'NZ'].map((code) => ({ __typename: 'Country', code })),
    );
    const named = entityFetches[0].operationName ?? /query\s+(\w+)/.exec(entityFetches[0].query)?.[1];
    assert.match(named ?? '', /^Featured__countries__\d+$/);
    assert.ok(
      logLines.some((line) => line.operationName === named && line.status === 200),
      `our request log has no 200 line for ${named}:\n${logLines.map((l) => JSON.stringify(l)).join('\n')}`,
    );
  });

  await t.test('our root fields merge with the Country field the second subgraph adds', async () => {
    const result = await post(gateway.gateway, `query SouthAmerica { continent(code: "SA") { name countries { code name visits } } }`);
    const { continent } = dataOf(result);
    assert.equal(continent.name, 'South America');
    const brazil = continent.countries.find((c: { code: string }) => c.code === 'BR');
    assert.deepEqual(brazil, { code: 'BR', name: 'Brazil', visits: 120 });
    assert.ok(continent.countries.filter((c: { visits: number | null }) => c.visits === null).length > 5);
  });
});
