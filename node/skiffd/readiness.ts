// The two conditions every CRI client checks in Status: RuntimeReady (we can run containers: the OCI
// runtime and conmon are present) and NetworkReady (a CNI network config exists and every plugin it
// names is installed). Checked on each call, so installing a plugin or a config flips them without a restart.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SkiffdConfig } from './config.ts';
import { isExecutableFile, which } from './util/which.ts';

export interface Condition {
  type: 'RuntimeReady' | 'NetworkReady';
  status: boolean;
  reason: string;
  message: string;
}

export function runtimeReady(config: SkiffdConfig): Condition {
  const missing: string[] = [];
  const { runtimePath, conmonPath } = config.runtime;
  if (!which(runtimePath)) missing.push(`OCI runtime "${runtimePath}"`);
  if (!which(conmonPath)) missing.push(`conmon "${conmonPath}"`);
  if (missing.length > 0) {
    return {
      type: 'RuntimeReady',
      status: false,
      reason: 'RuntimeBinaryNotFound',
      message: `${missing.join(' and ')} not found or not executable (set [runtime] runtime_path / conmon_path, or install them)`,
    };
  }
  return { type: 'RuntimeReady', status: true, reason: '', message: '' };
}

export interface CniNetwork {
  file: string;
  name: string;
  pluginTypes: string[];
}

/** The network config CNI would pick: the first valid file in lexical order, as libcni does. */
export function findCniNetwork(confDir: string): { network?: CniNetwork; problems: string[] } {
  let names: string[];
  try {
    names = readdirSync(confDir)
      .filter((n) => /\.(conflist|conf|json)$/.test(n))
      .sort();
  } catch (err) {
    return { problems: [`cannot read CNI config dir ${confDir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`] };
  }
  const problems: string[] = [];
  for (const name of names) {
    const file = join(confDir, name);
    try {
      const doc = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; type?: unknown; plugins?: unknown };
      const plugins = name.endsWith('.conflist') ? doc.plugins : [doc];
      if (typeof doc.name !== 'string' || doc.name === '') throw new Error('no "name"');
      if (!Array.isArray(plugins) || plugins.length === 0) throw new Error('no "plugins" list');
      const pluginTypes = plugins.map((p: { type?: unknown }) => {
        if (typeof p?.type !== 'string' || p.type === '') throw new Error('a plugin without "type"');
        return p.type;
      });
      return { network: { file, name: doc.name, pluginTypes }, problems };
    } catch (err) {
      problems.push(`${file}: ${(err as Error).message}`);
    }
  }
  return { problems };
}

export function networkReady(config: SkiffdConfig): Condition {
  const { confDir, binDirs } = config.cni;
  const notReady = (message: string): Condition => ({ type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message });
  const { network, problems } = findCniNetwork(confDir);
  if (!network) {
    const detail = problems.length > 0 ? `: ${problems.join('; ')}` : '';
    return notReady(`no valid CNI network config in ${confDir}${detail}`);
  }
  const missing = network.pluginTypes.filter((type) => !binDirs.some((dir) => isExecutableFile(join(dir, type))));
  if (missing.length > 0) {
    return notReady(`CNI plugin(s) ${missing.map((m) => `"${m}"`).join(', ')} used by ${network.file} not found in ${binDirs.join(', ')}`);
  }
  return { type: 'NetworkReady', status: true, reason: '', message: '' };
}
