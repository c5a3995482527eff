// ImageFsInfo: Usage of the image filesystem. Not built yet: answers UNIMPLEMENTED.
import type { ImageFsInfoRequest, ImageFsInfoResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const imageFsInfo: UnaryRpc<ImageFsInfoRequest, ImageFsInfoResponse> = async () => unimplemented('ImageFsInfo', 'image filesystem usage is', 'images');
