// The incremental executor against two references. Merged, its payloads must give what graphql-js's
// own execute gives for the same document (the directives change when data arrives, never what), and
// what @graphql-tools/executor's payloads give merged. Each entry must arrive after the payload that
// holds its parent, and the streamed items in order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizedExecutor } from '@graphql-tools/executor';
import { buildSchema, GraphQLSchema, parse, type ExecutionResult, type GraphQLError } from 'graphql';
import { executeIncrementally } from '../../src/streams/incremental-executor.ts';
import { executeWhole } from '../../src/execution/graphql-compat.ts';
import { within } from '../support/graphql-fixtures.ts';
import { GraphQLDeferDirective, GraphQLStreamDirective } from '../../src/streams/incremental-directives.ts';

const sdl = buildSchema(`
  type Query { a: A, list: [Int], nonNullItems: [Int!], objects: [A], hero: Character, heroes: [Character], slow: String, ticks: [String], failingTicks: [String] }
  type Mutation { first: A, second: String }
  type Subscription { events: A }
  type A { x: String, y: String!, z: String, w: String, b: A, items: [A!] }
  interface Character { name: String }
  type Human implements Character { name: String, home: String }
  type Droid implements Character { name: String, function: String }
`);
const schema = new GraphQLSchema({ ...sdl.toConfig(), directives: [...sdl.getDirectives(), GraphQLDeferDirective, GraphQLStreamDirective] });

const later = <T>(value: T, ms = 1) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));
function a(depth = 0): Record<string, unknown> {
  return {
    x: `x${depth}`,
    y: () => {
      throw new Error(`y fails at ${depth}`);
    },
    z: () => later(`z${depth}`, 2),
    w: `w${depth}`,
    b: depth < 3 ? () => later(a(depth + 1)) : null,
    items: [
      { x: `i${depth}`, y: 'ok' },
      { x: `j${depth}`, y: 'ok' },
    ],
  };
}
const rootValue = {
  a: () => a(),
  list: [1, 2, 3, 4],
  nonNullItems: [1, null, 3],
  objects: () => [a(1), later(a(2)), a(3)],
  hero: { __typename: 'Human', name: 'Luke', home: 'Tatooine' },
  heroes: [
    { __typename: 'Human', name: 'Leia', home: 'Alderaan' },
    { __typename: 'Droid', name: 'R2', function: 'astromech' },
  ],
  slow: () => later('slow', 5),
  first: () => a(),
  second: 'second',
};

const documents = [
  '{ a { x ... @defer { z } } }',
  '{ a { x ... @defer(label: "outer") { z ... @defer(label: "inner") { b { x } } } } }',
  '{ a { x ... @defer { y } } }',
  '{ a { x ... @defer { z } b { w ... @defer { x z } } } }',
  '{ a { x y ... @defer { z } } }',
  '{ a { ... @defer { x } ... @defer { z } } }',
  '{ a { ... @defer(if: false) { x } } }',
  'query($d: Boolean!) { a { ... @defer(if: $d) { x } } }',
  '{ a { x } ... @defer { slow } }',
  '{ list @stream(initialCount: 1) }',
  '{ list @stream(initialCount: 10) }',
  '{ list @stream(initialCount: 0, label: "numbers") }',
  '{ nonNullItems @stream(initialCount: 1) }',
  '{ objects @stream(initialCount: 1) { x ... @defer { z } } }',
  '{ objects @stream { x b { b { x } } } }',
  '{ a { items @stream(initialCount: 1) { x ... @defer { y } } } }',
  '{ hero { name ... on Human @defer { home } ... on Droid @defer { function } } }',
  '{ heroes @stream(initialCount: 1) { name ...Parts @defer(label: "parts") } } fragment Parts on Character { ... on Human { home } ... on Droid { function } }',
  '{ a { ...F @defer ...F } } fragment F on A { x w }',
  'mutation { first { x ... @defer { z } } second }',
];

type Entry = { data?: Record<string, unknown> | null; items?: unknown[] | null; path: (string | number)[]; label?: string; errors?: readonly GraphQLError[] };
type Payload = ExecutionResult & { hasNext?: boolean; incremental?: Entry[] };

/** Every payload of a result, bounded: an executor that never finishes fails the test. */
function payloads(result: unknown): Promise<Payload[]> {
  const all = async () => {
    const settled = (await result) as Payload | AsyncIterable<Payload>;
    if (!(Symbol.asyncIterator in settled)) return [settled];
    const read: Payload[] = [];
    for await (const payload of settled) read.push(payload);
    return read;
  };
  return within(10_000, 'the executor did not finish its payloads', all());
}

