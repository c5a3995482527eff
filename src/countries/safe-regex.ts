// User-supplied `regex` filters run on this matcher, not on RegExp: a backtracking engine can take
// exponential (`(a+)+$`) or high-polynomial (`.*.*.*.*x`) time, and even on the dataset's short
// strings (at most 44 characters) such a pattern would stall the server for seconds to hours.
// This is a Thompson-NFA simulation (Pike VM without captures): it keeps the set of live states
// per input position, so a test costs O(input length x program size), whatever the pattern.
//
// Syntax and meaning are those of a JavaScript RegExp without flags, as upstream (sift's $regex)
// used, limited to what a boolean test needs: literals, escapes, `.`, classes, groups,
// alternation, greedy/lazy quantifiers, `^ $ \b \B`. Backreferences and lookarounds are rejected
// (a backreference cannot be matched in linear time). Bounds: MAX_PATTERN_LENGTH characters and
// MAX_PROGRAM_SIZE compiled instructions (counted repeats like `{1,500}` expand).

export const MAX_PATTERN_LENGTH = 256;
export const MAX_PROGRAM_SIZE = 2000;

export class RegexError extends Error {}

type Range = readonly [number, number];
interface CharSet {
  readonly negate: boolean;
  readonly ranges: readonly Range[];
}
type AssertKind = 'start' | 'end' | 'word' | 'nonword';
type Node =
  | { kind: 'char'; set: CharSet }
  | { kind: 'seq'; items: Node[] }
  | { kind: 'alt'; options: Node[] }
  | { kind: 'repeat'; node: Node; min: number; max: number }
  | { kind: 'assert'; what: AssertKind };

const DIGIT: Range[] = [[0x30, 0x39]];
const WORD: Range[] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
// ECMAScript WhiteSpace and LineTerminator code units.
const SPACE: Range[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const LINE_TERMINATORS: Range[] = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];
const DOT: CharSet = { negate: true, ranges: LINE_TERMINATORS };

function inRanges(ranges: readonly Range[], c: number): boolean {
  for (const [lo, hi] of ranges) if (c >= lo && c <= hi) return true;
  return false;
}
function setHas(set: CharSet, c: number): boolean {
  return inRanges(set.ranges, c) !== set.negate;
}
function single(c: number): CharSet {
  return { negate: false, ranges: [[c, c]] };
}
function complement(ranges: readonly Range[]): Range[] {
  const out: Range[] = [];
  let next = 0;
  for (const [lo, hi] of [...ranges].sort((a, b) => a[0] - b[0])) {
    if (lo > next) out.push([next, lo - 1]);
    next = Math.max(next, hi + 1);
  }
  if (next <= 0xffff) out.push([next, 0xffff]);
  return out;
}
const isWordUnit = (c: number) => inRanges(WORD, c);

class Parser {
  private pos = 0;
  constructor(private readonly src: string) {}

  parse(): Node {
    const node = this.disjunction();
    if (this.pos < this.src.length) throw this.fail(`unexpected "${this.src[this.pos]}"`);
    return node;
  }

  private fail(message: string): RegexError {
    return new RegexError(`${message} at position ${this.pos}`);
  }
  private peek(): string | undefined {
    return this.src[this.pos];
  }

  private disjunction(): Node {
    const options = [this.alternative()];
    while (this.peek() === '|') {
      this.pos++;
      options.push(this.alternative());
    }
    return options.length === 1 ? options[0] : { kind: 'alt', options };
  }

  private alternative(): Node {
    const items: Node[] = [];
    while (this.pos < this.src.length && this.peek() !== '|' && this.peek() !== ')') {
      const atom = this.term();
      items.push(atom.kind === 'assert' ? atom : this.quantified(atom));
    }
    return { kind: 'seq', items };
  }

