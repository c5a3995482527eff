// StreamImages: Lists stored images in chunks. Not built yet: answers UNIMPLEMENTED.
import type { StreamImagesRequest, StreamImagesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const streamImages: ServerStreamingRpc<StreamImagesRequest, StreamImagesResponse> = async function* () {
  unimplemented('StreamImages', 'image listing is', 'images');
};
