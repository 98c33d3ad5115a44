/**
 * The one line a table shows when it has no rows: with a filter set, that nothing matches it; with
 * none, that the trace has no such rows at all (so "No rows match." never appears with no filter).
 * `what` is the plural noun of the table's rows ("GPU kernels", "operators").
 */
export function emptyTableText(what: string, filters: readonly (string | null | undefined)[]): string {
  const filtered = filters.some((f) => (f ?? "").trim() !== "");
  return filtered ? `No ${what} match the filter.` : `This trace has no ${what}.`;
}
