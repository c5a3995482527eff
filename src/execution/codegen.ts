// Where the runtime allows `new Function` (Node, Deno, Bun; not workerd or Vercel's edge runtime), the
// fields of an object selection become one generated function. It gains in two ways:
// - Property reads: the interpreter reads `source[field.fieldName]` at one site for every field of
//   every type, which V8 can only do megamorphically; generated code reads `s.code` at a site of its own.
// - Fewer pieces of text: objects and lists of objects held in plain properties are written inline,
//   recursively, so the constant text between two values (`"},\"languages\":[{\"code\":"`) is one
//   literal even where it spans nesting levels. Each piece is a node of the response's rope, and
//   flattening that rope for the socket costs per node.
// The generated code handles only what it expects (string leaves, plain objects and lists of them);
// anything else either goes to the interpreter's functions for that field, or, inside an inlined
// object, makes the whole writer start over in the interpreter from the text it was given. Strings
// are values, so starting over needs nothing undone but the errors recorded meanwhile. Both ways
// give the same bytes.
import type { FieldPlan } from './plan.ts';

/** Appends the fields of `source` as a JSON object to `out`: what the interpreter's executeFields does. */
export type FieldsWriter<Run, Path> = (run: Run, source: object, path: Path | undefined, out: string) => string;

/**
 * The interpreter's functions the generated code falls back on, with the same meaning. Like the
 * interpreter's, each takes the text written so far and returns it with its part appended.
 */
export interface InterpreterParts<Run extends { readonly errors: unknown[] }, Path> {
  executeField(run: Run, field: FieldPlan, source: unknown, path: Path | undefined, out: string): string;
  /** A plain leaf field's already read value that is not a string. */
  leafValue(run: Run, field: FieldPlan, source: unknown, value: unknown, path: Path | undefined, out: string): string;
  /** A resolver's value that is not a string, completed as the interpreter's resolveField does. */
  resolvedValue(run: Run, field: FieldPlan, value: unknown, path: Path, parentPath: Path | undefined, out: string): string;
  /** A resolver threw: the field's error, as the interpreter's resolveField reports it. */
  resolverError(run: Run, field: FieldPlan, error: unknown, path: Path, parentPath: Path | undefined, out: string): string;
  resolveInfo(run: Run, field: FieldPlan, path: Path): unknown;
  /** The interpreter's writer for a field list: where a generated writer starts over. */
  interpretFields(run: Run, fields: readonly FieldPlan[], source: unknown, path: Path | undefined, out: string): string;
  isPlainData(value: unknown): value is object;
  quoted(value: string): string;
  lazyPath: Path;
  bail: symbol;
}

// The bundles for runtimes that refuse code generation (workerd, Vercel's edge) take
// codegen-unavailable.ts in place of this module (scripts/build-edge.mjs): workerd compiles every byte
// it is given.

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

const literal = (text: string): string => JSON.stringify(text);

/** The state of one generated function while its source is written. */
class Emitter {
  readonly lines: string[] = [];
  /** Every field plan the code refers to, as `F[i]`. */
  readonly plans: FieldPlan[] = [];
  /** Constant text written but not yet appended to `out`. */
  pending = '';
  /**
   * Set while the opening text of a list item's object is being gathered: the list's loop appends
   * it together with the separator, so the first piece of code to need it takes it instead.
   */
  capture: { head: string | null } | null = null;
  inlined = 0;
  private names = 0;

  name(prefix: string): string {
    return `${prefix}${this.names++}`;
  }

  plan(field: FieldPlan): string {
    this.plans.push(field);
    return `F[${this.plans.length - 1}]`;
  }

  /** The constant text code about to run must write first (and clears it). */
  take(): string {
    const text = this.pending;
    this.pending = '';
    if (this.capture !== null && this.capture.head === null) {
      this.capture.head = text;
      return '';
    }
    return text;
  }

  /** `out += <constant text>` for what is pending, or nothing. */
  flush(): string {
    const text = this.take();
    return text === '' ? '' : `out += ${literal(text)};`;
  }
}

/**
 * Writes the code for `fields` of the object in `source` (a variable name). Leaves the object's
 * closing text pending. `inLane` marks fields inside an inlined object: nothing below them needs a
 * path, and any failure there hands the operation to graphql-js, as the interpreter's lanes do.
 */
