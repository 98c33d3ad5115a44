// The Memory view of one trace file: device selector, the allocated/reserved step curve with its peak,
// a drag-selected time range that filters the events and statistics tables (and zooms the curve, which
// is refetched at that window so peaks stay exact), and the two server-paged tables with CSV links.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { memoryEventsUrl, memoryStatsUrl, memoryUrl, type TimeRange } from "../api/routes";
import type { MemoryEventRow, MemoryEventsReady, MemoryReady, MemoryStatRow, MemoryStatsReady } from "../api/types";
import type { Selection } from "../api/types";
import { Card } from "../components/Card";
import { ErrorBoundary } from "../components/ErrorBoundary";
import { CsvLink, SelectField, TextField } from "../components/Fields";
import { Notice } from "../components/Notice";
import { PagedTable, type Column } from "../components/PagedTable";
import { RemoteStatus } from "../components/RemoteStatus";
import { chartTextColor } from "../components/chartColors";
import { useDebounced } from "../hooks/useDebounced";
import { remoteData, useRemote } from "../hooks/useRemote";
import { useServerTable } from "../hooks/useServerTable";
import type { Theme } from "../hooks/useTheme";
import { DASH, formatBytes, formatDuration, formatNumber } from "../util/format";
import { DEFAULT_MEMORY_STAT_SORT, MEM_EVENT_DEFS, MEM_STAT_DEFS, RECONSTRUCTED_NOTICE } from "../memory/definitions";
import type { MemChartInstance } from "../memory/echarts";
import { formatAddress, parseBytes } from "../memory/layout";
import { MemChart } from "../memory/MemChart";
import { memoryCurveOption } from "../memory/options";
import { useMemoryStyles } from "../memory/useMemoryStyles";

export const MEMORY_PAGE_SIZE = 100;
const CURVE_WIDTH_PX = 1600;

/** The browser-test hook: select a range without dragging, read the current one. */
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

