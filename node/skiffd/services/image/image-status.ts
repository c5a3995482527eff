// ImageStatus: one image, or an empty response (not an error) when it is not present.
import type { ImageStatusRequest, ImageStatusResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { requireImageName, toCriImage, withImageErrors } from './common.ts';

export const imageStatus: UnaryRpc<ImageStatusRequest, ImageStatusResponse> = async (ctx, request) =>
  withImageErrors('ImageStatus', async () => {
    const name = requireImageName('ImageStatus', request.image?.image);
    const images = ctx.images;
    const record = images.resolve(name);
    if (!record) return { image: undefined, info: {} };
    const info: Record<string, string> = {};
    if (request.verbose) {
      info.info = JSON.stringify({
        id: record.id,
        repoTags: record.repoTags,
        repoDigests: record.repoDigests,
        size: record.size,
        manifestDigest: record.manifestDigest,
        manifestMediaType: record.manifestMediaType,
        layers: record.layers,
        layerDirs: images.layerDirs(record.id),
        pulledAt: record.pulledAt,
        imageSpec: record.config,
      });
    }
    return { image: toCriImage(record), info };
  });
