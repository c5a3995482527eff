// Emoji derived from codes instead of stored: a country flag is the pair of regional indicator
// symbols of its ISO 3166-1 alpha-2 code; the generator checks this against countries-list.

const REGIONAL_INDICATOR_A = 0x1f1e6;
const TAG_BASE = 0xe0000;
const BLACK_FLAG = 0x1f3f4;
const CANCEL_TAG = 0xe007f;

/** "BR" -> "🇧🇷" */
export function flagEmoji(countryCode: string): string {
  return String.fromCodePoint(REGIONAL_INDICATOR_A + countryCode.charCodeAt(0) - 65, REGIONAL_INDICATOR_A + countryCode.charCodeAt(1) - 65);
}

/** "🇧🇷" -> "U+1F1E7 U+1F1F7" (the code points, as upstream's `emojiU` spelled them). */
export function emojiCodePoints(emoji: string): string {
  return Array.from(emoji, (ch) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase()}`).join(' ');
}

// Unicode recommends (RGI) exactly three subdivision flags; each is a tag sequence:
// black flag, the lower-cased code without the hyphen as tag characters, cancel tag.
const RGI_SUBDIVISION_FLAGS = new Set(['GB-ENG', 'GB-SCT', 'GB-WLS']);

/** "GB-ENG" -> "🏴󠁧󠁢󠁥󠁮󠁧󠁿", null for subdivisions without a recommended flag. */
export function subdivisionFlagEmoji(code: string): string | null {
  if (!RGI_SUBDIVISION_FLAGS.has(code)) return null;
  const tags = Array.from(code.replace('-', '').toLowerCase(), (ch) => TAG_BASE + ch.charCodeAt(0));
  return String.fromCodePoint(BLACK_FLAG, ...tags, CANCEL_TAG);
}
