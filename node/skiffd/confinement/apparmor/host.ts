// What this host's AppArmor is: enabled or not, what the kernel mediates, which profiles are loaded,
// and loading one with apparmor_parser. Read from securityfs, as the kubelet and the field's runtimes do.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCommand } from '../../util/command.ts';

export interface AppArmorHost {
  /** The kernel enforces AppArmor (`/sys/module/apparmor/parameters/enabled` is Y) and securityfs shows it. */
  readonly enabled: boolean;
  /** Kernel abilities the default profile's rules depend on. */
  readonly mediates: { signal: boolean; ptrace: boolean };
  /** apparmor_parser has AppArmor 3.0's ABI file, so a profile can pin what its rules mean to it. */
  readonly parserAbi3: boolean;
  /** True when a profile of this name is loaded (in any mode). */
  loaded(name: string): boolean;
  /** Loads (or replaces) a profile from its text; rejects with apparmor_parser's message. */
  load(text: string): Promise<void>;
}

export interface AppArmorPaths {
  /** `/sys/module/apparmor/parameters/enabled` */
  enabledFile: string;
  /** securityfs's apparmor directory, `/sys/kernel/security/apparmor`. */
  securityDir: string;
  parser: string;
  /** The parser's description of AppArmor 3.0's ABI, which `abi <abi/3.0>,` names. */
  abi3File: string;
}

export const DEFAULT_PATHS: AppArmorPaths = {
  enabledFile: '/sys/module/apparmor/parameters/enabled',
  securityDir: '/sys/kernel/security/apparmor',
  parser: 'apparmor_parser',
  abi3File: '/etc/apparmor.d/abi/3.0',
};

const PARSER_TIMEOUT_MS = 60_000;

export function appArmorHost(paths: AppArmorPaths = DEFAULT_PATHS): AppArmorHost {
  const read = (file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  const enabled = read(paths.enabledFile).trim() === 'Y' && existsSync(join(paths.securityDir, 'profiles'));
  const features = join(paths.securityDir, 'features');
  return {
    enabled,
    mediates: { signal: existsSync(join(features, 'signal')), ptrace: existsSync(join(features, 'ptrace')) },
    parserAbi3: existsSync(paths.abi3File),
    loaded(name) {
      // One line a profile: "NAME (MODE)". Names may hold spaces; the mode is the last parenthesis.
      return read(join(paths.securityDir, 'profiles'))
        .split('\n')
        .some((line) => line.replace(/ \([a-z]+\)$/, '') === name);
    },
    async load(text) {
      // -r replaces a loaded profile of the same name, -K skips the parser's cache: the text is ours.
      const r = await runCommand(paths.parser, ['-r', '-K'], { input: text, timeoutMs: PARSER_TIMEOUT_MS }).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT')
          throw new Error(`${paths.parser} not found: install AppArmor's user-space tools (Debian and Ubuntu: apt-get install apparmor)`);
        throw err;
      });
      if (r.code !== 0) throw new Error(`${paths.parser} refused the profile: ${(r.stderr || r.stdout).trim() || `exit status ${r.code}`}`);
    },
  };
}
