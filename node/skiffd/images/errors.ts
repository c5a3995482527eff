// Errors the image library raises carry a kind that the gRPC layer maps to a status code, so a
// caller sees "unauthenticated" or "not found" rather than a generic internal error.
export type ImageErrorKind =
  | 'invalid-argument'
  | 'not-found'
  | 'unauthenticated'
  | 'permission-denied'
  | 'unavailable'
  | 'data-loss'
  | 'failed-precondition'
  | 'internal';

export class ImageError extends Error {
  constructor(
    readonly kind: ImageErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ImageError';
  }
}

export function isImageError(err: unknown): err is ImageError {
  return err instanceof ImageError;
}