  private quantified(atom: Node): Node {
    const ch = this.peek();
    let min: number;
    let max: number;
    if (ch === '*') [min, max] = [0, Infinity];
    else if (ch === '+') [min, max] = [1, Infinity];
    else if (ch === '?') [min, max] = [0, 1];
    else if (ch === '{') {
      // Outside a valid `{n}`, `{n,}`, `{n,m}` a brace is a literal (Annex B), handled by term().
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.pos));
      if (!m) return atom;
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      this.pos += m[0].length - 1;
    } else return atom;
    this.pos++;
    if (this.peek() === '?') this.pos++; // lazy: same yes/no answer
    if (min > MAX_PROGRAM_SIZE || (max !== Infinity && max > MAX_PROGRAM_SIZE)) {
      throw this.fail(`repeat count above ${MAX_PROGRAM_SIZE}`);
    }
    return { kind: 'repeat', node: atom, min, max };
  }

  private term(): Node {
    const ch = this.src[this.pos++];
    switch (ch) {
      case '^':
        return { kind: 'assert', what: 'start' };
      case '$':
        return { kind: 'assert', what: 'end' };
      case '.':
        return { kind: 'char', set: DOT };
      case '[':
        return { kind: 'char', set: this.charClass() };
      case '(':
        return this.group();
      case '\\':
        return this.atomEscape();
      case '*':
      case '+':
      case '?':
        throw this.fail('nothing to repeat');
      default:
        return { kind: 'char', set: single(ch.charCodeAt(0)) };
    }
  }

  private group(): Node {
    if (this.src.startsWith('?:', this.pos)) this.pos += 2;
    else if (/^\?<[=!]|^\?[=!]/.test(this.src.slice(this.pos))) {
      throw this.fail('lookaround assertions are not supported');
    } else if (this.src.startsWith('?<', this.pos)) {
      const end = this.src.indexOf('>', this.pos);
      if (end < 0) throw this.fail('unterminated group name');
      this.pos = end + 1;
    } else if (this.peek() === '?') throw this.fail('invalid group');
    const inner = this.disjunction();
    if (this.peek() !== ')') throw this.fail('unterminated group');
    this.pos++;
    return inner;
  }

  private atomEscape(): Node {
    const ch = this.src[this.pos];
    if (ch === undefined) throw this.fail('\\ at end of pattern');
    if (ch === 'b' || ch === 'B') {
      this.pos++;
      return { kind: 'assert', what: ch === 'b' ? 'word' : 'nonword' };
    }
    if (/[1-9]/.test(ch) || (ch === 'k' && this.src.startsWith('k<', this.pos))) {
      throw this.fail('backreferences are not supported');
    }
    return { kind: 'char', set: this.classEscape(false) };
  }

  /** An escape after the backslash, as a set (`\d`) or a single unit (`\n`, `\x41`, `\.`). */
  private classEscape(inClass: boolean): CharSet {
    const ch = this.src[this.pos++];
    switch (ch) {
      case 'd':
        return { negate: false, ranges: DIGIT };
      case 'D':
        return { negate: true, ranges: DIGIT };
      case 'w':
        return { negate: false, ranges: WORD };
      case 'W':
        return { negate: true, ranges: WORD };
      case 's':
        return { negate: false, ranges: SPACE };
      case 'S':
        return { negate: true, ranges: SPACE };
      case 't':
        return single(0x09);
      case 'n':
        return single(0x0a);
      case 'v':
        return single(0x0b);
      case 'f':
        return single(0x0c);
      case 'r':
        return single(0x0d);
      case 'b':
        return single(0x08); // only reached inside a class: backspace
      case '0':
        if (/[0-9]/.test(this.peek() ?? '')) throw this.fail('octal escapes are not supported');
        return single(0);
      case 'x':
      case 'u': {
        const len = ch === 'x' ? 2 : 4;
        const hex = this.src.slice(this.pos, this.pos + len);
        if (hex.length === len && /^[0-9a-fA-F]+$/.test(hex)) {
          this.pos += len;
          return single(parseInt(hex, 16));
        }
        return single(ch.charCodeAt(0)); // Annex B: `\x` / `\u` without hex digits is the letter
      }
      case 'c':
        throw this.fail('control escapes are not supported');
      default:
        if (inClass && /[1-9]/.test(ch)) throw this.fail('octal escapes are not supported');
        return single(ch.charCodeAt(0)); // identity escape: `\.`, `\-`, and (Annex B) `\p` = "p"
    }
  }

  private charClass(): CharSet {
    const negate = this.peek() === '^';
    if (negate) this.pos++;
    const ranges: Range[] = [];
    const classAtom = (): CharSet => {
      const ch = this.src[this.pos++];
      if (ch === '\\') {
        if (this.pos >= this.src.length) throw this.fail('\\ at end of pattern');
        return this.classEscape(true);
      }
      return single(ch.charCodeAt(0));
    };
    const addSet = (set: CharSet) => ranges.push(...(set.negate ? complement(set.ranges) : set.ranges));
    while (this.peek() !== ']') {
      if (this.pos >= this.src.length) throw this.fail('unterminated character class');
      const from = classAtom();
      if (this.peek() === '-' && this.src[this.pos + 1] !== ']' && this.pos + 1 < this.src.length) {
        this.pos++;
        const to = classAtom();
        const isUnit = (s: CharSet) => !s.negate && s.ranges.length === 1 && s.ranges[0][0] === s.ranges[0][1];
        if (isUnit(from) && isUnit(to)) {
          if (from.ranges[0][0] > to.ranges[0][0]) throw this.fail('range out of order in character class');
          ranges.push([from.ranges[0][0], to.ranges[0][0]]);
        } else {
          addSet(from); // Annex B: `[\d-z]` is \d, "-" and "z"
          ranges.push([0x2d, 0x2d]);
          addSet(to);
        }
      } else addSet(from);
    }
    this.pos++;
    return { negate, ranges };
  }
}

