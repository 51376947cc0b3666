// The eval's ranking metrics (eval/metrics.ts) on lists small enough to check by hand.
import assert from "node:assert/strict";
import { ndcgAt, percentile, qualityOf, recallAt, reciprocalRank } from "../eval/metrics.ts";

const relevant = new Set(["a", "b"]);
const near = (x: number, y: number) => Math.abs(x - y) < 1e-9;

Deno.test("eval metrics: recall@k counts relevant memories in the first k", () => {
  assert.equal(recallAt(["x", "a", "y", "b"], relevant, 2), 0.5);
  assert.equal(recallAt(["x", "a", "y", "b"], relevant, 4), 1);
  assert.equal(recallAt([], relevant, 10), 0);
});

Deno.test("eval metrics: reciprocal rank is 1 / the rank of the first relevant memory", () => {
  assert.equal(reciprocalRank(["x", "y", "b", "a"], relevant), 1 / 3);
  assert.equal(reciprocalRank(["x", "y"], relevant), 0);
});

Deno.test("eval metrics: nDCG@k is 1 for an ideal list and discounts late hits by log2(rank + 1)", () => {
  assert.equal(ndcgAt(["a", "b", "x"], relevant, 10), 1);
  assert.ok(near(ndcgAt(["x", "a"], new Set(["a"]), 10), 1 / Math.log2(3)));
  assert.ok(
    near(ndcgAt(["x", "a", "b"], relevant, 10), (1 / Math.log2(3) + 1 / Math.log2(4)) / (1 + 1 / Math.log2(3))),
  );
  assert.equal(ndcgAt(["x", "y", "a"], relevant, 2), 0);
});

Deno.test("eval metrics: percentiles are nearest-rank; quality figures skip questions without answers", () => {
  assert.equal(percentile([5, 1, 4, 2, 3], 50), 3);
  assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95), 10);
  const q = qualityOf([
    { ranked: ["a", "b"], relevant },
    { ranked: ["x", "a"], relevant: new Set(["a"]) },
    { ranked: ["a"], relevant: new Set() },
  ]);
  assert.equal(q.n, 2);
  assert.equal(q.recall_at_5, 1);
  assert.equal(q.mrr, 0.75);
});
