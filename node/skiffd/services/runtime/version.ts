// Version: names the runtime. `version` is the kubelet runtime API version, fixed at 0.1.0 by every runtime.
import type { VersionRequest, VersionResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { KUBELET_API_VERSION, RUNTIME_API_VERSION, RUNTIME_NAME, RUNTIME_VERSION } from '../../version.ts';

export const version: UnaryRpc<VersionRequest, VersionResponse> = async () => ({
  version: KUBELET_API_VERSION,
  runtimeName: RUNTIME_NAME,
  runtimeVersion: RUNTIME_VERSION,
  runtimeApiVersion: RUNTIME_API_VERSION,
});
