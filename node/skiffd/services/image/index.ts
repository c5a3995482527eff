// The ImageService: one handler per RPC, one file per handler (CRI-O style), bound to the daemon context.
import type { ImageServiceImplementation } from '../../../../proto/gen/runtime/v1/api.ts';
import type { DaemonContext } from '../../context.ts';
import { bindHandlers } from '../bind.ts';
import { listImages } from './list_images.ts';
import { streamImages } from './stream_images.ts';
import { imageStatus } from './image_status.ts';
import { pullImage } from './pull_image.ts';
import { removeImage } from './remove_image.ts';
import { imageFsInfo } from './image_fs_info.ts';

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
