// PullImage: Pulls an image from its registry. Not built yet: answers UNIMPLEMENTED.
import type { PullImageRequest, PullImageResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const pullImage: UnaryRpc<PullImageRequest, PullImageResponse> = async () => unimplemented('PullImage', 'image pulling is', 'images');
