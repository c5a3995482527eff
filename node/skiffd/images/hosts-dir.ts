// Registry hosts as containerd 2 reads them: `<config_path>/<host>/hosts.toml` lists the mirrors of a
// registry (`[host."URL"]` tables, tried in file order) and its upstream (`server`), each with its own
// capabilities, TLS files and headers. Files are re-read when they change (a node-local mirror such as
// Spegel writes them while the daemon runs), so every pull looks them up again behind a stat check.
import { describeTomlError } from '../util/toml-error.ts';
import { readdirSync, readFileSync, statSync, type BigIntStats } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { ImageError } from './errors.ts';
import { DOCKER_HUB, DOCKER_HUB_API_HOST } from './reference.ts';
import { endpointsFor, type Endpoint, type EndpointCapability, type EndpointTls, type RegistrySettings } from './registry-config.ts';

const CAPABILITIES: readonly EndpointCapability[] = ['pull', 'resolve', 'push'];

/** A hosts.toml (or a directory of Docker-style certificate files) that a registry's pulls follow. */
export interface HostsDirEntry {
  /** The directory that matched: `<host>`, `<host>_<port>_`, `<host>:<port>` or `_default`. */
  dir: string;
  /** Its hosts.toml, or undefined when the directory only holds certificate files. */
  file: string | undefined;
  endpoints: Endpoint[];
}

/** Where a registry's endpoints come from on this pull, and what was set aside for them. */
export interface RegistryEndpoints {
  endpoints: Endpoint[];
  hosts?: HostsDirEntry;
  /** `registry.mirrors."HOST"` exists for this registry but its hosts.toml wins. */
  shadowedMirrors: boolean;
}

/** A registry's endpoints: its hosts directory when there is one, else the config file's mirrors. */
export function registryEndpoints(registry: string, settings: RegistrySettings): RegistryEndpoints {
  const hosts = settings.configPath ? lookupHostsDir(settings.configPath, registry) : undefined;
  if (!hosts) return { endpoints: endpointsFor(registry, settings), shadowedMirrors: false };
  return { endpoints: hosts.endpoints, hosts, shadowedMirrors: settings.mirrors[registry] !== undefined };
}

/** The directories containerd tries for a registry host, in order; the first that exists is used. */
export function hostDirCandidates(root: string, registry: string): string[] {
  const out: string[] = [];
  // `host:port` is also looked up as `host_port_`, a name that works on every filesystem.
  const colon = registry.lastIndexOf(':');
  if (colon > 0) out.push(join(root, `${registry.slice(0, colon)}_${registry.slice(colon + 1)}_`));
  out.push(join(root, registry), join(root, '_default'));
  return out;
}

interface Cached {
  signature: string;
  entry?: HostsDirEntry;
  error?: ImageError;
}

const cache = new Map<string, Cached>();

/**
 * The hosts directory entry for `registry` under `root`, or undefined when none applies. Parsed once per
 * version of the files: the stat signature (directory and file identity, mtime, size) decides.
 * A broken file fails this registry's pulls with an error naming the file; it never throws anything else.
 */
export function lookupHostsDir(root: string, registry: string): HostsDirEntry | undefined {
  for (const dir of hostDirCandidates(root, registry)) {
    const dirStat = statOrUndefined(dir);
    if (!dirStat?.isDirectory()) continue;
    const file = join(dir, 'hosts.toml');
    const fileStat = statOrUndefined(file);
    const signature = [dir, stamp(dirStat), fileStat ? stamp(fileStat) : '-'].join('|');
    const key = `${root}\0${registry}`;
    const hit = cache.get(key);
    if (hit?.signature === signature) {
      if (hit.error) throw hit.error;
      return hit.entry;
    }
    try {
      const entry = loadHostDir(dir, fileStat?.isFile() ? file : undefined, registry);
      cache.set(key, { signature, entry });
      return entry;
    } catch (err) {
      const error =
        err instanceof ImageError ? err : new ImageError('failed-precondition', `registry hosts directory ${dir}: ${(err as Error).message}`, { cause: err });
      cache.set(key, { signature, error });
      throw error;
    }
  }
  cache.delete(`${root}\0${registry}`);
  return undefined;
}

function statOrUndefined(path: string): BigIntStats | undefined {
  try {
    return statSync(path, { bigint: true });
  } catch {
    return undefined;
  }
}

