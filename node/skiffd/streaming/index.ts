// The daemon's streaming server. It starts on first use (or when the daemon opens it at startup,
// which also validates [streaming] address/port early) and stops with close().
import type { SkiffdConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { makeStreamingBackend } from './backends/index.ts';
import { seqpacketMissing, setSeqpacketStateDir, type AddonMissing } from './backends/seqpacket.ts';
import type { ContainerSource, PodSource } from './backends/targets.ts';
import { StreamingServer } from './server.ts';

export { StreamingServer } from './server.ts';
export type { StreamRequest, ExecStreamRequest, AttachStreamRequest, PortForwardStreamRequest } from './requests.ts';

export interface StreamingOptions {
  config: SkiffdConfig['streaming'];
  log: Logger;
  containers: ContainerSource;
  pods: PodSource;
  /** skiffd's state dir: a single executable extracts its attach add-on under it. */
  stateDir?: string;
}

export class Streaming {
  private server: Promise<StreamingServer> | undefined;

  constructor(private readonly options: StreamingOptions) {
    if (options.stateDir) setSeqpacketStateDir(options.stateDir);
  }

  /** The listening server; a failed start is reported to this caller, and the next call tries again. */
  open(): Promise<StreamingServer> {
    if (!this.server) {
      const server = this.start();
      this.server = server;
      server.catch(() => {
        if (this.server === server) this.server = undefined;
      });
    }
    return this.server;
  }

  /** Why attach cannot work on this node (its add-on is missing), or undefined when it can. */
  attachMissing(): AddonMissing | undefined {
    return seqpacketMissing();
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await (await server.catch(() => undefined))?.close();
  }

  private async start(): Promise<StreamingServer> {
    const { config, containers, pods } = this.options;
    const log = this.options.log.child({ subsystem: 'streaming' });
    const server = new StreamingServer({ address: config.address, port: config.port, backend: makeStreamingBackend({ containers, pods }), log });
    try {
      await server.listen();
    } catch (err) {
      throw new Error(`streaming server cannot listen on ${config.address}:${config.port} ([streaming] address/port): ${(err as Error).message}`);
    }
    server.unref();
    log.info('streaming server listening', { url: server.url });
    return server;
  }
}
