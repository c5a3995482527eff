// ExecSync: Runs a command in a container and returns its output. Not built yet: answers UNIMPLEMENTED.
import type { ExecSyncRequest, ExecSyncResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const execSync: UnaryRpc<ExecSyncRequest, ExecSyncResponse> = async () => unimplemented('ExecSync', 'exec in containers is', 'pods');
