// Entry point of the image subsystem: `openImages` runs once at startup and its result becomes
// `ctx.images`, the ImageManager the ImageService RPCs and the container runtime use.
import type { SkiffdConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { ImageManager } from './image-manager.ts';

export { ImageManager } from './image-manager.ts';
export { ImageError } from './errors.ts';
export type { ImageRecord, ImageRunConfig } from './image-record.ts';

export async function openImages(config: SkiffdConfig, log: Logger): Promise<ImageManager> {
  return ImageManager.open({
    root: config.root,
    registry: config.registry,
    log: log.child({ subsystem: 'images' }),
  });
}
