// StreamImages: ListImages in chunks, for nodes with more images than one message holds.
import type { StreamImagesRequest, StreamImagesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { chunks } from '../chunks.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { toCriImage } from './common.ts';

export const streamImages: ServerStreamingRpc<StreamImagesRequest, StreamImagesResponse> = async function* (ctx, request) {
  const images = ctx.images.list(request.filter?.image?.image || undefined).map(toCriImage);
  for (const part of chunks(images)) yield { images: part };
};
