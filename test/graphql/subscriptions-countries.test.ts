// The shipped entry points speak GraphQL over WebSocket on /graphql too: `npm start`
// (node/graphql/serve.ts), the Deno bundle and the workerd bundle, each with a real graphql-ws client.
// The countries schema has no subscription type: queries run, subscriptions get a GraphQL error.
import { graphqlMajor } from '../../src/execution/graphql-compat.ts';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { build } from '../../scripts/build-edge.mjs';
import { RecordedSubscription, graphqlWsClient, within } from '../fixtures/ws/clients.ts';
import { killGroup } from '../fixtures/ws/runtimes.ts';
import { chunkModuleRules } from '../support/graphql-edge.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

interface Running {
  ws: string;
  stop(): Promise<void>;
}

/** Spawns `command`, waits for a line matching `ready`, returns the ws:// URL of its /graphql. */
async function spawnServer(command: string, args: string[], options: { cwd: string; env?: Record<string, string> }, ready: RegExp): Promise<Running> {
  // Own process group, so wrappers (npm's deno bin, tsx) and what they start stop together.
  const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    killGroup(child.pid, 'SIGTERM');
    await within(exited, 5000, `${command} to exit`).catch(() => killGroup(child.pid, 'SIGKILL'));
  };
  let output = '';
  try {
    const origin = await within(
      new Promise<string>((resolve, reject) => {
        const onData = (chunk: Buffer) => {
          output += chunk.toString();
          const match = ready.exec(output);
          if (match) resolve(match[1]);
        };
        child.stdout.on('data', onData);
        child.stderr.on('data', onData);
        void exited.then(() => reject(new Error(`${command} exited before listening:\n${output}`)));
      }),
      30_000,
      `${args.join(' ')} to listen`,
    );
    return { ws: `${origin.replace(/^http/, 'ws')}/graphql`, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function answersOverWebSocket(url: string): Promise<void> {
  const client = graphqlWsClient(url);
  try {
    const query = new RecordedSubscription(client, '{ country(code: "BR") { name capital } }');
    assert.deepEqual((await query.next(10_000, 'the query result')).data, { country: { name: 'Brazil', capital: 'Brasília' } });
    await query.settled(5000);
    assert.equal(query.completed, true);

    const subscription = new RecordedSubscription(client, 'subscription { countries { code } }');
    if (graphqlMajor >= 17) {
      // graphql-js 17 refuses the missing root type at validation (KnownOperationTypesRule): an `error` message.
      await subscription.settled(5000);
      assert.match(JSON.stringify(subscription.error), /The subscription operation is not supported by the schema/);
      return;
    }
    // graphql-js 16 reports the missing root type at execution: a `next` with errors, then `complete`.
    const result = await subscription.next(5000, 'the subscription error');
    assert.match(String(result.errors?.[0]?.message), /not configured to execute subscription/);
    await subscription.settled(5000);
    assert.equal(subscription.completed, true);
  } finally {
    await client.dispose();
  }
}

describe('the countries API over WebSocket', () => {
  let outdir = '';
  before(async () => {
    outdir = await mkdtemp(join(tmpdir(), 'skiff-ws-edge-'));
    await build({ outdir, quiet: true });
  });
  after(() => rm(outdir, { recursive: true, force: true }));

  it('npm start (node/graphql/serve.ts)', async (t) => {
    const server = await spawnServer(
      process.execPath,
      ['--import', 'tsx', 'node/graphql/serve.ts'],
      { cwd: root, env: { PORT: '0', HOST: '127.0.0.1' } },
      /(http:\/\/[^\s/]+)\/graphql/,
    );
    t.after(() => server.stop());
    await answersOverWebSocket(server.ws);
  });

  it('the Deno bundle under deno serve, with only --allow-net', async (t) => {
    const denoDir = await mkdtemp(join(tmpdir(), 'skiff-ws-deno-dir-'));
    const server = await spawnServer(
      join(root, 'node_modules', '.bin', 'deno'),
      ['serve', '--allow-net', '--host', '127.0.0.1', '--port', '0', join(outdir, 'deno.js')],
      { cwd: outdir, env: { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1', NO_COLOR: '1' } },
      /Listening on (http:\/\/[^\s/]+)/,
    );
    t.after(async () => {
      await server.stop();
      await rm(denoDir, { recursive: true, force: true });
    });
    await answersOverWebSocket(server.ws);
  });

  it('the workerd bundle under Miniflare', async (t) => {
    const { Miniflare } = await import('miniflare');
    // Given the entry's path, Miniflare follows its imports to the chunks it loads on demand.
    const mf = new Miniflare({
      modules: true,
      scriptPath: join(outdir, 'workerd.js'),
      modulesRoot: outdir,
      modulesRules: chunkModuleRules,
      host: '127.0.0.1',
      port: 0,
      compatibilityDate: '2025-01-01',
    });
    t.after(() => mf.dispose());
    const url = await within(mf.ready, 30_000, 'Miniflare to listen');
    await answersOverWebSocket(`ws://${url.host}/graphql`);
  });
});
