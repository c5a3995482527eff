// Single-use tokens for streaming URLs, as the kubelet's streaming servers hand them out: the RPC
// stores the request under a random token, the client must redeem it once, within the TTL.
import { randomBytes } from 'node:crypto';

export const DEFAULT_TOKEN_TTL_MS = 60_000;
/** Bounds memory if a client asks for URLs and never uses them. */
const MAX_PENDING = 4096;

export class TokenStore<T> {
  private readonly pending = new Map<string, { value: T; expires: number }>();

  constructor(
    private readonly ttlMs = DEFAULT_TOKEN_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Stores `value` and returns a fresh URL-safe token for it. */
  issue(value: T): string {
    this.sweep();
    if (this.pending.size >= MAX_PENDING)
      throw new Error(`too many unredeemed streaming URLs (${MAX_PENDING}); try again in ${Math.ceil(this.ttlMs / 1000)} s`);
    const token = randomBytes(18).toString('base64url');
    this.pending.set(token, { value, expires: this.now() + this.ttlMs });
    return token;
  }

  /** The value for `token`, removing it: a second call, or a call after expiry, gets undefined. */
  take(token: string): T | undefined {
    const entry = this.pending.get(token);
    if (!entry) return undefined;
    this.pending.delete(token);
    return entry.expires > this.now() ? entry.value : undefined;
  }

  get size(): number {
    return this.pending.size;
  }

  private sweep(): void {
    const now = this.now();
    for (const [token, entry] of this.pending) if (entry.expires <= now) this.pending.delete(token);
  }
}
