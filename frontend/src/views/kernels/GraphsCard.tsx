// CUDA graph replays and torch.compile regions of one file (the `graphs` route): per graph its replays,
// time and capture status with its kernels by name (and by capturing operator when attributed); per
// compiled region its time, the Triton kernels by region, and recompilations / graph breaks per step.
// Strings from the trace are rendered as text, never HTML.
import { graphsUrl } from "../../api/routes";
import type { GraphsReady, Selection } from "../../api/types";
import { Card } from "../../components/Card";
import { DataTable, Th } from "../../components/DataTable";
import { ElidedName } from "../../components/ElidedName";
import { useRemote } from "../../hooks/useRemote";
import { formatDuration, formatNumber, formatPct, formatText } from "../../util/format";

const MAX_KERNELS = 20; // kernel rows shown per graph
const MAX_TRITON = 30;

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
              <DataTable
                testId="graph-kernels"
                head={
                  <>
                    <Th label="Kernel" num={false} />
                    <Th label="Captured by" num={false} />
                    <Th label="Frame" num={false} />
                    <Th label="Calls" />
                    <Th label="Total" />
                  </>
                }
              >
                {g.kernels.slice(0, MAX_KERNELS).map((k, i) => (
                  <tr key={i}>
                    <td className="name"><ElidedName text={k.name} /></td>
                    <td>{formatText(k.op)}</td>
                    <td>{formatText(k.frame)}</td>
                    <td className="num">{formatNumber(k.calls)}</td>
                    <td className="num">{formatDuration(k.total_us)}</td>
                  </tr>
                ))}
              </DataTable>
            </div>
          ))}
          <Advice items={cuda.advice} />
        </Card>
      ) : null}
      {compiled ? (
        <Card title="Compiled Regions (torch.compile)" testId="compiled-card">
          <DataTable
            testId="compiled-regions"
            head={
              <>
                <Th label="Region" num={false} />
                <Th label="Calls" />
                <Th label="Host" />
                <Th label="Device" />
                <Th label="Triton kernels" />
                <Th label="Triton time" />
              </>
            }
          >
            {compiled.regions.map((r) => (
              <tr key={r.name}>
                <td className="name"><ElidedName text={r.name} /></td>
                <td className="num">{formatNumber(r.calls)}</td>
                <td className="num">{formatDuration(r.host_us)}</td>
                <td className="num">{formatDuration(r.device_us)}</td>
                <td className="num">{formatNumber(r.triton_kernels)}</td>
                <td className="num">{formatDuration(r.triton_us)}</td>
              </tr>
            ))}
          </DataTable>
          <DataTable
            testId="compile-steps"
            head={
              <>
                <Th label="Step" num={false} />
                <Th label="Regions" />
                <Th label="Frames" />
                <Th label="Versions" num={false} />
                <Th label="Recompilations" />
                <Th label="Between regions" />
                <Th label="Cache lookup" />
              </>
            }
          >
            {compiled.steps.map((s) => (
              <tr key={s.step}>
                <td>{s.step}</td>
                <td className="num">{formatNumber(s.regions)}</td>
                <td className="num">{formatNumber(s.frames)}</td>
                <td>{s.versions.join(" ") || "–"}</td>
                <td className="num">{formatNumber(s.recompilations)}</td>
                <td className="num">{formatDuration(s.between_us)}</td>
                <td className="num">{formatDuration(s.cache_lookup_us)}</td>
              </tr>
            ))}
          </DataTable>
          <DataTable
            testId="triton-kernels"
            head={
              <>
                <Th label="Triton kernel" num={false} />
                <Th label="Kind" num={false} />
                <Th label="Region" num={false} />
                <Th label="Source nodes" num={false} />
                <Th label="Calls" />
                <Th label="Total" />
              </>
            }
          >
            {compiled.triton_kernels.slice(0, MAX_TRITON).map((k, i) => (
              <tr key={i}>
                <td className="name"><ElidedName text={k.name} /></td>
                <td>{formatText(k.kind)}</td>
                <td>{formatText(k.region)}</td>
                <td title={k.source_lines ? k.source_lines.join("\n") : undefined}>
                  {k.source_nodes ? k.source_nodes.join(", ") : formatText(k.fused)}
                </td>
                <td className="num">{formatNumber(k.calls)}</td>
                <td className="num">{formatDuration(k.total_us)}</td>
              </tr>
            ))}
          </DataTable>
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