function emitFields(em: Emitter, fields: readonly FieldPlan[], source: string, pathVar: string, inLane: boolean): void {
  em.pending += '{';
  for (const field of fields) {
    em.pending += field.prefix;
    if (field.typename !== null) {
      em.pending += field.typename;
      continue;
    }
    const name = field.fieldName;
    const completion = field.completion;
    const plan = em.plan(field);
    if (!identifier.test(name)) {
      em.lines.push(`${em.flush()} out = executeField(run, ${plan}, ${source}, ${pathVar}, out);`);
    } else if (field.plainLeaf === 'string') {
      em.inlined++;
      const v = em.name('v');
      em.lines.push(
        `${em.flush()} const ${v} = ${source}.${name}; out = typeof ${v} === 'string' ? out + quoted(${v}) : leafValue(run, ${plan}, ${source}, ${v}, ${pathVar}, out);`,
      );
    } else if (field.lane === 'object' && completion.kind === 'object') {
      em.inlined++;
      const v = em.name('v');
      const before = em.take();
      em.lines.push(`const ${v} = ${source}.${name};`);
      if (!inLane) em.lines.push('try {');
      em.lines.push(`if (isPlainData(${v})) {`);
      em.pending = before;
      emitFields(em, completion.fields, v, 'lazyPath', true);
      if (field.nonNull) {
        // A non-null object that is missing is an error: the interpreter reports it. The object's
        // closing text stays pending, to go with whatever follows.
        em.lines.push(`} else break restart;`);
      } else {
        em.lines.push(`${em.flush()} } else if (${v} === null || ${v} === undefined) out += ${literal(before + 'null')}; else break restart;`);
      }
      if (!inLane) em.lines.push('} catch (e) { throw BAIL; }');
    } else if (field.lane === 'objectList' && completion.kind === 'list' && completion.item.kind === 'object') {
      em.inlined++;
      const v = em.name('v');
      const item = em.name('e');
      const index = em.name('j');
      const before = em.take();
      // The item's code, written apart: its opening text goes with the separator in the loop.
      const outer = { lines: em.lines.splice(0), capture: em.capture };
      em.capture = { head: null };
      emitFields(em, completion.item.fields, item, 'lazyPath', true);
      const head = em.capture.head ?? '';
      em.capture = null;
      const tail = em.take();
      const itemLines = em.lines.splice(0);
      em.lines.push(...outer.lines);
      em.capture = outer.capture;
      em.lines.push(`const ${v} = ${source}.${name};`);
      if (!inLane) em.lines.push('try {');
      em.lines.push(
        `if (Array.isArray(${v})) { if (${v}.length === 0) out += ${literal(before + '[]')}; else {`,
        `for (let ${index} = 0; ${index} < ${v}.length; ${index}++) { const ${item} = ${v}[${index}];`,
        `if (!isPlainData(${item})) break restart;`,
        `out += ${index} === 0 ? ${literal(before + '[' + head)} : ${literal(tail + ',' + head)};`,
        ...itemLines,
        `}`,
        `out += ${literal(tail + ']')}; } }`,
      );
      em.lines.push(
        field.nonNull ? 'else break restart;' : `else if (${v} === null || ${v} === undefined) out += ${literal(before + 'null')}; else break restart;`,
      );
      if (!inLane) em.lines.push('} catch (e) { throw BAIL; }');
    } else if (
      !inLane &&
      field.resolve !== undefined &&
      field.staticArgs !== null &&
      field.argsError === null &&
      completion.kind === 'leaf' &&
      completion.fast === 'string'
    ) {
      // A resolver giving a string (Country.name): called here with its path and info, no
      // dispatch on the kind of field; every other outcome goes to the interpreter's steps.
      em.inlined++;
      const v = em.name('v');
      const p = em.name('p');
      const key = literal(field.key);
      const typename = literal(field.parentType.name);
      em.lines.push(
        `${em.flush()} if (path === lazyPath) out = executeField(run, ${plan}, ${source}, path, out); else {`,
        `const ${p} = { prev: path, key: ${key}, typename: ${typename} }; let ${v};`,
        `try { ${v} = ${plan}.resolve(${source}, ${plan}.staticArgs, run.contextValue, resolveInfo(run, ${plan}, ${p})); }`,
        `catch (e) { ${v} = FAILED; out = resolverError(run, ${plan}, e, ${p}, path, out); }`,
        `if (${v} !== FAILED) out = typeof ${v} === 'string' ? out + quoted(${v}) : resolvedValue(run, ${plan}, ${v}, ${p}, path, out); }`,
      );
    } else {
      em.lines.push(`${em.flush()} out = executeField(run, ${plan}, ${source}, ${pathVar}, out);`);
    }
  }
  em.pending += '}';
}

/**
 * The generated writer for `fields`, or null when none of them is read inline (the interpreter is
 * as good then) or code cannot be generated here.
 */
export function generateFieldsWriter<Run extends { readonly errors: unknown[] }, Path>(
  fields: readonly FieldPlan[],
  parts: InterpreterParts<Run, Path>,
): FieldsWriter<Run, Path> | null {
  if (!codegenAvailable) return null;
  const em = new Emitter();
  emitFields(em, fields, 's', 'path', false);
  if (em.inlined === 0) return null;
  // `break restart` leaves the block: the data was not what the code expects, so the interpreter
  // writes these fields instead, from the text as it was on entry.
  const source = `"use strict";
const { executeField, leafValue, resolvedValue, resolverError, resolveInfo, interpretFields, isPlainData, quoted, lazyPath } = H;
const FAILED = {};
return function writeFields(run, s, path, given) {
const errors = run.errors.length;
let out = given;
restart: {
${em.lines.join('\n')}
return out + ${literal(em.pending)};
}
run.errors.length = errors;
return interpretFields(run, FIELDS, s, path, given);
};`;
  try {
    const make = new Function('H', 'F', 'FIELDS', 'BAIL', source) as (
      h: InterpreterParts<Run, Path>,
      f: readonly FieldPlan[],
      fields: readonly FieldPlan[],
      bail: symbol,
    ) => FieldsWriter<Run, Path>;
    return make(parts, em.plans, fields, parts.bail);
  } catch {
    return null;
  }
}
