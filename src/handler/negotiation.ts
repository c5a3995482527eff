/** Choosing the response media type from the Accept header (RFC 9110 §12.5.1, with q-values). */

export const graphqlResponseJson = 'application/graphql-response+json';
export const applicationJson = 'application/json';
export type GraphQLMediaType = typeof graphqlResponseJson | typeof applicationJson;

/** The Content-Type of a body in `mediaType` (always UTF-8, the only encoding GraphQL-over-HTTP uses). */
export function contentTypeOf(mediaType: GraphQLMediaType): string {
  return `${mediaType}; charset=utf-8`;
}

/** The Accept value a 406 response advertises. */
export const acceptableMediaTypes = `${contentTypeOf(graphqlResponseJson)}, ${contentTypeOf(applicationJson)}`;

/**
 * The media type to answer in, or null when the client accepts neither (406). No header means
 * application/json, as the GraphQL-over-HTTP spec asks. A type's weight comes from the most specific
 * range naming it; on equal weights the range listed first wins, and a shared wildcard picks
 * application/json, the type every client understands.
 */
export function negotiateMediaType(accept: string | null): GraphQLMediaType | null {
  if (accept === null) return applicationJson;
  // The common headers, without parsing.
  switch (accept) {
    case graphqlResponseJson:
      return graphqlResponseJson;
    case applicationJson:
    case '*/*':
    case '':
      return applicationJson;
  }
  const gql = { q: -1, specificity: -1, position: Infinity };
  const json = { q: -1, specificity: -1, position: Infinity };
  let position = 0;
  let sawRange = false;
  for (const range of accept.split(',')) {
    const [rawType, ...parameters] = range.split(';');
    const mediaType = rawType.trim().toLowerCase();
    if (mediaType === '') continue;
    sawRange = true;
    let q = 1;
    let utf8 = true;
    for (const parameter of parameters) {
      const eq = parameter.indexOf('=');
      const name = parameter
        .slice(0, eq === -1 ? parameter.length : eq)
        .trim()
        .toLowerCase();
      const value =
        eq === -1
          ? ''
          : parameter
              .slice(eq + 1)
              .trim()
              .replace(/^"|"$/g, '')
              .toLowerCase();
      if (name === 'q') {
        const weight = Number(value);
        q = Number.isFinite(weight) ? Math.min(Math.max(weight, 0), 1) : 0;
      } else if (name === 'charset' && value !== 'utf-8' && value !== 'utf8') {
        utf8 = false; // the only encoding GraphQL-over-HTTP uses
      }
    }
    position++;
    if (!utf8) continue;
    if (mediaType === '*/*' || mediaType === 'application/*') {
      const specificity = mediaType === '*/*' ? 0 : 1;
      consider(gql, q, specificity, position);
      consider(json, q, specificity, position);
    } else if (mediaType === graphqlResponseJson) consider(gql, q, 2, position);
    else if (mediaType === applicationJson) consider(json, q, 2, position);
  }
  if (!sawRange) return applicationJson;
  if (gql.q <= 0 && json.q <= 0) return null;
  if (gql.q !== json.q) return gql.q > json.q ? graphqlResponseJson : applicationJson;
  return gql.position < json.position ? graphqlResponseJson : applicationJson;
}

interface Weight {
  q: number;
  specificity: number;
  position: number;
}

function consider(weight: Weight, q: number, specificity: number, position: number): void {
  // A more specific range overrides a wildcard's weight, wherever it appears.
  if (specificity > weight.specificity) {
    weight.q = q;
    weight.specificity = specificity;
    weight.position = position;
  } else if (specificity === weight.specificity && q > weight.q) {
    weight.q = q;
    weight.position = position;
  }
}
