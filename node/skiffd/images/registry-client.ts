// Talks the OCI distribution API to one repository across its endpoints (mirrors first, then the
// registry itself): manifest resolution, blob download, auth challenges, insecure hosts.
import { ImageError, isImageError } from './errors.ts';
import { basicHeader, fetchBearerToken, parseChallenges } from './auth.ts';
import { discard, readBody, request, type HttpResponse } from './http.ts';
import { registryEndpoints, type HostsDirEntry } from './hosts-dir.ts';
import { configuredCredentials, configuredTls, endpointCan, type Credentials, type Endpoint, type RegistrySettings } from './registry-config.ts';
import { transportError } from './transport/errors.ts';
import { MANIFEST_ACCEPT } from './media-types.ts';
import { DOCKER_HUB, DOCKER_HUB_API_HOST } from './reference.ts';

/** Insecure hosts found to speak plain HTTP, so later pulls skip the TLS attempt. */
const plainHttpHosts = new Set<string>();

interface EndpointState {
  endpoint: Endpoint;
  creds: Credentials | undefined;
  scheme?: 'http' | 'https';
  authorization?: string;
}

export interface FetchedManifest {
  endpoint: Endpoint;
  body: Buffer;
  /** Content-Type as sent; the body's own mediaType wins when present. */
  contentType: string;
}

export class RegistryClient {
  private readonly states: EndpointState[];
  private primary: EndpointState | undefined;
  /** Endpoints whose download stalled or broke during this pull: tried after the others from then on. */
  private readonly demoted = new Set<EndpointState>();
  /** The hosts.toml (or certificate directory) this registry's endpoints came from, if any. */
  readonly hosts: HostsDirEntry | undefined;
  /** `registry.mirrors` has this registry too, but its hosts.toml decides. */
  readonly shadowedMirrors: boolean;

  constructor(
    readonly registry: string,
    readonly repository: string,
    private readonly settings: RegistrySettings,
    requestCredentials?: Credentials,
    /** Aborts every request of this client (daemon shutdown). */
    private readonly signal?: AbortSignal,
  ) {
    const found = registryEndpoints(registry, settings);
    this.hosts = found.hosts;
    this.shadowedMirrors = found.shadowedMirrors;
    this.states = found.endpoints.map((endpoint) => {
      const isOwn = !endpoint.isMirror;
      // Credentials from the request belong to the image's registry; mirrors get their own config only.
      const creds = isOwn
        ? (requestCredentials ?? configuredCredentials(registry, settings) ?? configuredCredentials(endpoint.host, settings))
        : configuredCredentials(endpoint.host, settings);
      const state: EndpointState = { endpoint, creds };
      if (endpoint.insecure && !endpoint.scheme && plainHttpHosts.has(endpoint.host)) state.scheme = 'http';
      if (creds?.registryToken) state.authorization = `Bearer ${creds.registryToken}`;
      return state;
    });
  }

  get endpoints(): Endpoint[] {
    return this.states.map((s) => s.endpoint);
  }

  /** The endpoints in the order to try, those without the capability left out; an error when none is left. */
  private order(need: 'pull' | 'resolve', what: string): EndpointState[] {
    const preferred = this.primary ? [this.primary, ...this.states.filter((s) => s !== this.primary)] : this.states;
    const all = [...preferred.filter((s) => !this.demoted.has(s)), ...preferred.filter((s) => this.demoted.has(s))];
    // A tag needs an endpoint trusted to resolve it; content by digest can come from any puller.
    const usable = all.filter((s) => endpointCan(s.endpoint, 'pull') && (need === 'pull' || endpointCan(s.endpoint, 'resolve')));
    if (usable.length === 0) {
      const source = this.hosts?.file ? ` (${this.hosts.file})` : '';
      throw new ImageError(
        'failed-precondition',
        `${what}: no endpoint of ${this.registry}${source} has the "${need}" capability (endpoints: ${all.map((s) => `${s.endpoint.host} [${s.endpoint.capabilities?.join(',') ?? 'all'}]`).join(', ')})`,
      );
    }
    return usable;
  }

  /** Whether an endpoint that may pull but not resolve comes before `state` in the configured order. */
  private passesPullOnly(state: EndpointState): boolean {
    const before = this.states.slice(0, this.states.indexOf(state));
    return before.some((s) => endpointCan(s.endpoint, 'pull') && !endpointCan(s.endpoint, 'resolve'));
  }

