// The Memory tab's tables: allocation events and per-operator statistics of one device and range.
import { useEffect, useMemo, useState } from "react";
import { memoryEventsUrl, memoryStatsUrl, type TimeRange } from "../../api/routes";
import type { MemoryEventRow, MemoryEventsReady, MemoryStatRow, MemoryStatsReady } from "../../api/types";
import type { Selection } from "../../api/types";
import { Card } from "../../components/Card";
import { CsvLink, TextField } from "../../components/Fields";
import { Notice } from "../../components/Notice";
import { PagedTable, type Column } from "../../components/PagedTable";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useDebounced } from "../../hooks/useDebounced";
import { remoteData, useRemote } from "../../hooks/useRemote";
import { useSearchBox } from "../../hooks/useSearchBox";
import { useServerTable } from "../../hooks/useServerTable";
import { DASH, formatBytes, formatDuration, formatNumber } from "../../util/format";
import { DEFAULT_MEMORY_STAT_SORT, MEM_EVENT_DEFS, MEM_STAT_DEFS } from "./definitions";
import { formatAddress, parseBytes } from "./layout";
import { ElidedName } from "../../components/ElidedName";

export const MEMORY_PAGE_SIZE = 100;

export function eventKey(r: MemoryEventRow, i: number): string {
  return `${r.addr ?? "?"}:${r.alloc_us ?? "?"}:${r.free_us ?? "?"}:${i}`;
}

export function eventColumns(): Column<MemoryEventRow>[] {
  return [
    { key: "op", label: "Operator", tooltip: MEM_EVENT_DEFS.op, className: "name", render: (r) => <ElidedName text={r.op ?? "\u2013"} /> },
    { key: "size_bytes", label: "Size", numeric: true, tooltip: MEM_EVENT_DEFS.size_bytes, render: (r) => formatBytes(r.size_bytes) },
    { key: "alloc_us", label: "Alloc time", numeric: true, tooltip: MEM_EVENT_DEFS.alloc_us, render: (r) => formatDuration(r.alloc_us) },
    { key: "free_us", label: "Free time", numeric: true, tooltip: MEM_EVENT_DEFS.free_us, render: (r) => formatDuration(r.free_us) },
    { key: "duration_us", label: "Duration", numeric: true, tooltip: MEM_EVENT_DEFS.duration_us, render: (r) => formatDuration(r.duration_us) },
    { key: "addr", label: "Address", tooltip: MEM_EVENT_DEFS.addr, render: (r) => <code>{formatAddress(r.addr)}</code> },
  ];
}

export interface EventsProps {
  selection: Selection;
  device: string;
  range: TimeRange | null;
  reason: string | null;
  selectedKey: string | null;
  onSelect: (key: string, row: MemoryEventRow) => void;
}

export function MemoryEvents({ selection, device, range, reason, selectedKey, onSelect }: EventsProps) {
  const [minText, setMinText] = useState("");
  const [maxText, setMaxText] = useState("");
  const searchBox = useSearchBox();
  const search = searchBox.search;
  const table = useServerTable(MEMORY_PAGE_SIZE);
  const { offset, setOffset } = table;
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
            <TextField label="Search" testId="memory-events-search" placeholder="operator name" {...searchBox.field} />
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

export function statColumns(): Column<MemoryStatRow>[] {
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
    { key: "name", label: "Operator", className: "name", render: (r) => <ElidedName text={r.name} /> },
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

export function MemoryStats({ selection, device, range }: { selection: Selection; device: string; range: TimeRange | null }) {
  const searchBox = useSearchBox();
  const search = searchBox.search;
  const table = useServerTable(MEMORY_PAGE_SIZE);
  const { offset, setOffset } = table;
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
        <TextField label="Search" testId="memory-stats-search" placeholder="operator name" {...searchBox.field} />
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
