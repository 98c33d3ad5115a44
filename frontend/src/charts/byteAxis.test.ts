import { describe, expect, it } from "vitest";
import { byteAxis } from "./byteAxis";

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

function ticks(lo: number, hi: number): string[] {
  const a = byteAxis(lo, hi);
  const out: string[] = [];
  for (let v = a.min; v <= a.max + a.interval / 2; v += a.interval) out.push(a.axisLabel.formatter(v));
  return out;
}

describe("byte axis in binary units", () => {
  it("ticks a 1.9 GiB peak at round GiB, not 953.7 MiB / 1.9 GiB", () => {
    // ECharts' own decimal ticks on this curve read 0 B, 476.8 MiB, 953.7 MiB, 1.4 GiB, 1.9 GiB
    expect(ticks(0, 1.9 * GIB)).toEqual(["0 GiB", "0.5 GiB", "1 GiB", "1.5 GiB", "2 GiB"]);
    expect(ticks(0, 3.02 * GIB)).toEqual(["0 GiB", "1 GiB", "2 GiB", "3 GiB", "4 GiB"]);
    expect(byteAxis(0, 3.02 * GIB).interval).toBe(GIB);
  });

  it("picks the largest unit not above the data and 1-2-2.5-5 steps in it", () => {
    expect(ticks(0, 900 * MIB)).toEqual(["0 MiB", "200 MiB", "400 MiB", "600 MiB", "800 MiB", "1000 MiB"]);
    expect(ticks(0, 48 * MIB)).toEqual(["0 MiB", "10 MiB", "20 MiB", "30 MiB", "40 MiB", "50 MiB"]);
    expect(ticks(0, 700)).toEqual(["0 B", "200 B", "400 B", "600 B", "800 B"]);
  });

  it("keeps whole bytes for tiny data and covers negative values", () => {
    expect(ticks(0, 3)).toEqual(["0 B", "1 B", "2 B", "3 B"]);
    expect(ticks(0, 0)).toEqual(["0 B", "1 B"]);
    const a = byteAxis(-1.2 * GIB, 2.1 * GIB);
    expect(a.min).toBe(-2 * GIB);
    expect(a.max).toBe(3 * GIB);
    expect(a.axisLabel.formatter(-GIB)).toBe("-1 GiB");
  });

  it("every tick is a whole multiple of the interval and the data fits inside", () => {
    for (const hi of [1, 999, 1024, 5e6, 123456789, 7.5 * GIB, 3e12]) {
      const a = byteAxis(0, hi);
      expect(a.min).toBe(0);
      expect(a.max).toBeGreaterThanOrEqual(hi);
      expect((a.max - a.min) / a.interval).toBeLessThanOrEqual(6);
      expect(Number.isInteger(Math.round((a.max / a.interval) * 1e9) / 1e9)).toBe(true);
    }
  });
});
