// What a hibernating Durable Object keeps with each graphql-ws socket (its attachment), so that an
// instance woken from hibernation can serve the socket as before: whether connection_init was
// acknowledged and with which connectionParams, and each running subscription's id and payload
// (document, operation name, variables). Queries and mutations end before the object can hibernate,
// so only subscriptions are kept.
import { getOperationAST, parse } from 'graphql';
import type { SubscribePayload } from 'graphql-ws';

/**
 * Cloudflare keeps at most 16,384 bytes of serialized attachment per socket. Ours is one string,
 * counted at two bytes a character when it holds any beyond Latin-1 (how V8 serializes it), with
 * room left for the serializer's header.
 */
export const ATTACHMENT_BUDGET = 16_384 - 64;

interface Stored {
  /** Format version. */
  v: 1;
  /** The negotiated subprotocol. */
  p: string;
  /** connection_init was acknowledged. */
  a: boolean;
  /** Its connectionParams, when it carried an object. */
  c?: Record<string, unknown>;
  /** Running subscriptions: [id, payload]. */
  o: [string, SubscribePayload][];
}

export class SocketAttachment {
  readonly protocol: string;
  acknowledged: boolean;
  connectionParams: Record<string, unknown> | undefined;
  readonly subscriptions: Map<string, SubscribePayload>;

  private constructor(stored: Stored) {
    this.protocol = stored.p;
    this.acknowledged = stored.a;
    this.connectionParams = stored.c;
    this.subscriptions = new Map(stored.o);
  }

  static fresh(protocol: string): SocketAttachment {
    return new SocketAttachment({ v: 1, p: protocol, a: false, o: [] });
  }

  /** The attachment a socket carried, or undefined when it is not one of ours (or unreadable). */
  static read(value: unknown): SocketAttachment | undefined {
    if (typeof value !== 'string') return undefined;
    try {
      const stored = JSON.parse(value) as Partial<Stored>;
      if (stored?.v !== 1 || typeof stored.p !== 'string' || typeof stored.a !== 'boolean' || !Array.isArray(stored.o)) return undefined;
      return new SocketAttachment(stored as Stored);
    } catch {
      return undefined;
    }
  }

  /** The serialized form, or undefined when it would not fit the budget. */
  encode(): string | undefined {
    const stored: Stored = { v: 1, p: this.protocol, a: this.acknowledged, o: [...this.subscriptions] };
    if (this.connectionParams !== undefined) stored.c = this.connectionParams;
    const text = JSON.stringify(stored);
    return serializedSize(text) <= ATTACHMENT_BUDGET ? text : undefined;
  }
}

function serializedSize(text: string): number {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0xff) return text.length * 2;
  return text.length;
}

/**
 * The subscription a client `subscribe` message starts, or undefined for anything else (a query, a
 * mutation, a malformed message or document: those the protocol server answers and ends at once).
 */
export function subscriptionOf(data: string): { id: string; payload: SubscribePayload } | undefined {
  if (!data.includes('"subscribe"')) return undefined;
  let message: { type?: unknown; id?: unknown; payload?: unknown };
  try {
    message = JSON.parse(data) as typeof message;
  } catch {
    return undefined;
  }
  if (message?.type !== 'subscribe' || typeof message.id !== 'string' || message.id === '') return undefined;
  const payload = message.payload as SubscribePayload | null;
  if (payload === null || typeof payload !== 'object' || typeof payload.query !== 'string') return undefined;
  try {
    const operationName = typeof payload.operationName === 'string' ? payload.operationName : undefined;
    if (getOperationAST(parse(payload.query), operationName)?.operation !== 'subscription') return undefined;
  } catch {
    return undefined;
  }
  return { id: message.id, payload };
}
