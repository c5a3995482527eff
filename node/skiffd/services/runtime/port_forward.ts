// PortForward: Hands out a streaming URL that forwards ports into a pod. Not built yet: answers UNIMPLEMENTED.
import type { PortForwardRequest, PortForwardResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const portForward: UnaryRpc<PortForwardRequest, PortForwardResponse> = async () => unimplemented('PortForward', 'the streaming server (port forwarding) is', 'streaming');
