// Cloudflare: subscriptions that reach every isolate. Isolates share no memory, so the sockets live in
// one Durable Object (one process, an in-process pub/sub) while queries and mutations keep running in
// the stateless Worker; a mutation publishes by POSTing the event to the object, which fans it out.
//
//   Worker fetch ──/graphql, Upgrade: websocket──▶ Durable Object ── graphql-ws ──▶ clients
//   Worker mutation ── pubsub.publish ──POST /publish──▶ Durable Object ── in-process pub/sub
//
// Sockets are held with the standard accept() API, not hibernation: graphql-ws keeps per-connection
// state in memory, so the object stays resident while clients are connected.
import type { GraphQLSchema } from 'graphql';
import type { GraphQLWebSocketOptions, GraphQLWebSocketServer } from '../src/subscriptions/graphql-ws-adapter.ts';
import { createInProcessPubSub, type PubSub, type TopicMap } from '../src/subscriptions/pubsub.ts';
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

/** Routes WebSocket upgrades on `path` to the Durable Object and everything else to `handler`. */
export function routeSubscriptionsToDurableObject(
  handler: FetchHandler,
  namespace: DurableObjectNamespaceLike,
  options: DurableObjectPubSubOptions & { path?: string } = {},
): FetchHandler {
  const name = options.name ?? 'graphql-subscriptions';
  const path = options.path ?? '/graphql';
  return (request) => {
    const upgrade = (request.headers.get('upgrade') ?? '').toLowerCase() === 'websocket';
    if (upgrade && new URL(request.url).pathname === path) return namespace.get(namespace.idFromName(name)).fetch(request);
    return handler(request);
  };
}

export interface SubscriptionsObjectSetup {
  schema: GraphQLSchema;
  /** Must be in-process: the object is the one place every event and socket meets. */
  pubsub: PubSub<TopicMap>;
  webSocket?: Omit<GraphQLWebSocketOptions, 'schema'>;
}

/**
 * A Durable Object class serving GraphQL over WebSocket with an in-process pub/sub, and accepting
 * events from durableObjectPubSub(). Export it from the Worker module and bind it in wrangler.toml.
 * `setup` runs once per object instance with the Worker's env.
 */
export function createSubscriptionsObject<Env>(setup: (env: Env) => SubscriptionsObjectSetup) {
  return class GraphQLSubscriptionsObject {
    readonly #pubsub: PubSub<TopicMap>;
    readonly #fetch: FetchHandler;
    /** The object's GraphQL over WebSocket server (open sockets, shared subscription executions). */
    readonly webSocketServer: GraphQLWebSocketServer;

    constructor(_state: unknown, env: Env) {
      const { schema, pubsub, webSocket } = setup(env);
      this.#pubsub = pubsub;
      const refuse = (): Response => new Response('This Durable Object only accepts WebSocket upgrades and events', { status: 404 });
      const fetch = withGraphQLWebSocket(refuse, { ...webSocket, schema, path: null }, { inDurableObject: true });
      this.#fetch = fetch;
      this.webSocketServer = fetch.webSocketServer;
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
  };
}

export { createInProcessPubSub };
