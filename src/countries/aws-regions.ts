// AWS regions and where they are, used at build time (scripts/gen-countries-data.ts) to derive
// `Country.awsRegion`. The upstream lookup package (country-to-aws-region) is gone from npm, so the
// answer is derived from facts instead:
//
//   awsRegion(country) = the region below whose city is nearest (great-circle distance) to the
//                        country's capital.
//
// Why the capital: it is where a country's government, and usually a large share of its population
// and networks, sit; a geometric centre would send the United States to Ohio and Russia to Seoul.
// How the generator finds a capital's coordinates is documented there.
//
// The table: every generally available region of the commercial `aws` partition as of late 2025,
// with the coordinates (degrees, 2 decimals) of the metro area AWS names the region after. Not
// included, on purpose: the China regions (cn-north-1, cn-northwest-1: separate `aws-cn` partition,
// separate accounts and an ICP licence), GovCloud (us-gov-*: restricted to vetted US entities) and
// the isolated/sovereign partitions: none is a region an arbitrary user can deploy to.
// Adding a region here and running `npm run gen:data` is all it takes to update the answers.

export interface AwsRegion {
  readonly code: string;
  readonly city: string;
  readonly lat: number;
  readonly lon: number;
}

export const AWS_REGIONS: readonly AwsRegion[] = [
  { code: 'us-east-1', city: 'Ashburn, N. Virginia', lat: 39.04, lon: -77.49 },
  { code: 'us-east-2', city: 'Columbus, Ohio', lat: 39.96, lon: -83.0 },
  { code: 'us-west-1', city: 'San Jose, N. California', lat: 37.34, lon: -121.89 },
  { code: 'us-west-2', city: 'Boardman, Oregon', lat: 45.84, lon: -119.7 },
  { code: 'af-south-1', city: 'Cape Town', lat: -33.92, lon: 18.42 },
  { code: 'ap-east-1', city: 'Hong Kong', lat: 22.32, lon: 114.17 },
  { code: 'ap-east-2', city: 'Taipei', lat: 25.03, lon: 121.57 },
  { code: 'ap-south-1', city: 'Mumbai', lat: 19.08, lon: 72.88 },
  { code: 'ap-south-2', city: 'Hyderabad', lat: 17.39, lon: 78.49 },
  { code: 'ap-southeast-1', city: 'Singapore', lat: 1.35, lon: 103.82 },
  { code: 'ap-southeast-2', city: 'Sydney', lat: -33.87, lon: 151.21 },
  { code: 'ap-southeast-3', city: 'Jakarta', lat: -6.21, lon: 106.85 },
  { code: 'ap-southeast-4', city: 'Melbourne', lat: -37.81, lon: 144.96 },
  { code: 'ap-southeast-5', city: 'Kuala Lumpur', lat: 3.14, lon: 101.69 },
  { code: 'ap-southeast-6', city: 'Auckland', lat: -36.85, lon: 174.76 },
  { code: 'ap-southeast-7', city: 'Bangkok', lat: 13.76, lon: 100.5 },
  { code: 'ap-northeast-1', city: 'Tokyo', lat: 35.68, lon: 139.69 },
  { code: 'ap-northeast-2', city: 'Seoul', lat: 37.57, lon: 126.98 },
  { code: 'ap-northeast-3', city: 'Osaka', lat: 34.69, lon: 135.5 },
  { code: 'ca-central-1', city: 'Montréal', lat: 45.5, lon: -73.57 },
  { code: 'ca-west-1', city: 'Calgary', lat: 51.05, lon: -114.07 },
  { code: 'eu-central-1', city: 'Frankfurt', lat: 50.11, lon: 8.68 },
  { code: 'eu-central-2', city: 'Zurich', lat: 47.37, lon: 8.54 },
  { code: 'eu-west-1', city: 'Dublin', lat: 53.35, lon: -6.26 },
  { code: 'eu-west-2', city: 'London', lat: 51.51, lon: -0.13 },
  { code: 'eu-west-3', city: 'Paris', lat: 48.86, lon: 2.35 },
  { code: 'eu-south-1', city: 'Milan', lat: 45.46, lon: 9.19 },
  { code: 'eu-south-2', city: 'Zaragoza, Aragón', lat: 41.65, lon: -0.89 },
  { code: 'eu-north-1', city: 'Stockholm', lat: 59.33, lon: 18.07 },
  { code: 'il-central-1', city: 'Tel Aviv', lat: 32.09, lon: 34.78 },
  { code: 'me-south-1', city: 'Manama, Bahrain', lat: 26.23, lon: 50.59 },
  { code: 'me-central-1', city: 'Dubai, UAE', lat: 25.2, lon: 55.27 },
  { code: 'mx-central-1', city: 'Querétaro', lat: 20.59, lon: -100.39 },
  { code: 'sa-east-1', city: 'São Paulo', lat: -23.55, lon: -46.63 },
];

const EARTH_RADIUS_KM = 6371.0088;
const RAD = Math.PI / 180;

/** Great-circle distance in km (haversine). */
export function distanceKm(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const dLat = (lat2 - lat1) * RAD;
  const dLon = (lon2 - lon1) * RAD;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * RAD) * Math.cos(lat2 * RAD) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** The region nearest to a point; on an exact tie the earlier table entry wins (deterministic). */
export function nearestAwsRegion(lat: number, lon: number): AwsRegion {
  let best = AWS_REGIONS[0];
  let bestKm = Infinity;
  for (const region of AWS_REGIONS) {
    const km = distanceKm(lat, lon, region.lat, region.lon);
    if (km < bestKm) {
      best = region;
      bestKm = km;
    }
  }
  return best;
}
