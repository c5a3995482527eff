/**
 * A memo of values keyed by strings that repeat across requests (query strings, response bodies),
 * bounded by the total length of its keys. Two generations instead of an exact LRU: a hit is one
 * map lookup with no reordering, and when the newer generation fills up the older one is dropped
 * whole, so whatever was not used during a generation's lifetime goes.
 */
export class BoundedMemo<V> {
  #recent = new Map<string, V>();
  #older = new Map<string, V>();
  #used = 0;
  readonly #budget: number;

  /** `budget`: characters of keys per generation, so at most twice that are held. */
  constructor(budget: number) {
    this.#budget = budget;
  }

  get(key: string): V | undefined {
    const value = this.#recent.get(key);
    if (value !== undefined) return value;
    const old = this.#older.get(key);
    if (old !== undefined) this.set(key, old);
    return old;
  }

  /** The remembered value for `key`, or `make(key)` remembered. */
  remember(key: string, make: (key: string) => V): V {
    let value = this.get(key);
    if (value === undefined) {
      value = make(key);
      this.set(key, value);
    }
    return value;
  }

  set(key: string, value: V): void {
    if (key.length > this.#budget) return;
    this.#used += key.length;
    if (this.#used > this.#budget) {
      this.#older = this.#recent;
      this.#recent = new Map();
      this.#used = key.length;
    }
    this.#recent.set(key, value);
  }
}
