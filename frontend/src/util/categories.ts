// Display names for the breakdown categories. The server sends keys such as "kernel_us"; an unknown
// key still gets a readable name.
const LABELS: Record<string, string> = {
  kernel_us: "Kernel",
  memcpy_us: "Memcpy",
  memset_us: "Memset",
  communication_us: "Communication",
  runtime_us: "Runtime",
  dataloader_us: "DataLoader",
  cpu_exec_us: "CPU Exec",
  other_us: "Other",
};

export function categoryLabel(key: string): string {
  const known = LABELS[key];
  if (known) return known;
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
