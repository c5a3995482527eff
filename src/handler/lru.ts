// The one least-recently-used map behind every bounded cache of the endpoint (documents, persisted
// queries, responses, subscription documents). A Map iterates in insertion order, so re-inserting an
// entry on a hit keeps the least recently used one first. Re-inserting costs more than the lookup,
// so an entry moved within the last maxEntries/2 uses stays put: evicting it would take maxEntries
// newer insertions since its move, so an entry used that recently is still never the one evicted.
export class Lru<K, V> {
  readonly #entries = new Map<K, { value: V; used: number }>();
  readonly #maxEntries: number;
  readonly #fresh: number;
  #clock = 0;

  constructor(maxEntries: number) {
    this.#maxEntries = maxEntries;
    this.#fresh = maxEntries >> 1;
  }

  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    const now = ++this.#clock;
    if (now - entry.used >= this.#fresh) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
      entry.used = now;
    }
    return entry.value;
  }

  /** Whether `key` is held; does not count as a use. */
  has(key: K): boolean {
    return this.#entries.has(key);
  }

  set(key: K, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, { value, used: ++this.#clock });
    if (this.#entries.size > this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value as K);
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
