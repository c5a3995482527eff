// The benchmark's workload: the two queries from the design note, and how each is sent.

export const Q1 = '{ country(code:"BR"){ name capital currency languages{ name } } }';
export const Q2 = '{ countries { code name continent { name } languages { code } } }';

export interface BenchQuery {
  /** Short id used by `--only` and in the table. */
  id: 'q1-get' | 'q1-post' | 'q2-post';
  label: string;
  method: 'GET' | 'POST';
  query: string;
}

export const benchQueries: readonly BenchQuery[] = [
  { id: 'q1-get', label: 'Q1 GET', method: 'GET', query: Q1 },
  { id: 'q1-post', label: 'Q1 POST', method: 'POST', query: Q1 },
  { id: 'q2-post', label: 'Q2 POST', method: 'POST', query: Q2 },
];

/** The path plus search string a GET sends. */
export function getPath(path: string, query: string): string {
  return `${path}?query=${encodeURIComponent(query)}`;
}

/** The JSON body a POST sends. */
export function postBody(query: string): string {
  return JSON.stringify({ query });
}

/** Builds the web Request for a query against `origin` + `path` (used by the in-process benches). */
export function requestFor(q: BenchQuery, origin = 'http://localhost', path = '/graphql'): Request {
  if (q.method === 'GET') {
    return new Request(origin + getPath(path, q.query), { headers: { accept: 'application/json' } });
  }
  return new Request(origin + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: postBody(q.query),
  });
}
