// JSON with integers beyond 2^53 kept exact: an rlimit of "unlimited" is 18446744073709551615 in an
// OCI spec, which a JavaScript number would round to a value no uint64 can hold (and runc refuses).
// Such integers are bigints in memory and written digit for digit.
type RawJson = { rawJSON(text: string): unknown };
type SourceContext = { source?: string } | undefined;

/** JSON.stringify that writes bigints as plain integers. */
export function stringifyExact(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? (JSON as unknown as RawJson).rawJSON(v.toString()) : v));
}

/** JSON.parse that reads integers beyond 2^53 as bigints. */
export function parseExact<T>(text: string): T {
  const reviver = (_key: string, v: unknown, context?: SourceContext) =>
    typeof v === 'number' && !Number.isSafeInteger(v) && context?.source && /^-?\d+$/.test(context.source) ? BigInt(context.source) : v;
  return JSON.parse(text, reviver as (key: string, value: unknown) => unknown) as T;
}
