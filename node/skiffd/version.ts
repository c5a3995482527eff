// Version facts reported by `skiffd --version` and the Version RPC. The package version is bundled
// from package.json at build time, so the single executable needs no files beside it.
import pkg from '../../package.json' with { type: 'json' };

export const RUNTIME_NAME = 'skiffd';
export const RUNTIME_VERSION: string = pkg.version;
/** The CRI API version this daemon speaks. */
export const RUNTIME_API_VERSION = 'v1';
/** The version of the kubelet runtime API (a fixed string every CRI runtime reports). */
export const KUBELET_API_VERSION = '0.1.0';
