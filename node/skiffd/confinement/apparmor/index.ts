// AppArmor for skiffd: detects it at start-up, makes sure skiffd's default profile is loaded, and
// tells the container subsystem which profile a container runs under.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../logger.ts';
import { STATE_ENTRIES } from '../../state-dir.ts';
import { writeFileAtomic } from '../../util/atomic-file.ts';
import { DEFAULT_PROFILE_NAME, defaultProfile } from './default-profile.ts';
import { appArmorHost, type AppArmorHost } from './host.ts';
import type { AppArmorPolicy } from './resolve.ts';

export { containerAppArmorProfile, type AppArmorPolicy } from './resolve.ts';
export { appArmorHost, type AppArmorHost } from './host.ts';
export { DEFAULT_PROFILE_NAME } from './default-profile.ts';

/** What Status reports. */
export interface AppArmorStatus {
  enabled: boolean;
  defaultProfile?: string;
}

/**
 * Opens AppArmor for the daemon. The default profile is (re)loaded when the kernel lacks it or holds
 * another text of it than this skiffd's (a note under the state dir, which a reboot clears with the
 * kernel's profiles, says which text it holds). A profile that will not load stops the start-up: every
 * container would otherwise fail, or run unconfined.
 */
export async function openAppArmor(
  state: string,
  log: Pick<Logger, 'info'>,
  host: AppArmorHost = appArmorHost(),
): Promise<AppArmorPolicy & { status: AppArmorStatus }> {
  const policy = { host, defaultProfile: DEFAULT_PROFILE_NAME };
  if (!host.enabled) {
    log.info('AppArmor is not enabled on this node: containers run unconfined, and requests for a profile are refused');
    return { ...policy, status: { enabled: false } };
  }
  const text = defaultProfile(DEFAULT_PROFILE_NAME, { ...host.mediates, abi3: host.parserAbi3 });
  const digest = createHash('sha256').update(text).digest('hex');
  const note = join(state, STATE_ENTRIES.apparmorDigest);
  let held = '';
  try {
    held = readFileSync(note, 'utf8').trim();
  } catch {}
  if (!host.loaded(DEFAULT_PROFILE_NAME) || held !== digest) {
    try {
      await host.load(text);
    } catch (err) {
      throw new Error(`cannot load the default AppArmor profile ${DEFAULT_PROFILE_NAME}: ${(err as Error).message}`);
    }
    await writeFileAtomic(note, `${digest}\n`);
    log.info('loaded the default AppArmor profile', { profile: DEFAULT_PROFILE_NAME });
  }
  log.info('AppArmor is enabled: containers that name no profile run under the default profile', { profile: DEFAULT_PROFILE_NAME });
  return { ...policy, status: { enabled: true, defaultProfile: DEFAULT_PROFILE_NAME } };
}
