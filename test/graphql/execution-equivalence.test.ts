// The compiled executor (src/execution) against graphql-js `execute`: for every query the JSON text
// it writes must be byte for byte what JSON.stringify(execute(...)) gives, errors included, and it
// must hand back to graphql-js (`bail`) only where it says it does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLError,
  GraphQLFloat,
  GraphQLID,
  GraphQLInt,
  GraphQLInterfaceType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  GraphQLUnionType,
  parse,
  responsePathAsArray,
  validate,
  type ExecutionResult,
} from 'graphql';
import { countriesSchema } from '../../src/countries/index.ts';
import { emptyVariables, executeWhole, isErrorList } from '../../src/execution/graphql-compat.ts';
import { bail, executePlan, useGeneratedCode } from '../../src/execution/execute-plan.ts';
import { codegenAvailable } from '../../src/execution/codegen.ts';
import { coerceVariables } from '../../src/execution/compiled-execution.ts';
import { planOperation } from '../../src/execution/plan.ts';

interface Case {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
}

type Outcome = { kind: 'compiled'; json: string } | { kind: 'bail' } | { kind: 'unplanned' };

function runCompiled(schema: GraphQLSchema, c: Case, rootValue?: unknown, contextValue?: unknown): Outcome {
  const document = parse(c.query);
  const plan = planOperation(schema, document, c.operationName);
  if (plan === null) return { kind: 'unplanned' };
  // As the handler coerces them: the plan's reader, else graphql-js.
  const coerced = coerceVariables(schema, plan, c.variables);
  if (isErrorList(coerced)) return { kind: 'compiled', json: JSON.stringify({ errors: coerced }) };
  try {
    const result = executePlan(plan, schema, rootValue, contextValue, coerced);
    const json = result.errors.length === 0 ? `{"data":${result.data}}` : `{"errors":${JSON.stringify(result.errors)},"data":${result.data}}`;
    return { kind: 'compiled', json };
  } catch (error) {
    if (error === bail) return { kind: 'bail' };
    throw error;
  }
}

function reference(schema: GraphQLSchema, c: Case, rootValue?: unknown, contextValue?: unknown): string {
  const result = executeWhole({
    schema,
    document: parse(c.query),
    variableValues: c.variables,
    operationName: c.operationName,
    rootValue,
    contextValue,
  }) as ExecutionResult;
  assert.ok(!(result instanceof Promise), 'reference execution is synchronous');
  return JSON.stringify(result);
}

function assertEquivalent(schema: GraphQLSchema, c: Case, rootValue?: unknown, contextValue?: unknown): void {
  const errors = validate(schema, parse(c.query));
  assert.deepEqual(
    errors.map((e) => e.message),
    [],
    `test query must be valid: ${c.query}`,
  );
  const outcome = runCompiled(schema, c, rootValue, contextValue);
  assert.equal(outcome.kind, 'compiled', `compiled executor should run ${c.query}`);
  assert.equal((outcome as { json: string }).json, reference(schema, c, rootValue, contextValue), c.query);
}