  /** Resolves a tag or digest to its manifest, trying each endpoint in order. */
  async getManifest(reference: string): Promise<FetchedManifest> {
    const byDigest = reference.includes(':');
    const order = this.order(byDigest ? 'pull' : 'resolve', `manifest ${this.registry}/${this.repository}:${reference}`);
    const failures: string[] = [];
    let last: unknown;
    for (const state of order) {
      try {
        const res = await this.send(state, `/${this.repository}/manifests/${reference}`, { Accept: MANIFEST_ACCEPT });
        if (res.status === 200) {
          const body = await readBody(res, 4 * 1024 * 1024);
          // A pull-only mirror ahead of the endpoint that resolved the tag should still serve the content.
          if (byDigest || !this.passesPullOnly(state)) this.primary ??= state;
          return {
            endpoint: state.endpoint,
            body,
            contentType: String(res.headers['content-type'] ?? '')
              .split(';')[0]
              .trim(),
          };
        }
        const text = (await readBody(res, 64 * 1024).catch(() => Buffer.alloc(0))).toString('utf8');
        throw statusError(res.status, `manifest ${this.registry}/${this.repository}:${reference}`, state.endpoint, text);
      } catch (err) {
        last = err;
        failures.push(`${state.endpoint.host}: ${(err as Error).message}`);
      }
    }
    if (isImageError(last) && failures.length === 1) throw last;
    const kind = isImageError(last) ? last.kind : 'unavailable';
    throw new ImageError(kind, `pulling ${this.registry}/${this.repository}:${reference} failed on every endpoint: ${failures.join('; ')}`, { cause: last });
  }

  /**
   * A download from `endpoint` stalled or broke: the rest of this pull asks the other endpoints first (a
   * slow mirror is skipped for the next, and the registry itself is the last resort as configured).
   */
  demote(endpoint: Endpoint): void {
    const state = this.states.find((s) => s.endpoint === endpoint);
    if (!state) return;
    this.demoted.add(state);
    if (this.primary === state) this.primary = undefined;
  }

  /** An open 200 response streaming the blob, from the endpoint that served the manifest first. */
  async openBlob(digest: string): Promise<HttpResponse & { endpoint: Endpoint }> {
    const order = this.order('pull', `blob ${digest} of ${this.registry}/${this.repository}`);
    const failures: string[] = [];
    let last: unknown;
    for (const state of order) {
      try {
        const res = await this.send(state, `/${this.repository}/blobs/${digest}`, {});
        if (res.status === 200) {
          this.primary ??= state;
          return { ...res, endpoint: state.endpoint };
        }
        const text = (await readBody(res, 64 * 1024).catch(() => Buffer.alloc(0))).toString('utf8');
        throw statusError(res.status, `blob ${digest}`, state.endpoint, text);
      } catch (err) {
        last = err;
        failures.push(`${state.endpoint.host}: ${(err as Error).message}`);
      }
    }
    if (isImageError(last) && failures.length === 1) throw last;
    const kind = isImageError(last) ? last.kind : 'unavailable';
    throw new ImageError(kind, `fetching blob ${digest} of ${this.registry}/${this.repository} failed on every endpoint: ${failures.join('; ')}`, {
      cause: last,
    });
  }

  private async send(state: EndpointState, path: string, headers: Record<string, string>): Promise<HttpResponse> {
    let authTried = false;
    for (;;) {
      const res = await this.sendOnce(state, path, headers);
      if (res.status !== 401 || authTried) {
        if (res.status === 401) {
          discard(res);
          const host = state.endpoint.host;
          throw new ImageError(
            'unauthenticated',
            state.creds
              ? `registry ${host} rejected the credentials for ${this.repository}`
              : `registry ${host} requires authentication for ${this.repository}: pass credentials in the pull's AuthConfig or in [registry.configs."${configKey(this.registry, host)}"]`,
          );
        }
        return res;
      }
      authTried = true;
      const challenges = parseChallenges(res.headers['www-authenticate']);
      discard(res);
      await this.authenticate(state, challenges);
    }
  }

