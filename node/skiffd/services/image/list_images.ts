// ListImages: Lists stored images. Not built yet: answers UNIMPLEMENTED.
import type { ListImagesRequest, ListImagesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const listImages: UnaryRpc<ListImagesRequest, ListImagesResponse> = async () => unimplemented('ListImages', 'image listing is', 'images');
