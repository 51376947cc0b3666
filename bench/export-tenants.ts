/** The export-at-scale corpus's tenants (bench/export-load.ts, bench/export-measure.ts). */
export const BIG_TENANT = "00000000-0000-4000-8000-0000000b1600";
export const SMALL_TENANTS = [1, 2, 3, 4, 5].map((i) => `00000000-0000-4000-8000-00000000050${i}`);
