// The ImageService: one handler per RPC, one file per handler (CRI-O style), bound to the daemon context.
import type { ImageServiceImplementation } from '../../../../proto/gen/runtime/v1/api.ts';
import type { DaemonContext } from '../../context.ts';
import { bindHandlers } from '../bind.ts';
import { listImages } from './list-images.ts';
import { streamImages } from './stream-images.ts';
import { imageStatus } from './image-status.ts';
import { pullImage } from './pull-image.ts';
import { removeImage } from './remove-image.ts';
import { imageFsInfo } from './image-fs-info.ts';

export function imageService(ctx: DaemonContext): ImageServiceImplementation {
  return bindHandlers<ImageServiceImplementation>(ctx, {
    listImages,
    streamImages,
    imageStatus,
    pullImage,
    removeImage,
    imageFsInfo,
  });
}
