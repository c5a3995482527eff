// Types for scripts/build-skiffd.mjs, so TypeScript tests can import it.
export interface SkiffdBuildResult {
  cjs: string;
  cjsBytes: number;
  sea?: string;
  seaBytes?: number;
}
export function build(options?: { outdir?: string; sea?: boolean; quiet?: boolean }): Promise<SkiffdBuildResult>;
