// A throwaway PKI made with the openssl command: a CA, and certificates it signs for servers and
// clients (including an expired one and one for the wrong name), for the private-registry tests.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';

export interface Ca {
  certPath: string;
  keyPath: string;
}

export interface Issued {
  certPath: string;
  keyPath: string;
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 20_000 });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export function makeCa(dir: string, name = 'skiff test CA'): Ca {
  const certPath = join(dir, 'ca.pem');
  const keyPath = join(dir, 'ca.key');
  openssl([
    'req',
    '-x509',
    ...EC,
    '-keyout',
    keyPath,
    '-out',
    certPath,
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { certPath, keyPath };
}

/**
 * A certificate signed by `ca` for `names` (IPs and DNS names, as subjectAltName). `expired`: valid for
 * no time at all, so it has expired a second later. `client`: for TLS client authentication.
 */
export function issue(ca: Ca, dir: string, base: string, names: string[], opts: { client?: boolean; expired?: boolean } = {}): Issued {
  const certPath = join(dir, `${base}.pem`);
  const keyPath = join(dir, `${base}.key`);
  const csr = join(dir, `${base}.csr`);
  const ext = join(dir, `${base}.ext`);
  openssl(['req', ...EC, '-keyout', keyPath, '-out', csr, '-subj', `/CN=${names[0] ?? base}`]);
  const san = names.map((n) => (isIP(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  writeFileSync(
    ext,
    [`extendedKeyUsage=${opts.client ? 'clientAuth' : 'serverAuth'}`, ...(san ? [`subjectAltName=${san}`] : []), 'basicConstraints=CA:FALSE'].join('\n') + '\n',
  );
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certPath,
    '-CAkey',
    ca.keyPath,
    '-CAcreateserial',
    '-out',
    certPath,
    '-days',
    opts.expired ? '0' : '2',
    '-extfile',
    ext,
  ]);
  return { certPath, keyPath };
}