const countriesCases: Case[] = [
  { query: '{ country(code:"BR"){ name capital currency languages{ name } } }' },
  { query: '{ countries { code name continent { name } languages { code } } }' },
  { query: '{ countries { code emoji emojiU awsRegion phone phones currencies native capital currency } }' },
  { query: '{ countries { code states { code name country { code } } subdivisions { code name emoji } } }' },
  { query: '{ continents { code name countries { code languages { code rtl native countries { code } } } } }' },
  { query: '{ languages { code name native rtl } }' },
  { query: '{ a: country(code:"BR"){ n: name } b: country(code:"XX"){ name } __typename t: __typename }' },
  { query: '{ country(code:"BR"){ name } country(code:"BR"){ capital name } }' },
  {
    query:
      '{ country(code:"DE"){ ...F ... on Country { code __typename } } } fragment F on Country { name continent { ...C } } fragment C on Continent { code __typename }',
  },
  { query: '{ country(code:"FR"){ name(lang:"de") es: name(lang:"es") plain: name } }' },
  { query: '{ country(code:"FR"){ code name(lang:"xx") } }' },
  { query: '{ countries(filter:{ code:{ eq:"BR" } }){ code name(lang:"xx") } }' },
  { query: '{ countries(filter:{ name:{ regex:"^United" } }){ code } }' },
  { query: '{ countries(filter:{ name:{ regex:"(" } }){ code } }' },
  { query: '{ countries(filter:{ continent:{ eq:"SA" } currency:{ nin:["USD"] } }){ code currency } }' },
  { query: '{ countries(filter:{ code:{ in:["BR","DE","US"] } }){ code } languages(filter:{ code:{ eq:"pt" } }){ name } }' },
  { query: '{ continent(code:"EU"){ name countries { code } } language(code:"de"){ name countries { name } } }' },
  { query: 'query ($code: ID!) { country(code:$code){ name } }', variables: { code: 'JP' } },
  { query: 'query ($code: ID!) { country(code:$code){ name } }', variables: {} },
  { query: 'query ($code: ID!) { country(code:$code){ name } }', variables: { code: 5 } },
  { query: 'query ($lang: String) { country(code:"IT"){ name(lang:$lang) } }', variables: { lang: 'fr' } },
  { query: 'query ($lang: String) { country(code:"IT"){ name(lang:$lang) } }', variables: { lang: 'nope' } },
  { query: 'query ($lang: String = "ja") { country(code:"IT"){ name(lang:$lang) } }' },
  { query: 'query ($f: CountryFilterInput) { countries(filter:$f){ code } }', variables: { f: { code: { regex: '^B' } } } },
  { query: '{ country(code:"BR"){ name @skip(if: true) capital @include(if: false) code @include(if: true) } }' },
  { query: 'query A { country(code:"BR"){ name } } query B { country(code:"DE"){ name } }', operationName: 'B' },
  { query: '{ _service { sdl } }' },
  {
    query: 'query ($r: [_Any!]!) { _entities(representations:$r){ __typename ... on Country { code name } ... on Language { code native } } }',
    variables: {
      r: [
        { __typename: 'Country', code: 'BR' },
        { __typename: 'Language', code: 'de' },
        { __typename: 'Country', code: 'ZZ' },
        { __typename: 'Nope', code: 'x' },
        'bad',
      ],
    },
  },
  { query: '{ __schema { queryType { name } types { name kind fields(includeDeprecated: true) { name args { name defaultValue } } } } }' },
  { query: '{ __type(name:"Country"){ name kind fields { name type { name kind ofType { name kind ofType { name } } } } } }' },
];

test('compiled execution matches graphql-js on the countries schema', () => {
  for (const c of countriesCases) assertEquivalent(countriesSchema, c);
});

