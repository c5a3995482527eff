// RPCs that are not built yet answer UNIMPLEMENTED with what is missing and which issue builds it,
// so a client (crictl, kubelet) shows a reason instead of a bare error.
import { ServerError, Status } from 'nice-grpc-common';

export const ISSUES = {
  pods: 'issue 5 "skiffd: real pods and containers"',
  streaming: 'issue 7 "streaming"',
  images: 'issue 3 "skiffd images"',
  none: 'no issue plans it yet',
} as const;

export type Issue = keyof typeof ISSUES;

export function unimplemented(rpc: string, missing: string, issue: Issue): never {
  throw new ServerError(Status.UNIMPLEMENTED, `${rpc}: ${missing} not implemented yet in skiffd (${ISSUES[issue]})`);
}
