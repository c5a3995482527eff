// Open result streams per client, so one client cannot hold every stream a server can keep.

/**
 * The client a request comes from, for the per-client cap: the address a trusted proxy or platform put
 * in a header (Cloudflare's `cf-connecting-ip`, `x-real-ip`, the first `x-forwarded-for` entry), or
 * null when none did. A server reachable without such a proxy should pass its own `clientKey` (the
 * Node server passes the socket's address), since a client can write these headers itself.
 */
export function clientKeyFromHeaders(request: Request): string | null {
  const headers = request.headers;
  const direct = headers.get('cf-connecting-ip') ?? headers.get('x-real-ip');
  if (direct !== null) return direct.trim();
  const forwarded = headers.get('x-forwarded-for');
  if (forwarded === null) return null;
  const comma = forwarded.indexOf(',');
  return (comma === -1 ? forwarded : forwarded.slice(0, comma)).trim();
}

export class OpenStreams {
  readonly #byClient = new Map<string, number>();
  #total = 0;

  constructor(readonly maxPerClient: number) {}

  get total(): number {
    return this.#total;
  }

  /** Counts one more stream (for `client`, when it is known); false, counting nothing, at the cap. */
  acquire(client: string | null): boolean {
    if (client !== null) {
      const open = this.#byClient.get(client) ?? 0;
      if (open >= this.maxPerClient) return false;
      this.#byClient.set(client, open + 1);
    }
    this.#total++;
    return true;
  }

  release(client: string | null): void {
    this.#total--;
    if (client === null) return;
    const open = this.#byClient.get(client);
    if (open === undefined) return;
    if (open <= 1) this.#byClient.delete(client);
    else this.#byClient.set(client, open - 1);
  }
}
