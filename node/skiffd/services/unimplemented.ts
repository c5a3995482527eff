// RPCs skiffd does not serve answer UNIMPLEMENTED with what is missing and why, so a client
// (crictl, kubelet) shows a reason instead of a bare error.
import { ServerError, Status } from 'nice-grpc-common';

export function unimplemented(rpc: string, reason: string): never {
  throw new ServerError(Status.UNIMPLEMENTED, `${rpc} is not supported by skiffd: ${reason}`);
}
