// The port-forward side that both carriers share: one forwarded connection is a client data
// stream joined to a TCP connection to a port inside the pod's network namespace.
import type { Duplex } from 'node:stream';

export interface PortForwardBackend {
  /**
   * Joins `data` to a new connection to `port` in the pod. Resolves when both directions are
   * done; rejects with a message fit for the client's error stream.
   */
  portForward(podSandboxId: string, port: number, data: Duplex, signal: AbortSignal): Promise<void>;
}

/** A port from a header or a query parameter: 1..65535, or undefined. */
export function parsePort(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,5}$/.test(text.trim())) return undefined;
  const port = Number(text.trim());
  return port >= 1 && port <= 65535 ? port : undefined;
}

export function forwardErrorMessage(port: number, podSandboxId: string, err: unknown): string {
  return `error forwarding port ${port} to pod ${podSandboxId}: ${(err as Error).message ?? String(err)}`;
}
