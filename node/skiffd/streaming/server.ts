// skiffd's streaming server: the URLs that Exec, Attach and PortForward return point here. Each
// URL carries a single-use token standing for the RPC's request; the client redeems it by
// upgrading the connection, to SPDY/3.1 (client-go's classic transport, crictl, kubelet) or to
// WebSocket (the channel protocols newer clients prefer).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import './websocket/no-native.ts';
import { WebSocketServer, createWebSocketStream, type WebSocket } from 'ws';
import type { StreamRequest } from './requests.ts';
import { TokenStore, DEFAULT_TOKEN_TTL_MS } from './tokens.ts';
import { protocolVersion, type RemoteCommandBackend } from './remotecommand.ts';
import type { PortForwardBackend } from './portforward.ts';
import type { Logger } from '../logger.ts';
import { isSpdyUpgrade, negotiate, offeredProtocols, writeHttpError, writeSpdySwitch } from './spdy/handshake.ts';
import { SpdySession } from './spdy/session.ts';
import { serveSpdyRemoteCommand } from './spdy/remotecommand.ts';
import { PORTFORWARD_PROTOCOL, PORTFORWARD_TUNNEL_PROTOCOL, serveSpdyPortForward } from './spdy/portforward.ts';
import { ChannelSocket } from './websocket/channels.ts';
import { WS_REMOTECOMMAND_PROTOCOLS, serveWebSocketRemoteCommand } from './websocket/remotecommand.ts';
import { WS_PORTFORWARD_PROTOCOLS, queryPorts, serveWebSocketPortForward } from './websocket/portforward.ts';

export interface StreamingBackend extends RemoteCommandBackend, PortForwardBackend {}

/** Remotecommand versions spoken over SPDY (v5 exists only for WebSocket). */
export const SPDY_REMOTECOMMAND_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'] as const;

export type StreamingLogger = Pick<Logger, 'debug' | 'warn'>;

export interface StreamingServerOptions {
  address: string;
  /** 0: any free port. */
  port: number;
  backend: StreamingBackend;
  tokenTtlMs?: number;
  /** Clock for token expiry (tests). */
  now?: () => number;
  log?: StreamingLogger;
}

const PATHS = { exec: 'exec', attach: 'attach', portforward: 'portforward' } as const;

