// The Operator view: four top-N donuts and the operator table, sorted, searched and paged on the
// server. Rows expand into their call stacks; frames with a file go to source.
import { useCallback, useMemo, useState } from "react";
import { tableCsvUrl, tableUrl, type TableQuery } from "../../api/routes";
import type { OperatorGroupBy, OperatorRow, OperatorsReady, Selection, StackFrame } from "../../api/types";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import type { Column } from "../../components/PagedTable";
import { TableCard } from "../../components/TableCard";
import { traceColumn } from "../../components/ShowInTrace";
import { RemoteStatus } from "../../components/RemoteStatus";
import { Toast } from "../../components/Toast";
import { TableToolbar } from "../../components/TableToolbar";
import { TopDonut } from "../../components/TopDonut";
import { useSearchBox } from "../../hooks/useSearchBox";
import { remoteData, useRemote } from "../../hooks/useRemote";
import { useExpanded, useServerTable } from "../../hooks/useServerTable";
import type { Theme } from "../../hooks/useTheme";
import { formatBool, formatDuration, formatNumber, formatPct, DASH } from "../../util/format";
import { goToSource } from "../../util/gotoSource";
import { OP_DEFS } from "../../util/tableDefinitions";
import { OperatorStacks } from "./OperatorStacks";
import { ElidedName } from "../../components/ElidedName";

export const PAGE_SIZE = 100;

const GROUPS: { value: OperatorGroupBy; label: string }[] = [
  { value: "operator", label: "Operator" },
  { value: "input_shape", label: "Operator + Input Shape" },
  { value: "call_stack", label: "Operator + Call Stack" },
];

function formatFlops(v: number | null): string {
  if (v === null) return DASH;
  if (v >= 1e12) return `${(v / 1e12).toFixed(2)} T`;
  if (v >= 1e9) return `${(v / 1e9).toFixed(2)} G`;
  if (v >= 1e6) return `${(v / 1e6).toFixed(2)} M`;
  return formatNumber(v);
}

export function operatorColumns(groupBy: OperatorGroupBy, rows: OperatorRow[], hasDevice: boolean): Column<OperatorRow>[] {
  const cols: Column<OperatorRow>[] = [
    { key: "name", label: "Name", render: (r) => <ElidedName text={r.name} />, className: "name" },
  ];
  if (groupBy === "input_shape")
    cols.push({ key: "input_shape", label: "Input Shape", render: (r) => <code className="cell-code">{r.input_shape ?? DASH}</code> });
  if (groupBy === "call_stack")
    cols.push({ key: "call_stack", label: "Call Stack", render: (r) => <pre className="cell-stack">{r.call_stack ?? DASH}</pre> });
  cols.push(
    { key: "calls", label: "Calls", numeric: true, tooltip: OP_DEFS.calls, render: (r) => formatNumber(r.calls) },
    { key: "host_self_us", label: "Host Self", numeric: true, tooltip: OP_DEFS.host_self_us, render: (r) => formatDuration(r.host_self_us) },
    { key: "host_total_us", label: "Host Total", numeric: true, tooltip: OP_DEFS.host_total_us, render: (r) => formatDuration(r.host_total_us) },
  );
  if (hasDevice)
    cols.push(
      { key: "device_self_us", label: "Device Self", numeric: true, tooltip: OP_DEFS.device_self_us, render: (r) => formatDuration(r.device_self_us) },
      { key: "device_total_us", label: "Device Total", numeric: true, tooltip: OP_DEFS.device_total_us, render: (r) => formatDuration(r.device_total_us) },
      { key: "tc_eligible", label: "TC Eligible", tooltip: OP_DEFS.tc_eligible, render: (r) => formatBool(r.tc_eligible) },
      { key: "tc_self_pct", label: "TC Self", numeric: true, tooltip: OP_DEFS.tc_self_pct, render: (r) => formatPct(r.tc_self_pct, 1) },
      { key: "tc_total_pct", label: "TC Total", numeric: true, tooltip: OP_DEFS.tc_total_pct, render: (r) => formatPct(r.tc_total_pct, 1) },
    );
  if (hasDevice && rows.some((r) => (r.graph_replay_self_us ?? 0) > 0))
    cols.push({
      key: "graph_replay_self_us",
      label: "From Graph Replay",
      numeric: true,
      tooltip: OP_DEFS.graph_replay_self_us,
      render: (r) => formatDuration(r.graph_replay_self_us ?? 0),
    });
  if (rows.some((r) => r.flops !== null))
    cols.push(
      { key: "flops", label: "FLOPs", numeric: true, tooltip: OP_DEFS.flops, render: (r) => formatFlops(r.flops) },
      { key: "tflops_per_s", label: "TFLOP/s", numeric: true, tooltip: OP_DEFS.tflops_per_s, render: (r) => (r.tflops_per_s === null ? DASH : r.tflops_per_s.toFixed(2)) },
    );
  return cols;
}

