// A failed request as an ImageError: a TLS failure carries its own full message (it names the host
// and what to configure); an unusable TLS setting is named with its registry; anything else is
// prefixed with what failed.
import { ImageError } from '../errors.ts';
import { TlsConfigError, TlsFailure } from './tls.ts';

/** `host`: the registry whose settings were used; `what`: the prefix for other failures. */
export function transportError(err: unknown, host: string, what: string): ImageError {
  if (err instanceof ImageError) return err;
  if (err instanceof TlsFailure) return new ImageError('unavailable', err.message, { cause: err });
  if (err instanceof TlsConfigError) {
    return new ImageError('failed-precondition', `registry ${host}: TLS settings unusable: ${err.message}`, { cause: err });
  }
  return new ImageError('unavailable', `${what}: ${(err as Error).message}`, { cause: err });
}