export class StreamingServer {
  private readonly http: Server;
  private readonly tokens: TokenStore<StreamRequest>;
  /** The subprotocol chosen for each upgrade request, read back by ws's handleProtocols hook. */
  private readonly chosen = new WeakMap<IncomingMessage, string>();
  private readonly ws = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 16 * 1024 * 1024,
    handleProtocols: (_offered, req) => this.chosen.get(req) || false,
  });
  private readonly sockets = new Set<Socket>();
  private readonly log: StreamingLogger;
  private base = '';

  constructor(private readonly options: StreamingServerOptions) {
    this.tokens = new TokenStore(options.tokenTtlMs ?? DEFAULT_TOKEN_TTL_MS, options.now);
    this.log = options.log ?? { debug: () => {}, warn: () => {} };
    this.http = createServer((_req, res) => {
      // A plain request cannot carry a stream; say what is expected and keep the token.
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('this streaming URL needs a connection upgrade (SPDY/3.1 or WebSocket), as kubectl and crictl send\n');
    });
    this.http.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => this.onUpgrade(req, socket, head));
    this.http.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(this.options.port, this.options.address, () => {
        this.http.off('error', reject);
        resolve();
      });
    });
    const addr = this.http.address();
    if (addr === null || typeof addr === 'string') throw new Error('streaming server has no TCP address');
    const host = addr.family === 'IPv6' || addr.address.includes(':') ? `[${addr.address}]` : addr.address;
    this.base = `http://${host}:${addr.port}`;
  }

  /** The server's base URL, e.g. `http://127.0.0.1:40123` (after listen). */
  get url(): string {
    return this.base;
  }

  /** Stores the request and returns the single-use URL the client connects to. */
  issue(request: StreamRequest): string {
    if (!this.base) throw new Error('the streaming server is not listening');
    return `${this.base}/${PATHS[request.kind]}/${this.tokens.issue(request)}`;
  }

  async close(): Promise<void> {
    for (const client of this.ws.clients) client.terminate();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  /** Lets the daemon exit while this server still listens. */
  unref(): void {
    this.http.unref();
  }

  private onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    socket.on('error', () => {});
    const url = new URL(req.url ?? '/', 'http://streaming.invalid');
    const m = /^\/(exec|attach|portforward)\/([A-Za-z0-9_-]+)\/?$/.exec(url.pathname);
    if (!m) {
      writeHttpError(socket, 404, 'Not Found', `no streaming endpoint at ${url.pathname} (expected /exec/TOKEN, /attach/TOKEN or /portforward/TOKEN)`);
      return;
    }
    const request = this.tokens.take(m[2]);
    if (!request || PATHS[request.kind] !== m[1]) {
      writeHttpError(socket, 404, 'Not Found', 'unknown, expired or already used streaming token: ask the runtime for a new URL');
      return;
    }
    const spdy = isSpdyUpgrade(req);
    const websocket = (req.headers.upgrade ?? '').toLowerCase() === 'websocket';
    this.log.debug('streaming connection', { kind: request.kind, transport: spdy ? 'spdy' : websocket ? 'websocket' : 'none' });
    if (spdy) this.upgradeSpdy(req, socket, head, request);
    else if (websocket) this.upgradeWebSocket(req, socket, head, url, request);
    else writeHttpError(socket, 400, 'Bad Request', `unsupported upgrade ${JSON.stringify(req.headers.upgrade ?? '')}: use SPDY/3.1 or websocket`);
  }

  private upgradeSpdy(req: IncomingMessage, socket: Socket, head: Buffer, request: StreamRequest): void {
    const supported: readonly string[] = request.kind === 'portforward' ? [PORTFORWARD_PROTOCOL] : SPDY_REMOTECOMMAND_PROTOCOLS;
    const fallback = request.kind === 'portforward' ? PORTFORWARD_PROTOCOL : 'channel.k8s.io';
    const offered = offeredProtocols(req);
    const protocol = negotiate(offered, supported, fallback);
    if (!protocol) {
      writeHttpError(
        socket,
        403,
        'Forbidden',
        `unable to upgrade: unable to negotiate protocol: client supports ${offered.join(', ')}, server supports ${supported.join(', ')}`,
        supported.map((p) => `X-Accept-Protocol-Version: ${p}`),
      );
      return;
    }
    writeSpdySwitch(socket, offered.length > 0 ? protocol : undefined);
    const session = new SpdySession(socket);
    if (head.length > 0) socket.unshift(head);
    session.on('close', () => this.log.debug('spdy session closed', { kind: request.kind }));
    if (request.kind === 'portforward') serveSpdyPortForward(session, request, this.options.backend);
    else
      void serveSpdyRemoteCommand(session, protocolVersion(protocol), request, this.options.backend).catch((err: unknown) => {
        this.log.warn('spdy stream session failed', { kind: request.kind, err: String(err) });
        session.close();
      });
  }

  private upgradeWebSocket(req: IncomingMessage, socket: Socket, head: Buffer, url: URL, request: StreamRequest): void {
    const supported = request.kind === 'portforward' ? [PORTFORWARD_TUNNEL_PROTOCOL, ...WS_PORTFORWARD_PROTOCOLS] : WS_REMOTECOMMAND_PROTOCOLS;
    const offered = (req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    const protocol = offered.length === 0 ? '' : offered.find((p) => supported.includes(p));
    if (protocol === undefined) {
      writeHttpError(
        socket,
        400,
        'Bad Request',
        `unable to negotiate a WebSocket subprotocol: client supports ${offered.join(', ')}, server supports ${supported.join(', ')}`,
      );
      return;
    }
    let ports: number[] = [];
    if (request.kind === 'portforward' && protocol !== PORTFORWARD_TUNNEL_PROTOCOL) {
      try {
        ports = queryPorts(url);
      } catch (err) {
        writeHttpError(socket, 400, 'Bad Request', (err as Error).message);
        return;
      }
      if (ports.length === 0) ports = request.ports;
      if (ports.length === 0) {
        writeHttpError(socket, 400, 'Bad Request', 'no port to forward: name them in the URL query (?port=8080)');
        return;
      }
    }
    this.chosen.set(req, protocol);
    // ws accepts only RFC 7230 tokens in this header and `SPDY/3.1+portforward.k8s.io` is not one;
    // the choice is made, so hand ws a placeholder and answer with the real name from handleProtocols.
    if (protocol) req.headers['sec-websocket-protocol'] = 'chosen';
    this.ws.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      ws.on('error', () => {});
      if (request.kind === 'portforward' && protocol === PORTFORWARD_TUNNEL_PROTOCOL) {
        // kubectl 1.31+: the SPDY port-forward session itself, carried in binary WebSocket messages.
        const session = new SpdySession(createWebSocketStream(ws));
        serveSpdyPortForward(session, request, this.options.backend);
        return;
      }
      const channels = new ChannelSocket(ws, protocol.includes('base64'));
      const done =
        request.kind === 'portforward'
          ? serveWebSocketPortForward(channels, request, ports, this.options.backend)
          : serveWebSocketRemoteCommand(channels, protocol ? protocolVersion(protocol) : 1, request, this.options.backend);
      done.catch((err: unknown) => {
        this.log.warn('websocket stream session failed', { kind: request.kind, err: String(err) });
        channels.close(1011);
      });
    });
  }
}
