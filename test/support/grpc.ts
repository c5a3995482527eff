// Asserting on gRPC failures from the nice-grpc client.
import assert from 'node:assert/strict';
import { ClientError } from 'nice-grpc';

/** The ClientError the call fails with; the test fails if the call succeeds or throws something else. */
export async function grpcError(call: Promise<unknown>): Promise<ClientError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof ClientError) return err;
    throw err;
  }
  assert.fail('expected the call to fail with a gRPC error');
}
