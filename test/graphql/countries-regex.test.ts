// The linear-time matcher behind `regex:` filters answers exactly what JavaScript's RegExp answers
// (no flags, as upstream's sift used it) on the strings the filters see, and refuses what it
// cannot do in linear time with a clear message.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileSafeRegex, dataset, MAX_PATTERN_LENGTH, RegexError } from '../../src/countries/index.ts';

const subjects = [
  ...dataset.countries.flatMap((c) => [c.code, c.name, c.filterFields.currency, c.continent.code]),
  ...dataset.languages.map((l) => l.code),
  '',
  'a',
  'ab',
  'A-b_c 9',
  'line\nbreak',
  'tab\there',
  'x{2}',
  'a]b',
  'é',
  '🇧🇷',
  "Côte d'Ivoire",
  '\u2028',
  '[*]',
];

/** Checks every subject; returns how many matched (so callers can see both answers occur). */
function sameAsRegExp(pattern: string): number {
  const native = new RegExp(pattern);
  const safe = compileSafeRegex(pattern);
  let matched = 0;
  for (const s of subjects) {
    const expected = native.test(s);
    assert.equal(safe.test(s), expected, `/${pattern}/ on ${JSON.stringify(s)}`);
    if (expected) matched++;
  }
  return matched;
}

describe('countries safe regex', () => {
  it('agrees with RegExp on hand-picked patterns', () => {
    const patterns = [
      '^United',
      'land$',
      '^(A|B)',
      'an',
      '^$',
      '',
      '.',
      '^.$',
      '^..$',
      'a|b|^Z',
      'Republic of',
      '^[A-C][a-z]+$',
      '[^a-z ]',
      '[a-]',
      '[-a]',
      '[\\d-z]',
      '\\d',
      '\\D',
      '\\w+\\s\\w+',
      '\\W',
      '\\s',
      '\\S',
      '\\bof\\b',
      '\\Bia\\b',
      'a{2}',
      'a{2,}',
      'n{1,2}i',
      's{0}',
      'x{2',
      'x{,2}',
      '{',
      '}',
      ']',
      'a]',
      '\\x41',
      '\\u00e9',
      '\\.',
      '\\-',
      '\\p',
      '(?:ab|cd)+',
      '(?<g>an)d',
      'a*?b',
      'a+?',
      'a??n',
      '[\\b]',
      '\\t',
      '\\n',
      '[^]',
      '[]',
      '^[^]*$',
      'St\\.? ',
      '\\u{1F1E7}',
      '(a|ab)(c|bcd)(d*)',
      '^(U|Un|Uni)ted',
      '[\\s\\S]{40,}',
      '^.{0,3}$',
      '^\\w{2}$',
      '\\uD83C',
      '[\\uD83C-\\uD83D]',
      '^[A-Z]{2}$',
      ',',
      'EUR|USD',
      '^(?:[A-Z][a-z]*)(?: [A-Z][a-z]*)*$',
      '\\0',
      '[\\0-\\x1f]',
    ];
    const matched = patterns.map(sameAsRegExp);
    assert.ok(matched.filter((m) => m > 0 && m < subjects.length).length > patterns.length / 2, 'most patterns split the subjects');
  });

  it('agrees with RegExp on random patterns', () => {
    // Deterministic generator; patterns keep at most two quantifiers so RegExp stays fast too.
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const atoms = ['a', 'e', 'n', 'U', ' ', '.', '\\w', '\\s', '\\d', '[aeiou]', '[^a-m]', '[A-Z]', '\\b', '^', '$', 'ia', 'an'];
    const quantifiers = ['*', '+', '?', '{1,2}', '{2}', '*?'];
    let discriminating = 0;
    for (let i = 0; i < 250; i++) {
      let quantified = 0;
      const piece = () => {
        let atom = atoms[rand(atoms.length)];
        if (rand(4) === 0) atom = `(${atoms[rand(atoms.length)]}|${atoms[rand(atoms.length)]})`;
        const assertion = atom === '\\b' || atom === '^' || atom === '$';
        if (!assertion && quantified < 2 && rand(3) === 0) {
          quantified++;
          atom += quantifiers[rand(quantifiers.length)];
        }
        return atom;
      };
      const parts = Array.from({ length: 1 + rand(5) }, piece);
      const pattern = rand(5) === 0 ? `${parts.join('')}|${piece()}` : parts.join('');
      const matched = sameAsRegExp(pattern);
      if (matched > 0 && matched < subjects.length) discriminating++;
    }
    assert.ok(discriminating > 100, `only ${discriminating} random patterns split the subjects`);
  });

  it('reports syntax errors with the platform message', () => {
    for (const bad of ['(', '[a', 'a**', '*a', '(?<n>a', 'a{2,1}', '[z-a]']) {
      assert.throws(
        () => compileSafeRegex(bad),
        (e: unknown) => e instanceof RegexError && /Invalid regular expression/.test((e as Error).message),
        bad,
      );
    }
  });

  it('refuses constructs with no linear-time matching, and oversized patterns', () => {
    const refused: [string, RegExp][] = [
      ['(a)\\1', /backreferences are not supported/],
      ['(?<x>a)\\k<x>', /backreferences are not supported/],
      ['a(?=b)', /lookaround/],
      ['a(?!b)', /lookaround/],
      ['(?<=a)b', /lookaround/],
      ['(?<!a)b', /lookaround/],
      ['x'.repeat(MAX_PATTERN_LENGTH + 1), new RegExp(`at most ${MAX_PATTERN_LENGTH}`)],
      ['(((a{100}){100}){100})', /too complex/],
      ['a{5000}', /repeat count above/],
    ];
    for (const [pattern, message] of refused) {
      assert.throws(
        () => compileSafeRegex(pattern),
        (e: unknown) => e instanceof RegexError && message.test((e as Error).message),
        pattern,
      );
    }
    assert.doesNotThrow(() => compileSafeRegex('x'.repeat(MAX_PATTERN_LENGTH)));
  });

  it('matches catastrophic-backtracking patterns on long inputs (bounded by the test timeout)', { timeout: 30_000 }, () => {
    const input = `${'a'.repeat(5000)}!`;
    assert.equal(compileSafeRegex('^(a+)+$').test(input), false);
    assert.equal(compileSafeRegex('^(a|a)*$').test(input), false);
    assert.equal(compileSafeRegex('(a*)*b').test(input), false);
    assert.equal(compileSafeRegex('^(a+)+!$').test(input), true);
    assert.equal(compileSafeRegex('.*.*.*.*.*.*.*.*.*.*!').test(input), true);
  });
});
