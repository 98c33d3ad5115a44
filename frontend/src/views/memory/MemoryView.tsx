// The Memory view of one trace file: device selector, the allocated/reserved step curve with its peak,
// a drag-selected time range that filters the events and statistics tables (and zooms the curve, which
// is refetched at that window so peaks stay exact), and the two server-paged tables with CSV links.
import { useCallback, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { memoryUrl, type TimeRange } from "../../api/routes";
import type { MemoryEventRow, MemoryReady } from "../../api/types";
import type { Selection } from "../../api/types";
import { Card } from "../../components/Card";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import { SelectField } from "../../components/Fields";
import { Notice } from "../../components/Notice";
import { RemoteStatus } from "../../components/RemoteStatus";
import { chartTextColor } from "../../components/chartColors";
import { remoteData, useRemote } from "../../hooks/useRemote";
import type { Theme } from "../../hooks/useTheme";
import { formatBytes, formatDuration } from "../../util/format";
import { RECONSTRUCTED_NOTICE } from "./definitions";
import type { MemChartInstance } from "./echarts";
import { MemChart } from "./MemChart";
import { memoryCurveOption } from "./options";
import { useMemoryStyles } from "./useMemoryStyles";
import {  MemoryEvents, MemoryStats } from "./MemoryTables";
import { testHooksEnabled } from "../../util/testHooks";
import { deviceLabel } from "../../util/device";

const CURVE_WIDTH_PX = 1600;

/** The browser-test hook (only under the test flag, util/testHooks.ts): select a range without dragging, read the current one. */
export interface MemoryTestHook {
  selectRange: (startUs: number, endUs: number) => void;
  reset: () => void;
  range: () => TimeRange | null;
  device: () => string;
}

declare global {
  interface Window {
    __kinetoscopeMemory?: MemoryTestHook;
  }
}

interface MemoryViewProps {
  selection: Selection;
  theme: Theme;
}

/** One term of the curve's summary list: its label and its value. */
function SummaryItem({ label, testId, children }: { label: string; testId?: string; children: ReactNode }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd data-testid={testId}>{children}</dd>
    </div>
  );
}

