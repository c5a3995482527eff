// CheckpointContainer: Checkpoints a container. Not built yet: answers UNIMPLEMENTED.
import type { CheckpointContainerRequest, CheckpointContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const checkpointContainer: UnaryRpc<CheckpointContainerRequest, CheckpointContainerResponse> = async () =>
  unimplemented('CheckpointContainer', 'container checkpoints need CRIU, which skiffd does not drive');
