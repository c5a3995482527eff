// Types for scripts/build-skiffd.mjs, so TypeScript tests can import it.
export interface SkiffdBuildResult {
  cjs: string;
  cjsBytes: number;
  sea?: string;
  seaBytes?: number;
  /** The attach add-on shipped with the build; undefined when attach is disabled. */
  addon?: string;
  /** What the build said on stderr (an add-on that could not be found). */
  warnings: string[];
}
export interface SkiffdBuildOptions {
  outdir?: string;
  sea?: boolean;
  quiet?: boolean;
  /** false: leave the attach add-on out (attach disabled), as on a host that has none. */
  addon?: boolean;
}
export function build(options?: SkiffdBuildOptions): Promise<SkiffdBuildResult>;

export interface AddonHost {
  platform?: string;
  arch?: string;
  env?: Record<string, string | undefined>;
  resolve?: (id: string) => string;
  exists?: (path: string) => boolean;
}
export type AddonChoice = { path: string; warning?: undefined } | { path?: undefined; warning: string };
export function findAddon(host?: AddonHost): AddonChoice;
export function addonFileName(arch?: string): string;
