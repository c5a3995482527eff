// The served schema against the reference SDL of the public API (a copy under test/fixtures),
// introspection, and the federation surface (_service, _entities).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { graphqlWhole } from '../support/graphql-whole.ts';
import { buildSchema, findBreakingChanges, findDangerousChanges, getIntrospectionQuery, Kind, parse, print, printSchema, type ExecutionResult } from 'graphql';
import { countriesReferenceSDL, countriesSchema, countriesSDL, countriesSubgraphSDL } from '../../src/countries/index.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/countries/${name}`, import.meta.url), 'utf8');
const referenceSchema = buildSchema(fixture('countries-reference.graphql'));
const federationDoc = fixture('countries-reference.federation.graphql');

/** Executes and returns the result as a client sees it (serialized JSON). */
async function run(
  source: string,
  variableValues?: Record<string, unknown>,
): Promise<ExecutionResult & { errors?: { message: string; path?: (string | number)[] }[] }> {
  return JSON.parse(JSON.stringify(await graphqlWhole({ schema: countriesSchema, source, variableValues })));
}

describe('countries schema', () => {
  it('prints exactly the reference SDL (types, fields, order, arguments, defaults, nullability)', () => {
    assert.equal(countriesReferenceSDL, printSchema(referenceSchema));
  });

  it('has no breaking or dangerous change against the reference', () => {
    assert.deepEqual(findBreakingChanges(referenceSchema, countriesSchema), []);
    assert.deepEqual(findDangerousChanges(referenceSchema, countriesSchema), []);
  });

  it('has the federation surface of the reference extension document', () => {
    const federated = buildSchema(`${fixture('countries-reference.graphql')}\n${federationDoc}`, { assumeValidSDL: true });
    assert.deepEqual(findBreakingChanges(federated, countriesSchema), []);
    assert.deepEqual(findDangerousChanges(federated, countriesSchema), []);
    assert.match(countriesSDL, /_entities\(representations: \[_Any!\]!\): \[_Entity\]!/);
    assert.match(countriesSDL, /_service: _Service!/);
    assert.match(countriesSDL, /union _Entity = Continent \| Country \| Language/);
    assert.match(countriesSDL, /directive @key\(fields: String!\) repeatable on OBJECT \| INTERFACE/);
  });

  it('introspection: no mutation or subscription type, every type listed', async () => {
    const result = await run(getIntrospectionQuery());
    assert.equal(result.errors, undefined);
    const schema = (result.data as { __schema: { queryType: { name: string }; mutationType: unknown; subscriptionType: unknown } }).__schema;
    assert.equal(schema.queryType.name, 'Query');
    assert.equal(schema.mutationType, null);
    assert.equal(schema.subscriptionType, null);

    const types = await run('{ __schema { types { name description } } }');
    assert.equal(types.errors, undefined);
    const names = (types.data as { __schema: { types: { name: string }[] } }).__schema.types.map((t) => t.name);
    const expected = Object.keys(countriesSchema.getTypeMap());
    assert.deepEqual(names, expected);
    for (const name of [
      'Continent',
      'ContinentFilterInput',
      'Country',
      'CountryFilterInput',
      'Language',
      'LanguageFilterInput',
      'Query',
      'State',
      'StringQueryOperatorInput',
      'Subdivision',
      '_Any',
      '_Entity',
      '_Service',
      'String',
      'ID',
      'Boolean',
      '__Schema',
    ]) {
      assert.ok(names.includes(name), `types lists ${name}`);
    }
  });

  it('introspection shows Country fields in the reference order and list filters default to {}', async () => {
    const result = await run('{ __type(name: "Country") { fields { name } } query: __type(name: "Query") { fields { name args { name defaultValue } } } }');
    assert.equal(result.errors, undefined);
    const data = result.data as {
      __type: { fields: { name: string }[] };
      query: { fields: { name: string; args: { name: string; defaultValue: string | null }[] }[] };
    };
    assert.deepEqual(
      data.__type.fields.map((f) => f.name),
      [
        'awsRegion',
        'capital',
        'code',
        'continent',
        'currencies',
        'currency',
        'emoji',
        'emojiU',
        'languages',
        'name',
        'native',
        'phone',
        'phones',
        'states',
        'subdivisions',
      ],
    );
    const countries = data.query.fields.find((f) => f.name === 'countries')!;
    // An empty input object as the installed graphql-js prints it ('{}' on 16, '{  }' on 17).
    assert.deepEqual(countries.args, [{ name: 'filter', defaultValue: print({ kind: Kind.OBJECT, fields: [] }) }]);
  });

  it('_service.sdl parses, carries @key(fields: "code") on Country, Continent and Language', async () => {
    const result = await run('{ _service { sdl } }');
    assert.equal(result.errors, undefined);
    const sdl = (result.data as { _service: { sdl: string } })._service.sdl;
    assert.equal(sdl, countriesSubgraphSDL);
    const doc = parse(sdl);
    const keyed = doc.definitions
      .filter((d) => d.kind === 'ObjectTypeDefinition' && d.directives?.some((dir) => dir.name.value === 'key'))
      .map((d) => (d as { name: { value: string } }).name.value)
      .sort();
    assert.deepEqual(keyed, ['Continent', 'Country', 'Language']);
    assert.match(sdl, /type Country @key\(fields: "code"\) \{/);
    assert.doesNotMatch(sdl, /_entities|_service|_Any/, 'the subgraph SDL leaves out the federation plumbing');
    // With the directive declared, the SDL builds into the reference schema.
    const built = buildSchema(`directive @key(fields: String!) repeatable on OBJECT | INTERFACE\n${sdl}`);
    assert.deepEqual(findBreakingChanges(referenceSchema, built), []);
  });

  it('_entities resolves {__typename, code} for Country, Continent and Language, in order', async () => {
    const result = await run(
      `query($reps: [_Any!]!) { _entities(representations: $reps) {
      __typename
      ... on Country { code name capital }
      ... on Continent { code name }
      ... on Language { code name rtl }
    } }`,
      {
        reps: [
          { __typename: 'Language', code: 'ar' },
          { __typename: 'Country', code: 'BR' },
          { __typename: 'Continent', code: 'EU' },
          { __typename: 'Country', code: 'ZZ' },
        ],
      },
    );
    assert.equal(result.errors, undefined);
    assert.deepEqual(result.data, {
      _entities: [
        { __typename: 'Language', code: 'ar', name: 'Arabic', rtl: true },
        { __typename: 'Country', code: 'BR', name: 'Brazil', capital: 'Brasília' },
        { __typename: 'Continent', code: 'EU', name: 'Europe' },
        null,
      ],
    });
  });

  it('_entities also takes inline literal representations', async () => {
    const result = await run('{ _entities(representations: [{ __typename: "Country", code: "DE" }]) { ... on Country { name } } }');
    assert.deepEqual(result, { data: { _entities: [{ name: 'Germany' }] } });
  });

  it('_entities: an unknown __typename is a GraphQL error at that entry', async () => {
    const result = await run(
      '{ _entities(representations: [{ __typename: "Planet", code: "EA" }, { __typename: "Country", code: "FR" }]) { ... on Country { code } } }',
    );
    assert.deepEqual(result.data, { _entities: [null, { code: 'FR' }] });
    assert.equal(result.errors?.length, 1);
    assert.deepEqual(result.errors![0].path, ['_entities', 0]);
    assert.match(result.errors![0].message, /Unknown entity type "Planet".*Continent, Country, Language/);
  });

  it('_entities: a representation without a string code is an error', async () => {
    const result = await run('{ _entities(representations: [{ __typename: "Country" }, "BR"]) { ... on Country { code } } }');
    assert.deepEqual(result.data, { _entities: [null, null] });
    assert.equal(result.errors?.length, 2);
    assert.match(result.errors![0].message, /needs its key "code"/);
    assert.match(result.errors![1].message, /must be an object/);
  });
});
