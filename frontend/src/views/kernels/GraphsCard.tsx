// CUDA graph replays and torch.compile regions of one file (the `graphs` route): per graph its replays,
// time and capture status with its kernels by name (and by capturing operator when attributed); per
// compiled region its time, the Triton kernels by region, and recompilations / graph breaks per step.
// Strings from the trace are rendered as text, never HTML.
import { graphsUrl } from "../../api/routes";
import type {
  CompiledRegionRow,
  CompileStepRow,
  GraphKernelRow,
  GraphsReady,
  Selection,
  TritonKernelRow,
} from "../../api/types";
import { Card } from "../../components/Card";
import { ColumnTable, type TableColumn } from "../../components/ColumnTable";
import { ElidedName } from "../../components/ElidedName";
import { useRemote } from "../../hooks/useRemote";
import { formatDuration, formatNumber, formatPct, formatText } from "../../util/format";

const MAX_KERNELS = 20; // kernel rows shown per graph
const MAX_TRITON = 30;

/** A kernel's name column: elided, the whole name on hover. */
function nameColumn<Row extends { name: string }>(label: string): TableColumn<Row> {
  return { label, num: false, className: "name", cell: (r) => <ElidedName text={r.name} /> };
}

const GRAPH_KERNEL_COLUMNS: TableColumn<GraphKernelRow>[] = [
  nameColumn("Kernel"),
  { label: "Captured by", num: false, cell: (k) => formatText(k.op) },
  { label: "Frame", num: false, cell: (k) => formatText(k.frame) },
  { label: "Calls", cell: (k) => formatNumber(k.calls) },
  { label: "Total", cell: (k) => formatDuration(k.total_us) },
];

const REGION_COLUMNS: TableColumn<CompiledRegionRow>[] = [
  nameColumn("Region"),
  { label: "Calls", cell: (r) => formatNumber(r.calls) },
  { label: "Host", cell: (r) => formatDuration(r.host_us) },
  { label: "Device", cell: (r) => formatDuration(r.device_us) },
  { label: "Triton kernels", cell: (r) => formatNumber(r.triton_kernels) },
  { label: "Triton time", cell: (r) => formatDuration(r.triton_us) },
];

const STEP_COLUMNS: TableColumn<CompileStepRow>[] = [
  { label: "Step", num: false, cell: (s) => s.step },
  { label: "Regions", cell: (s) => formatNumber(s.regions) },
  { label: "Frames", cell: (s) => formatNumber(s.frames) },
  { label: "Versions", num: false, cell: (s) => s.versions.join(" ") || "–" },
  { label: "Recompilations", cell: (s) => formatNumber(s.recompilations) },
  { label: "Between regions", cell: (s) => formatDuration(s.between_us) },
  { label: "Cache lookup", cell: (s) => formatDuration(s.cache_lookup_us) },
];

const TRITON_COLUMNS: TableColumn<TritonKernelRow>[] = [
  nameColumn("Triton kernel"),
  { label: "Kind", num: false, cell: (k) => formatText(k.kind) },
  { label: "Region", num: false, cell: (k) => formatText(k.region) },
  {
    label: "Source nodes",
    num: false,
    title: (k) => (k.source_lines ? k.source_lines.join("\n") : undefined),
    cell: (k) => (k.source_nodes ? k.source_nodes.join(", ") : formatText(k.fused)),
  },
  { label: "Calls", cell: (k) => formatNumber(k.calls) },
  { label: "Total", cell: (k) => formatDuration(k.total_us) },
];

/** One line for the Overview: "N replays, X % of GPU kernel time in graphs"; nothing without replays. */
export function GraphsLine({ selection }: { selection: Selection }) {
  const state = useRemote<GraphsReady>(graphsUrl(selection));
  if (state.kind !== "ready" || state.data.cuda_graphs.replays === 0) return null;
  const g = state.data.cuda_graphs;
  return (
    <p className="muted" data-testid="graphs-line">
      CUDA graphs: {formatNumber(g.replays)} replays of {formatNumber(g.graphs)} graph{g.graphs === 1 ? "" : "s"},{" "}
      {formatPct(g.graph_kernel_pct, 1)} of GPU kernel time in graphs (see GPU Kernel).
    </p>
  );
}

export function GraphsCards({ selection }: { selection: Selection }) {
  const state = useRemote<GraphsReady>(graphsUrl(selection));
  if (state.kind !== "ready") return null;
  const { cuda_graphs: cuda, compiled } = state.data;
  return (
    <>
      {cuda.replays > 0 ? (
        <Card title="CUDA Graphs" testId="graphs-card">
          <p data-testid="graphs-summary">
            {formatNumber(cuda.replays)} replays of {formatNumber(cuda.graphs)} graph{cuda.graphs === 1 ? "" : "s"},{" "}
            {formatPct(cuda.graph_kernel_pct, 1)} of GPU kernel time in graphs. Kernel time in operators:{" "}
            {formatDuration(cuda.accounting.attributed_us)} ({formatDuration(cuda.accounting.from_graph_replay_us)} from
            graph replay), unattributed: {formatDuration(cuda.accounting.unattributed_us)}.
          </p>
          {cuda.graph_list.map((g) => (
            <div key={g.graph} data-testid="graph-row">
              <h3 className="card-subtitle">
                Graph {g.graph}
                {g.graph_id !== null ? ` (graph id ${g.graph_id})` : ""}: {formatNumber(g.replays)} replays ×{" "}
                {formatNumber(g.events_per_replay)} device events, kernels {formatDuration(g.kernel_us)}, gaps{" "}
                {formatDuration(g.gap_us)}, host launch {formatDuration(g.launch_us)} — {g.status.replace("_", " ")}
              </h3>
              <p className="muted">{g.note}</p>
              <ColumnTable
                testId="graph-kernels"
                columns={GRAPH_KERNEL_COLUMNS}
                rows={g.kernels.slice(0, MAX_KERNELS)}
                rowKey={(_, i) => i}
              />
            </div>
          ))}
          <Advice items={cuda.advice} />
        </Card>
      ) : null}
      {compiled ? (
        <Card title="Compiled Regions (torch.compile)" testId="compiled-card">
          <ColumnTable testId="compiled-regions" columns={REGION_COLUMNS} rows={compiled.regions} rowKey={(r) => r.name} />
          <ColumnTable testId="compile-steps" columns={STEP_COLUMNS} rows={compiled.steps} rowKey={(s) => s.step} />
          <ColumnTable
            testId="triton-kernels"
            columns={TRITON_COLUMNS}
            rows={compiled.triton_kernels.slice(0, MAX_TRITON)}
            rowKey={(_, i) => i}
          />
          <Advice items={compiled.advice} />
        </Card>
      ) : null}
    </>
  );
}

function Advice({ items }: { items: { rule: string; text: string }[] }) {
  if (items.length === 0) return null;
  return (
    <ul className="recommendations" data-testid="graphs-advice">
      {items.map((a) => (
        <li key={a.rule}>{a.text}</li>
      ))}
    </ul>
  );
}
