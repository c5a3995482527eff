// A failed request as an ImageError: a TLS failure or an unusable TLS setting carries its own full
// message (it names the host and what to configure); anything else is prefixed with what failed.
import { ImageError } from '../errors.ts';
import { TlsConfigError, TlsFailure } from './tls.ts';

export function transportError(err: unknown, what: string): ImageError {
  if (err instanceof ImageError) return err;
  if (err instanceof TlsFailure) return new ImageError('unavailable', err.message, { cause: err });
  if (err instanceof TlsConfigError) return new ImageError('failed-precondition', `${what}: ${err.message}`, { cause: err });
  return new ImageError('unavailable', `${what}: ${(err as Error).message}`, { cause: err });
}
