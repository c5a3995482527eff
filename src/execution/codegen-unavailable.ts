// What the bundles for runtimes that refuse code generation from strings (workerd, Vercel's edge) take
// in place of codegen.ts: no generator, so none of its code is shipped where workerd would compile it
// at start for nothing. Plans then always run on the interpreter.
import type { FieldPlan } from './plan.ts';
import type { FieldsWriter, InterpreterParts } from './codegen.ts';

export const codegenAvailable = false;

export function generateFieldsWriter<Run extends { readonly errors: unknown[] }, Path>(
  _fields: readonly FieldPlan[],
  _parts: InterpreterParts<Run, Path>,
): FieldsWriter<Run, Path> | null {
  return null;
}
