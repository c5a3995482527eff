// Subscriptions: GraphQL over WebSocket on any runtime, and the pub/sub that feeds it.
export {
  createGraphQLWebSocketServer,
  isWebSocketUpgrade,
  GRAPHQL_TRANSPORT_WS_PROTOCOL,
  type GraphQLWebSocketOptions,
  type GraphQLWebSocketServer,
  type GraphQLWebSocketExtra,
  type WebSocketLike,
} from './graphql-ws-adapter.ts';
export { withFetchWebSocket, type FetchHandler, type FetchWebSocketOptions, type UpgradeWebSocket } from './fetch-upgrade.ts';
export type { SharedExecutionStats } from './shared-executions.ts';
export type { SubscriptionShareKey } from './shared-subscribe.ts';
export { createInProcessPubSub, type PubSub, type TopicMap, type SubscribeOptions } from './pubsub.ts';
export { createSharedPubSub, type PubSubEngine, type SharedPubSubOptions } from './pubsub-shared.ts';
export { broadcastChannelEngine, createBroadcastChannelPubSub } from './pubsub-broadcast-channel.ts';
export { redisEngine, createRedisPubSub, type RedisPublisher, type RedisSubscriber } from './pubsub-redis.ts';