// A schema built to reach every branch: resolver errors at every nullability, lists of every shape,
// leaf coercion, abstract types, methods read by the default resolver, info.path.
const Color = new GraphQLEnumType({ name: 'Color', values: { RED: { value: 'r' }, GREEN: { value: 'g' } } });
const DateScalar = new GraphQLScalarType({
  name: 'Date',
  serialize: (value) => {
    if (!(value instanceof Date)) throw new GraphQLError('Date cannot represent a non-date');
    return value.toISOString();
  },
});
const JsonScalar = new GraphQLScalarType({ name: 'Json', serialize: (value) => value });
const Named: GraphQLInterfaceType = new GraphQLInterfaceType({
  name: 'Named',
  fields: { name: { type: GraphQLString } },
  resolveType: (value: { kind?: string }) => value.kind,
});
const Person = new GraphQLObjectType({
  name: 'Person',
  interfaces: [Named],
  fields: { name: { type: GraphQLString }, age: { type: GraphQLInt } },
});
const Pet = new GraphQLObjectType({
  name: 'Pet',
  interfaces: [Named],
  isTypeOf: (value: { kind?: string }) => value.kind === 'Pet',
  fields: { name: { type: GraphQLString }, legs: { type: GraphQLInt } },
});
const Thing = new GraphQLUnionType({ name: 'Thing', types: [Person, Pet] });
const Node: GraphQLObjectType = new GraphQLObjectType({
  name: 'Node',
  fields: () => ({
    id: { type: new GraphQLNonNull(GraphQLID) },
    where: { type: GraphQLString, resolve: (_s, _a, _c, info) => `${responsePathAsArray(info.path).join('.')}@${info.path.typename}` },
    boom: {
      type: GraphQLString,
      resolve: () => {
        throw new Error('node boom');
      },
    },
    strictBoom: {
      type: new GraphQLNonNull(GraphQLString),
      resolve: () => {
        throw new Error('strict boom');
      },
    },
    child: { type: Node, resolve: (s: { id: string }) => ({ id: `${s.id}.c` }) },
    strictChild: { type: new GraphQLNonNull(Node), resolve: (s: { id: string }) => ({ id: `${s.id}.s` }) },
    greet: { type: GraphQLString, args: { who: { type: GraphQLString, defaultValue: 'you' } } },
  }),
});
const node = (id: string) => ({ id, greet: (args: { who: string }) => `hi ${args.who} from ${id}` });

const Plain = new GraphQLObjectType({
  name: 'Plain',
  fields: { id: { type: new GraphQLNonNull(GraphQLID) }, label: { type: GraphQLString } },
});

