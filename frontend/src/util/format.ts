// Number formatting for display. The server sends raw numbers with units in the field names; every
// conversion to text happens here. A null (unknown) value always shows as an en dash.

export const DASH = "\u2013";

const GIB = 1024 ** 3;

function isMissing(value: number | null | undefined): value is null | undefined {
  return value === null || value === undefined || !Number.isFinite(value);
}

/**
 * `value` rounded to `digits` decimals by the rule `kinetoscope report` uses too (tb_plugin/analysis/numfmt.py):
 * its shortest round-trip decimal (`String(value)`, the same digits as Python's repr) rounded half away
 * from zero. So 2.25 -> 2.3 and 1.005 -> 1.01, where `toFixed` and `Intl` round the binary value
 * (1.00499…) and Python's format rounds ties to even (2.25 -> "2.2"). Zero comes back unsigned. The
 * result is the double nearest the rounded decimal, so `toFixed(digits)` of it prints that decimal.
 */
export function roundHalfAway(value: number, digits: number): number {
  if (!Number.isFinite(value)) return value;
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(value));
  if (!m) return value;
  const [, sign, int = "", frac = "", exp = "0"] = m;
  const all = int + frac;
  // the decimal point sits after int.length + exp digits of `all`; keep `digits` digits past it
  const keep = int.length + Number(exp) + digits;
  if (keep >= all.length) return value;
  if (keep < 0) return 0;
  let kept = all.slice(0, keep) || "0";
  if (all.charCodeAt(keep) >= 53 /* "5" */) kept = incrementDigits(kept);
  const out = Number(`${sign}${kept}e-${digits}`);
  return out === 0 ? 0 : out;
}

/** A decimal digit string plus one ("199" -> "200", "99" -> "100"). */
function incrementDigits(digits: string): string {
  const d = digits.split("");
  let i = d.length - 1;
  while (i >= 0 && d[i] === "9") d[i--] = "0";
  if (i < 0) return `1${d.join("")}`;
  d[i] = String(Number(d[i]) + 1);
  return d.join("");
}

/** `value` with exactly `digits` decimals, rounded by {@link roundHalfAway}; no grouping. */
export function toFixedHalfAway(value: number, digits: number): string {
  return roundHalfAway(value, digits).toFixed(digits);
}

/**
 * A raw float as short text (event arguments): an integer as itself, else 3 decimals (3 significant
 * digits below 1) by {@link roundHalfAway}, trailing zeros dropped: 2.30303 -> "2.303",
 * 99.99999999999991 -> "100". The server's CSV cells use the same rule (numfmt.py `decimal_text`).
 */
export function formatDecimal(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return String(value);
  const a = Math.abs(value);
  const digits = a >= 1 ? 3 : Math.min(15, Math.max(3, 2 - Math.floor(Math.log10(a))));
  const text = toFixedHalfAway(value, digits).replace(/\.?0+$/, "");
  return text === "-0" || text === "" ? "0" : text;
}

/** Fixed-locale grouping, so output does not depend on the browser's language. Rounded by {@link roundHalfAway}. */
export function formatNumber(value: number | null | undefined, fractionDigits = 0): string {
  if (isMissing(value)) return DASH;
  return roundHalfAway(value, fractionDigits).toLocaleString("en-US", {
    minimumFractionDigits: fractionDigits,
    maximumFractionDigits: fractionDigits,
  });
}

/** 57.4183 -> "57.42 %". */
export function formatPct(value: number | null | undefined, fractionDigits = 2): string {
  if (isMissing(value)) return DASH;
  return `${toFixedHalfAway(value, fractionDigits)} %`;
}

/** 16945512448 -> "15.78 GiB". */
export function formatGiB(bytes: number | null | undefined): string {
  if (isMissing(bytes)) return DASH;
  return `${toFixedHalfAway(bytes / GIB, 2)} GiB`;
}

/** Any byte count in the largest binary unit that keeps it at or above 1. */
export function formatBytes(bytes: number | null | undefined): string {
  if (isMissing(bytes)) return DASH;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${toFixedHalfAway(value, 1)} ${units[unit]}`;
}

/** Microseconds as µs, ms or s, whichever reads best: 812 -> "812 µs", 123456 -> "123.46 ms". */
export function formatDuration(us: number | null | undefined): string {
  if (isMissing(us)) return DASH;
  const abs = Math.abs(us);
  if (abs < 1000) return `${formatNumber(us, abs < 10 ? 2 : 0)} \u00b5s`;
  if (abs < 1_000_000) return `${toFixedHalfAway(us / 1000, 2)} ms`;
  return `${toFixedHalfAway(us / 1_000_000, 2)} s`;
}

/** Microseconds to milliseconds, as a number. */
export function usToMs(us: number): number {
  return us / 1000;
}

export interface TimeUnit {
  label: "\u00b5s" | "ms";
  /** Divide a µs value by this to get the unit. */
  divisor: number;
}

/** Chart axis unit: ms once the largest value reaches 10 ms, µs below that. */
export function chooseTimeUnit(maxUs: number): TimeUnit {
  return maxUs >= 10_000 ? { label: "ms", divisor: 1000 } : { label: "\u00b5s", divisor: 1 };
}

/** A value in a chosen unit, e.g. 123456 µs in ms -> "123.46 ms". */
export function formatInUnit(us: number | null | undefined, unit: TimeUnit): string {
  if (isMissing(us)) return DASH;
  const digits = unit.divisor === 1 ? 1 : 2;
  return `${formatNumber(us / unit.divisor, digits)} ${unit.label}`;
}

/** part / whole as a percentage; null when whole is 0 or unknown. */
export function percentOf(part: number, whole: number): number | null {
  if (!Number.isFinite(part) || !Number.isFinite(whole) || whole === 0) return null;
  return (part / whole) * 100;
}

export function formatText(value: string | null | undefined): string {
  return value === null || value === undefined || value === "" ? DASH : value;
}

export function formatBool(value: boolean | null | undefined): string {
  if (value === null || value === undefined) return DASH;
  return value ? "Yes" : "No";
}