type Instr =
  | { op: 'char'; set: CharSet }
  | { op: 'split'; x: number; y: number }
  | { op: 'jmp'; to: number }
  | { op: 'assert'; what: AssertKind }
  | { op: 'match' };

function compileProgram(root: Node): Instr[] {
  const prog: Instr[] = [];
  const push = (i: Instr): number => {
    if (prog.length >= MAX_PROGRAM_SIZE) {
      throw new RegexError(`pattern too complex (more than ${MAX_PROGRAM_SIZE} states); simplify the repeats`);
    }
    prog.push(i);
    return prog.length - 1;
  };
  const emit = (node: Node): void => {
    switch (node.kind) {
      case 'char':
        push({ op: 'char', set: node.set });
        return;
      case 'assert':
        push({ op: 'assert', what: node.what });
        return;
      case 'seq':
        for (const item of node.items) emit(item);
        return;
      case 'alt': {
        const jumps: number[] = [];
        node.options.forEach((option, i) => {
          if (i < node.options.length - 1) {
            const split = push({ op: 'split', x: prog.length + 1, y: -1 });
            emit(option);
            jumps.push(push({ op: 'jmp', to: -1 }));
            (prog[split] as { y: number }).y = prog.length;
          } else emit(option);
        });
        for (const j of jumps) (prog[j] as { to: number }).to = prog.length;
        return;
      }
      case 'repeat': {
        for (let i = 0; i < node.min; i++) emit(node.node);
        if (node.max === Infinity) {
          const split = push({ op: 'split', x: prog.length + 1, y: -1 });
          emit(node.node);
          push({ op: 'jmp', to: split });
          (prog[split] as { y: number }).y = prog.length;
        } else {
          const splits: number[] = [];
          for (let i = node.min; i < node.max; i++) {
            splits.push(push({ op: 'split', x: prog.length + 1, y: -1 }));
            emit(node.node);
          }
          for (const s of splits) (prog[s] as { y: number }).y = prog.length;
        }
        return;
      }
    }
  };
  emit(root);
  push({ op: 'match' });
  return prog;
}