const edgeSchema = new GraphQLSchema({
  types: [Person, Pet],
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      str: { type: GraphQLString, resolve: () => 42 },
      bool: { type: GraphQLBoolean, resolve: () => 1 },
      int: { type: GraphQLInt, resolve: () => '7' },
      bigInt: { type: GraphQLInt, resolve: () => 2 ** 40 },
      float: { type: GraphQLFloat, resolve: () => 1.5 },
      nan: { type: GraphQLFloat, resolve: () => NaN },
      negZero: { type: GraphQLInt, resolve: () => -0 },
      escaped: { type: GraphQLString, resolve: () => 'quote " slash \\ newline \n tab \t unicode \u2028 é 🇧🇷 \u0001' },
      color: { type: Color, resolve: () => 'g' },
      badColor: { type: Color, resolve: () => 'blue' },
      date: { type: DateScalar, resolve: () => new Date(Date.UTC(2024, 0, 2)) },
      badDate: { type: DateScalar, resolve: () => 'yesterday' },
      json: { type: JsonScalar, resolve: () => ({ b: [1, 'x', null], a: { c: true } }) },
      nothing: { type: GraphQLString },
      strictNothing: { type: new GraphQLNonNull(GraphQLString), resolve: () => null },
      returnsError: { type: GraphQLString, resolve: () => new Error('returned, not thrown') },
      throwsGraphQLError: {
        type: GraphQLString,
        resolve: () => {
          throw new GraphQLError('with extensions', { extensions: { code: 'E1' } });
        },
      },
      list: { type: new GraphQLList(GraphQLString), resolve: () => ['a', null, 3] },
      strictItems: { type: new GraphQLList(new GraphQLNonNull(GraphQLString)), resolve: () => ['a', null] },
      strictList: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(GraphQLString))), resolve: () => ['a', null] },
      setList: { type: new GraphQLList(GraphQLInt), resolve: () => new Set([3, 1, 2]) },
      notAList: { type: new GraphQLList(GraphQLInt), resolve: () => 5 },
      stringAsList: { type: new GraphQLList(GraphQLString), resolve: () => 'abc' },
      nested: { type: new GraphQLList(new GraphQLList(GraphQLInt)), resolve: () => [[1, 2], null, [3]] },
      errorItems: { type: new GraphQLList(GraphQLString), resolve: () => ['ok', new Error('item error'), 'fine'] },
      nodes: { type: new GraphQLList(Node), resolve: () => [node('n1'), node('n2'), null] },
      strictNodes: { type: new GraphQLList(new GraphQLNonNull(Node)), resolve: () => [node('s1'), node('s2')] },
      node: { type: Node, resolve: () => node('root') },
      strictNode: { type: new GraphQLNonNull(Node), resolve: () => node('strict') },
      things: {
        type: new GraphQLList(Thing),
        resolve: () => [
          { __typename: 'Person', name: 'Ada', age: 36 },
          { __typename: 'Pet', kind: 'Pet', name: 'Rex', legs: 4 },
        ],
      },
      badThing: { type: Thing, resolve: () => ({ __typename: 'Nope' }) },
      nonObjectThing: { type: Thing, resolve: () => ({ __typename: 'String' }) },
      notPossibleThing: { type: Thing, resolve: () => ({ __typename: 'Query' }) },
      untypedThing: { type: Thing, resolve: () => ({ name: 'x' }) },
      named: {
        type: new GraphQLList(Named),
        resolve: () => [
          { kind: 'Person', name: 'Grace', age: 85 },
          { kind: 'Pet', name: 'Tom', legs: 4 },
        ],
      },
      echo: {
        type: GraphQLString,
        args: { text: { type: new GraphQLNonNull(GraphQLString) }, times: { type: GraphQLInt, defaultValue: 2 } },
        resolve: (_s, args: { text: string; times: number }) => args.text.repeat(args.times),
      },
      // Its arguments as graphql-js handed them over, key order included.
      args: {
        type: GraphQLString,
        args: {
          color: { type: Color },
          when: { type: DateScalar },
          n: { type: GraphQLInt, defaultValue: 1 },
          f: { type: GraphQLFloat },
          b: { type: GraphQLBoolean },
          id: { type: GraphQLID },
          req: { type: new GraphQLNonNull(GraphQLString), defaultValue: 'dflt' },
        },
        resolve: (_s, args: Record<string, unknown>) => JSON.stringify(args),
      },
      viewer: { type: GraphQLString, resolve: (_s, _a, context: { user?: string } | undefined) => context?.user ?? null },
      fromRoot: { type: GraphQLString },
      plainNodes: { type: new GraphQLList(Plain), resolve: () => [{ id: 'a', label: 'A' }, { id: null, label: 'B' }, { id: 'c' }] },
      plainNode: { type: Plain, resolve: () => ({ id: undefined, label: 'x' }) },
    },
  }),
});

/** Every kind of scalar and an enum, each by a variable of its own. */
const EVERY_SCALAR = 'query ($c: Color, $w: Date, $n: Int, $f: Float, $b: Boolean, $i: ID) { args(color: $c, when: $w, n: $n, f: $f, b: $b, id: $i) }';

