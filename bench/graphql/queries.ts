// The benchmark's workload: the two queries from the design note, the shapes clients send besides
// them (a filtered list, aliases with a fragment, variables, and the introspection GraphiQL and
// codegen tools send), and how each is sent.

export const Q1 = '{ country(code:"BR"){ name capital currency languages{ name } } }';
export const Q2 = '{ countries { code name continent { name } languages { code } } }';
const FILTERED = '{ countries(filter:{continent:{eq:"EU"}}){ code name capital continent{ name } languages{ name native } } }';
const FRAGMENTS =
  '{ br: country(code:"BR"){ ...C } fr: country(code:"FR"){ ...C } jp: country(code:"JP"){ ...C } } ' +
  'fragment C on Country { code name capital currency continent { name } languages { code name } }';
const VARIABLES = 'query Country($code: ID!) { country(code: $code) { name capital emoji languages { name } } }';
const TYPE = '{ __type(name:"Country"){ name kind fields { name args { name } type { kind name ofType { kind name ofType { kind name } } } } } }';
const SCHEMA_TYPES = '{ __schema { types { name } } }';

export interface BenchQuery {
  /** Short id used by `--queries` and in the table. */
  id: 'q1-get' | 'q1-post' | 'q2-post' | 'filtered' | 'fragments' | 'variables' | 'type' | 'schema-types';
  label: string;
  method: 'GET' | 'POST';
  query: string;
  variables?: Record<string, unknown>;
  /** A large answer: fixed-rate parts offer it a fifth of the small queries' rate. */
  large?: true;
}

export const benchQueries: readonly BenchQuery[] = [
  { id: 'q1-get', label: 'Q1 GET', method: 'GET', query: Q1 },
  { id: 'q1-post', label: 'Q1 POST', method: 'POST', query: Q1 },
  { id: 'q2-post', label: 'Q2 POST', method: 'POST', query: Q2, large: true },
  { id: 'filtered', label: 'filtered list', method: 'POST', query: FILTERED, large: true },
  { id: 'fragments', label: 'aliases + fragment', method: 'POST', query: FRAGMENTS },
  { id: 'variables', label: 'variables', method: 'POST', query: VARIABLES, variables: { code: 'JP' } },
  { id: 'type', label: '__type', method: 'POST', query: TYPE },
  { id: 'schema-types', label: '__schema types', method: 'POST', query: SCHEMA_TYPES },
];

/** The path plus search string a GET sends. */
export function getPath(path: string, query: string): string {
  return `${path}?query=${encodeURIComponent(query)}`;
}

/** The JSON body a POST sends. */
export function postBody(q: Pick<BenchQuery, 'query' | 'variables'>): string {
  return JSON.stringify(q.variables ? { query: q.query, variables: q.variables } : { query: q.query });
}

/** Builds the web Request for a query against `origin` + `path` (used by the in-process benches). */
export function requestFor(q: BenchQuery, origin = 'http://localhost', path = '/graphql'): Request {
  if (q.method === 'GET') {
    return new Request(origin + getPath(path, q.query), { headers: { accept: 'application/json' } });
  }
  return new Request(origin + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: postBody(q),
  });
}