interface OperatorViewProps {
  selection: Selection;
  theme: Theme;
  /** "show in trace": switches to the Trace view zoomed to this event row. */
  onShowInTrace?: (row: number) => void;
}

export function OperatorView({ selection, theme, onShowInTrace }: OperatorViewProps) {
  const [groupBy, setGroupBy] = useState<OperatorGroupBy>("operator");
  const { expanded, toggle, collapse } = useExpanded();
  // A new page or sort shows its rows collapsed.
  const table = useServerTable(PAGE_SIZE, collapse);
  const { offset, setOffset } = table;
  // Everything that changes which rows exist starts again at the first page, collapsed.
  const reset = () => {
    setOffset(0);
    collapse();
  };
  const searchBox = useSearchBox(reset);
  const search = searchBox.search;
  const [toast, setToast] = useState<string | null>(null);

  const query: TableQuery = {
    group_by: groupBy,
    ...table.query,
    search,
    offset,
    limit: PAGE_SIZE,
  };
  const url = tableUrl("operators", selection, query);
  const state = useRemote<OperatorsReady>(url);
  const data = remoteData(state);
  const columns = useMemo(
    () =>
      data
        ? [...operatorColumns(data.group_by, data.rows, data.has_device), ...(onShowInTrace ? [traceColumn<OperatorRow>(onShowInTrace)] : [])]
        : [],
    [data, onShowInTrace],
  );

  const onGoto = useCallback((frame: StackFrame) => {
    const where = goToSource(frame);
    if (where) setToast(`Source: ${where} (copied)`);
  }, []);
  const clearToast = useCallback(() => setToast(null), []);

  const shown = table.shown(data, data?.default_sort ?? "");
  // The CSV is what the table shows: the effective sort (the server default made explicit).
  const csvUrl = tableCsvUrl("operators", selection, { ...query, sort: shown.sort || undefined, order: shown.order });

  return (
    <div className="table-view" data-testid="operator-view">
      <TableToolbar
        groupBy={{ testId: "op-group-by", value: groupBy, options: GROUPS, onChange: setGroupBy }}
        onEdit={reset}
        searches={[{ label: "Search", testId: "op-search", placeholder: "operator name", box: searchBox }]}
        csvUrl={csvUrl}
      />
      <RemoteStatus state={state} what="operator table" />
      {data ? (
        <>
          <ErrorBoundary title="Operator charts failed to render">
            <div className={data.has_device ? "grid-4" : "grid-2"}>
              {data.has_device ? (
                <>
                  <TopDonut title="Device Self Time" items={data.top.device_self_us} theme={theme} testId="donut-device-self" />
                  <TopDonut title="Device Total Time" items={data.top.device_total_us} theme={theme} testId="donut-device-total" />
                </>
              ) : null}
              <TopDonut title="Host Self Time" items={data.top.host_self_us} theme={theme} testId="donut-host-self" />
              <TopDonut title="Host Total Time" items={data.top.host_total_us} theme={theme} testId="donut-host-total" />
            </div>
          </ErrorBoundary>
          <TableCard
            title="Operators"
            what="operators"
            filters={[search]}
            testId="operator-table"
            columns={columns}
            {...table.page(data, shown, state.kind === "fetching")}
            expanded={expanded}
            onToggle={toggle}
            expandTestId="op-expand"
            renderExpanded={(row) => <OperatorStacks selection={selection} rowKey={row.key} groupBy={data.group_by} onGoto={onGoto} />}
          />
        </>
      ) : null}
      <Toast text={toast} onDone={clearToast} />
    </div>
  );
}
