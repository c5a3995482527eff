// The Stream* RPCs answer what their List* twins answer, split into messages small enough for
// gRPC's default 4 MiB limit on nodes with many objects.
export const STREAM_CHUNK = 500;

export function* chunks<T>(items: readonly T[], size = STREAM_CHUNK): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}
