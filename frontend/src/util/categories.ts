// Display names for the breakdown categories come from the server (`category_labels` of the overview
// and of the diff, one table in tb_plugin/analysis/breakdown.py, which the CLI prints too). A key the
// server did not label (an older server) still gets a readable name from the key itself.

export function categoryLabel(key: string, labels?: Record<string, string>): string {
  const served = labels?.[key];
  if (served) return served;
  const bare = key.endsWith("_us") ? key.slice(0, -3) : key;
  const words = bare.split("_").filter((w) => w !== "");
  if (words.length === 0) return key;
  return words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(" ");
}

/** Reads a category's µs value from a step or the average; missing or non-numeric gives 0. */
export function categoryValue(row: Record<string, unknown>, key: string): number {
  const value = row[key];
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}
