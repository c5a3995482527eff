// Attach: Hands out a streaming URL attached to a container's stdio. Not built yet: answers UNIMPLEMENTED.
import type { AttachRequest, AttachResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const attach: UnaryRpc<AttachRequest, AttachResponse> = async () => unimplemented('Attach', 'the streaming server (attach) is', 'streaming');
