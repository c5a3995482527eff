// The `filter:` arguments: per field a StringQueryOperatorInput `{ eq ne in nin regex }`, with
// upstream's (sift) meaning: every operator given must hold for the field's value, a field
// without operators is no constraint. An operator given as an explicit null is ignored like an
// absent one (upstream's explicit-null behaviour was an accident of sift, not a contract).
import { GraphQLError } from 'graphql';
import { compileSafeRegex, RegexError, type SafeRegex } from './safe-regex.ts';

export interface StringQueryOperatorInput {
  eq?: string | null;
  ne?: string | null;
  in?: readonly string[] | null;
  nin?: readonly string[] | null;
  regex?: string | null;
}

type Test = (value: string) => boolean;

// Compiled patterns are reused across requests (clients repeat the same filters); the cache is
// bounded and simply dropped when full. Only successful compilations are kept.
const REGEX_CACHE_LIMIT = 256;
const regexCache = new Map<string, SafeRegex>();

function compiledRegex(pattern: string): SafeRegex {
  let re = regexCache.get(pattern);
  if (!re) {
    re = compileSafeRegex(pattern);
    if (regexCache.size >= REGEX_CACHE_LIMIT) regexCache.clear();
    regexCache.set(pattern, re);
  }
  return re;
}

function operatorTests(field: string, ops: StringQueryOperatorInput): Test[] {
  const tests: Test[] = [];
  const { eq, ne, in: within, nin, regex } = ops;
  if (eq != null) tests.push((v) => v === eq);
  if (ne != null) tests.push((v) => v !== ne);
  if (within != null) {
    const set = new Set(within);
    tests.push((v) => set.has(v));
  }
  if (nin != null) {
    const set = new Set(nin);
    tests.push((v) => !set.has(v));
  }
  if (regex != null) {
    try {
      const re = compiledRegex(regex);
      tests.push((v) => re.test(v));
    } catch (e) {
      if (!(e instanceof RegexError)) throw e;
      throw new GraphQLError(`Invalid regex for filter field "${field}": ${e.message}`, {
        extensions: { code: 'BAD_USER_INPUT', field, pattern: regex },
      });
    }
  }
  return tests;
}

/**
 * Applies a filter to a list. `fieldsOf` returns the string values the filter fields test.
 * Invalid regex patterns raise a GraphQLError before any item is looked at.
 */
export function applyFilter<T, K extends string>(
  items: readonly T[],
  filter: Partial<Record<K, StringQueryOperatorInput | null>> | null | undefined,
  fieldsOf: (item: T) => Readonly<Record<K, string>>,
): readonly T[] {
  if (filter == null) return items;
  const checks: [K, Test][] = [];
  for (const field of Object.keys(filter) as K[]) {
    const ops = filter[field];
    if (ops == null) continue;
    for (const test of operatorTests(field, ops)) checks.push([field, test]);
  }
  if (checks.length === 0) return items;
  return items.filter((item) => {
    const values = fieldsOf(item);
    for (const [field, test] of checks) if (!test(values[field])) return false;
    return true;
  });
}