/** The payloads applied in order, checking that each entry lands where its parent already is. */
function merge(all: Payload[]): { data: unknown; errors: string[] } {
  const errors: string[] = [];
  const note = (list: readonly GraphQLError[] | undefined) => {
    for (const error of list ?? []) errors.push(`${error.path?.join('.')}: ${error.message}`);
  };
  const [first, ...rest] = all;
  note(first.errors);
  const data = structuredClone(first.data) as Record<string, unknown> | null;
  for (const payload of rest) {
    for (const entry of payload.incremental ?? []) {
      note(entry.errors);
      if ('items' in entry) {
        const list = entry.path.slice(0, -1).reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], data) as unknown[];
        const index = entry.path.at(-1) as number;
        assert.ok(Array.isArray(list), `a streamed item at ${entry.path} arrived before its list`);
        assert.equal(list.length, index, `item ${entry.path} arrived out of order`);
        // A non-null item that failed: its place stays, empty, and the stream goes on.
        list.push(...(entry.items == null ? [null] : structuredClone(entry.items)));
      } else {
        const target = entry.path.reduce<unknown>((node, key) => (node as Record<string | number, unknown>)?.[key], data);
        assert.ok(target !== undefined, `a fragment at ${entry.path} arrived before its parent`);
        if (target === null || entry.data == null) continue;
        deepAssign(target as Record<string, unknown>, structuredClone(entry.data));
      }
    }
  }
  if (all.length > 1) assert.equal(all.at(-1)!.hasNext, false);
  for (const payload of all.slice(0, -1)) assert.equal(payload.hasNext, true);
  return { data, errors: errors.sort() };
}

function deepAssign(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (existing && value && typeof existing === 'object' && typeof value === 'object' && !Array.isArray(value))
      deepAssign(existing as Record<string, unknown>, value as Record<string, unknown>);
    else target[key] = value;
  }
}

const json = (value: unknown) => JSON.parse(JSON.stringify(value));
const args = (source: string) => ({ schema, document: parse(source), rootValue, variableValues: { d: true } });

