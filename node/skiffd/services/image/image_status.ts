// ImageStatus: Reports one image (empty when unknown). Not built yet: answers UNIMPLEMENTED.
import type { ImageStatusRequest, ImageStatusResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const imageStatus: UnaryRpc<ImageStatusRequest, ImageStatusResponse> = async () => unimplemented('ImageStatus', 'image status is', 'images');
