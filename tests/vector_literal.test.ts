// toVectorLiteral writes each element as the float32 pgvector stores (9 significant digits): the
// vector the database stores and compares is exactly the one the numbers' shortest JavaScript form
// gave before (docs/operations.md#cpu-per-retrieval), in fewer characters. Checked on the database
// itself: pgvector's own text output (the shortest form of each stored float32) of both literals.
import assert from "node:assert/strict";
import { toVectorLiteral } from "../supabase/functions/_shared/db.ts";
import { EMBEDDING_DIMENSIONS } from "../supabase/functions/_shared/embeddings.ts";
import { testSql } from "./support/seed.ts";

/** The form toVectorLiteral wrote before: every element as JavaScript's shortest float64 text. */
const shortestForm = (v: readonly number[]) => `[${v.join(",")}]`;

/** A deterministic unit-length vector (xorshift), as an embedder gives them. */
function unitVector(seed: number): number[] {
  let x = seed | 1;
  const v = Array.from({ length: EMBEDDING_DIMENSIONS }, () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32 - 0.5;
  });
  const norm = Math.hypot(...v);
  return v.map((e) => e / norm);
}

Deno.test("toVectorLiteral: pgvector stores exactly the vector the shortest form gave, in fewer characters", async () => {
  const edges = [0, -0, 1, -1, 0.1, 1 / 3, 1e-7, -2.5e-12, 1e-40, 3.4e38, 123456.789, 0.000123456789];
  const vectors = [
    ...Array.from({ length: 40 }, (_, i) => unitVector(i + 1)),
    Array.from({ length: EMBEDDING_DIMENSIONS }, (_, i) => edges[i % edges.length]!),
  ];
  const sql = testSql(1);
  try {
    const rows = await sql<{ same: boolean; ours: string; before: string }[]>`
      select a::extensions.vector = b::extensions.vector as same,
             a::extensions.vector::text as ours, b::extensions.vector::text as before
        from unnest(${vectors.map(toVectorLiteral)}::text[], ${vectors.map(shortestForm)}::text[]) as t(a, b)`;
    assert.equal(rows.length, vectors.length);
    for (const [i, r] of rows.entries()) {
      assert.ok(r.same, `vector ${i} differs`);
      assert.equal(r.ours, r.before, `vector ${i}: pgvector stores another vector`);
    }
  } finally {
    await sql.end();
  }
  const ours = vectors.slice(0, 40).reduce((n, v) => n + toVectorLiteral(v).length, 0);
  const before = vectors.slice(0, 40).reduce((n, v) => n + shortestForm(v).length, 0);
  assert.ok(ours < before * 0.75, `${ours} characters against ${before}`);
});
