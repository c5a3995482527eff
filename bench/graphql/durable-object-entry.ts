// The chat schema on workerd with its subscribers in a Durable Object, for the billing bench: the
// Worker runs mutations and publishes to the object. Two classes of the same object, one accepting
// sockets with the Hibernation API and one with accept(); the bench binds SUBSCRIPTIONS to either.
// GET /_bench/instances (the Worker, never the object) counts the object instances constructed.
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createChatSchema, type ChatTopics } from '../../examples/chat/schema.ts';
import {
  createInProcessPubSub,
  createSubscriptionsObject,
  durableObjectPubSub,
  routeSubscriptionsToDurableObject,
  type DurableObjectNamespaceLike,
} from '../../edge/websocket-durable-object.ts';

interface Env {
  SUBSCRIPTIONS: DurableObjectNamespaceLike;
}

let instances = 0;
let fetchInWorker: ((request: Request) => Response | Promise<Response>) | undefined;

export default {
  fetch(request: Request, env: Env): Response | Promise<Response> {
    if (new URL(request.url).pathname === '/_bench/instances') return Response.json({ instances });
    fetchInWorker ??= routeSubscriptionsToDurableObject(
      createGraphQLHandler({ schema: createChatSchema({ pubsub: durableObjectPubSub<ChatTopics>(env.SUBSCRIPTIONS) }) }),
      env.SUBSCRIPTIONS,
    );
    return fetchInWorker(request);
  },
};

const setup = () => {
  const pubsub = createInProcessPubSub<ChatTopics>();
  return { schema: createChatSchema({ pubsub }), pubsub: pubsub as never };
};

export class HibernatingSubscriptions extends createSubscriptionsObject<Env>(setup) {
  constructor(state: unknown, env: Env) {
    super(state, env);
    instances++;
  }
}

export class AcceptingSubscriptions extends createSubscriptionsObject<Env>(setup, { hibernation: false }) {
  constructor(state: unknown, env: Env) {
    super(state, env);
    instances++;
  }
}
