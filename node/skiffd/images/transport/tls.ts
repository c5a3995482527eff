// TLS for registry requests: which CAs are trusted, which client certificate is shown, and errors
// that say in words why a handshake failed and what to configure. One keep-alive agent per distinct
// set of TLS settings (and proxy), rebuilt when a file it was made from changes.
import { readFileSync, statSync } from 'node:fs';
import type https from 'node:https';
import tls from 'node:tls';
import type { EndpointTls } from '../registry-config.ts';

/** The bundle update-ca-certificates writes on Debian (and what OpenSSL's default store points at). */
const SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/** A TLS setting that cannot be used (a file missing or unreadable); names the file. */
export class TlsConfigError extends Error {
  override name = 'TlsConfigError';
}

/** A handshake or certificate failure, described for an operator. */
export class TlsFailure extends Error {
  override name = 'TlsFailure';
  constructor(
    message: string,
    readonly host: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

let systemCas: string[] | undefined;

/**
 * Node's own CAs plus the node's store. Node trusts only its bundled list (and NODE_EXTRA_CA_CERTS)
 * unless started with --use-system-ca, so a CA added with update-ca-certificates must be added here.
 */
export function systemTrust(): string[] {
  if (systemCas) return systemCas;
  const all = new Set<string>();
  const get = (tls as { getCACertificates?: (type: string) => string[] }).getCACertificates;
  if (typeof get === 'function') {
    // 'default' is what Node would use (bundled, NODE_EXTRA_CA_CERTS, the OS store under --use-system-ca).
    for (const pem of get('default')) all.add(pem);
    for (const pem of get('system')) all.add(pem);
  } else {
    for (const pem of tls.rootCertificates) all.add(pem);
    // Older Node: read the bundle OpenSSL would (SSL_CERT_FILE overrides it, as for OpenSSL).
    for (const file of [process.env.NODE_EXTRA_CA_CERTS, process.env.SSL_CERT_FILE || SYSTEM_BUNDLE]) {
      if (!file) continue;
      try {
        for (const pem of splitPem(readFileSync(file, 'utf8'))) all.add(pem);
      } catch {
        /* no such bundle on this node */
      }
    }
  }
  systemCas = [...all];
  return systemCas;
}

function splitPem(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/** Every file the settings name, for change detection and error messages. */
function filesOf(settings: EndpointTls | undefined): string[] {
  if (!settings) return [];
  return [...(settings.caFiles ?? []), ...(settings.clientCerts ?? []).flatMap((c) => [c.certFile, c.keyFile ?? c.certFile])];
}

function readSetting(file: string, what: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
    throw new TlsConfigError(`cannot read the ${what} ${file}: ${why}`);
  }
}

/** The tls.connect options for one endpoint's settings, read from the files now. */
export function tlsOptions(settings: EndpointTls | undefined, insecure: boolean): https.AgentOptions {
  const opts: https.AgentOptions = { ca: systemTrust() };
  if (settings?.caFiles?.length) opts.ca = [...systemTrust(), ...settings.caFiles.map((f) => readSetting(f, 'CA file').toString('utf8'))];
  const pairs = settings?.clientCerts ?? [];
  if (pairs.length) {
    // containerd's rule: without a key file the key is read from the certificate's own PEM file.
    opts.cert = pairs.map((p) => readSetting(p.certFile, 'client certificate'));
    opts.key = pairs.map((p) => readSetting(p.keyFile ?? p.certFile, 'client key'));
  }
  if (insecure || settings?.skipVerify) opts.rejectUnauthorized = false;
  return opts;
}

/** A stamp of the files' identity and change time: a new stamp means a new agent. */
function stampOf(files: string[]): string {
  return files
    .map((f) => {
      try {
        const s = statSync(f);
        return `${s.ino}:${s.size}:${s.mtimeMs}`;
      } catch {
        return 'missing';
      }
    })
    .join(',');
}

interface CachedAgent<A> {
  stamp: string;
  agent: A;
}
const cache = new Map<string, CachedAgent<unknown>>();

/**
 * The agent for these settings (and proxy, when `extra` names one), reused for keep-alive while the
 * files it was made from are unchanged. `make` gets the tls.connect options.
 */
export function cachedAgent<A>(settings: EndpointTls | undefined, insecure: boolean, extra: string, make: (opts: https.AgentOptions) => A): A {
  const key = JSON.stringify([settings ?? null, insecure, extra]);
  const stamp = stampOf(filesOf(settings));
  const hit = cache.get(key) as CachedAgent<A> | undefined;
  if (hit && hit.stamp === stamp) return hit.agent;
  const agent = make(tlsOptions(settings, insecure));
  // The old agent is dropped, not destroyed: downloads on its sockets finish, and its idle sockets
  // close at the idle timeout every registry socket has.
  cache.set(key, { stamp, agent });
  return agent;
}

const UNKNOWN_AUTHORITY = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_SIGNATURE_FAILURE',
]);

