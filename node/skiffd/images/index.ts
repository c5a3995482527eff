// Entry point of the image subsystem: `openImages` runs once at startup and its result becomes
// `ctx.images`, the ImageManager the ImageService RPCs and the container runtime use.
import type { SkiffdConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { ImageManager } from './image-manager.ts';

export { ImageManager } from './image-manager.ts';
export { ImageError } from './errors.ts';
export type { ImageRecord, ImageRunConfig } from './image-record.ts';

export async function openImages(config: SkiffdConfig, log: Logger): Promise<ImageManager> {
  const images = log.child({ subsystem: 'images' });
  const { mirrors, configs, configPath } = config.registry;
  const oldTls = Object.entries(configs).filter(([, c]) => c.insecure !== undefined || (c as { tls?: unknown }).tls !== undefined);
  if (Object.keys(mirrors).length > 0 || oldTls.length > 0) {
    // Credentials in registry.configs have no hosts.toml equivalent; only mirrors and TLS settings moved.
    images.warn(
      `registry.mirrors and the TLS settings of registry.configs are deprecated: write ${configPath}/HOST/hosts.toml files instead (registry.config_path, as containerd 2 reads them)`,
      { mirrors: Object.keys(mirrors).join(',') || undefined, tlsConfigs: oldTls.map(([h]) => h).join(',') || undefined },
    );
  }
  return ImageManager.open({ root: config.root, registry: config.registry, log: images });
}
