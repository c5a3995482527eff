// Stop signals: the CRI enum, image config strings ("SIGQUIT", "QUIT", "3") and Linux numbers.
import { constants } from 'node:os';
import { Signal } from '../../../proto/gen/runtime/v1/api.ts';

const LINUX_SIGRTMIN = 34;
const LINUX_SIGRTMAX = 64;

/** Linux number for a signal name like SIGTERM, SIGRTMIN+3 or SIGRTMAX-1; undefined if unknown. */
export function signalNumber(name: string): number | undefined {
  let n = name.trim().toUpperCase();
  if (/^\d+$/.test(n)) {
    const v = Number(n);
    return v > 0 && v <= LINUX_SIGRTMAX ? v : undefined;
  }
  if (!n.startsWith('SIG')) n = `SIG${n}`;
  const rt = /^SIGRT(MIN|MAX)(?:([+-])(\d+))?$/.exec(n.replace('PLUS', '+').replace('MINUS', '-'));
  if (rt) {
    const base = rt[1] === 'MIN' ? LINUX_SIGRTMIN : LINUX_SIGRTMAX;
    const off = rt[3] ? Number(rt[3]) * (rt[2] === '-' ? -1 : 1) : 0;
    const v = base + off;
    return v >= LINUX_SIGRTMIN && v <= LINUX_SIGRTMAX ? v : undefined;
  }
  if (n === 'SIGCLD') return constants.signals.SIGCHLD;
  if (n === 'SIGPOLL') return constants.signals.SIGIO;
  return (constants.signals as Record<string, number>)[n];
}

/** Name of the CRI Signal enum value (RUNTIME_DEFAULT -> undefined). */
export function criSignalName(signal: Signal): string | undefined {
  if (signal === Signal.RUNTIME_DEFAULT || signal === Signal.UNRECOGNIZED) return undefined;
  return Signal[signal];
}

/** CRI enum value for a Linux signal number (best effort; RUNTIME_DEFAULT when none matches). */
export function criSignalFromNumber(num: number): Signal {
  for (const key of Object.keys(Signal)) {
    if (!/^SIG/.test(key)) continue;
    if (signalNumber(key) === num) return Signal[key as keyof typeof Signal] as Signal;
  }
  return Signal.RUNTIME_DEFAULT;
}