const edgeCases: Case[] = [
  { query: '{ str bool int float negZero escaped color date json nothing __typename }' },
  { query: '{ bigInt str }' },
  { query: '{ nan int }' },
  { query: '{ badColor str }' },
  { query: '{ badDate str }' },
  { query: '{ strictNothing str }' },
  { query: '{ returnsError throwsGraphQLError str }' },
  { query: '{ list strictItems str }' },
  { query: '{ strictList str }' },
  { query: '{ setList notAList stringAsList nested errorItems }' },
  { query: '{ nodes { id where boom greet child { id where greet(who: "me") child { where } } } }' },
  { query: '{ nodes { id child { strictBoom } } str }' },
  { query: '{ strictNodes { id strictChild { id strictBoom } } str }' },
  { query: '{ strictNode { id strictBoom } }' },
  { query: '{ node { where strictChild { where strictChild { where boom } } } }' },
  { query: '{ things { __typename ... on Person { name age } ... on Pet { name legs } } }' },
  { query: '{ named { __typename name ... on Pet { legs } ... on Person { age } } }' },
  { query: '{ badThing { __typename } str }' },
  { query: '{ nonObjectThing { __typename } notPossibleThing { __typename } untypedThing { __typename } str }' },
  { query: 'query ($t: String!, $n: Int) { echo(text: $t, times: $n) again: echo(text: $t) }', variables: { t: 'ab', n: 3 } },
  { query: 'query ($t: String!) { echo(text: $t) }', variables: { t: null } },
  { query: 'query ($n: Int) { echo(text: "x", times: $n) }', variables: { n: 'many' } },
  { query: '{ viewer fromRoot node { ...on Node { id } } }' },
  // Variables and arguments as the plans' readers coerce them, valid or not (graphql-js then reports it).
  ...[
    { c: 'GREEN', w: '2024-01-02', n: 5, f: 1.5, b: true, i: 7 },
    {},
    { n: null, c: null, i: 'x' },
    { c: 'BLUE' },
    { c: 'g' },
    { n: 2 ** 31 },
    { n: 1.5 },
    { f: 'x', b: 'yes' },
    { i: 1.5 },
    { i: true },
  ].map((variables) => ({ query: EVERY_SCALAR, variables })),
  { query: 'query ($n: Int = 3, $c: Color = RED) { args(n: $n, color: $c) }', variables: {} },
  { query: 'query ($n: Int = 3, $c: Color = RED) { args(n: $n, color: $c) }', variables: { n: null, c: 'GREEN' } },
  { query: 'query ($s: String!) { args(req: $s) }', variables: {} },
  { query: 'query ($s: String!) { args(req: $s) }', variables: { s: null } },
  { query: 'query ($s: String!) { args(req: $s) }', variables: { s: 'given' } },
  { query: 'query ($s: String) { args(req: $s) }', variables: {} },
  { query: 'query ($s: String) { args(req: $s) }', variables: { s: null } },
  { query: 'query ($n: Int) { args(color: GREEN, n: $n, req: "lit") }', variables: { n: 2 } },
  { query: 'query ($n: Int) { args(color: GREEN, n: $n) first: args(n: 4) }', variables: {} },
];

test('compiled execution matches graphql-js on errors, null propagation, lists, leaves and abstract types', () => {
  for (const c of edgeCases) assertEquivalent(edgeSchema, c, { fromRoot: 'root value' }, { user: 'ada' });
});

test('the compiled executor hands promises and variable-dependent directives to graphql-js', async () => {
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        now: { type: GraphQLString, resolve: async () => 'later' },
        rejected: { type: GraphQLString, resolve: () => Promise.reject(new Error('ignored by the compiled run')) },
        sync: { type: GraphQLString, resolve: () => 'now' },
      },
    }),
  });
  const document = parse('{ sync now }');
  const plan = planOperation(schema, document, undefined)!;
  assert.throws(
    () => executePlan(plan, schema, undefined, undefined, emptyVariables),
    (e) => e === bail,
  );
  assert.equal(plan.async, true, 'a plan that met a promise is marked async');
  const rejectedPlan = planOperation(schema, parse('{ rejected }'), undefined)!;
  assert.throws(
    () => executePlan(rejectedPlan, schema, undefined, undefined, emptyVariables),
    (e) => e === bail,
  );
  // With an object as root value the root fields run as generated code, which calls these resolvers
  // itself: the same hand-over, and the rejection is still absorbed.
  const generatedPlan = planOperation(schema, document, undefined)!;
  assert.throws(
    () => executePlan(generatedPlan, schema, {}, undefined, emptyVariables),
    (e) => e === bail,
  );
  assert.equal(generatedPlan.async, true, 'generated code marks the plan async too');
  const generatedRejected = planOperation(schema, parse('{ sync rejected }'), undefined)!;
  assert.throws(
    () => executePlan(generatedRejected, schema, {}, undefined, emptyVariables),
    (e) => e === bail,
  );
  await new Promise((resolve) => setTimeout(resolve, 10)); // an unhandled rejection would fail the test run

  assert.equal(planOperation(schema, parse('query ($s: Boolean!) { sync @skip(if: $s) }'), undefined), null);
  assert.equal(planOperation(schema, parse('mutation { x }'), undefined), null, 'only queries are planned');
  assert.equal(planOperation(schema, parse('query A { sync } query B { sync }'), undefined), null);
  assert.equal(planOperation(schema, parse('query A { sync }'), 'C'), null);
});

