// One fixed color per breakdown category, so the table, the donut and the step bars agree.
const CATEGORY_COLORS: Record<string, string> = {
  kernel_us: "#4e79a7",
  memcpy_us: "#f28e2b",
  memset_us: "#edc948",
  communication_us: "#b07aa1",
  runtime_us: "#e15759",
  dataloader_us: "#76b7b2",
  cpu_exec_us: "#59a14f",
  other_us: "#9c9c9c",
};

const SPARE = ["#ff9da7", "#9d7660", "#86bcb6", "#d37295", "#a0cbe8", "#8cd17d"];

export function categoryColor(key: string, index: number): string {
  return CATEGORY_COLORS[key] ?? SPARE[index % SPARE.length] ?? "#888888";
}

/** Colors for series keyed by name or index (trace events, ranks): Tableau 10, then ten more. */
export const SERIES_PALETTE = [
  "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
  "#bab0ac", "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
  "#6b8e23", "#cd853f",
] as const;
