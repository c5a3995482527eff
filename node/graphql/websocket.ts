// GraphQL subscriptions for the Node server: takes over HTTP upgrades on the GraphQL path of an
// http.Server (the one @hono/node-server's serve() returns) with `ws`, negotiates the
// graphql-transport-ws subprotocol and hands each socket to the runtime-agnostic adapter.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { BatchingWebSocket } from './batching-websocket.ts';
import { createGraphQLWebSocketServer, type GraphQLWebSocketOptions, type GraphQLWebSocketServer } from '../../src/subscriptions/graphql-ws-adapter.ts';

/** The part of http.Server / http2.Http2Server this needs. */
export interface UpgradeEmitter {
  on(event: 'upgrade', listener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void): unknown;
  off(event: 'upgrade', listener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void): unknown;
  listenerCount(event: 'upgrade'): number;
}

export interface NodeGraphQLWebSocketOptions extends GraphQLWebSocketOptions {
  /** URL path that accepts WebSocket upgrades. Default "/graphql". */
  path?: string;
}

export interface AttachedGraphQLWebSocket {
  readonly server: GraphQLWebSocketServer;
  /** Stops accepting upgrades and closes every socket (1001). */
  close(): Promise<void>;
  /** Drops every socket at once, without a closing handshake (for a shutdown out of time). */
  terminate(): void;
}

export function attachGraphQLWebSocket(httpServer: UpgradeEmitter, options: NodeGraphQLWebSocketOptions): AttachedGraphQLWebSocket {
  const { path = '/graphql', ...adapterOptions } = options;
  const graphqlWs = createGraphQLWebSocketServer(adapterOptions);
  // ctx.extra.request is only read by hooks: without any, keep no part of the upgrade request.
  const readsRequest = hooks.some((hook) => typeof adapterOptions[hook] === 'function');
  const maxMessageSize = adapterOptions.maxMessageSize ?? 1 << 20;
  const wss = new WebSocketServer({
    noServer: true,
    WebSocket: BatchingWebSocket,
    // The adapter tracks the sockets it serves; ws's own tracking would add a Set entry and a close
    // listener closure to every socket.
    clientTracking: false,
    // Counted in bytes by ws; the adapter's own limit counts characters, so allow UTF-8's worst case.
    maxPayload: maxMessageSize * 3,
    handleProtocols: (protocols) => graphqlWs.selectProtocol([...protocols].join(',')) ?? false,
  });

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const pathname = (req.url ?? '/').split('?', 1)[0];
    if (pathname !== path) {
      // Leave other paths to other upgrade listeners; with none, refuse instead of hanging.
      if (httpServer.listenerCount('upgrade') === 1) refuse(socket, 404, 'Not Found');
      return;
    }
    socket.on('error', destroySocket);
    wss.handleUpgrade(req, socket, head, (ws) => {
      // From here ws's own error listener on the socket destroys it; ours would only make the
      // socket's error listeners an array for the rest of its life.
      socket.off('error', destroySocket);
      serve(ws, readsRequest ? upgradeRequest(req) : undefined);
    });
  };
  // Outside onUpgrade, so that what each socket keeps (its listeners) holds no reference to the
  // IncomingMessage or the head buffer.
  const serve = (ws: WebSocket, request: (() => Request | undefined) | undefined): void => {
    ws.on('error', terminateSocket);
    void graphqlWs.serve(ws, { request });
  };
  httpServer.on('upgrade', onUpgrade);

  return {
    server: graphqlWs,
    async close() {
      httpServer.off('upgrade', onUpgrade);
      await graphqlWs.close();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
    terminate() {
      for (const socket of [...graphqlWs.sockets()]) (socket as WebSocket).terminate();
    },
  };
}

/** The options whose functions receive graphql-ws's ctx, and with it ctx.extra.request. */
const hooks = [
  'onConnect',
  'onDisconnect',
  'onClose',
  'onSubscribe',
  'onOperation',
  'onNext',
  'onError',
  'onComplete',
  'onPing',
  'onPong',
  'context',
  'subscriptionShareKey',
] as const satisfies readonly (keyof GraphQLWebSocketOptions)[];

// Shared listeners (EventEmitter calls them with the emitter as `this`): no closure per socket.
function terminateSocket(this: WebSocket): void {
  this.terminate();
}

function destroySocket(this: Duplex): void {
  this.destroy();
}

function refuse(socket: Duplex, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/**
 * The upgrade's URL and headers as a web Request, so onConnect/context read them as on the edge;
 * built when first read, keeping only the URL and the raw header list until then.
 */
function upgradeRequest(req: IncomingMessage): () => Request | undefined {
  const { url = '/', rawHeaders } = req;
  return () => {
    try {
      const headers = new Headers();
      for (let i = 0; i + 1 < rawHeaders.length; i += 2) headers.append(rawHeaders[i], rawHeaders[i + 1]);
      return new Request(new URL(url, `http://${headers.get('host') ?? 'localhost'}`), { headers });
    } catch {
      return undefined;
    }
  };
}
