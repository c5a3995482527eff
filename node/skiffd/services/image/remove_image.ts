// RemoveImage: Removes an image and all its tags. Not built yet: answers UNIMPLEMENTED.
import type { RemoveImageRequest, RemoveImageResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const removeImage: UnaryRpc<RemoveImageRequest, RemoveImageResponse> = async () => unimplemented('RemoveImage', 'image removal is', 'images');