export function MemoryView({ selection, theme }: MemoryViewProps) {
  useMemoryStyles();
  const [device, setDevice] = useState<string | null>(null);
  const [range, setRange] = useState<TimeRange | null>(null);
  const memState = useRemote<MemoryReady>(memoryUrl(selection, range, CURVE_WIDTH_PX));
  const mem = remoteData(memState);
  const devices = mem?.devices ?? [];
  const dev = devices.find((d) => d.device === device) ?? devices.find((d) => d.device.startsWith("GPU")) ?? devices[0];
  const deviceName = dev?.device ?? null;

  const [selected, setSelected] = useState<{ key: string; row: MemoryEventRow } | null>(null);
  const chartRef = useRef<MemChartInstance | null>(null);

  const selectRange = useCallback((a: number, b: number) => {
    const start = Math.min(a, b);
    const end = Math.max(a, b);
    if (!(end > start)) return;
    setRange({ start_us: start, end_us: end });
  }, []);
  const reset = useCallback(() => setRange(null), []);

  useEffect(() => {
    if (!testHooksEnabled()) return;
    const hook: MemoryTestHook = {
      selectRange,
      reset,
      range: () => range,
      device: () => deviceName ?? "",
    };
    window.__kinetoscopeMemory = hook;
    return () => {
      if (window.__kinetoscopeMemory === hook) delete window.__kinetoscopeMemory;
    };
  }, [selectRange, reset, range, deviceName]);

  const textColor = chartTextColor(theme);
  const highlight = useMemo(() => {
    if (!selected) return null;
    const r = selected.row;
    const lo = range?.start_us ?? 0;
    const hi = range?.end_us ?? Math.max(...(dev?.allocated.ts_us ?? [0]));
    return { start: r.alloc_us ?? lo, end: r.free_us ?? hi, label: formatBytes(r.size_bytes) };
  }, [selected, range, dev]);
  const option = useMemo(
    () =>
      dev
        ? memoryCurveOption({
            device: dev,
            textColor,
            highlight,
            extent: range ? { start: range.start_us, end: range.end_us } : null,
          })
        : null,
    [dev, textColor, highlight, range],
  );

  // The brush: a drag on the curve selects a range on x.
  const onReady = useCallback(
    (chart: MemChartInstance | null) => {
      chartRef.current = chart;
      if (!chart) return;
      chart.off("brushEnd");
      chart.on("brushEnd", (params: unknown) => {
        const areas = (params as { areas?: { coordRange?: [number, number] }[] }).areas ?? [];
        const cr = areas[0]?.coordRange;
        if (cr && cr.length === 2) selectRange(cr[0], cr[1]);
        chart.dispatchAction({ type: "brush", areas: [] });
      });
      chart.dispatchAction({
        type: "takeGlobalCursor",
        key: "brush",
        brushOption: { brushType: "lineX", brushMode: "single" },
      });
    },
    [selectRange],
  );

  if (!mem) return <RemoteStatus state={memState} what="memory curve" />;
  if (devices.length === 0 || !dev || !deviceName) {
    return <Notice>This trace has no memory events (profile with profile_memory=True).</Notice>;
  }

  return (
    <div className="mem-view" data-testid="memory-view">
      <div className="mem-controls">
        <SelectField
          label="Device"
          testId="memory-device-select"
          value={deviceName}
          options={devices.map((d) => ({ value: d.device, label: deviceLabel(d.device) }))}
          onChange={(v) => {
            setDevice(v);
            setSelected(null);
          }}
        />
        <div className="mem-range" data-testid="memory-range">
          {range
            ? `Range ${formatDuration(range.start_us)} – ${formatDuration(range.end_us)}`
            : "Whole trace (drag on the curve to select a range)"}
        </div>
        <button type="button" data-testid="memory-reset-range" disabled={!range} onClick={reset}>
          Reset range
        </button>
      </div>
      <Card title={`Memory curve: ${deviceLabel(deviceName ?? "")}`}>
        {dev.reconstructed ? (
          <Notice kind="warning">
            <span data-testid="memory-reconstructed">{RECONSTRUCTED_NOTICE}</span>
          </Notice>
        ) : null}
        <dl className="mem-summary">
          <SummaryItem label={range ? "Peak allocated in range" : "Peak allocated"} testId="memory-peak-allocated">
            {formatBytes(range ? dev.range_peak_allocated_bytes : dev.peak_allocated_bytes)}
          </SummaryItem>
          <SummaryItem label="at">{formatDuration(range ? dev.range_peak_allocated_ts : dev.peak_allocated_ts)}</SummaryItem>
          <SummaryItem label={range ? "Peak reserved in range" : "Peak reserved"} testId="memory-peak-reserved">
            {formatBytes(range ? dev.range_peak_reserved_bytes : dev.peak_reserved_bytes)}
          </SummaryItem>
        </dl>
        <ErrorBoundary title="The memory curve failed to render">
          {option ? (
            <MemChart option={option} theme={theme} height={300} testId="memory-curve" ariaLabel={`Memory curve of ${deviceName}`} onReady={onReady} />
          ) : null}
        </ErrorBoundary>
        <p className="mem-hint">Drag across the curve to select a time range; select a row below to see its lifetime.</p>
      </Card>
      <MemoryEvents
        selection={selection}
        device={deviceName}
        range={range}
        reason={mem.pairs_reason}
        selectedKey={selected?.key ?? null}
        onSelect={(key, row) => setSelected((prev) => (prev?.key === key ? null : { key, row }))}
      />
      <MemoryStats selection={selection} device={deviceName} range={range} />
    </div>
  );
}
