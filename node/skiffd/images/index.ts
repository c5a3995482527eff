// Entry point of the image subsystem (issue 3). STUB written by the daemon work so the wiring exists;
// the images work owns this file and replaces the body. Contract with node/skiffd/daemon.ts:
// `openImages(ctx)` runs once at startup (config in ctx.config, registry settings in
// ctx.config.registry, persistent dir ctx.config.root) and its result becomes `ctx.images`;
// `close()` runs at shutdown after the gRPC server has drained.
import type { DaemonContext } from '../context.ts';

export interface ImageSubsystem {
  close(): Promise<void>;
}

export async function openImages(_ctx: DaemonContext): Promise<ImageSubsystem | undefined> {
  return undefined;
}
