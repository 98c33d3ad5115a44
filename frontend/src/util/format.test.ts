import { describe, expect, it } from "vitest";
import overview from "../__fixtures__/overview_resnet50.json";
import { categoryLabel, categoryValue } from "./categories";
import { escapeHtml } from "./escapeHtml";
import {
  DASH,
  chooseTimeUnit,
  formatBool,
  formatDecimal,
  formatBytes,
  formatDuration,
  formatGiB,
  formatInUnit,
  formatNumber,
  formatPct,
  formatText,
  percentOf,
  roundHalfAway,
  toFixedHalfAway,
  usToMs,
} from "./format";
import rounding from "../__fixtures__/rounding_cases.json";
import numberText from "../__fixtures__/number_text_cases.json";

describe("rounding shared with kinetoscope report (tests/unit/analysis/test_numfmt.py reads the same cases)", () => {
  it("rounds the shortest decimal half away from zero", () => {
    expect(rounding.cases.length).toBeGreaterThan(20);
    for (const [value, digits, want] of rounding.cases as [number, number, string][]) {
      expect(toFixedHalfAway(value, digits), `${value} to ${digits}`).toBe(want);
    }
  });

  it("shows synthetic_ddp rank0's Memset 2.25 µs and CPU Exec 56.25 µs as the report does", () => {
    // toFixed/Intl gave "2.3"/"56.3" and Python's format "2.2"/"56.2"; both now "2.3"/"56.3"
    expect(formatNumber(2.25, 1)).toBe("2.3");
    expect(formatNumber(56.25, 1)).toBe("56.3");
    expect(formatNumber(1.005, 2)).toBe("1.01");
    expect(formatPct(2.675)).toBe("2.68 %");
    expect(formatDuration(1234.5)).toBe("1.23 ms");
    expect(formatDuration(1235)).toBe("1.24 ms");
    expect(roundHalfAway(-0.04, 1)).toBe(0);
    expect(Object.is(roundHalfAway(-0.04, 1), -0)).toBe(false);
    expect(roundHalfAway(99.95, 1)).toBe(100);
  });
});

describe("format helpers", () => {
  it("shows null, undefined and non-finite values as an en dash", () => {
    expect(DASH).toBe("–");
    for (const fn of [formatPct, formatGiB, formatDuration, formatNumber, formatBytes]) {
      expect(fn(null)).toBe("–");
      expect(fn(undefined)).toBe("–");
      expect(fn(Number.NaN)).toBe("–");
    }
    expect(formatText(null)).toBe("–");
    expect(formatText("")).toBe("–");
    expect(formatBool(null)).toBe("–");
  });

  it("formats percentages with two decimals", () => {
    expect(formatPct(57.4183)).toBe("57.42 %");
    expect(formatPct(0)).toBe("0.00 %");
    expect(formatPct(100)).toBe("100.00 %");
  });

  it("converts bytes to GiB", () => {
    expect(formatGiB(16945512448)).toBe("15.78 GiB");
    expect(formatGiB(1024 ** 3)).toBe("1.00 GiB");
    expect(formatGiB(0)).toBe("0.00 GiB");
    expect(formatBytes(35123456)).toBe("33.5 MiB");
    expect(formatBytes(512)).toBe("512 B");
  });

  it("converts µs to ms", () => {
    expect(usToMs(123456)).toBe(123.456);
    expect(formatDuration(812)).toBe("812 µs");
    expect(formatDuration(2.5)).toBe("2.50 µs");
    expect(formatDuration(111593.6)).toBe("111.59 ms");
    expect(formatDuration(2_500_000)).toBe("2.50 s");
  });

  it("picks ms for the chart axis once steps reach 10 ms", () => {
    expect(chooseTimeUnit(9999)).toEqual({ label: "µs", divisor: 1 });
    expect(chooseTimeUnit(10000)).toEqual({ label: "ms", divisor: 1000 });
    expect(formatInUnit(141904, chooseTimeUnit(141904))).toBe("141.90 ms");
    expect(formatInUnit(812.25, chooseTimeUnit(900))).toBe("812.3 µs");
  });

  it("groups thousands with a fixed locale", () => {
    expect(formatNumber(84445.4, 1)).toBe("84,445.4");
    expect(formatNumber(1234567)).toBe("1,234,567");
  });

  it("computes shares and guards a zero whole", () => {
    expect(percentOf(25, 200)).toBe(12.5);
    expect(percentOf(1, 0)).toBeNull();
  });

  it("labels categories with the server's names, and unknown keys from the key", () => {
    const served = overview.category_labels as Record<string, string>;
    expect(categoryLabel("dataloader_us", served)).toBe("DataLoader");
    expect(categoryLabel("cpu_exec_us", served)).toBe("CPU Exec");
    expect(categoryLabel("cpu_exec_us")).toBe("Cpu Exec"); // an older server sends no labels
    expect(categoryLabel("nccl_wait_us", served)).toBe("Nccl Wait");
    expect(categoryValue({ kernel_us: 12.5, step: "5" }, "kernel_us")).toBe(12.5);
    expect(categoryValue({ step: "5" }, "kernel_us")).toBe(0);
  });

  it("escapes HTML special characters", () => {
    expect(escapeHtml(`<img src=x onerror=alert(1)> & "q" 'a'`)).toBe(
      "&lt;img src=x onerror=alert(1)&gt; &amp; &quot;q&quot; &#39;a&#39;",
    );
  });
});

describe("short number text shared with the server (tests/unit/analysis/test_numfmt.py reads the same cases)", () => {
  it("writes raw floats by the one rounding rule, trailing zeros dropped", () => {
    for (const [value, want] of numberText.decimal as [number, string][]) {
      expect(formatDecimal(value), String(value)).toBe(want);
    }
  });

  it("chooses the duration unit as the server's sentences do", () => {
    for (const [value, want] of numberText.duration as [number, string][]) {
      expect(formatDuration(value), String(value)).toBe(want);
    }
  });
});
