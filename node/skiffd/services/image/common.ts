// Shared by the ImageService handlers: mapping library errors to gRPC
// status codes, and turning an image record into the CRI Image message.
import { ServerError, Status } from 'nice-grpc-common';
import type { DeepPartial, Image } from '../../../../proto/gen/runtime/v1/api.ts';
import { isImageError, type ImageErrorKind } from '../../images/errors.ts';
import type { ImageRecord } from '../../images/image-record.ts';
import { imageUser } from '../../images/user.ts';

const CODES: Record<ImageErrorKind, Status> = {
  'invalid-argument': Status.INVALID_ARGUMENT,
  'not-found': Status.NOT_FOUND,
  unauthenticated: Status.UNAUTHENTICATED,
  'permission-denied': Status.PERMISSION_DENIED,
  unavailable: Status.UNAVAILABLE,
  'data-loss': Status.DATA_LOSS,
  'failed-precondition': Status.FAILED_PRECONDITION,
  internal: Status.INTERNAL,
};

/** Runs a handler body, turning image-library errors into the matching gRPC status. */
export async function withImageErrors<T>(rpc: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    if (isImageError(err)) throw new ServerError(CODES[err.kind], `${rpc}: ${err.message}`);
    throw err;
  }
}

export function requireImageName(rpc: string, value: string | undefined): string {
  const name = (value ?? '').trim();
  if (!name) throw new ServerError(Status.INVALID_ARGUMENT, `${rpc}: image.image is empty: name the image (reference, id or digest)`);
  return name;
}

export function toCriImage(record: ImageRecord): DeepPartial<Image> {
  const user = imageUser(record.config.config?.User);
  return {
    id: record.id,
    repoTags: record.repoTags,
    repoDigests: record.repoDigests,
    size: BigInt(record.size),
    uid: user.uid === undefined ? undefined : { value: BigInt(user.uid) },
    username: user.username ?? '',
    spec: { image: record.id, annotations: {} },
    pinned: false,
  };
}
