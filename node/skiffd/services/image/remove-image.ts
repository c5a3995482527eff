// RemoveImage: removes the image with all its tags; removing an absent image is not an error.
import type { RemoveImageRequest, RemoveImageResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { requireImageName, withImageErrors } from './common.ts';

export const removeImage: UnaryRpc<RemoveImageRequest, RemoveImageResponse> = async (ctx, request) =>
  withImageErrors('RemoveImage', async () => {
    await ctx.images.remove(requireImageName('RemoveImage', request.image?.image));
    return {};
  });
