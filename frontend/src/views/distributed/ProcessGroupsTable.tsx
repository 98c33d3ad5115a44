// The Distributed tab's process-group table: one row per group of the loaded ranks'
// collectives, longest time first; clicking a row lists its ranks' own time and exposed time.
import { useState } from "react";
import type { ProcessGroup } from "../../api/types";
import { ColumnTable, type TableColumn } from "../../components/ColumnTable";
import { DIST_DEFS } from "./definitions";
import { gbpsText, ranksText } from "./model";
import { formatBytes, formatDuration, formatNumber, formatPct, formatText, percentOf } from "../../util/format";

function groupKey(g: ProcessGroup): string {
  return `${g.name}\u0000${(g.ranks ?? []).join(",")}`;
}

const GROUP_COLUMNS: TableColumn<ProcessGroup>[] = [
  { label: "Group", num: false, className: "cell-code", cell: (g) => g.name },
  { label: "Description", num: false, className: "cell-code", cell: (g) => formatText(g.description) },
  { label: "Role", num: false, tip: DIST_DEFS.groupRole, cellTestId: "group-role", cell: (g) => formatText(g.role) },
  { label: "Ranks", num: false, title: (g) => (g.ranks ? g.ranks.join(", ") : undefined), cell: (g) => ranksText(g.ranks) },
  { label: "Size", cell: (g) => formatNumber(g.size) },
  { label: "Calls", cell: (g) => formatNumber(g.calls) },
  { label: "Time", tip: DIST_DEFS.groupTime, cell: (g) => formatDuration(g.time_us) },
  { label: "Exposed", tip: DIST_DEFS.groupExposed, cell: (g) => formatDuration(g.exposed_us) },
  { label: "Exposed share", cell: (g) => formatPct(percentOf(g.exposed_us, g.time_us), 1) },
  { label: "Bytes", cell: (g) => formatBytes(g.bytes) },
  { label: "Bandwidth", tip: DIST_DEFS.groupBandwidth, cell: (g) => gbpsText(g.bandwidth_gbps) },
];

const GROUP_RANK_COLUMNS: TableColumn<ProcessGroup["by_rank"][number]>[] = [
  { label: "Rank", num: false, cell: (r) => r.rank },
  { label: "Calls", cell: (r) => formatNumber(r.calls) },
  { label: "Time", cell: (r) => formatDuration(r.time_us) },
  { label: "Exposed", tip: DIST_DEFS.groupExposed, cell: (r) => formatDuration(r.exposed_us) },
  { label: "Bytes", cell: (r) => formatBytes(r.bytes) },
];

/** ``messages``: how the groups were found (e.g. the one-group fallback), shown under the table. */
export function ProcessGroupsTable({ groups, messages = [] }: { groups: ProcessGroup[] | undefined; messages?: string[] }) {
  const [selected, setSelected] = useState<string | null>(null);
  if (groups === undefined) return <p className="muted">Process groups are not sent by this server.</p>;
  if (groups.length === 0) return <p className="muted" data-testid="groups-empty">No collective kernels in these ranks.</p>;
  const current = groups.find((g) => groupKey(g) === selected) ?? groups[0]!;
  return (
    <>
      {messages.map((m) => (
        <p key={m} className="muted" data-testid="groups-message">
          {m}
        </p>
      ))}
      <ColumnTable
        testId="groups-table"
        columns={GROUP_COLUMNS}
        rows={groups}
        rowKey={groupKey}
        rowAttrs={(g) => ({
          className: groupKey(g) === groupKey(current) ? "clickable-row rank-row-selected" : "clickable-row",
          "data-testid": "group-row",
          "data-group": g.name,
          onClick: () => setSelected(groupKey(g)),
        })}
      />
      <p className="muted" data-testid="group-ranks-title">
        Group {current.name}
        {current.role ? ` (${current.role})` : ""}: {formatNumber(current.ranks_loaded)} of {formatNumber(current.size)} ranks
        loaded
      </p>
      <ColumnTable
        testId="group-ranks-table"
        columns={GROUP_RANK_COLUMNS}
        rows={current.by_rank}
        rowKey={(r) => r.rank}
        rowAttrs={(r) => ({ "data-testid": "group-rank-row", "data-rank": r.rank })}
      />
    </>
  );
}
