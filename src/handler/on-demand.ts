// Parts of the handler that few requests need (the compiled-plan generator, @defer/@stream,
// subscriptions over HTTP) are loaded by the first request that needs them, not when the module
// is evaluated: a fresh edge isolate pays only for what its first request uses. Bundlers turn each
// `import()` into a chunk of its own (split bundles) or a lazily evaluated wrapper (one file).

/** A value built from a module imported on first use; synchronous once it is there. */
export interface OnDemand<T> {
  /** The value, or undefined until the first load has finished. */
  readonly value: T | undefined;
  /** Loads it (once; again after a failure) and resolves with it. */
  load(): Promise<T>;
}

export function onDemand<T>(build: () => Promise<T>): OnDemand<T> {
  let value: T | undefined;
  let loading: Promise<T> | undefined;
  return {
    get value() {
      return value;
    },
    load() {
      if (value !== undefined) return Promise.resolve(value);
      loading ??= build().then(
        (built) => {
          value = built;
          return built;
        },
        (error: unknown) => {
          loading = undefined;
          throw error;
        },
      );
      return loading;
    },
  };
}

/** `use(value)` now when it is loaded, else once it is. */
export function whenLoaded<T, R>(part: OnDemand<T>, use: (value: T) => R | Promise<R>): R | Promise<R> {
  const value = part.value;
  return value !== undefined ? use(value) : part.load().then(use);
}
