// Pure layout math of the memory views: byte parsing, band stacking, segment blocks, timeline bins.
import type { SnapshotBand, SnapshotBlock, SnapshotSegment } from "../../api/types";

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

/** One piece of a placed band: from `x` (to the next step, or the band's end) its bottom is at `y0` bytes. */
export interface BandStep {
  x: number;
  y0: number;
}

/** A band placed on the timeline: x from alloc to free (or the window's end), y in bytes. */
export interface PlacedBand {
  index: number;
  x0: number;
  x1: number;
  /** Bottom and top at allocation (bytes). */
  y0: number;
  y1: number;
  /** The bottom over the band's life: it steps down when a band below it is freed. */
  steps: BandStep[];
  band: SnapshotBand;
}

/**
 * Stacks bands in allocation order, compacted: at any time each live band sits on the live bands
 * allocated before it, so when one is freed the bands above it move down. The stack's height at a
 * time is therefore exactly the bytes of the bands alive then, never more than the active memory
 * they are part of, and no two bands alive at the same time overlap.
 */
export function stackBands(bands: SnapshotBand[], end: number): PlacedBand[] {
  const order = bands.map((_, i) => i).sort((a, b) => (bands[a]!.alloc_time - bands[b]!.alloc_time) || a - b);
  const life = bands.map((b) => {
    const x0 = b.alloc_time;
    return { x0, x1: Math.max(b.free_time ?? end, x0) };
  });
  const placed: PlacedBand[] = [];
  order.forEach((i, k) => {
    const band = bands[i]!;
    const { x0, x1 } = life[i]!;
    let y0 = 0;
    const drops = new Map<number, number>(); // free time of a band below -> bytes it releases
    for (let m = 0; m < k; m++) {
      const j = order[m]!;
      const other = life[j]!;
      if (other.x1 <= x0) continue; // freed before this band was allocated
      y0 += bands[j]!.bytes;
      if (other.x1 < x1) drops.set(other.x1, (drops.get(other.x1) ?? 0) + bands[j]!.bytes);
    }
    const steps: BandStep[] = [{ x: x0, y0 }];
    let y = y0;
    for (const x of [...drops.keys()].sort((a, b) => a - b)) {
      y -= drops.get(x)!;
      steps.push({ x, y0: y });
    }
    placed.push({ index: i, x0, x1, y0, y1: y0 + band.bytes, steps, band });
  });
  placed.sort((a, b) => a.index - b.index);
  return placed;
}

/** The bottom of a placed band at time `x` (bytes); null outside its life. */
export function bandBottomAt(p: PlacedBand, x: number): number | null {
  if (x < p.x0 || x >= p.x1) return null;
  let y = p.steps[0]!.y0;
  for (const s of p.steps) {
    if (s.x > x) break;
    y = s.y0;
  }
  return y;
}

/** The highest band top: the y extent the band chart needs (bands are highest at allocation). */
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
