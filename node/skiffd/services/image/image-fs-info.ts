// ImageFsInfo: bytes and inodes the image store uses, and the mount it lives on.
import type { ImageFsInfoRequest, ImageFsInfoResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { withImageErrors } from './common.ts';

export const imageFsInfo: UnaryRpc<ImageFsInfoRequest, ImageFsInfoResponse> = async (ctx) =>
  withImageErrors('ImageFsInfo', async () => {
    const u = await ctx.images.fsUsage();
    return {
      imageFilesystems: [
        {
          timestamp: u.timestampNs,
          fsId: { mountpoint: u.mountpoint },
          usedBytes: { value: BigInt(u.usedBytes) },
          inodesUsed: { value: BigInt(u.inodesUsed) },
        },
      ],
      containerFilesystems: [],
    };
  });