/** Alerts a server sends when it wants a client certificate it did not get or did not accept. */
const CLIENT_CERT_ALERTS =
  /ALERT_(CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_UNKNOWN|UNSUPPORTED_CERTIFICATE|CERTIFICATE_EXPIRED|CERTIFICATE_REVOKED|HANDSHAKE_FAILURE|ACCESS_DENIED)$/;

/**
 * The failure in words, or undefined when `err` is not a TLS failure. `handshakeDone`: false while
 * the handshake was still under way (a reset then is the server refusing it).
 */
export function describeTlsFailure(err: unknown, host: string, settings: EndpointTls | undefined, handshakeDone: boolean): TlsFailure | undefined {
  const code = String((err as NodeJS.ErrnoException)?.code ?? '');
  // Node's own hint (run Node with --use-system-ca) does not apply: skiffd reads the system store itself.
  const reason = ((err as Error)?.message ?? String(err)).split(';')[0].trim();
  const table = `[registry.configs."${host}".tls]`;
  const hasClientCert = (settings?.clientCerts?.length ?? 0) > 0;
  const fail = (text: string) => new TlsFailure(`registry ${host}: TLS ${text}`, host, code, { cause: err });
  if (UNKNOWN_AUTHORITY.has(code)) {
    return fail(
      `certificate signed by unknown authority (${code}: ${reason}): add the CA that signed it to the node's trust store (update-ca-certificates) or name it for this host: ca_file in ${table}, or ca in its hosts.toml`,
    );
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return fail(
      `certificate is not valid for the name ${host.replace(/:\d+$/, '')} (${reason}): the registry must present a certificate whose subjectAltName names it, or pull by a name the certificate covers`,
    );
  }
  if (code === 'CERT_HAS_EXPIRED') return fail(`certificate has expired (${code}): the registry must renew its certificate (check the node's clock too)`);
  if (code === 'CERT_NOT_YET_VALID') return fail(`certificate is not yet valid (${code}): check the node's clock, or the registry's certificate dates`);
  const alert = CLIENT_CERT_ALERTS.exec(code)?.[1];
  if (alert) {
    const words = `the registry sent the TLS alert "${alert.toLowerCase().replaceAll('_', ' ')}"`;
    return fail(
      hasClientCert
        ? `handshake failed: the registry refused the client certificate (${words}): check cert_file/key_file in ${table} (or client in its hosts.toml) against the CA the registry trusts for clients`
        : `handshake failed: the registry requires a client certificate and none is configured (${words}): set cert_file and key_file in ${table} (or client in its hosts.toml)`,
    );
  }
  if (code === 'ECONNRESET' && !handshakeDone) {
    return fail(
      hasClientCert
        ? `handshake failed: the registry closed the connection during the handshake, as one does that refuses the client certificate: check cert_file/key_file in ${table} (or client in its hosts.toml)`
        : `handshake failed: the registry closed the connection during the handshake, as one does that requires a client certificate: if it does, set cert_file and key_file in ${table} (or client in its hosts.toml)`,
    );
  }
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || /^(CERT_|UNABLE_TO_|INVALID_CA|INVALID_PURPOSE|HOSTNAME_MISMATCH)/.test(code)) {
    return fail(`handshake failed (${code}: ${reason})`);
  }
  return undefined;
}
