// The Module view: the nn.Module hierarchy as a tree table and as a flame graph (width ∝ host total),
// built from the same nodes. Clicking a flame block focuses it and reveals it in the table.
import { useMemo, useState } from "react";
import { modulesUrl } from "../../api/routes";
import type { ModuleNode, ModulesReady, Selection } from "../../api/types";
import { Card } from "../../components/Card";
import { Notice } from "../../components/Notice";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useRemote } from "../../hooks/useRemote";
import { formatDuration, formatNumber } from "../../util/format";
import { ancestorIds, flameLayout, flattenTree, idsToDepth, type NodeId } from "../../util/moduleTree";
import { MODULE_DEFS } from "../../util/tableDefinitions";
import { toggled } from "../../util/sets";
import { DataTable, Th } from "../../components/DataTable";

const ROW_PX = 22;
const PALETTE = ["#f5a45d", "#f28e2b", "#edc948", "#e8a838", "#f1b26b", "#d98c3a"];
const METRICS = ["occurrences", "operators", "host_total_us", "host_self_us", "device_total_us", "device_self_us"] as const;
const LABELS: Record<(typeof METRICS)[number], string> = {
  occurrences: "Occurrences",
  operators: "Operators",
  host_total_us: "Host Total",
  host_self_us: "Host Self",
  device_total_us: "Device Total",
  device_self_us: "Device Self",
};

function metric(node: ModuleNode, key: (typeof METRICS)[number]): string {
  const v = node[key];
  return key === "occurrences" || key === "operators" ? formatNumber(v) : formatDuration(v);
}

/** The Module tab of a file: its module tree, fetched when the tab is shown. */
export function ModulesTab({ selection }: { selection: Selection }) {
  const state = useRemote<ModulesReady>(modulesUrl(selection));
  if (state.kind !== "ready") return <RemoteStatus state={state} what="module tree" />;
  return state.data.modules ? (
    <ModuleView modules={state.data.modules} />
  ) : (
    <Notice>This trace has no module information (profile with with_modules=True).</Notice>
  );
}

export function ModuleView({ modules }: { modules: ModuleNode[] }) {
  const [expanded, setExpanded] = useState<Set<NodeId>>(() => idsToDepth(modules, 1));
  const [focus, setFocus] = useState<NodeId | null>(null);
  const rows = useMemo(() => flattenTree(modules, expanded), [modules, expanded]);
  const rects = useMemo(() => flameLayout(modules, focus), [modules, focus]);
  const depth = rects.reduce((m, r) => Math.max(m, r.depth + 1), 0);
  const replayed = useMemo(() => anyReplayed(modules), [modules]);

  const toggle = (id: NodeId) => setExpanded((prev) => toggled(prev, id));
  const focusOn = (id: NodeId | null) => {
    setFocus(id);
    if (id !== null)
      setExpanded((prev) => {
        const next = new Set(prev);
        for (const a of ancestorIds(id).slice(0, -1)) next.add(a);
        return next;
      });
  };

  return (
    <div className="table-view" data-testid="module-view">
      <Card title="Module Flame Graph (width ∝ host total time; click to focus)">
        <div className="flame-bar">
          <button type="button" className="link-button" disabled={focus === null} onClick={() => setFocus(null)}>
            Reset zoom
          </button>
        </div>
        <div className="flame" data-testid="flame" style={{ height: depth * ROW_PX }}>
          {rects
            .filter((r) => r.width >= 0.001)
            .map((r) => (
              <div
                key={r.id}
                className={`flame-block${r.id === focus ? " focused" : ""}`}
                data-testid="flame-block"
                data-id={r.id}
                title={`${r.node.name}\nhost total ${formatDuration(r.node.host_total_us)}, host self ${formatDuration(
                  r.node.host_self_us,
                )}\ndevice total ${formatDuration(r.node.device_total_us)}, device self ${formatDuration(r.node.device_self_us)}`}
                style={{
                  left: `${r.x * 100}%`,
                  width: `${r.width * 100}%`,
                  top: r.depth * ROW_PX,
                  height: ROW_PX - 2,
                  background: PALETTE[r.depth % PALETTE.length],
                }}
                onClick={() => focusOn(r.id === focus ? (ancestorIds(r.id).slice(-2, -1)[0] ?? null) : r.id)}
              >
                {r.width > 0.03 ? r.node.name : ""}
              </div>
            ))}
        </div>
      </Card>
      <Card title="Modules">
        <DataTable
          className="tree-table"
          testId="module-table"
          head={
            <>
              <Th label="Module" num={false} />
              {METRICS.map((k) => (
                <Th key={k} label={LABELS[k]} tip={MODULE_DEFS[k]} />
              ))}
              {replayed ? <Th label="From Graph Replay" tip={MODULE_DEFS.graph_replay_self_us} /> : null}
            </>
          }
        >
          {rows.map((r) => (
            <tr key={r.id} data-testid="module-row" data-id={r.id} className={r.id === focus ? "focused" : undefined}>
              <td className="name" style={{ paddingLeft: 6 + r.depth * 16 }}>
                {r.hasChildren ? (
                  <button
                    type="button"
                    className="toggle"
                    data-testid="module-expand"
                    aria-expanded={r.expanded}
                    onClick={() => toggle(r.id)}
                  >
                    {r.expanded ? "▾" : "▸"}
                  </button>
                ) : (
                  <span className="toggle-spacer" />
                )}
                <button type="button" className="link-button module-name" onClick={() => focusOn(r.id)}>
                  {r.node.name}
                </button>
              </td>
              {METRICS.map((k) => (
                <td key={k} className="num">
                  {metric(r.node, k)}
                </td>
              ))}
              {replayed ? <td className="num">{formatDuration(r.node.graph_replay_self_us ?? 0)}</td> : null}
            </tr>
          ))}
        </DataTable>
      </Card>
    </div>
  );
}

/** Whether any node's device self time came from a CUDA graph replay matched to its capture. */
function anyReplayed(nodes: ModuleNode[]): boolean {
  return nodes.some((n) => (n.graph_replay_self_us ?? 0) > 0 || anyReplayed(n.children));
}
