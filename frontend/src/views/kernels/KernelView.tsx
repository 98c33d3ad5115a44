// The GPU Kernel view: top kernels and tensor-core share donuts, and the kernel table, sorted,
// searched (by kernel and by operator name) and paged on the server.
import { useMemo, useState } from "react";
import { tableCsvUrl, tableUrl, type TableQuery } from "../../api/routes";
import type { KernelGroupBy, KernelRow, KernelsReady, Selection } from "../../api/types";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import type { Column } from "../../components/PagedTable";
import { TableCard } from "../../components/TableCard";
import { traceColumn } from "../../components/ShowInTrace";
import { RemoteStatus } from "../../components/RemoteStatus";
import { TableToolbar } from "../../components/TableToolbar";
import { TopDonut } from "../../components/TopDonut";
import { useSearchBox } from "../../hooks/useSearchBox";
import { remoteData, useRemote } from "../../hooks/useRemote";
import { useServerTable } from "../../hooks/useServerTable";
import type { Theme } from "../../hooks/useTheme";
import { DASH, formatBool, formatDuration, formatNumber, formatPct, formatText } from "../../util/format";
import { KERNEL_DEFS } from "../../util/tableDefinitions";
import { PAGE_SIZE } from "../operators/OperatorView";
import { ElidedName } from "../../components/ElidedName";
import { GraphsCards } from "./GraphsCard";

const TC_COLORS = ["#2ca02c", "#9e9e9e"];

const GROUPS: { value: KernelGroupBy; label: string }[] = [
  { value: "kernel", label: "Kernel" },
  { value: "kernel_op_config", label: "Kernel + Op + Launch config" },
];

function num(v: number | null, digits = 0): string {
  return v === null ? DASH : formatNumber(v, digits);
}

export function kernelColumns(groupBy: KernelGroupBy): Column<KernelRow>[] {
  const cols: Column<KernelRow>[] = [
    { key: "name", label: "Kernel", render: (r) => <ElidedName text={r.name} className="cell-kernel" />, className: "name" },
  ];
  if (groupBy === "kernel_op_config")
    cols.push(
      { key: "op", label: "Operator", tooltip: KERNEL_DEFS.op, render: (r) => formatText(r.op) },
      { key: "grid", label: "Grid", tooltip: KERNEL_DEFS.grid, render: (r) => formatText(r.grid) },
      { key: "block", label: "Block", tooltip: KERNEL_DEFS.block, render: (r) => formatText(r.block) },
      { key: "registers_per_thread", label: "Regs/Thread", numeric: true, tooltip: KERNEL_DEFS.registers_per_thread, render: (r) => num(r.registers_per_thread) },
      { key: "shared_memory_bytes", label: "Shared Mem (B)", numeric: true, tooltip: KERNEL_DEFS.shared_memory_bytes, render: (r) => num(r.shared_memory_bytes) },
      { key: "tc_eligible", label: "Op TC Eligible", tooltip: KERNEL_DEFS.tc_eligible, render: (r) => formatBool(r.tc_eligible) },
    );
  cols.push(
    { key: "tensor_cores", label: "Tensor Cores", tooltip: KERNEL_DEFS.tensor_cores, render: (r) => formatBool(r.tensor_cores) },
    { key: "calls", label: "Calls", numeric: true, tooltip: KERNEL_DEFS.calls, render: (r) => formatNumber(r.calls) },
    { key: "total_us", label: "Total", numeric: true, tooltip: KERNEL_DEFS.total_us, render: (r) => formatDuration(r.total_us) },
    { key: "mean_us", label: "Mean", numeric: true, tooltip: KERNEL_DEFS.mean_us, render: (r) => formatDuration(r.mean_us) },
    { key: "min_us", label: "Min", numeric: true, tooltip: KERNEL_DEFS.min_us, render: (r) => formatDuration(r.min_us) },
    { key: "max_us", label: "Max", numeric: true, tooltip: KERNEL_DEFS.max_us, render: (r) => formatDuration(r.max_us) },
    { key: "blocks_per_sm", label: "Blocks/SM", numeric: true, tooltip: KERNEL_DEFS.blocks_per_sm, render: (r) => num(r.blocks_per_sm, 2) },
    { key: "achieved_occupancy_pct", label: "Occupancy", numeric: true, tooltip: KERNEL_DEFS.achieved_occupancy_pct, render: (r) => formatPct(r.achieved_occupancy_pct, 1) },
  );
  return cols;
}

export function KernelView({
  selection,
  theme,
  onShowInTrace,
}: {
  selection: Selection;
  theme: Theme;
  onShowInTrace?: (row: number) => void;
}) {
  const [groupBy, setGroupBy] = useState<KernelGroupBy>("kernel");
  const table = useServerTable(PAGE_SIZE);
  const { offset, setOffset } = table;
  const kernelBox = useSearchBox(() => setOffset(0));
  const opBox = useSearchBox(() => setOffset(0));
  const search = kernelBox.search;
  const opSearch = opBox.search;

  const query: TableQuery = {
    group_by: groupBy,
    ...table.query,
    search,
    op_search: opSearch,
    offset,
    limit: PAGE_SIZE,
  };
  const state = useRemote<KernelsReady>(tableUrl("kernels", selection, query));
  const data = remoteData(state);
  const columns = useMemo(
    () => [...kernelColumns(data?.group_by ?? groupBy), ...(onShowInTrace ? [traceColumn<KernelRow>(onShowInTrace)] : [])],
    [data, groupBy, onShowInTrace],
  );
  const shown = table.shown(data, "total_us");
  const csvUrl = tableCsvUrl("kernels", selection, { ...query, ...shown });
  const tcItems = useMemo(
    () =>
      data
        ? [
            { name: "Tensor cores", value: data.tensor_core.tensor_core_us },
            { name: "Other kernels", value: data.tensor_core.other_us },
          ]
        : [],
    [data],
  );

  return (
    <div className="table-view" data-testid="kernel-view">
      <TableToolbar
        groupBy={{ testId: "kernel-group-by", value: groupBy, options: GROUPS, onChange: setGroupBy }}
        onEdit={() => setOffset(0)}
        searches={[
          { label: "Kernel", testId: "kernel-search", placeholder: "kernel name", box: kernelBox },
          { label: "Operator", testId: "kernel-op-search", placeholder: "operator name", box: opBox },
        ]}
        csvUrl={csvUrl}
      />
      <RemoteStatus state={state} what="kernel table" />
      {data ? (
        <>
          <ErrorBoundary title="Kernel charts failed to render">
            <div className="grid-2">
              <TopDonut title="Top Kernels by Total Time" items={data.top} theme={theme} testId="donut-kernels" />
              <TopDonut
                title="Tensor Core Usage (kernel time)"
                items={tcItems}
                theme={theme}
                testId="donut-tensor-core"
                colors={TC_COLORS}
              />
            </div>
          </ErrorBoundary>
          <TableCard title="GPU Kernels" what="GPU kernels" filters={[search, opSearch]} testId="kernel-table" columns={columns} {...table.page(data, shown, state.kind === "fetching")} />
          <ErrorBoundary title="CUDA graphs failed to render">
            <GraphsCards selection={selection} />
          </ErrorBoundary>
        </>
      ) : null}
    </div>
  );
}
