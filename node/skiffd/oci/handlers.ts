// The runtime handlers a node offers (Kubernetes' RuntimeClass handlers): one OCI runtime each, with its
// own binary and --root. A pod names one by `runtime_handler` ("" is the default), and everything done
// to its containers (create, exec, attach, stats, checkpoint, recovery) goes through that runtime.
import type { OciRuntime } from './runtime.ts';

export class UnknownHandlerError extends Error {}

export class RuntimeHandlers {
  private readonly byName: ReadonlyMap<string, OciRuntime>;

  /** `handlers` by name; `defaultName` must be one of them. */
  constructor(
    handlers: Record<string, OciRuntime>,
    readonly defaultName: string,
  ) {
    this.byName = new Map(Object.entries(handlers));
    if (!this.byName.has(defaultName)) throw new Error(`the default runtime handler "${defaultName}" is not among ${this.names().join(', ')}`);
  }

  /** One handler, the default, for a daemon or test that runs a single OCI runtime. */
  static single(runtime: OciRuntime, name: string = runtime.name): RuntimeHandlers {
    return new RuntimeHandlers({ [name]: runtime }, name);
  }

  /** The configured names, sorted. */
  names(): string[] {
    return [...this.byName.keys()].sort();
  }

  /** The runtime of handler `name`; "" is the default. Throws UnknownHandlerError naming the handlers there are. */
  get(name: string): OciRuntime {
    const runtime = this.byName.get(name || this.defaultName);
    if (!runtime) {
      throw new UnknownHandlerError(
        `runtime handler "${name}" is not configured on this node (configured: ${this.names()
          .map((n) => `"${n}"`)
          .join(', ')}; "" is "${this.defaultName}")`,
      );
    }
    return runtime;
  }

  /** The handler's name as records keep it ("" becomes the default's name). */
  resolve(name: string): string {
    return name || this.defaultName;
  }

  has(name: string): boolean {
    return name === '' || this.byName.has(name);
  }

  get default(): OciRuntime {
    return this.get('');
  }

  all(): { name: string; runtime: OciRuntime }[] {
    return this.names().map((name) => ({ name, runtime: this.byName.get(name)! }));
  }

  close(): void {
    for (const r of this.byName.values()) r.close?.();
  }
}