function stamp(st: BigIntStats): string {
  return `${st.ino}:${st.mtimeNs}:${st.ctimeNs}:${st.size}`;
}

function loadHostDir(dir: string, file: string | undefined, registry: string): HostsDirEntry {
  const text = file ? readFileSync(file, 'utf8') : '';
  // As containerd: an empty or missing hosts.toml means Docker's layout (*.crt, *.cert + *.key).
  if (text.trim() === '') return { dir, file, endpoints: [defaultServer(registry, certFilesTls(dir))] };
  return { dir, file, endpoints: parseHostsToml(text, { registry, dir, file: file! }) };
}

/** Docker's certs.d layout: every *.crt is a CA; every *.cert is a client certificate, its key in the same-named *.key. */
function certFilesTls(dir: string): EndpointTls | undefined {
  const names = readdirSync(dir).sort();
  const caFiles = names.filter((n) => n.endsWith('.crt')).map((n) => join(dir, n));
  const clientCerts = names
    .filter((n) => n.endsWith('.cert'))
    .map((n) => {
      const key = `${n.slice(0, -'.cert'.length)}.key`;
      return names.includes(key) ? { certFile: join(dir, n), keyFile: join(dir, key) } : { certFile: join(dir, n) };
    });
  if (caFiles.length === 0 && clientCerts.length === 0) return undefined;
  return { ...(caFiles.length ? { caFiles } : {}), ...(clientCerts.length ? { clientCerts } : {}) };
}

/**
 * Parses one hosts.toml into endpoints: each `[host."URL"]` in file order (mirrors), then `server`
 * (the registry itself; when absent, `https://<registry>`, for docker.io `https://registry-1.docker.io`).
 */
export function parseHostsToml(text: string, where: { registry: string; dir: string; file: string }): Endpoint[] {
  const fail = (message: string): never => {
    throw new ImageError('failed-precondition', `registry hosts file ${where.file}: ${message}`);
  };
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text) as Record<string, unknown>;
  } catch (err) {
    return fail(describeTomlError(err));
  }
  const endpoints: Endpoint[] = [];
  const hosts = doc.host;
  if (hosts !== undefined && !isTable(hosts)) fail('"host" must be a table of [host."URL"] tables');
  // smol-toml keeps keys in document order: the order the mirrors are tried in.
  for (const [url, settings] of Object.entries((hosts as Record<string, unknown>) ?? {})) {
    if (!isTable(settings)) fail(`host."${url}" must be a table`);
    endpoints.push(hostEndpoint(url, settings as Record<string, unknown>, `host."${url}"`, true, where.dir, fail));
  }
  if (doc.server !== undefined) {
    if (typeof doc.server !== 'string' || doc.server === '') fail('server: expected a URL string');
    endpoints.push(hostEndpoint(doc.server as string, doc, 'server', false, where.dir, fail));
  } else {
    // containerd gives the implicit server every capability, whatever the top level says.
    const { capabilities: _ignored, ...rest } = doc;
    const own = hostEndpoint('https://placeholder', rest, 'top level', false, where.dir, fail);
    endpoints.push(defaultServer(where.registry, own.tls, own.headers));
  }
  return endpoints;
}

/** The registry itself when no `server` names it, as containerd 2 defaults it. */
function defaultServer(registry: string, tls?: EndpointTls, headers?: Record<string, string[]>): Endpoint {
  const extra = { ...(tls ? { tls } : {}), ...(headers ? { headers } : {}) };
  if (registry === DOCKER_HUB) {
    return { base: `//${DOCKER_HUB_API_HOST}/v2`, host: DOCKER_HUB_API_HOST, scheme: 'https', insecure: tls?.skipVerify === true, isMirror: false, ...extra };
  }
  if (isLocalhost(registry)) {
    // containerd: HTTPS without verification, falling back to plain HTTP (unless the port says which).
    const port = /:(\d+)$/.exec(registry)?.[1];
    const scheme = port === undefined || port === '443' ? 'https' : port === '80' ? 'http' : undefined;
    return { base: `//${registry}/v2`, host: registry, ...(scheme ? { scheme } : {}), insecure: port !== '80', isMirror: false, ...extra };
  }
  return { base: `//${registry}/v2`, host: registry, scheme: 'https', insecure: tls?.skipVerify === true, isMirror: false, ...extra };
}