test('an error under objects read as plain properties hands over to graphql-js, which reports its path', () => {
  // Such objects get no path of their own while they run; when one of their fields fails, the
  // compiled run stops and graphql-js executes the operation instead.
  assert.equal(runCompiled(edgeSchema, { query: '{ plainNodes { id label } }' }).kind, 'bail');
  assertEquivalent(edgeSchema, { query: '{ plainNodes { label } }' });
  // A resolver's object keeps its path (the resolver may ask for it), so its errors stay compiled.
  assertEquivalent(edgeSchema, { query: '{ plainNode { label id } str }' });
});

test('the handler answers through the compiled path with the bytes graphql-js gives', async () => {
  const { createGraphQLHandler } = await import('../../src/handler/create-handler.ts');
  const reads: string[] = [];
  const handler = createGraphQLHandler({
    schema: edgeSchema,
    compiledExecution: true,
    maskErrors: false, // compared byte for byte with graphql-js, which does not mask resolver errors
    rootValue: { fromRoot: 'root value' },
    context: () => {
      reads.push('context');
      return { user: 'grace' };
    },
  });
  const cases = [...edgeCases.slice(0, 12), { query: '{ plainNodes { id label } }' }, { query: '{ plainNode { label id } str }' }];
  for (const c of cases) {
    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await handler(
        new Request('http://localhost/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: c.query, variables: c.variables }),
        }),
      );
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.equal(await response.text(), reference(edgeSchema, c, { fromRoot: 'root value' }, { user: 'grace' }), c.query);
    }
  }
  assert.equal(reads.length, cases.length * 2, 'the context factory runs once per request');
});

test('introspection alone is answered once per document and kept; with variables, or beside data, it runs every time', async () => {
  const { createCompiledExecution } = await import('../../src/execution/compiled-execution.ts');
  const { createGraphQLHandler } = await import('../../src/handler/create-handler.ts');
  const compiled = createCompiledExecution(countriesSchema);
  const kept = (query: string) => {
    const plan = compiled.planFor(parse(query), undefined)!;
    const first = compiled.run(plan, undefined, undefined, {});
    return { plan, same: first !== null && compiled.run(plan, undefined, undefined, {}) === first };
  };
  assert.equal(kept('{ __type(name:"Country"){ name fields { name } } }').same, true);
  assert.equal(kept('{ __schema { types { name } } __typename }').same, true);
  assert.equal(kept('query($n: String!) { __type(name:$n){ name } }').plan.schemaOnly, false);
  assert.equal(kept('{ __typename country(code:"BR"){ name } }').plan.schemaOnly, false);

  // Through the handler: the kept bytes are graphql-js's, and a variable still decides its answer.
  const handler = createGraphQLHandler({ schema: countriesSchema, compiledExecution: true });
  const post = async (query: string, variables?: Record<string, unknown>) =>
    (
      await handler(
        new Request('http://localhost/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query, variables }),
        }),
      )
    ).text();
  const cases: Case[] = [
    { query: '{ __type(name:"Country"){ name kind fields { name args { name } type { kind name ofType { kind name } } } } }' },
    { query: '{ __schema { queryType { name } types { name } } }' },
    { query: 'query($n: String!) { __type(name:$n){ name fields { name } } }', variables: { n: 'Country' } },
    { query: 'query($n: String!) { __type(name:$n){ name fields { name } } }', variables: { n: 'Language' } },
  ];
  for (let attempt = 0; attempt < 3; attempt++) {
    for (const c of cases) assert.equal(await post(c.query, c.variables), reference(countriesSchema, c), `${c.query} ${JSON.stringify(c.variables)}`);
  }
});