/**
 * Fast path for the common filter shapes (`^United`, `land$`, `Republic`): a literal with optional
 * anchors becomes a string comparison, returning the same answer as the VM would.
 */
function asLiteral(root: Node): ((input: string) => boolean) | null {
  const items = root.kind === 'seq' ? root.items : [root];
  let text = '';
  let start = false;
  let end = false;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (item.kind === 'assert' && item.what === 'start' && i === 0) start = true;
    else if (item.kind === 'assert' && item.what === 'end' && i === items.length - 1) end = true;
    else if (item.kind === 'char' && !item.set.negate && item.set.ranges.length === 1 && item.set.ranges[0][0] === item.set.ranges[0][1]) {
      text += String.fromCharCode(item.set.ranges[0][0]);
    } else return null;
  }
  if (start && end) return (input) => input === text;
  if (start) return (input) => input.startsWith(text);
  if (end) return (input) => input.endsWith(text);
  return (input) => input.includes(text);
}

/** A compiled pattern: `test(s)` answers what `new RegExp(pattern).test(s)` would, in linear time. */
export interface SafeRegex {
  readonly source: string;
  test(input: string): boolean;
}

/** Compiles a user pattern; throws RegexError with a message naming the problem. */
export function compileSafeRegex(pattern: string): SafeRegex {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new RegexError(`pattern is ${pattern.length} characters long; at most ${MAX_PATTERN_LENGTH} are allowed`);
  }
  try {
    // Compiling (never running) a RegExp gives the platform's own syntax errors for free.
    new RegExp(pattern);
  } catch (e) {
    throw new RegexError((e as Error).message);
  }
  const root = new Parser(pattern).parse();
  const literal = asLiteral(root);
  if (literal) return { source: pattern, test: literal };
  const prog = compileProgram(root);
  const size = prog.length;
  const mark = new Int32Array(size).fill(-1);
  const stack = new Int32Array(size * 2 + 2);
  let current = new Int32Array(size);
  let next = new Int32Array(size);

  return {
    source: pattern,
    test(input: string): boolean {
      const n = input.length;
      mark.fill(-1);
      let step = 0;
      let count = 0;
      // Follows jumps, splits and assertions from `pc` at position `at`, adding the states that
      // consume input (or accept) to `list`. Each state is visited once per step.
      const add = (list: Int32Array, len: number, pc: number, at: number): number => {
        let sp = 0;
        stack[sp++] = pc;
        while (sp > 0) {
          const p = stack[--sp];
          if (mark[p] === step) continue;
          mark[p] = step;
          const ins = prog[p];
          switch (ins.op) {
            case 'jmp':
              stack[sp++] = ins.to;
              break;
            case 'split':
              stack[sp++] = ins.y;
              stack[sp++] = ins.x;
              break;
            case 'assert': {
              let ok: boolean;
              if (ins.what === 'start') ok = at === 0;
              else if (ins.what === 'end') ok = at === n;
              else {
                const before = at > 0 && isWordUnit(input.charCodeAt(at - 1));
                const after = at < n && isWordUnit(input.charCodeAt(at));
                ok = (before !== after) === (ins.what === 'word');
              }
              if (ok) stack[sp++] = p + 1;
              break;
            }
            default:
              list[len++] = p;
          }
        }
        return len;
      };

      for (let at = 0; ; at++) {
        count = add(current, count, 0, at); // a match may start at every position
        for (let i = 0; i < count; i++) if (prog[current[i]].op === 'match') return true;
        if (at === n) return false;
        const c = input.charCodeAt(at);
        step++;
        let nextCount = 0;
        for (let i = 0; i < count; i++) {
          const ins = prog[current[i]];
          if (ins.op === 'char' && setHas(ins.set, c)) nextCount = add(next, nextCount, current[i] + 1, at + 1);
        }
        [current, next] = [next, current];
        count = nextCount;
      }
    },
  };
}