describe('the incremental executor', () => {
  for (const source of documents) {
    it(`merges to graphql-js's result and @graphql-tools/executor's: ${source}`, async () => {
      const ours = merge(await payloads(executeIncrementally(args(source))));
      const plain = await executeWhole(args(source));
      // graphql-js nulls the parent of a failing non-null field; a deferred fragment or streamed item
      // nulls only itself.
      if (!source.includes('@defer { y }') && !source.includes('nonNullItems')) {
        assert.deepEqual(ours.data, JSON.parse(JSON.stringify(plain.data)));
        assert.deepEqual(ours.errors, (plain.errors ?? []).map((e) => `${e.path?.join('.')}: ${e.message}`).sort());
      }
      const reference = merge(await payloads(normalizedExecutor(args(source))));
      assert.deepEqual(ours, reference);
    });
  }

  it('sends one entry per deferred fragment and streamed item, labelled, in the field format', async () => {
    const all = await payloads(executeIncrementally(args('{ a { x ... @defer(label: "later") { z } } list @stream(initialCount: 2, label: "rest") }')));
    assert.deepEqual(json(all[0]), { data: { a: { x: 'x0' }, list: [1, 2] }, hasNext: true });
    // The fragment and the items are independent: which comes first depends on when each is done.
    const entries = all.slice(1).flatMap((payload) => payload.incremental ?? []);
    assert.deepEqual(
      entries.map(json).sort((x, y) => JSON.stringify(x.path).localeCompare(JSON.stringify(y.path))),
      [
        { data: { z: 'z0' }, path: ['a'], label: 'later' },
        { items: [3], path: ['list', 2], label: 'rest' },
        { items: [4], path: ['list', 3], label: 'rest' },
      ],
    );
  });

  it('answers readers that ask for several payloads at once', async () => {
    const result = (await executeIncrementally(args('{ a { x ... @defer { z } } list @stream(initialCount: 0) }'))) as AsyncIterable<Payload>;
    const iterator = result[Symbol.asyncIterator]();
    await iterator.next();
    // Every call settles: with the later payloads in turn, then with done.
    const steps = await within(10_000, 'a reader was left waiting', Promise.all(Array.from({ length: 8 }, () => iterator.next())));
    const entries = steps.flatMap((step) => (step.done ? [] : (step.value.incremental ?? [])));
    assert.equal(entries.length, 5, 'the fragment and four items');
    assert.ok(steps.at(-1)!.done);
  });

  it('drops the entries beneath a field that a non-null error nulls', async () => {
    const all = await payloads(executeIncrementally(args('{ a { x ... @defer { b { x } } y } list @stream(initialCount: 1) }')));
    assert.equal(all[0].hasNext, true);
    assert.deepEqual(json(all[0].data), { a: null, list: [1] });
    const entries = all.slice(1).flatMap((payload) => payload.incremental ?? []);
    assert.deepEqual(
      entries.map((entry) => entry.path),
      [
        ['list', 1],
        ['list', 2],
        ['list', 3],
      ],
    );
  });

  it('streams an async iterable item by item, and returns it when the client stops reading', async () => {
    let produced = 0;
    let returned = false;
    const ticks = async function* () {
      try {
        for (;;) {
          produced++;
          yield `tick ${produced}`;
          await later(undefined);
        }
      } finally {
        returned = true;
      }
    };
    const result = (await executeIncrementally({ ...args('{ ticks @stream(initialCount: 2) }'), rootValue: { ticks } })) as AsyncIterable<Payload>;
    const iterator = result[Symbol.asyncIterator]();
    const items: unknown[] = [];
    try {
      assert.deepEqual(json((await within(10_000, 'no first payload', iterator.next())).value), { data: { ticks: ['tick 1', 'tick 2'] }, hasNext: true });
      while (items.length < 6) {
        const step = await within(10_000, 'no next item', iterator.next());
        for (const entry of step.value.incremental ?? []) items.push(entry.path, entry.items);
      }
    } finally {
      await iterator.return!();
    }
    assert.deepEqual(items.slice(0, 6), [['ticks', 2], ['tick 3'], ['ticks', 3], ['tick 4'], ['ticks', 4], ['tick 5']]);
    for (let i = 0; i < 2000 && !returned; i++) await later(undefined, 5);
    assert.ok(returned, 'the list stopped producing when the client stopped reading');
    assert.deepEqual(await iterator.next(), { value: undefined, done: true });
  });

  it('reports an async iterable that fails as the failing item, and a completed stream with hasNext: false', async () => {
    const failingTicks = async function* () {
      yield 'one';
      yield 'two';
      throw new Error('the feed broke');
    };
    const all = await payloads(executeIncrementally({ ...args('{ failingTicks @stream(initialCount: 1) }'), rootValue: { failingTicks } }));
    const entries = all.slice(1).flatMap((payload) => payload.incremental ?? []);
    assert.deepEqual(
      entries.map((entry) => [entry.path, entry.items, entry.errors?.map((e) => e.message)]),
      [
        [['failingTicks', 1], ['two'], undefined],
        [['failingTicks', 2], null, ['the feed broke']],
      ],
    );
    assert.equal(all.at(-1)!.hasNext, false);
  });

  it('executes each event of a subscription incrementally', async () => {
    const events = async function* () {
      yield { events: a(1) };
      yield { events: a(2) };
    };
    schema.getSubscriptionType()!.getFields().events.subscribe = events;
    const all = await payloads(executeIncrementally({ schema, document: parse('subscription { events { x ... @defer { z } } }') }));
    assert.deepEqual(all.map(json), [
      { data: { events: { x: 'x1' } }, hasNext: true },
      { incremental: [{ data: { z: 'z1' }, path: ['events'] }], hasNext: false },
      { data: { events: { x: 'x2' } }, hasNext: true },
      { incremental: [{ data: { z: 'z2' }, path: ['events'] }], hasNext: false },
    ]);
  });

  it("answers graphql-js's errors when the operation cannot start", async () => {
    const document = parse('query A { list } query B { list }');
    assert.deepEqual(
      ((await executeIncrementally({ schema, document })) as ExecutionResult).errors?.map((e) => e.message),
      ['Must provide operation name if query contains multiple operations.'],
    );
    assert.deepEqual(
      ((await executeIncrementally({ schema, document, operationName: 'C' })) as ExecutionResult).errors?.map((e) => e.message),
      ['Unknown operation named "C".'],
    );
    const missing = { schema, document: parse('query($d: Boolean!) { a { x } }'), variableValues: {} };
    const variables = (await executeIncrementally(missing)) as ExecutionResult;
    // The installed graphql-js's own words for it (16 and 17 word it differently).
    assert.match(variables.errors?.[0].message ?? '', /Variable "\$d"/);
    assert.deepEqual(
      variables.errors?.map((e) => e.message),
      (await executeWhole(missing)).errors?.map((e) => e.message),
    );
  });
});
