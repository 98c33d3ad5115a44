// Structural sharing between two polls of the run registry: what did not change keeps its identity, so
// a poll that brings nothing new re-renders nothing, and one that brings a new span or run re-renders
// only what it touches (the selectors keep their DOM nodes and the selection is untouched).
import type { RunInfo, RunsResponse } from "../api/types";

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** `next`, with every run (and the whole answer) that equals its previous version replaced by it. */
export function stableRuns(prev: RunsResponse | null, next: RunsResponse): RunsResponse {
  if (prev === null) return next;
  if (same(prev, next)) return prev;
  const byName = new Map<string, RunInfo>(prev.runs.map((r) => [r.name, r]));
  const runs = next.runs.map((r) => {
    const old = byName.get(r.name);
    return old !== undefined && same(old, r) ? old : r;
  });
  const loading = same(prev.loading, next.loading) ? prev.loading : next.loading;
  return { ...next, loading, runs };
}