  private async authenticate(state: EndpointState, challenges: ReturnType<typeof parseChallenges>): Promise<void> {
    const host = state.endpoint.host;
    const bearer = challenges.find((c) => c.scheme === 'bearer');
    const basic = challenges.find((c) => c.scheme === 'basic');
    if (bearer) {
      const { endpoint } = state;
      const transportFor = (realmHost: string) =>
        realmHost === endpoint.host
          ? { insecure: endpoint.insecure, tls: endpoint.tls, timeoutMs: this.settings.pullProgressTimeoutMs }
          : { insecure: endpoint.insecure, tls: configuredTls(realmHost, this.settings), timeoutMs: this.settings.pullProgressTimeoutMs };
      const token = await fetchBearerToken(bearer, `repository:${this.repository}:pull`, state.creds, host, transportFor, this.signal);
      state.authorization = `Bearer ${token}`;
      return;
    }
    if (basic) {
      if (!state.creds?.username) {
        throw new ImageError(
          'unauthenticated',
          `registry ${host} requires a username and password for ${this.repository}: pass them in the pull's AuthConfig or in [registry.configs."${configKey(this.registry, host)}"]`,
        );
      }
      state.authorization = basicHeader(state.creds);
      return;
    }
    throw new ImageError('unauthenticated', `registry ${host} answered 401 without a usable WWW-Authenticate challenge`);
  }

  private async sendOnce(state: EndpointState, path: string, headers: Record<string, string>): Promise<HttpResponse> {
    const { endpoint } = state;
    const scheme = state.scheme ?? endpoint.scheme ?? 'https';
    const h: Record<string, string> = { 'User-Agent': 'skiffd' };
    // hosts.toml headers; several values of one name travel as one comma-separated field.
    for (const [name, values] of Object.entries(endpoint.headers ?? {})) h[name] = values.join(', ');
    Object.assign(h, headers);
    if (state.authorization) h.Authorization = state.authorization;
    try {
      // As containerd: a host other than the image's registry learns which registry is meant (`ns`), so
      // one mirror (Spegel, a pull-through cache) can serve several registries.
      const ns = endpoint.host !== this.registry ? `?ns=${encodeURIComponent(this.registry)}` : '';
      const res = await request({
        url: `${scheme}:${endpoint.base}${path}${ns}`,
        headers: h,
        insecure: endpoint.insecure,
        tls: endpoint.tls,
        timeoutMs: this.settings.pullProgressTimeoutMs,
        signal: this.signal,
      });
      state.scheme = scheme;
      return res;
    } catch (err) {
      if (this.signal?.aborted) throw new ImageError('unavailable', `pull from ${endpoint.host} cancelled: the daemon is stopping`);
      // An insecure host without an explicit scheme may not speak TLS at all: try plain HTTP once.
      if (scheme === 'https' && !endpoint.scheme && endpoint.insecure && !state.scheme) {
        state.scheme = 'http';
        plainHttpHosts.add(endpoint.host);
        return this.sendOnce(state, path, headers);
      }
      throw transportError(err, endpoint.host, `cannot reach ${endpoint.host}`);
    }
  }
}

function configKey(registry: string, host: string): string {
  return host === DOCKER_HUB_API_HOST ? DOCKER_HUB : host || registry;
}

function statusError(status: number, what: string, endpoint: Endpoint, body: string): ImageError {
  const detail = registryErrorText(body);
  const suffix = detail ? `: ${detail}` : '';
  if (status === 404) return new ImageError('not-found', `${what} not found at ${endpoint.host}${suffix}`);
  if (status === 403) return new ImageError('permission-denied', `${endpoint.host} denied access to ${what}${suffix}`);
  if (status === 401) return new ImageError('unauthenticated', `${endpoint.host} requires authentication for ${what}${suffix}`);
  if (status === 429) return new ImageError('unavailable', `${endpoint.host} is rate-limiting requests for ${what}`);
  return new ImageError('unavailable', `${endpoint.host} answered HTTP ${status} for ${what}${suffix}`);
}

/** The first message of a distribution-spec error body, if it is one. */
function registryErrorText(body: string): string {
  try {
    const parsed = JSON.parse(body) as { errors?: { code?: string; message?: string }[] };
    const first = parsed.errors?.[0];
    if (first) return [first.code, first.message].filter(Boolean).join(' ');
  } catch {
    /* not JSON */
  }
  return '';
}
