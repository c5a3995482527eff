// What an Exec/Attach/PortForward RPC asked for, stored under the streaming token until the client
// connects. Validated by the RPC; the streaming server trusts these.

export interface ExecStreamRequest {
  kind: 'exec';
  containerId: string;
  cmd: string[];
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

export interface AttachStreamRequest {
  kind: 'attach';
  containerId: string;
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

export interface PortForwardStreamRequest {
  kind: 'portforward';
  podSandboxId: string;
  /** Ports named in the RPC; a WebSocket client names its own in the URL query. */
  ports: number[];
}

export type StreamRequest = ExecStreamRequest | AttachStreamRequest | PortForwardStreamRequest;
