// ListImages: every stored image, or the one the filter's image spec names.
import type { ListImagesRequest, ListImagesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { toCriImage, withImageErrors } from './common.ts';

export const listImages: UnaryRpc<ListImagesRequest, ListImagesResponse> = async (ctx, request) =>
  withImageErrors('ListImages', async () => ({
    images: ctx.images.list(request.filter?.image?.image || undefined).map(toCriImage),
  }));
