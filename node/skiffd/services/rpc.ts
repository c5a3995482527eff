// The shape of one RPC handler: each lives in its own file under services/runtime/ or
// services/image/ and receives the daemon context first, then the request and the call context
// (deadline, abort signal, metadata). services/*/index.ts binds them into nice-grpc services.
import type { CallContext } from 'nice-grpc-common';
import type { DaemonContext } from '../context.ts';
import type { DeepPartial } from '../../../proto/gen/runtime/v1/api.ts';

export type UnaryRpc<Req, Res> = (ctx: DaemonContext, request: Req, call: CallContext) => Promise<DeepPartial<Res>>;
export type ServerStreamingRpc<Req, Res> = (ctx: DaemonContext, request: Req, call: CallContext) => AsyncIterable<DeepPartial<Res>>;
