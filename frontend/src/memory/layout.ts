// Pure layout math of the memory views: byte parsing, band stacking, segment blocks, timeline bins.
import type { SnapshotBand, SnapshotBlock, SnapshotSegment } from "../api/memoryTypes";

const UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1000 ** 4,
  tib: 1024 ** 4,
};

/**
 * A size typed by the user: "4096", "1.5 MiB", "2k" (k/M/G alone are binary), "3 MB" (decimal).
 * Empty text is null (no filter); text that is not a size is undefined (invalid).
 */
export function parseBytes(text: string): number | null | undefined {
  const t = text.trim().toLowerCase().replace(/,/g, "");
  if (t === "") return null;
  const m = /^(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)$/.exec(t);
  if (!m) return undefined;
  const factor = UNITS[m[2] ?? ""];
  if (factor === undefined) return undefined;
  return Math.round(Number(m[1]) * factor);
}

/** A band placed on the timeline: x from alloc to free (or the window's end), y in bytes. */
export interface PlacedBand {
  index: number;
  x0: number;
  x1: number;
  y0: number;
  y1: number;
  band: SnapshotBand;
}

/**
 * Stacks bands in allocation order: each takes the lowest offset where it overlaps no band still
 * alive when it is allocated (first fit). Bands allocated earlier and alive at any time during its
 * life are alive at its allocation, so no two placed bands overlap.
 */
export function stackBands(bands: SnapshotBand[], end: number): PlacedBand[] {
  const order = bands.map((_, i) => i).sort((a, b) => (bands[a]!.alloc_time - bands[b]!.alloc_time) || a - b);
  const placed: PlacedBand[] = [];
  for (const i of order) {
    const band = bands[i]!;
    const x0 = band.alloc_time;
    const x1 = band.free_time ?? end;
    // intervals [y0, y1) of the bands alive at x0, sorted by y0
    const alive = placed
      .filter((p) => p.x0 <= x0 && p.x1 > x0)
      .map((p) => [p.y0, p.y1] as const)
      .sort((a, b) => a[0] - b[0]);
    let y = 0;
    for (const [lo, hi] of alive) {
      if (lo - y >= band.bytes) break;
      y = Math.max(y, hi);
    }
    placed.push({ index: i, x0, x1: Math.max(x1, x0), y0: y, y1: y + band.bytes, band });
  }
  placed.sort((a, b) => a.index - b.index);
  return placed;
}

/** The highest band top: the y extent the band chart needs. */
export function bandsHeight(placed: PlacedBand[]): number {
  return placed.reduce((m, p) => Math.max(m, p.y1), 0);
}

export interface PlacedBlock {
  block: SnapshotBlock;
  /** Percent of the segment's row. */
  leftPct: number;
  widthPct: number;
}

export interface SegmentRow {
  segment: SnapshotSegment;
  /** The row's width in percent of the widest segment's (at least 2 % so small segments stay visible). */
  widthPct: number;
  blocks: PlacedBlock[];
  activeBytes: number;
}

/** Blocks by address as proportional boxes inside their segment; rows scaled to the largest segment. */
export function layoutSegments(segments: SnapshotSegment[]): SegmentRow[] {
  const largest = segments.reduce((m, s) => Math.max(m, s.total_size), 0);
  return segments.map((segment) => {
    const total = segment.total_size > 0 ? segment.total_size : segment.blocks.reduce((a, b) => a + b.size, 0) || 1;
    const blocks = [...segment.blocks]
      .sort((a, b) => a.address - b.address)
      .map((block) => ({
        block,
        leftPct: ((block.address - segment.address) / total) * 100,
        widthPct: (block.size / total) * 100,
      }));
    const activeBytes = segment.blocks.filter((b) => b.state.startsWith("active")).reduce((a, b) => a + b.size, 0);
    return {
      segment,
      widthPct: largest > 0 ? Math.max(2, (segment.total_size / largest) * 100) : 100,
      blocks,
      activeBytes,
    };
  });
}

/** The center of each of n equal bins over [start, end]: where a per-bin value is drawn. */
export function binCenters(start: number, end: number, n: number): number[] {
  if (n <= 0) return [];
  const w = (end - start) / n;
  return Array.from({ length: n }, (_, i) => start + (i + 0.5) * w);
}

/** The largest value and its index; [-1, 0] for an empty array. */
export function argMax(values: number[]): [number, number] {
  let best = -1;
  let max = 0;
  values.forEach((v, i) => {
    if (best < 0 || v > max) {
      best = i;
      max = v;
    }
  });
  return [best, max];
}

/** The visible window clamped to the data's extent, ordered; null when it is empty. */
export function normalizeRange(a: number, b: number, lo: number, hi: number): { start: number; end: number } | null {
  const start = Math.max(lo, Math.min(a, b));
  const end = Math.min(hi, Math.max(a, b));
  return end > start ? { start, end } : null;
}

/** Hex address as the allocator prints it. */
export function formatAddress(addr: number | null | undefined): string {
  if (addr === null || addr === undefined || !Number.isFinite(addr)) return "\u2013";
  return `0x${addr.toString(16)}`;
}

/** Whether an event's lifetime [alloc, free] overlaps [start, end] (open ends count as unbounded). */
export function overlaps(alloc: number | null, free: number | null, start: number, end: number): boolean {
  const a = alloc ?? Number.NEGATIVE_INFINITY;
  const f = free ?? Number.POSITIVE_INFINITY;
  return !(f < start || a > end);
}
