// A byte axis with round ticks in binary units (0, 0.5 GiB, 1 GiB, 1.5 GiB…), where ECharts' own ticks
// are round in decimal bytes and read as 953.7 MiB, 1.9 GiB.
import { toFixedHalfAway } from "../util/format";

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
const STEPS = [1, 2, 2.5, 5];

export interface ByteAxis {
  min: number;
  max: number;
  interval: number;
  axisLabel: { formatter: (v: number) => string };
}

/**
 * The axis for values within [lo, hi] bytes: the unit is the largest binary unit not above the largest
 * magnitude; the step is 1, 2, 2.5 or 5 × a power of ten of that unit giving at most `ticks` intervals;
 * min and max are the data's ends rounded outward to a step (min 0 for non-negative data). Every tick
 * label is in that one unit, with the step's decimals less trailing zeros: "0 GiB", "0.5 GiB", "1 GiB".
 */
export function byteAxis(lo: number, hi: number, ticks = 5): ByteAxis {
  const low = Math.min(0, Number.isFinite(lo) ? lo : 0);
  const high = Math.max(0, Number.isFinite(hi) ? hi : 0);
  const big = Math.max(Math.abs(low), Math.abs(high), 1);
  let k = 0;
  while (k < UNITS.length - 1 && big >= 1024 ** (k + 1)) k += 1;
  const unit = 1024 ** k;
  const span = Math.max((high - low) / unit, 1e-9);
  let step = 0;
  let decimals = 0;
  for (let p = Math.floor(Math.log10(span / ticks)) - 1; step === 0; p += 1) {
    for (const m of STEPS) {
      const s = m * 10 ** p;
      if (span / s <= ticks) {
        step = s;
        decimals = Math.max(0, -p + (m === 2.5 ? 1 : 0));
        break;
      }
    }
  }
  // a byte is the smallest step there is
  if (k === 0 && step < 1) {
    step = 1;
    decimals = 0;
  }
  const interval = step * unit;
  const min = Math.floor(low / interval) * interval;
  const max = Math.max(Math.ceil(high / interval) * interval, interval);
  const label = UNITS[k]!;
  const text = (v: number) => (decimals > 0 ? toFixedHalfAway(v / unit, decimals).replace(/\.?0+$/, "") : toFixedHalfAway(v / unit, 0));
  return { min, max, interval, axisLabel: { formatter: (v: number) => `${text(v)} ${label}` } };
}
