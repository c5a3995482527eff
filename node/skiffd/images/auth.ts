// Registry authentication: the WWW-Authenticate challenge (Basic, or Bearer with realm/service/
// scope as Docker Hub and token-auth registries send it) and the token exchange at the realm.
import { ImageError } from './errors.ts';
import { readBody, request } from './http.ts';
import type { Credentials, EndpointTls } from './registry-config.ts';
import { transportError } from './transport/errors.ts';

export interface Challenge {
  scheme: string;
  params: Record<string, string>;
}

/** Parses `Bearer realm="...",service="...",scope="..."` (several challenges may be comma-joined). */
export function parseChallenges(header: string | string[] | undefined): Challenge[] {
  const out: Challenge[] = [];
  const values = header === undefined ? [] : Array.isArray(header) ? header : [header];
  for (const value of values) {
    let i = 0;
    let current: Challenge | undefined;
    while (i < value.length) {
      while (i < value.length && /[\s,]/.test(value[i])) i++;
      const tokenMatch = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+/.exec(value.slice(i));
      if (!tokenMatch) break;
      const token = tokenMatch[0];
      i += token.length;
      while (i < value.length && value[i] === ' ') i++;
      if (value[i] === '=') {
        i++;
        let v = '';
        if (value[i] === '"') {
          i++;
          while (i < value.length && value[i] !== '"') {
            if (value[i] === '\\' && i + 1 < value.length) i++;
            v += value[i++];
          }
          i++;
        } else {
          const m = /^[^,\s]*/.exec(value.slice(i))!;
          v = m[0];
          i += v.length;
        }
        if (current) current.params[token.toLowerCase()] = v;
      } else {
        current = { scheme: token.toLowerCase(), params: {} };
        out.push(current);
      }
    }
  }
  return out;
}

export function basicHeader(creds: Credentials): string {
  return 'Basic ' + Buffer.from(`${creds.username ?? ''}:${creds.password ?? ''}`).toString('base64');
}

/** Trades credentials (or none, for anonymous pulls) for a bearer token at the challenge's realm. */
export async function fetchBearerToken(
  challenge: Challenge,
  scope: string,
  creds: Credentials | undefined,
  registryHost: string,
  /** How to reach the realm: the endpoint's own settings when the realm is on its host, else the realm host's. */
  transportFor: (realmHost: string) => { insecure: boolean; tls?: EndpointTls; timeoutMs?: number },
  signal?: AbortSignal,
): Promise<string> {
  const realm = challenge.params.realm;
  if (!realm) throw new ImageError('unavailable', `registry ${registryHost} sent a Bearer challenge without a realm`);
  let realmUrl: URL;
  try {
    realmUrl = new URL(realm);
  } catch {
    throw new ImageError('unavailable', `registry ${registryHost} sent an invalid token realm "${realm}"`);
  }
  const { insecure, tls, timeoutMs } = transportFor(realmUrl.host);
  const failed = (err: unknown): never => {
    throw transportError(err, realmUrl.host, `token server ${realmUrl.host} for ${registryHost}`);
  };
  const service = challenge.params.service;
  const scopes = [scope];
  if (challenge.params.scope && challenge.params.scope !== scope) scopes.push(challenge.params.scope);

  let res;
  if (creds?.identityToken) {
    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: creds.identityToken, client_id: 'skiffd' });
    if (service) form.set('service', service);
    form.set('scope', scopes.join(' '));
    res = await request({
      method: 'POST',
      url: realmUrl.toString(),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
      insecure,
      tls,
      timeoutMs,
      signal,
    }).catch(failed);
  } else {
    const url = new URL(realmUrl);
    if (service) url.searchParams.set('service', service);
    for (const s of scopes) url.searchParams.append('scope', s);
    const headers: Record<string, string> = {};
    if (creds?.username) headers.Authorization = basicHeader(creds);
    res = await request({ url: url.toString(), headers, insecure, tls, timeoutMs, signal }).catch(failed);
  }
  const body = await readBody(res, 1024 * 1024);
  if (res.status === 401 || res.status === 403) {
    const why = creds ? 'rejected the credentials' : 'requires credentials (set AuthConfig or [registry.configs."HOST"] username/password)';
    throw new ImageError(res.status === 401 ? 'unauthenticated' : 'permission-denied', `token server ${realmUrl.host} for registry ${registryHost} ${why}`);
  }
  if (res.status !== 200) {
    throw new ImageError('unavailable', `token server ${realmUrl.host} for registry ${registryHost} answered HTTP ${res.status}`);
  }
  let parsed: { token?: string; access_token?: string };
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new ImageError('unavailable', `token server ${realmUrl.host} for registry ${registryHost} answered invalid JSON`);
  }
  const token = parsed.token || parsed.access_token;
  if (!token) throw new ImageError('unavailable', `token server ${realmUrl.host} for registry ${registryHost} answered without a token`);
  return token;
}