test('without compiledExecution every resolver runs exactly once per request', async () => {
  const { createGraphQLHandler } = await import('../../src/handler/create-handler.ts');
  const { GraphQLObjectType, GraphQLSchema, GraphQLInt } = await import('graphql');
  let calls = 0;
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: { counter: { type: GraphQLInt, resolve: async () => ++calls } },
    }),
  });
  const handler = createGraphQLHandler({ schema });
  for (let i = 1; i <= 3; i++) {
    const response = await handler(new Request('http://localhost/graphql?query=%7Bcounter%7D'));
    assert.equal(await response.text(), `{"data":{"counter":${i}}}`);
  }
  assert.equal(calls, 3);
});

test('plain data read inline (objects and lists of objects) matches graphql-js or hands over', () => plainDataShapes());

function plainDataShapes(): void {
  // Shapes the inline reading of plain objects meets: nested objects, lists with nulls, Errors,
  // thenables, methods, getters and inherited properties, under nullable and non-null types.
  let getterReads = 0;
  class Inherited {
    get name(): string {
      return 'inherited';
    }
  }
  const Leaf: GraphQLObjectType = new GraphQLObjectType({
    name: 'Leaf',
    fields: () => ({
      name: { type: GraphQLString },
      strict: { type: new GraphQLNonNull(GraphQLString) },
      next: { type: Leaf },
      more: { type: new GraphQLList(Leaf) },
    }),
  });
  const Branch = new GraphQLObjectType({
    name: 'Branch',
    fields: {
      leaf: { type: Leaf },
      strictLeaf: { type: new GraphQLNonNull(Leaf) },
      leaves: { type: new GraphQLList(Leaf) },
      strictLeaves: { type: new GraphQLList(new GraphQLNonNull(Leaf)) },
      name: { type: GraphQLString },
      boom: {
        type: GraphQLString,
        resolve: () => {
          throw new Error('boom');
        },
      },
    },
  });
  const branches: Record<string, unknown> = {
    plain: {
      leaf: { name: 'a', strict: 's' },
      strictLeaf: { name: 'b', strict: 's' },
      leaves: [{ name: 'c', strict: 's' }, null],
      strictLeaves: [],
      name: 'p',
    },
    missing: { name: 'm' },
    nullInStrictList: { strictLeaves: [{ name: 'x', strict: 's' }, null] },
    strictNull: { leaf: { name: 'n', strict: null } },
    errorValue: { leaf: new Error('leaf failed'), leaves: [new Error('item failed')] },
    thenable: { leaf: Promise.resolve({ name: 'later', strict: 's' }) },
    method: { leaf: () => ({ name: 'called', strict: 's' }) },
    getter: {
      get leaf() {
        getterReads++;
        return { name: 'got', strict: 's' };
      },
    },
    inherited: { leaf: new Inherited(), leaves: [new Inherited()] },
    notAList: { leaves: { name: 'object' } },
    empty: { leaves: [], strictLeaves: [], leaf: { more: [] } },
    nested: {
      leaves: [
        { name: 'i1', next: { name: 'n1' }, more: [{ name: 'm1' }, { name: 'm2', next: null }] },
        { next: null, more: [] },
      ],
      strictLeaves: [{ name: 's1', next: { name: 'sn' }, more: [{ next: { name: 'deep' } }] }],
      leaf: { more: [{ next: { name: 'deep' } }, { next: null }, null], next: { more: null } },
    },
  };
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        branch: { type: Branch, args: { id: { type: new GraphQLNonNull(GraphQLString) } }, resolve: (_s, { id }) => branches[id] },
      },
    }),
  });
  // Besides the plain shapes: lists whose items start with an object or hold lists, items of
  // __typename alone, and a failing resolver before data the generated code does not expect (its
  // error must be reported once when that code starts over in the interpreter).
  const selections = [
    'leaf { name }',
    'strictLeaf { name }',
    'leaves { name }',
    'strictLeaves { name }',
    'leaf { strict }',
    'leaves { strict name }',
    'name',
    'leaves { next { name } more { name next { name } } name }',
    'strictLeaves { next { name } more { next { name } } }',
    'leaf { more { next { name } } next { more { name } } }',
    'leaves { __typename } strictLeaves { __typename }',
    'boom leaves { name } leaf { name }',
    'boom strictLeaf { name } name',
  ];
  let compiled = 0;
  for (const id of Object.keys(branches)) {
    for (const selection of selections) {
      const c = { query: `{ branch(id: "${id}") { ${selection} } }` };
      const before = getterReads;
      const outcome = runCompiled(schema, c);
      const readsWhileCompiled = getterReads - before;
      if (outcome.kind === 'compiled') {
        compiled++;
        assert.equal(outcome.json, reference(schema, c), c.query);
        if (id === 'getter' && selection.startsWith('leaf ')) assert.equal(readsWhileCompiled, 1, 'a getter is read once');
      } else {
        assert.equal(outcome.kind, 'bail', c.query);
      }
    }
  }
  assert.ok(compiled >= 40, `most shapes stay compiled (${compiled} did)`);
}

