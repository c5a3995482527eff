// Cloudflare: subscriptions that reach every isolate. Isolates share no memory, so the subscribers live
// in one Durable Object (one process, an in-process pub/sub) while queries and mutations keep running
// in the stateless Worker; a mutation publishes by POSTing the event to the object, which fans it out.
//
//   Worker fetch ──/graphql, Upgrade: websocket──▶ Durable Object ── graphql-ws ──▶ clients
//   Worker fetch ──/graphql, subscription, Accept: SSE or multipart──▶ Durable Object ── stream ──▶ clients
//   Worker mutation ── pubsub.publish ──POST /publish──▶ Durable Object ── in-process pub/sub
//
// Sockets are accepted with the Hibernation API (hibernating-websockets.ts): between events the
// object leaves memory, and Cloudflare bills no duration for it, while every socket stays open.
// `hibernation: false` holds them with the standard accept() instead (the object then stays in
// memory, billed, for as long as a client is connected).
import { getOperationAST, parse, type GraphQLSchema } from 'graphql';
import { createGraphQLHandler } from '../src/handler/create-handler.ts';
import type { GraphQLHandlerOptions } from '../src/handler/options.ts';
import { negotiateStreamFormat } from '../src/streams/stream-formats.ts';
import type { GraphQLWebSocketOptions, GraphQLWebSocketServer } from '../src/subscriptions/graphql-ws-adapter.ts';
import { createInProcessPubSub, type PubSub, type TopicMap } from '../src/subscriptions/pubsub.ts';
import { withFetchWebSocket } from '../src/subscriptions/fetch-upgrade.ts';
import { HibernatingWebSockets, type HibernatableWebSocket, type HibernationState } from './hibernating-websockets.ts';
import { withGraphQLWebSocket, type FetchHandler } from './websocket-workerd.ts';

/** The parts of a Durable Object namespace binding and stub used here. */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: unknown): { fetch(input: string | Request, init?: RequestInit): Promise<Response> };
}

const PUBLISH_PATH = '/__skiff/publish';

export interface DurableObjectPubSubOptions {
  /** Which object instance holds the sockets. Default "graphql-subscriptions". */
  name?: string;
}

/**
 * The pub/sub for the Worker side: publish() hands the event to the Durable Object. Subscribing
 * happens inside the object (WebSocket upgrades are routed there), so subscribe() here is an error.
 */
