// Runtime handlers in the configuration: `[runtimes.NAME]` tables, one per OCI runtime a pod can ask for
// by name (Kubernetes' RuntimeClass `handler`), and `[runtime] default_runtime`, the one that runs a pod
// that names none. `[runtime] runtime_path` and `runtime_root` remain a shorthand for the default
// handler's binary and root when it has no table of its own.
import { isAbsolute, join, relative, resolve } from 'node:path';
import { STATE_ENTRIES } from './state-dir.ts';

/** One handler: the OCI runtime a pod with this runtime_handler runs under. */
export interface RuntimeHandlerConfig {
  name: string;
  /** The OCI runtime binary: a name on PATH or an absolute path. */
  runtimePath: string;
  /** The runtime's --root (its own container state). */
  runtimeRoot: string;
  /** How skiffd drives it: "oci", an OCI runtime CLI under conmon (runc, crun; runsc has one too, but not Kata 2+, a shim only). */
  runtimeType: 'oci';
}

export const RUNTIME_TYPES = ['oci'] as const;

/** A RuntimeClass handler is a DNS label (Kubernetes validates it the same way). */
const HANDLER_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export const RUNTIMES_HELP: [string, string][] = [
  ['runtimes."NAME".runtime_path', 'OCI runtime binary of handler NAME (default: NAME, looked up on PATH)'],
  ['runtimes."NAME".runtime_root', 'its --root (default: <state>/NAME)'],
  ['runtimes."NAME".runtime_type', '"oci": an OCI runtime CLI driven through conmon (the only type)'],
];

/** Reports a mistake (the caller adds where it was made). */
type Fail = (message: string) => never;

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/**
 * The handlers from `[runtimes]`, with the default one made from `[runtime]`'s shorthand when it has no
 * table. `legacy` holds `[runtime] runtime_path` and `runtime_root` when they were given.
 */
export function parseRuntimeHandlers(
  value: unknown,
  o: {
    state: string;
    /** skiffd's socket, when it lies where a runtime root could land on it. */
    socketPath?: string;
    defaultRuntime: string;
    legacy: { runtimePath?: string; runtimeRoot?: string };
    fail: Fail;
  },
): Record<string, RuntimeHandlerConfig> {
  const fail: Fail = o.fail;
  const handlers: Record<string, RuntimeHandlerConfig> = {};
  if (value !== undefined && !isTable(value)) fail('"runtimes" must be a table of handlers, e.g. [runtimes.crun]');
  for (const [name, table] of Object.entries((value ?? {}) as Record<string, unknown>)) {
    const label = `runtimes.${JSON.stringify(name)}`;
    if (!HANDLER_NAME.test(name) || name.length > 63)
      fail(`${label}: a handler name is a DNS label (lower-case letters, digits and "-", at most 63), as RuntimeClass handlers are`);
    if (!isTable(table)) fail(`${label} must be a table ([runtimes.${name}])`);
    const text = (key: string): string | undefined => {
      const v = table[key];
      if (v === undefined) return undefined;
      if (typeof v !== 'string' || v === '') return fail(`${label}.${key}: expected a non-empty string, got ${JSON.stringify(v)}`);
      return v;
    };
    for (const key of Object.keys(table)) {
      if (!['runtime_path', 'runtime_root', 'runtime_type'].includes(key))
        fail(`unknown key "${label}.${key}" (known keys: runtime_path, runtime_root, runtime_type)`);
    }
    const runtimePath = text('runtime_path') ?? name;
    if (runtimePath.includes('/') && !isAbsolute(runtimePath)) fail(`${label}.runtime_path: expected a command name or an absolute path, got "${runtimePath}"`);
    const root = text('runtime_root');
    if (root !== undefined && !isAbsolute(root)) fail(`${label}.runtime_root: expected an absolute path, got "${root}"`);
    const type = text('runtime_type') ?? 'oci';
    if (!(RUNTIME_TYPES as readonly string[]).includes(type)) fail(`${label}.runtime_type: "${type}" is not one of ${RUNTIME_TYPES.join(', ')}`);
    handlers[name] = { name, runtimePath, runtimeRoot: root ? resolve(root) : join(o.state, name), runtimeType: 'oci' };
  }
  const own = handlers[o.defaultRuntime];
  if (own && (o.legacy.runtimePath !== undefined || o.legacy.runtimeRoot !== undefined)) {
    fail(`the default handler "${o.defaultRuntime}" is set twice: by [runtime] runtime_path/runtime_root and by [runtimes.${o.defaultRuntime}]; keep one`);
  }
  if (!own) {
    handlers[o.defaultRuntime] = {
      name: o.defaultRuntime,
      runtimePath: o.legacy.runtimePath ?? o.defaultRuntime,
      runtimeRoot: o.legacy.runtimeRoot ?? join(o.state, o.defaultRuntime),
      runtimeType: 'oci',
    };
  }
  // The default handler made from the shorthand takes its root from [runtime] runtime_root.
  const rootKey = (name: string) => (own || name !== o.defaultRuntime ? `[runtimes.${name}] runtime_root` : '[runtime] runtime_root');
  checkRuntimeRoots(Object.values(handlers), { state: o.state, socketPath: o.socketPath, rootKey, fail });
  return handlers;
}

