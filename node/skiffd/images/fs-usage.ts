// Which mount holds a path (for ImageFsInfo's fs id), from /proc/self/mountinfo.
import { readFile, realpath } from 'node:fs/promises';

export async function mountpointOf(path: string): Promise<string> {
  let real = path;
  try {
    real = await realpath(path);
  } catch {
    /* not created yet: use as given */
  }
  let text = '';
  try {
    text = await readFile('/proc/self/mountinfo', 'utf8');
  } catch {
    return '/';
  }
  let best = '/';
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    if (fields.length < 5) continue;
    const mount = unescapeMount(fields[4]);
    const inside = mount === '/' || real === mount || real.startsWith(mount.endsWith('/') ? mount : `${mount}/`);
    if (inside && mount.length >= best.length) best = mount;
  }
  return best;
}

function unescapeMount(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}