function isLocalhost(registry: string): boolean {
  const name = registry.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
  return name === 'localhost' || name === '::1' || /^127\.\d+\.\d+\.\d+$/.test(name);
}

function hostEndpoint(
  raw: string,
  settings: Record<string, unknown>,
  label: string,
  isMirror: boolean,
  dir: string,
  fail: (message: string) => never,
): Endpoint {
  const overridePath = settings.override_path;
  if (overridePath !== undefined && typeof overridePath !== 'boolean') fail(`${label}.override_path: expected true or false`);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) && !/^https?:\/\//i.test(raw)) fail(`${label}: "${raw}" must use http:// or https://`);
  let url: URL;
  try {
    url = new URL(/^https?:\/\//i.test(raw) ? raw : `https://${raw}`);
  } catch {
    return fail(`${label}: "${raw}" is not a URL (expected http://host[:port][/path] or https://...)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(`${label}: "${raw}" must use http:// or https://`);
  let path = url.pathname.replace(/\/+$/, '');
  // override_path: the URL path is the API root as is (for registries that do not serve /v2).
  if (overridePath !== true && !path.endsWith('/v2')) path += '/v2';

  const skipVerify = settings.skip_verify;
  if (skipVerify !== undefined && typeof skipVerify !== 'boolean') fail(`${label}.skip_verify: expected true or false`);
  const abs = (p: string) => (isAbsolute(p) ? p : join(dir, p));
  const strings = (value: unknown, key: string): string[] =>
    Array.isArray(value) && value.every((v) => typeof v === 'string') ? (value as string[]) : fail(`${label}.${key}: expected a string or a list of strings`);

  let caFiles: string[] | undefined;
  if (settings.ca !== undefined) caFiles = (typeof settings.ca === 'string' ? [settings.ca] : strings(settings.ca, 'ca')).map(abs);

  let clientCerts: { certFile: string; keyFile?: string }[] | undefined;
  if (settings.client !== undefined) {
    const items = typeof settings.client === 'string' ? [settings.client] : Array.isArray(settings.client) ? settings.client : undefined;
    if (!items) fail(`${label}.client: expected a path, a list of paths, or a list of [cert, key] pairs`);
    clientCerts = items!.map((item) => {
      if (typeof item === 'string') return { certFile: abs(item) };
      if (Array.isArray(item) && item.length === 2 && item.every((v) => typeof v === 'string')) return { certFile: abs(item[0]), keyFile: abs(item[1]) };
      return fail(`${label}.client: each entry must be a path or a [cert, key] pair of paths`);
    });
  }

  let capabilities: EndpointCapability[] | undefined;
  if (settings.capabilities !== undefined) {
    const given = strings(settings.capabilities, 'capabilities').map((c) => c.toLowerCase());
    for (const c of given)
      if (!(CAPABILITIES as readonly string[]).includes(c)) fail(`${label}.capabilities: unknown capability "${c}" (known: pull, resolve, push)`);
    // An empty list means every capability, as in containerd.
    if (given.length > 0) capabilities = CAPABILITIES.filter((c) => given.includes(c));
  }

  let headers: Record<string, string[]> | undefined;
  if (settings.header !== undefined) {
    if (!isTable(settings.header)) fail(`${label}.header: expected a table of header names`);
    headers = {};
    for (const [name, value] of Object.entries(settings.header as Record<string, unknown>)) {
      headers[name] = typeof value === 'string' ? [value] : strings(value, `header.${name}`);
    }
  }

  const tls: EndpointTls = {
    ...(caFiles ? { caFiles } : {}),
    ...(clientCerts ? { clientCerts } : {}),
    ...(skipVerify !== undefined ? { skipVerify: skipVerify as boolean } : {}),
  };
  return {
    base: `//${url.host}${path}`,
    host: url.host,
    scheme: url.protocol === 'http:' ? 'http' : 'https',
    insecure: skipVerify === true,
    isMirror,
    ...(Object.keys(tls).length ? { tls } : {}),
    ...(headers ? { headers } : {}),
    ...(capabilities ? { capabilities } : {}),
    ...(overridePath === true ? { overridePath: true } : {}),
  };
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}