/** Where a runtime keeps its exec files: beside its --root (as oci/runc.ts names it). */
export const execDirOf = (runtimeRoot: string) => `${runtimeRoot}-exec`;

/** Whether `inner` is `outer` or lies below it. */
const within = (inner: string, outer: string) => {
  const rel = relative(outer, inner);
  return rel === '' || (rel !== '..' && !rel.startsWith('../') && !isAbsolute(rel));
};

/**
 * Refuses runtime roots that overlap skiffd's own state or another handler's root or exec directory: a
 * runtime takes whatever is in its root for its containers, and the exec helper empties its directory at
 * start. A default root is <state>/NAME, so a handler named after one of skiffd's entries (pods, exits...)
 * or after another's exec directory (foo-exec for foo) would collide. The defaults themselves stay (runc's
 * containers are in <state>/runc, and moving them would lose running containers on an upgrade).
 */
function checkRuntimeRoots(handlers: RuntimeHandlerConfig[], o: { state: string; socketPath?: string; rootKey: (name: string) => string; fail: Fail }): void {
  const fix = (h: RuntimeHandlerConfig) => `give it a runtime root of its own (${o.rootKey(h.name)} = "/SOME/DIR")`;
  const own = [
    ...Object.values(STATE_ENTRIES).map((name) => ({ path: join(o.state, name), what: 'state entry' })),
    ...(o.socketPath ? [{ path: o.socketPath, what: 'socket' }] : []),
  ];
  for (const h of handlers) {
    const dirs = [
      { path: h.runtimeRoot, what: 'runtime root' },
      { path: execDirOf(h.runtimeRoot), what: 'exec directory (beside its runtime root)' },
    ];
    for (const d of dirs) {
      if (within(o.state, d.path)) o.fail(`runtime handler "${h.name}": its ${d.what} ${d.path} holds skiffd's state directory ${o.state}; ${fix(h)}`);
      const taken = own.find((p) => within(d.path, p.path) || within(p.path, d.path));
      if (taken) o.fail(`runtime handler "${h.name}": its ${d.what} ${d.path} collides with skiffd's own ${taken.what} ${taken.path}; ${fix(h)}`);
    }
  }
  for (const [i, h] of handlers.entries()) {
    for (const g of handlers.slice(i + 1)) {
      // Two handlers on one --root would each see the other's containers as their own.
      if (h.runtimeRoot === g.runtimeRoot)
        o.fail(`runtimes "${h.name}" and "${g.name}" share the runtime root ${h.runtimeRoot}; give each its own runtime_root`);
      for (const [a, b] of [
        [h, g],
        [g, h],
      ]) {
        const mine = a.runtimeRoot;
        for (const theirs of [
          { path: b.runtimeRoot, what: `the runtime root of "${b.name}"` },
          { path: execDirOf(b.runtimeRoot), what: `the exec directory of "${b.name}" (beside its runtime root)` },
        ]) {
          if (within(mine, theirs.path) || within(theirs.path, mine))
            o.fail(`runtime handler "${a.name}": its runtime root ${mine} collides with ${theirs.what}, ${theirs.path}; ${fix(a)}`);
        }
      }
    }
  }
}

/** Whether `name` is a valid handler name (for messages about requests). */
export const isHandlerName = (name: string) => HANDLER_NAME.test(name) && name.length <= 63;
