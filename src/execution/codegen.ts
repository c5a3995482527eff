// Where the runtime allows `new Function` (Node, Deno, Bun; not workerd or Vercel's edge runtime), the
// fields of an object selection become one generated function. Its gain is the property reads: the
// interpreter reads `source[field.fieldName]` at one site for every field of every type, which V8 can
// only do megamorphically, while generated code reads `s.code` at a site of its own. The generated code
// inlines only plain reads (string leaves, objects and lists of objects held in plain properties) and
// calls the interpreter's own functions for everything else, so both paths give the same bytes.
import type { FieldPlan } from './plan.ts';

/** Appends the fields of `source` as a JSON object to `out`: what the interpreter's executeFields does. */
export type FieldsWriter<Run, Path> = (run: Run, source: object, path: Path | undefined, out: string) => string;

/**
 * The interpreter's functions the generated code falls back on, with the same meaning. Like the
 * interpreter's, each takes the text written so far and returns it with its part appended.
 */
export interface InterpreterParts<Run, Path> {
  executeField(run: Run, field: FieldPlan, source: unknown, path: Path | undefined, out: string): string;
  /** A plain leaf field's already read value that is not a string. */
  leafValue(run: Run, field: FieldPlan, source: unknown, value: unknown, path: Path | undefined, out: string): string;
  /** A lane field's already read value that is not what the generated code handles inline. */
  laneValue(run: Run, field: FieldPlan, value: unknown, path: Path | undefined, out: string): string;
  /** A list item that is not a plain object, completed as the interpreter's lane would. */
  laneItem(run: Run, field: FieldPlan, item: unknown, path: Path | undefined, out: string): string;
  isPlainData(value: unknown): value is object;
  quoted(value: string): string;
  /** The writer for nested fields: generated, or the interpreter's. */
  writerFor(fields: readonly FieldPlan[]): FieldsWriter<Run, Path>;
  lazyPath: Path;
  bail: symbol;
}

/** Whether this runtime lets code be generated from strings; decided once. */
export const codegenAvailable: boolean = (() => {
  try {
    return new Function('return 1')() === 1;
  } catch {
    return false; // workerd and edge-runtime throw EvalError
  }
})();

/** GraphQL names are always JavaScript identifiers; checked anyway, since they go into source text. */
const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The generated writer for `fields`, or null when none of them is read inline (the interpreter is
 * as good then) or code cannot be generated here.
 */
export function generateFieldsWriter<Run, Path>(
  fields: readonly FieldPlan[],
  parts: InterpreterParts<Run, Path>,
): FieldsWriter<Run, Path> | null {
  if (!codegenAvailable) return null;
  const lines: string[] = [];
  const inner: FieldsWriter<Run, Path>[] = [];
  let inlined = 0;
  // Constant text (braces, keys, __typename values) is gathered and appended in one piece, as a
  // literal in the generated source: fewer rope nodes to flatten when the response is written.
  let pending = '{';
  const flush = (extra = ''): string => {
    const text = pending + extra;
    pending = '';
    return text === '' ? '' : `out += ${JSON.stringify(text)};`;
  };
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i];
    pending += field.prefix;
    if (field.typename !== null) {
      pending += field.typename;
      continue;
    }
    const name = field.fieldName;
    const completion = field.completion;
    if (!identifier.test(name)) {
      lines.push(`${flush()} out = executeField(run, F[${i}], s, path, out);`);
      continue;
    }
    if (field.plainLeaf === 'string') {
      inlined++;
      lines.push(`${flush()} { const v = s.${name}; out = typeof v === 'string' ? out + quoted(v) : leafValue(run, F[${i}], s, v, path, out); }`);
    } else if (field.lane === 'object' && completion.kind === 'object') {
      inlined++;
      inner[i] = parts.writerFor(completion.fields);
      lines.push(
        `${flush()} { const v = s.${name}; try { out = isPlainData(v) ? W[${i}](run, v, lazyPath, out) : laneValue(run, F[${i}], v, path, out); } catch (e) { throw BAIL; } }`,
      );
    } else if (field.lane === 'objectList' && completion.kind === 'list' && completion.item.kind === 'object') {
      inlined++;
      inner[i] = parts.writerFor(completion.item.fields);
      const prefix = pending;
      pending = '';
      lines.push(
        `{ const v = s.${name}; try { if (Array.isArray(v)) { out += ${JSON.stringify(prefix + '[')}; for (let j = 0; j < v.length; j++) { if (j > 0) out += ','; const e = v[j]; out = isPlainData(e) ? W[${i}](run, e, lazyPath, out) : laneItem(run, F[${i}], e, path, out); } out += ']'; } else { out += ${JSON.stringify(prefix)}; out = laneValue(run, F[${i}], v, path, out); } } catch (e) { throw BAIL; } }`,
      );
    } else {
      lines.push(`${flush()} out = executeField(run, F[${i}], s, path, out);`);
    }
  }
  if (inlined === 0) return null;
  const source = `"use strict";
const { executeField, leafValue, laneValue, laneItem, isPlainData, quoted, lazyPath } = H;
return function writeFields(run, s, path, out) {
${lines.join('\n')}
return out + ${JSON.stringify(pending + '}')};
};`;
  try {
    const make = new Function('H', 'F', 'W', 'BAIL', source) as (
      h: InterpreterParts<Run, Path>,
      f: readonly FieldPlan[],
      w: FieldsWriter<Run, Path>[],
      bail: symbol,
    ) => FieldsWriter<Run, Path>;
    return make(parts, fields, inner, parts.bail);
  } catch {
    return null;
  }
}