export function durableObjectPubSub<Topics extends TopicMap = TopicMap>(
  namespace: DurableObjectNamespaceLike,
  options: DurableObjectPubSubOptions = {},
): PubSub<Topics> {
  const name = options.name ?? 'graphql-subscriptions';
  return {
    async publish(topic, payload) {
      const stub = namespace.get(namespace.idFromName(name));
      const response = await stub.fetch(`https://subscriptions${PUBLISH_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ topic, payload }),
      });
      if (!response.ok) throw new Error(`publishing to the subscriptions Durable Object failed: ${response.status} ${await response.text()}`);
    },
    subscribe() {
      throw new Error('durableObjectPubSub: subscriptions run inside the Durable Object; route WebSocket upgrades to it');
    },
    async close() {},
  };
}

/**
 * Routes subscriptions on `path` to the Durable Object (WebSocket upgrades, and subscriptions asking
 * for an SSE or multipart stream) and everything else to `handler`.
 */
export function routeSubscriptionsToDurableObject(
  handler: FetchHandler,
  namespace: DurableObjectNamespaceLike,
  options: DurableObjectPubSubOptions & { path?: string } = {},
): FetchHandler {
  const name = options.name ?? 'graphql-subscriptions';
  const path = options.path ?? '/graphql';
  const toObject = (request: Request) => namespace.get(namespace.idFromName(name)).fetch(request);
  return (request) => {
    if (new URL(request.url).pathname !== path) return handler(request);
    if ((request.headers.get('upgrade') ?? '').toLowerCase() === 'websocket') return toObject(request);
    if (negotiateStreamFormat(request.headers.get('accept')) === null) return handler(request);
    return isSubscription(request).then((subscription) => (subscription ? toObject(request).then(relayedThroughWorker) : handler(request)));
  };
}

/**
 * The object's streamed answer, read by the Worker as the client takes it. Handed back as it is,
 * workerd proxies the body without the Worker, and a client gone right after the headers can then go
 * unnoticed by the object, whose subscription stays open. While the Worker reads, the client leaving
 * cancels the Worker's request and with it the object's.
 */
function relayedThroughWorker(response: Response): Response {
  if (response.body === null) return response;
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    // Read from the object only when the client's connection asks, so a slow client's backlog stays in the object, where its bound is.
    { highWaterMark: 0 },
  );
  return new Response(body, response);
}

/** Whether a GraphQL request carries a subscription; false for anything unreadable (the handler answers it). */
async function isSubscription(request: Request): Promise<boolean> {
  try {
    let params: { query?: unknown; operationName?: unknown };
    if (request.method === 'GET') {
      const search = new URL(request.url).searchParams;
      params = { query: search.get('query'), operationName: search.get('operationName') };
    } else params = (await request.clone().json()) as typeof params;
    if (typeof params.query !== 'string') return false;
    const operationName = typeof params.operationName === 'string' ? params.operationName : undefined;
    return getOperationAST(parse(params.query), operationName)?.operation === 'subscription';
  } catch {
    return false;
  }
}

export interface SubscriptionsObjectSetup {
  schema: GraphQLSchema;
  /**
   * Must be in-process, and made by `setup` (not shared at module level): the object is the one
   * place every event and socket meets, and a woken instance subscribes afresh.
   */
  pubsub: PubSub<TopicMap>;
  /**
   * GraphQL over WebSocket options. With hibernation, `keepAlive` must stay unset: the server sends no
   * pings (a timer would keep the object in memory); clients ping, and Cloudflare answers
   * `{"type":"ping"}` without waking the object. `onConnect` and `context` run again when the object
   * wakes, with `extra.request` undefined (the upgrade request is gone): authenticate from
   * connectionParams, or in the Worker before routing the upgrade.
   */
  webSocket?: Omit<GraphQLWebSocketOptions, 'schema'>;
  /** Options of the handler serving subscriptions over SSE and multipart in the object. */
  http?: Omit<GraphQLHandlerOptions<never>, 'schema' | 'path'>;
}

export interface SubscriptionsObjectOptions {
  /**
   * Accept sockets with the WebSocket Hibernation API (default): the object leaves memory between
   * events. false: the standard accept(), the object stays in memory while any client is connected.
   */
  hibernation?: boolean;
}

/**
 * A Durable Object class serving GraphQL over WebSocket with an in-process pub/sub, and accepting
 * events from durableObjectPubSub(). Export it from the Worker module and bind it in wrangler.toml.
 * `setup` runs once per object instance with the Worker's env: again each time it wakes from
 * hibernation.
 */
export function createSubscriptionsObject<Env>(setup: (env: Env) => SubscriptionsObjectSetup, objectOptions: SubscriptionsObjectOptions = {}) {
  const hibernation = objectOptions.hibernation ?? true;
  return class GraphQLSubscriptionsObject {
    readonly #pubsub: PubSub<TopicMap>;
    readonly #fetch: FetchHandler;
    readonly #hibernating: HibernatingWebSockets | undefined;
    /** The object's GraphQL over WebSocket server (open sockets, shared subscription executions). */
    readonly webSocketServer: GraphQLWebSocketServer;
    /** The object's HTTP handler (subscriptions over SSE and multipart). */
    readonly graphql: ReturnType<typeof createGraphQLHandler>;

    constructor(state: unknown, env: Env) {
      const { schema, pubsub, webSocket, http } = setup(env);
      this.#pubsub = pubsub;
      this.graphql = createGraphQLHandler({ ...(http as GraphQLHandlerOptions<never>), schema, path: null });
      if (hibernation) {
        const hibernating = new HibernatingWebSockets(state as HibernationState);
        this.#hibernating = hibernating;
        const fetch = withFetchWebSocket(this.graphql, { ...hibernating.adapt(webSocket ?? {}), schema, path: null }, hibernating.upgrade);
        this.#fetch = fetch;
        this.webSocketServer = fetch.webSocketServer;
        // Before any event reaches this instance, the sockets of the one before it listen again.
        void (state as HibernationState).blockConcurrencyWhile(() => hibernating.restore(fetch.webSocketServer));
      } else {
        const fetch = withGraphQLWebSocket(this.graphql, { ...webSocket, schema, path: null }, { inDurableObject: true });
        this.#fetch = fetch;
        this.webSocketServer = fetch.webSocketServer;
      }
    }

    async fetch(request: Request): Promise<Response> {
      if (new URL(request.url).pathname === PUBLISH_PATH && request.method === 'POST') {
        let event: { topic?: unknown; payload?: unknown };
        try {
          event = (await request.json()) as typeof event;
        } catch {
          return new Response('publish: the body must be JSON {"topic", "payload"}', { status: 400 });
        }
        if (typeof event.topic !== 'string' || event.topic === '') {
          return new Response('publish: "topic" must be a non-empty string', { status: 400 });
        }
        await this.#pubsub.publish(event.topic, event.payload);
        return new Response(null, { status: 204 });
      }
      return this.#fetch(request);
    }

    // The Hibernation API's event handlers (unused with hibernation: false).
    webSocketMessage(ws: HibernatableWebSocket, message: string | ArrayBuffer): void {
      this.#hibernating?.message(ws, message);
    }

    webSocketClose(ws: HibernatableWebSocket, code: number, reason: string): void {
      this.#hibernating?.close(ws, code, reason);
    }

    webSocketError(ws: HibernatableWebSocket): void {
      this.#hibernating?.close(ws, 1006, 'WebSocket error');
    }
  };
}

export { createInProcessPubSub };
