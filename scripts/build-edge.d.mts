export interface EdgeTarget {
  entry: string;
  out: string;
  format: 'esm' | 'iife';
  what: string;
}
export interface BundleSize {
  file: string;
  name: string;
  bytes: number;
  gzipBytes: number;
}
export const targets: EdgeTarget[];
export function build(options?: { outdir?: string; quiet?: boolean }): Promise<BundleSize[]>;
/** The esbuild settings every edge bundle shares; entry, output and format are per bundle. */
export const edgeBuildOptions: import('esbuild').BuildOptions;
