export interface EdgeTarget {
  entry: string;
  out: string;
  format: 'esm' | 'iife';
  /** An entry module plus chunks under chunks/<name>/, or one file. */
  split: boolean;
  /** False for runtimes that refuse `new Function`: the compiled-plan code generator is left out. */
  codegen?: false;
  what: string;
}
export interface BundleSize {
  /** The entry module. */
  file: string;
  name: string;
  /** Every module of the target, relative to the output directory: the entry first, then its chunks. */
  modules: string[];
  /** Minified size of all its modules, and the sum of their gzip sizes. */
  bytes: number;
  gzipBytes: number;
  /** The entry and the chunks it imports statically: what a runtime that loads modules on demand reads at start. */
  startBytes: number;
  /** Those modules, the entry first. */
  startModules: string[];
  /** The source files bundled into those modules, relative to the repository, sorted. */
  startInputs: string[];
}
export const targets: EdgeTarget[];
export function build(options?: { outdir?: string; quiet?: boolean }): Promise<BundleSize[]>;
/** Builds one target (an entry of `targets`, or one of the same shape) into `outdir`. */
export function buildTarget(target: Omit<EdgeTarget, 'what'>, outdir: string): Promise<BundleSize>;
/** The esbuild settings every edge bundle shares; entry, output and format are per bundle. */
export const edgeBuildOptions: import('esbuild').BuildOptions;
