// What the daemon's config file says about registries: mirrors per registry host and per-host
// credentials / TLS settings. Keys are registry hosts as they appear in image references
// (`docker.io`, `registry.k8s.io`, `127.0.0.1:5000`).
import type { RegistryConfig } from '../config.ts';
import { DOCKER_HUB, DOCKER_HUB_API_HOST } from './reference.ts';

/** The `[registry]` part of the daemon config, as the image subsystem reads it. */
export type RegistrySettings = RegistryConfig;

export interface Endpoint {
  /** Base URL up to and including `/v2`, no trailing slash. */
  base: string;
  /** `host[:port]` of the endpoint, the key for its settings. */
  host: string;
  /** Explicit scheme from the config, or undefined to use https (and http when insecure). */
  scheme?: 'http' | 'https';
  insecure: boolean;
  isMirror: boolean;
  /** TLS settings for this endpoint (hosts.toml's ca/client/skip_verify, or the old configs."HOST".tls table). */
  tls?: EndpointTls;
  /** Extra headers sent on every request to this endpoint (hosts.toml `header`). */
  headers?: Record<string, string[]>;
  /** What the endpoint may be asked for (hosts.toml `capabilities`); undefined: everything. */
  capabilities?: EndpointCapability[];
  /** `base` is the API root as configured: no `/v2` was appended (hosts.toml `override_path`). */
  overridePath?: boolean;
}

export interface EndpointTls {
  caFiles?: string[];
  clientCerts?: { certFile: string; keyFile?: string }[];
  skipVerify?: boolean;
}

/** `resolve`: turn a tag into a manifest digest; `pull`: fetch by digest; `push`: upload (unused by a CRI runtime). */
export type EndpointCapability = 'pull' | 'resolve' | 'push';

/** Whether an endpoint may be asked for `what` (no capabilities listed: everything). */
export function endpointCan(endpoint: Endpoint, what: EndpointCapability): boolean {
  return endpoint.capabilities === undefined || endpoint.capabilities.includes(what);
}

/** Mirrors first, in the configured order, then the registry itself. */
export function endpointsFor(registry: string, settings: RegistrySettings): Endpoint[] {
  const out: Endpoint[] = [];
  for (const raw of settings.mirrors[registry]?.endpoints ?? []) out.push(parseEndpoint(raw, settings, true));
  const own = registry === DOCKER_HUB ? DOCKER_HUB_API_HOST : registry;
  const ownConfig = settings.configs[registry] ?? settings.configs[own];
  const ownEndpoint: Endpoint = { base: `//${own}/v2`, host: own, insecure: ownConfig?.insecure === true, isMirror: false };
  const tls = tlsFromConfig(ownConfig);
  if (tls) ownEndpoint.tls = tls;
  out.push(ownEndpoint);
  return out;
}

/** The TLS settings configured for a host (the token realm of a registry may be another host). */
export function configuredTls(host: string, settings: RegistrySettings): EndpointTls | undefined {
  return tlsFromConfig(settings.configs[host] ?? (host === DOCKER_HUB_API_HOST ? settings.configs[DOCKER_HUB] : undefined));
}

/** containerd 1.x's `configs."HOST".tls` table as endpoint TLS settings. */
function tlsFromConfig(config: RegistrySettings['configs'][string] | undefined): EndpointTls | undefined {
  const t = config?.tls;
  if (!t) return undefined;
  const out: EndpointTls = {};
  if (t.caFile) out.caFiles = [t.caFile];
  if (t.certFile) out.clientCerts = [{ certFile: t.certFile, ...(t.keyFile ? { keyFile: t.keyFile } : {}) }];
  if (t.insecureSkipVerify) out.skipVerify = true;
  return Object.keys(out).length ? out : undefined;
}

function parseEndpoint(raw: string, settings: RegistrySettings, isMirror: boolean): Endpoint {
  const hasScheme = /^[a-z]+:\/\//i.test(raw);
  const url = new URL(hasScheme ? raw : `https://${raw}`);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`registry mirror endpoint "${raw}": scheme must be http or https`);
  }
  let path = url.pathname.replace(/\/+$/, '');
  if (!path.endsWith('/v2')) path += '/v2';
  const host = url.host;
  const endpoint: Endpoint = {
    base: `//${host}${path}`,
    host,
    scheme: hasScheme ? (url.protocol === 'http:' ? 'http' : 'https') : undefined,
    insecure: settings.configs[host]?.insecure === true,
    isMirror,
  };
  const tls = tlsFromConfig(settings.configs[host]);
  if (tls) endpoint.tls = tls;
  return endpoint;
}

/** Credentials configured for a host, as username/password (or identity token). */
export function configuredCredentials(host: string, settings: RegistrySettings): Credentials | undefined {
  const config = settings.configs[host] ?? (host === DOCKER_HUB_API_HOST ? settings.configs[DOCKER_HUB] : undefined);
  if (!config) return undefined;
  return credentialsFrom(config);
}

export interface Credentials {
  username?: string;
  password?: string;
  identityToken?: string;
  /** A ready bearer token for the registry itself (CRI AuthConfig.registry_token). */
  registryToken?: string;
}

export function credentialsFrom(source: {
  username?: string;
  password?: string;
  auth?: string;
  identityToken?: string;
  registryToken?: string;
}): Credentials | undefined {
  let { username, password } = source;
  if (!username && source.auth) {
    const decoded = Buffer.from(source.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new Error('registry auth must be base64 of "username:password"');
    username = decoded.slice(0, colon);
    password = decoded.slice(colon + 1);
  }
  const creds: Credentials = {};
  if (username) {
    creds.username = username;
    creds.password = password ?? '';
  }
  if (source.identityToken) creds.identityToken = source.identityToken;
  if (source.registryToken) creds.registryToken = source.registryToken;
  return Object.keys(creds).length ? creds : undefined;
}
