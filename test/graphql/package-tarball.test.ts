// Library use: `npm pack` gives a package of built ES modules with declarations; a scratch project
// installs the tarball, type-checks against it and serves a schema of its own with createGraphQLHandler.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { name: string; version: string };

const server = `import { GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { createGraphQLHandler } from '${pkg.name}';

const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      greeting: { type: GraphQLString, args: { name: { type: GraphQLString } }, resolve: (_, { name }) => 'Hello, ' + name + '!' },
    },
  }),
});
const handler = createGraphQLHandler({ schema, path: '/api' });
const query = encodeURIComponent('{ greeting(name: "scratch") }');
const ok = await handler(new Request('http://localhost/api?query=' + query));
const missing = await handler(new Request('http://localhost/graphql?query=' + query));
// The parts loaded on first use come from the package too: @defer, and the plans of documents that run again.
const deferring = createGraphQLHandler({ schema, incrementalDelivery: true, compiledExecution: true });
const deferred = await deferring(
  new Request('http://localhost/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'multipart/mixed;deferSpec=20220824, application/json' },
    body: JSON.stringify({ query: '{ greeting(name: "now") ... @defer { later: greeting(name: "later") } }' }),
  }),
);
const parts = await deferred.text();
const again = [];
for (let i = 0; i < 3; i++) again.push(await (await deferring(new Request('http://localhost/graphql?query=' + query))).text());
console.log(
  JSON.stringify({
    status: ok.status,
    type: ok.headers.get('content-type'),
    body: await ok.json(),
    missing: missing.status,
    deferred: { status: deferred.status, first: parts.indexOf('Hello, now!') >= 0, later: parts.indexOf('Hello, later!') > parts.indexOf('Hello, now!') },
    again: again.every((text) => text === again[0]) && JSON.parse(again[0]).data.greeting,
  }),
);
`;

const typed = `import { createGraphQLHandler, type GraphQLFetchHandler, type GraphQLHandlerOptions } from '${pkg.name}';
import { buildSchema } from 'graphql';

const options: GraphQLHandlerOptions = { schema: buildSchema('type Query { ok: Boolean }'), maxBodyBytes: 4096 };
const handler: GraphQLFetchHandler = createGraphQLHandler(options);
const answer: Promise<Response> = handler(new Request('http://localhost/graphql'));
// @ts-expect-error: the schema is required
createGraphQLHandler({ path: '/graphql' });
void answer;
`;

test(`npm pack: ${pkg.name} installs into a scratch project and serves that project's own schema`, { timeout: 300_000 }, async (t) => {
  assert.notEqual(pkg.name, 'skiff', 'skiff on npm is an unrelated package');
  const dir = await mkdtemp(join(tmpdir(), 'skiff-pack-'));
  t.after(() => rm(dir, { recursive: true, force: true }));

  // prepack builds dist/lib first.
  const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: repoRoot, maxBuffer: 16 << 20 });
  const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as [{ filename: string; files: { path: string }[] }];
  const files = info.files.map((f) => f.path);
  assert.ok(files.includes('dist/lib/index.js') && files.includes('dist/lib/index.d.ts'), files.join(', '));
  assert.ok(files.includes('dist/lib/handler/create-handler.js') && files.includes('dist/lib/handler/create-handler.d.ts'));
  const others = files.filter((f) => !/^dist\/lib\/.+\.(js|d\.ts)$/.test(f) && f !== 'package.json' && !/^README/i.test(f));
  assert.deepEqual(others, [], 'only the built library, package.json and the README are packed');

  const project = join(dir, 'project');
  await run('mkdir', [project]);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--omit=dev', join(dir, info.filename)], {
    cwd: project,
    maxBuffer: 16 << 20,
  });

  await writeFile(join(project, 'server.mjs'), server);
  const served = await run(process.execPath, ['server.mjs'], { cwd: project });
  assert.deepEqual(JSON.parse(served.stdout), {
    status: 200,
    type: 'application/json; charset=utf-8',
    body: { data: { greeting: 'Hello, scratch!' } },
    missing: 404,
    deferred: { status: 200, first: true, later: true },
    again: 'Hello, scratch!',
  });

  // The declarations resolve and type the API for a strict TypeScript consumer (no skipLibCheck).
  await writeFile(join(project, 'typed.ts'), typed);
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const compilerOptions = { noEmit: true, strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], types: [] };
  await writeFile(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['typed.ts'] }));
  await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project }).catch((error: { stdout?: string }) => {
    assert.fail(`tsc on the installed package failed:\n${error.stdout}`);
  });
});
