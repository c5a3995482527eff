// Container errors carry their gRPC status so the RPC layer passes them through unchanged.
import { ServerError, Status } from 'nice-grpc-common';

export const notFound = (what: string) => new ServerError(Status.NOT_FOUND, what);
export const invalidArgument = (field: string, why: string) => new ServerError(Status.INVALID_ARGUMENT, `${field}: ${why}`);
export const failedPrecondition = (why: string) => new ServerError(Status.FAILED_PRECONDITION, why);
export const alreadyExists = (why: string) => new ServerError(Status.ALREADY_EXISTS, why);
export const internal = (why: string) => new ServerError(Status.INTERNAL, why);
export const deadlineExceeded = (why: string) => new ServerError(Status.DEADLINE_EXCEEDED, why);
export { ServerError, Status };
