// A small chat schema with all three operation types, separate from the countries API: the query
// reads recent messages, the mutation posts one and publishes it, the subscription streams them.
//
//   type Message { id: ID!  room: String!  author: String!  text: String!  createdAt: String!  mine: Boolean! }
//   type Query { messages(room: String! = "general", last: Int! = 50): [Message!]! }
//   type Mutation { postMessage(room: String! = "general", author: String!, text: String!): Message! }
//   type Subscription { messageAdded(room: String! = "general"): Message! }
import { GraphQLBoolean, GraphQLError, GraphQLID, GraphQLInt, GraphQLList, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { createInProcessPubSub, type PubSub } from '../../src/subscriptions/pubsub.ts';

export interface ChatMessage {
  id: string;
  room: string;
  author: string;
  text: string;
  createdAt: string;
}

/** What resolvers read from the GraphQL context: the connection's user, when the server knows it. */
export interface ChatContext {
  user?: string;
}

/** The pub/sub topics this schema uses: one per room. */
export type ChatTopics = Record<`room:${string}`, ChatMessage>;

export interface ChatSchemaOptions {
  /** Where postMessage publishes; default in-process. Pass a shared engine to span instances. */
  pubsub?: PubSub<ChatTopics>;
  /** Messages kept per room for the `messages` query. Default 100. */
  historySize?: number;
}

const MAX_TEXT = 2000;
const MAX_NAME = 64;
const ROOM_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

function checkRoom(room: string): string {
  if (!ROOM_PATTERN.test(room)) {
    throw new GraphQLError(`room "${room}" is invalid: use 1–64 lowercase letters, digits, "-" or "_"`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  return room;
}

function checkText(field: string, value: string, max: number): string {
  const trimmed = value.trim();
  if (trimmed === '' || trimmed.length > max) {
    throw new GraphQLError(`${field} must be 1–${max} characters (got ${trimmed.length})`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  return trimmed;
}

export function createChatSchema(options: ChatSchemaOptions = {}): GraphQLSchema {
  const pubsub = options.pubsub ?? createInProcessPubSub<ChatTopics>();
  const historySize = options.historySize ?? 100;
  const history = new Map<string, ChatMessage[]>();
  let sequence = 0;

  const Message = new GraphQLObjectType<ChatMessage>({
    name: 'Message',
    fields: {
      id: { type: new GraphQLNonNull(GraphQLID) },
      room: { type: new GraphQLNonNull(GraphQLString) },
      author: { type: new GraphQLNonNull(GraphQLString) },
      text: { type: new GraphQLNonNull(GraphQLString) },
      createdAt: { type: new GraphQLNonNull(GraphQLString), description: 'ISO 8601 time the server accepted it' },
      // Per-user data: subscribers with different users must not share its execution.
      mine: {
        type: new GraphQLNonNull(GraphQLBoolean),
        description: "Whether the viewer (the context's user) wrote it; false without one.",
        resolve: (message, _args, context: ChatContext | undefined) => context?.user !== undefined && context.user === message.author,
      },
    },
  });
  const room = { type: new GraphQLNonNull(GraphQLString), defaultValue: 'general' };

  return new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        messages: {
          type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(Message))),
          description: 'The most recent messages of a room, oldest first.',
          args: { room, last: { type: new GraphQLNonNull(GraphQLInt), defaultValue: 50 } },
          resolve: (_root, args: { room: string; last: number }) => {
            if (args.last < 0) throw new GraphQLError('last must be >= 0', { extensions: { code: 'BAD_USER_INPUT' } });
            const messages = history.get(checkRoom(args.room)) ?? [];
            return args.last === 0 ? [] : messages.slice(-args.last);
          },
        },
      },
    }),
    mutation: new GraphQLObjectType({
      name: 'Mutation',
      fields: {
        postMessage: {
          type: new GraphQLNonNull(Message),
          description: 'Adds a message to a room and publishes it to its `messageAdded` subscribers.',
          args: {
            room,
            author: { type: new GraphQLNonNull(GraphQLString) },
            text: { type: new GraphQLNonNull(GraphQLString) },
          },
          resolve: async (_root, args: { room: string; author: string; text: string }) => {
            const message: ChatMessage = {
              id: String(++sequence),
              room: checkRoom(args.room),
              author: checkText('author', args.author, MAX_NAME),
              text: checkText('text', args.text, MAX_TEXT),
              createdAt: new Date().toISOString(),
            };
            const messages = history.get(message.room) ?? [];
            messages.push(message);
            if (messages.length > historySize) messages.splice(0, messages.length - historySize);
            history.set(message.room, messages);
            await pubsub.publish(`room:${message.room}`, message);
            return message;
          },
        },
      },
    }),
    subscription: new GraphQLObjectType({
      name: 'Subscription',
      fields: {
        messageAdded: {
          type: new GraphQLNonNull(Message),
          description: 'Every message posted to the room from now on.',
          args: { room },
          subscribe: (_root, args: { room: string }) => pubsub.subscribe(`room:${checkRoom(args.room)}`),
          resolve: (message: ChatMessage) => message,
        },
      },
    }),
  });
}
