// The CDI devices this node offers: every spec file (*.json, *.yaml, *.yml) in the spec directories.
// A later directory wins over an earlier one for a device both name (/var/run/cdi, where drivers write
// at run time, over /etc/cdi); two files of one directory naming the same device make that device
// ambiguous, and it is refused. A file that cannot be read or is invalid costs only its own devices:
// the error is kept and named when one of them is asked for. The directories are looked at again at
// each request and a file read again only when it changed, so a driver's new spec is seen without a
// restart.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CdiSpecError, parseSpec, type CdiDevice, type CdiSpec } from './spec.ts';

const SPEC_FILE = /\.(json|ya?ml)$/;

/** A device found, with the spec it comes from. */
export interface FoundDevice {
  name: string;
  spec: CdiSpec;
  device: CdiDevice;
  file: string;
}

interface FileEntry {
  ino: number;
  mtimeMs: number;
  size: number;
  spec?: CdiSpec;
  error?: string;
}

export class CdiRegistry {
  private readonly files = new Map<string, FileEntry>();

  constructor(readonly specDirs: readonly string[]) {}

  /**
   * Every qualified device name to its spec, after reading what changed; `errors` has the files that
   * could not be used, and `ambiguous` the devices two files of one directory both define.
   */
  refresh(): { devices: Map<string, FoundDevice>; errors: Map<string, string>; ambiguous: Map<string, string[]> } {
    const devices = new Map<string, FoundDevice>();
    const errors = new Map<string, string>();
    const ambiguous = new Map<string, string[]>();
    const seen = new Set<string>();
    for (const dir of this.specDirs) {
      let names: string[];
      try {
        names = readdirSync(dir)
          .filter((n) => SPEC_FILE.test(n))
          .sort();
      } catch {
        continue; // a directory that does not exist offers nothing
      }
      const inThisDir = new Map<string, FoundDevice>();
      const twiceHere = new Map<string, string[]>();
      for (const name of names) {
        const file = join(dir, name);
        seen.add(file);
        const entry = this.load(file);
        if (!entry) continue;
        if (entry.error) {
          errors.set(file, entry.error);
          continue;
        }
        for (const device of entry.spec!.devices) {
          const qualified = `${entry.spec!.kind}=${device.name}`;
          const other = inThisDir.get(qualified);
          if (other) {
            twiceHere.set(qualified, [...(twiceHere.get(qualified) ?? [other.file]), file]);
            continue;
          }
          inThisDir.set(qualified, { name: qualified, spec: entry.spec!, device, file });
        }
      }
      // This directory's definitions replace an earlier directory's, ambiguity included.
      for (const [qualified, found] of inThisDir) {
        devices.set(qualified, found);
        const twice = twiceHere.get(qualified);
        if (twice) ambiguous.set(qualified, twice);
        else ambiguous.delete(qualified);
      }
    }
    for (const file of this.files.keys()) if (!seen.has(file)) this.files.delete(file);
    return { devices, errors, ambiguous };
  }

  private load(file: string): FileEntry | undefined {
    let st;
    try {
      st = statSync(file);
    } catch {
      return undefined;
    }
    if (!st.isFile()) return undefined;
    const cached = this.files.get(file);
    if (cached && cached.ino === st.ino && cached.mtimeMs === st.mtimeMs && cached.size === st.size) return cached;
    const entry: FileEntry = { ino: st.ino, mtimeMs: st.mtimeMs, size: st.size };
    try {
      entry.spec = parseSpec(readFileSync(file, 'utf8'), file);
    } catch (err) {
      entry.error = err instanceof CdiSpecError ? err.message : `${file}: cannot be read: ${(err as Error).message}`;
    }
    this.files.set(file, entry);
    return entry;
  }
}
