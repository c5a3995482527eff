// Exec: Hands out a streaming URL for an interactive command. Not built yet: answers UNIMPLEMENTED.
import type { ExecRequest, ExecResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const exec: UnaryRpc<ExecRequest, ExecResponse> = async () => unimplemented('Exec', 'the streaming server (exec) is', 'streaming');
