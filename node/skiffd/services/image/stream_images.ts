// StreamImages: ListImages in chunks, for nodes with more images than one message holds.
import type { StreamImagesRequest, StreamImagesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { imagesOf, toCriImage } from './common.ts';

const CHUNK = 500;

export const streamImages: ServerStreamingRpc<StreamImagesRequest, StreamImagesResponse> = async function* (ctx, request) {
  const images = imagesOf(ctx).list(request.filter?.image?.image || undefined).map(toCriImage);
  for (let i = 0; i < images.length; i += CHUNK) yield { images: images.slice(i, i + CHUNK) };
};
