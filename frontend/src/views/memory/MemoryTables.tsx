// The Memory tab's tables: allocation events and per-operator statistics of one device and range.
import { useEffect, useMemo, useState } from "react";
import { memoryEventsUrl, memoryStatsUrl, type TimeRange } from "../../api/routes";
import type { MemoryEventRow, MemoryEventsReady, MemoryStatRow, MemoryStatsReady } from "../../api/types";
import type { Selection } from "../../api/types";
import { Card } from "../../components/Card";
import { CsvLink, TextField } from "../../components/Fields";
import { Notice } from "../../components/Notice";
import { PagedTable, type Column, type PagedTableProps, type TablePage } from "../../components/PagedTable";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useDebounced } from "../../hooks/useDebounced";
import { remoteData, useRemote, type RemoteState } from "../../hooks/useRemote";
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

/** A size filter ("1 MiB"); marked invalid while its text does not parse. */
function SizeField(p: { label: string; testId: string; placeholder: string; text: string; onChange: (t: string) => void }) {
  return (
    <TextField
      type="text"
      label={p.label}
      testId={p.testId}
      placeholder={p.placeholder}
      invalid={parseBytes(p.text) === undefined}
      value={p.text}
      onChange={p.onChange}
    />
  );
}

/** The operator-name search box and the CSV link of a memory table (``memory-<what>-search``/``-csv``). */
function SearchAndCsv({ field, csv, what }: { field: ReturnType<typeof useSearchBox>["field"]; csv: string; what: string }) {
  return (
    <>
      <TextField label="Search" testId={`memory-${what}-search`} placeholder="operator name" {...field} />
      <CsvLink href={csv} testId={`memory-${what}-csv`} />
    </>
  );
}

/** A memory table's load status, then its page once loaded (``memory-<noun>s-table``, rows ``memory-<noun>-row``). */
function StatusAndPage<Row, T>({
  noun,
  what,
  state,
  page,
  ...table
}: { noun: string; what: string; state: RemoteState<T>; page: TablePage<Row> | null } & Omit<PagedTableProps<Row>, keyof TablePage<Row> | "testId">) {
  return (
    <>
      <RemoteStatus state={state} what={what} />
      {page ? <PagedTable testId={`memory-${noun}s-table`} rowTestId={`memory-${noun}-row`} {...table} {...page} /> : null}
    </>
  );
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
            <SizeField label="Min size" testId="memory-min-size" placeholder="e.g. 1 MiB" text={minText} onChange={setMinText} />
            <SizeField label="Max size" testId="memory-max-size" placeholder="e.g. 2 GiB" text={maxText} onChange={setMaxText} />
            <SearchAndCsv field={searchBox.field} csv={csv} what="events" />
          </div>
          <StatusAndPage noun="event" what="memory events" state={state} page={data && table.page(data, shown, state.kind === "fetching")}
            columns={columns} rowKey={(r, i) => eventKey(r, i + (data?.offset ?? 0))} selectedKey={selectedKey} onRowClick={(row, key) => onSelect(key, row)} />
        </>
      )}
    </Card>
  );
}

export function statColumns(): Column<MemoryStatRow>[] {
  const numeric = (format: (v: number) => string) => (key: keyof MemoryStatRow, label: string): Column<MemoryStatRow> => ({
    key,
    label,
    numeric: true,
    tooltip: MEM_STAT_DEFS[key],
    render: (r) => format(r[key] as number),
  });
  const bytes = numeric(formatBytes);
  const count = numeric((v) => formatNumber(v));
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
        <SearchAndCsv field={searchBox.field} csv={csv} what="stats" />
      </div>
      <StatusAndPage noun="stat" what="memory statistics" state={state} page={data && table.page(data, shown, state.kind === "fetching")} columns={columns} rowKey={(r) => r.name} />
    </Card>
  );
}