// Where `new Function` is allowed (here, on Node) field lists run as generated code; workerd and
// Vercel's edge runtime run the interpreter. Both must give graphql-js's bytes.
test('the interpreter alone gives the same bytes as generated code', () => {
  assert.ok(codegenAvailable, 'Node allows generated code, so the cases above ran through it');
  useGeneratedCode(false);
  try {
    for (const c of countriesCases) assertEquivalent(countriesSchema, c);
    for (const c of edgeCases) assertEquivalent(edgeSchema, c);
    plainDataShapes();
  } finally {
    useGeneratedCode(true);
  }
  const q2 = planOperation(countriesSchema, parse('{ countries { code name continent { name } languages { code } } }'), undefined)!;
  const generated = executePlan(q2, countriesSchema, undefined, undefined, emptyVariables).data;
  useGeneratedCode(false);
  const interpreted = executePlan(q2, countriesSchema, undefined, undefined, emptyVariables).data;
  useGeneratedCode(true);
  assert.equal(generated, interpreted);
});

test('plans read scalar and enum variables and the arguments they feed themselves, and leave the rest to graphql-js', () => {
  const plan = (query: string) => {
    const p = planOperation(edgeSchema, parse(query), undefined);
    assert.ok(p, query);
    return p;
  };
  const scalars = plan('query ($c: Color, $n: Int = 3, $s: String!) { args(color: $c, n: $n, req: $s) }');
  assert.ok(scalars.readVariables, 'scalars and enums are read by the plan');
  assert.ok(scalars.fields[0].readArgs, 'bare variables as arguments are read by the plan');
  assert.deepEqual(scalars.readVariables({ c: 'RED', s: 'x' }), { c: 'r', n: 3, s: 'x' });
  assert.equal(scalars.readVariables({ c: 'RED' }), undefined, 'a missing required variable is for graphql-js to report');
  assert.deepEqual(scalars.fields[0].readArgs({ c: 'r', n: 3, s: 'x' }), { color: 'r', n: 3, req: 'x' });
  const input = planOperation(countriesSchema, parse('query ($f: CountryFilterInput) { countries(filter: $f) { code } }'), undefined);
  assert.equal(input?.readVariables, null, 'input objects are coerced by graphql-js');
  const nested = planOperation(countriesSchema, parse('query ($c: String) { countries(filter: { code: { eq: $c } }) { code } }'), undefined);
  assert.equal(nested?.fields[0].readArgs, null, 'a variable inside a literal is read by graphql-js');
});
