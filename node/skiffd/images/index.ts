// Entry point of the image subsystem: `openImages(ctx)` runs once at startup and its result becomes
// `ctx.images`, the ImageManager the ImageService RPCs and the container runtime use.
import type { DaemonContext } from '../context.ts';
import { ImageManager } from './image-manager.ts';

export type ImageSubsystem = ImageManager;
export { ImageManager } from './image-manager.ts';
export { ImageError } from './errors.ts';
export type { ImageRecord, ImageRunConfig } from './image-record.ts';

export async function openImages(ctx: DaemonContext): Promise<ImageSubsystem> {
  return ImageManager.open({
    root: ctx.config.root,
    registry: ctx.config.registry,
    log: ctx.log.child({ subsystem: 'images' }),
  });
}