export function eventKey(r: MemoryEventRow, i: number): string {
  return `${r.addr ?? "?"}:${r.alloc_us ?? "?"}:${r.free_us ?? "?"}:${i}`;
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
          options={devices.map((d) => ({ value: d.device, label: d.device }))}
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
      <Card title={`Memory curve: ${deviceName}`}>
        {dev.reconstructed ? (
          <Notice kind="warning">
            <span data-testid="memory-reconstructed">{RECONSTRUCTED_NOTICE}</span>
          </Notice>
        ) : null}
        <dl className="mem-summary">
          <div>
            <dt>{range ? "Peak allocated in range" : "Peak allocated"}</dt>
            <dd data-testid="memory-peak-allocated">
              {formatBytes(range ? dev.range_peak_allocated_bytes : dev.peak_allocated_bytes)}
            </dd>
          </div>
          <div>
            <dt>at</dt>
            <dd>{formatDuration(range ? dev.range_peak_allocated_ts : dev.peak_allocated_ts)}</dd>
          </div>
          <div>
            <dt>{range ? "Peak reserved in range" : "Peak reserved"}</dt>
            <dd data-testid="memory-peak-reserved">
              {formatBytes(range ? dev.range_peak_reserved_bytes : dev.peak_reserved_bytes)}
            </dd>
          </div>
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

function eventColumns(): Column<MemoryEventRow>[] {
  return [
    { key: "op", label: "Operator", tooltip: MEM_EVENT_DEFS.op, className: "name", render: (r) => <span className="cell-name">{r.op ?? "\u2013"}</span> },
    { key: "size_bytes", label: "Size", numeric: true, tooltip: MEM_EVENT_DEFS.size_bytes, render: (r) => formatBytes(r.size_bytes) },
    { key: "alloc_us", label: "Alloc time", numeric: true, tooltip: MEM_EVENT_DEFS.alloc_us, render: (r) => formatDuration(r.alloc_us) },
    { key: "free_us", label: "Free time", numeric: true, tooltip: MEM_EVENT_DEFS.free_us, render: (r) => formatDuration(r.free_us) },
    { key: "duration_us", label: "Duration", numeric: true, tooltip: MEM_EVENT_DEFS.duration_us, render: (r) => formatDuration(r.duration_us) },
    { key: "addr", label: "Address", tooltip: MEM_EVENT_DEFS.addr, render: (r) => <code>{formatAddress(r.addr)}</code> },
  ];
}

interface EventsProps {
  selection: Selection;
  device: string;
  range: TimeRange | null;
  reason: string | null;
  selectedKey: string | null;
  onSelect: (key: string, row: MemoryEventRow) => void;
}

function MemoryEvents({ selection, device, range, reason, selectedKey, onSelect }: EventsProps) {
  const [minText, setMinText] = useState("");
  const [maxText, setMaxText] = useState("");
  const [searchText, setSearchText] = useState("");
  const table = useServerTable(MEMORY_PAGE_SIZE);
  const { offset, setOffset } = table;
  const search = useDebounced(searchText.trim(), 250);
  const minParsed = parseBytes(minText);
  const maxParsed = parseBytes(maxText);
  const min = useDebounced(minParsed === undefined ? null : minParsed, 250);
  const max = useDebounced(maxParsed === undefined ? null : maxParsed, 250);
  // a new range or device starts at the first page
  useEffect(() => setOffset(0), [setOffset, range, device, min, max, search]);
  const q = { device, range, min_bytes: min, max_bytes: max, search, ...table.query };
  const state = useRemote<MemoryEventsReady>(
    reason ? null : memoryEventsUrl(selection, { ...q, offset, limit: MEMORY_PAGE_SIZE }),
  );
  const data = remoteData(state);
  const why = reason ?? data?.reason ?? null;
  const columns = useMemo(eventColumns, []);
  const shown = table.shown(data, "size_bytes");
  const csv = memoryEventsUrl(selection, { ...q, ...shown }, false);

  return (
    <Card title="Memory events">
      {why ? (
        <Notice>
          <span data-testid="memory-events-reason">{why}</span>
        </Notice>
      ) : (
        <>
          <div className="mem-controls">
            <TextField
              type="text"
              label="Min size"
              testId="memory-min-size"
              placeholder="e.g. 1 MiB"
              invalid={minParsed === undefined}
              value={minText}
              onChange={setMinText}
            />
            <TextField
              type="text"
              label="Max size"
              testId="memory-max-size"
              placeholder="e.g. 2 GiB"
              invalid={maxParsed === undefined}
              value={maxText}
              onChange={setMaxText}
            />
            <TextField
              label="Search"
              testId="memory-events-search"
              placeholder="operator name"
              value={searchText}
              onChange={setSearchText}
            />
            <CsvLink href={csv} testId="memory-events-csv" />
          </div>
          <RemoteStatus state={state} what="memory events" />
          {data ? (
            <PagedTable
              testId="memory-events-table"
              rowTestId="memory-event-row"
              columns={columns}
              rowKey={(r, i) => eventKey(r, i + (data.offset ?? 0))}
              {...table.page(data, shown, state.kind === "fetching")}
              selectedKey={selectedKey}
              onRowClick={(row, key) => onSelect(key, row)}
            />
          ) : null}
        </>
      )}
    </Card>
  );
}

function statColumns(): Column<MemoryStatRow>[] {
  const bytes = (key: keyof MemoryStatRow, label: string): Column<MemoryStatRow> => ({
    key,
    label,
    numeric: true,
    tooltip: MEM_STAT_DEFS[key],
    render: (r) => formatBytes(r[key] as number),
  });
  const count = (key: keyof MemoryStatRow, label: string): Column<MemoryStatRow> => ({
    key,
    label,
    numeric: true,
    tooltip: MEM_STAT_DEFS[key],
    render: (r) => formatNumber(r[key] as number),
  });
  return [
    { key: "name", label: "Operator", className: "name", render: (r) => <span className="cell-name">{r.name}</span> },
    count("calls", "Calls"),
    bytes("size_increase_bytes", "Size increase"),
    bytes("self_size_increase_bytes", "Self size increase"),
    count("allocations", "Allocations"),
    count("self_allocations", "Self allocations"),
    bytes("allocation_bytes", "Allocation size"),
    bytes("self_allocation_bytes", "Self allocation size"),
    {
      key: "self_not_freed_bytes",
      label: "Allocated, not freed by end",
      numeric: true,
      tooltip: MEM_STAT_DEFS.self_not_freed_bytes,
      render: (r) => (r.self_not_freed_bytes === null ? DASH : formatBytes(r.self_not_freed_bytes)),
    },
  ];
}

function MemoryStats({ selection, device, range }: { selection: Selection; device: string; range: TimeRange | null }) {
  const [searchText, setSearchText] = useState("");
  const table = useServerTable(MEMORY_PAGE_SIZE);
  const { offset, setOffset } = table;
  const search = useDebounced(searchText.trim(), 250);
  useEffect(() => setOffset(0), [setOffset, range, device, search]);
  const q = { device, range, search, ...table.query };
  const state = useRemote<MemoryStatsReady>(memoryStatsUrl(selection, { ...q, offset, limit: MEMORY_PAGE_SIZE }));
  const data = remoteData(state);
  const columns = useMemo(statColumns, []);
  const shown = table.shown(data, DEFAULT_MEMORY_STAT_SORT);
  const csv = memoryStatsUrl(selection, { ...q, ...shown }, false);
  return (
    <Card title="Memory statistics by operator">
      <div className="mem-controls">
        <TextField
          label="Search"
          testId="memory-stats-search"
          placeholder="operator name"
          value={searchText}
          onChange={setSearchText}
        />
        <CsvLink href={csv} testId="memory-stats-csv" />
      </div>
      <RemoteStatus state={state} what="memory statistics" />
      {data ? (
        <PagedTable
          testId="memory-stats-table"
          rowTestId="memory-stat-row"
          columns={columns}
          rowKey={(r) => r.name}
          {...table.page(data, shown, state.kind === "fetching")}
        />
      ) : null}
    </Card>
  );
}
