// The Distributed tab's process-group table (issue 20): one row per group of the loaded ranks'
// collectives, longest time first; clicking a row lists its ranks' own time and exposed time.
import { useState } from "react";
import type { ProcessGroup } from "../../api/types";
import { DataTable, Th } from "../../components/DataTable";
import { DIST_DEFS } from "./definitions";
import { gbpsText, ranksText } from "./model";
import { formatBytes, formatDuration, formatNumber, formatPct, formatText, percentOf } from "../../util/format";

function groupKey(g: ProcessGroup): string {
  return `${g.name}\u0000${(g.ranks ?? []).join(",")}`;
}

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
      <DataTable
        testId="groups-table"
        head={
          <>
            <Th label="Group" num={false} />
            <Th label="Description" num={false} />
            <Th label="Role" num={false} tip={DIST_DEFS.groupRole} />
            <Th label="Ranks" num={false} />
            <Th label="Size" />
            <Th label="Calls" />
            <Th label="Time" tip={DIST_DEFS.groupTime} />
            <Th label="Exposed" tip={DIST_DEFS.groupExposed} />
            <Th label="Exposed share" />
            <Th label="Bytes" />
            <Th label="Bandwidth" tip={DIST_DEFS.groupBandwidth} />
          </>
        }
      >
        {groups.map((g) => {
          const key = groupKey(g);
          const cls = key === groupKey(current) ? "clickable-row rank-row-selected" : "clickable-row";
          return (
            <tr key={key} className={cls} data-testid="group-row" data-group={g.name} onClick={() => setSelected(key)}>
              <td className="cell-code">{g.name}</td>
              <td className="cell-code">{formatText(g.description)}</td>
              <td data-testid="group-role">{formatText(g.role)}</td>
              <td title={g.ranks ? g.ranks.join(", ") : undefined}>{ranksText(g.ranks)}</td>
              <td className="num">{formatNumber(g.size)}</td>
              <td className="num">{formatNumber(g.calls)}</td>
              <td className="num">{formatDuration(g.time_us)}</td>
              <td className="num">{formatDuration(g.exposed_us)}</td>
              <td className="num">{formatPct(percentOf(g.exposed_us, g.time_us), 1)}</td>
              <td className="num">{formatBytes(g.bytes)}</td>
              <td className="num">{gbpsText(g.bandwidth_gbps)}</td>
            </tr>
          );
        })}
      </DataTable>
      <p className="muted" data-testid="group-ranks-title">
        Group {current.name}
        {current.role ? ` (${current.role})` : ""}: {formatNumber(current.ranks_loaded)} of {formatNumber(current.size)} ranks
        loaded
      </p>
      <DataTable
        testId="group-ranks-table"
        head={
          <>
            <Th label="Rank" num={false} />
            <Th label="Calls" />
            <Th label="Time" />
            <Th label="Exposed" tip={DIST_DEFS.groupExposed} />
            <Th label="Bytes" />
          </>
        }
      >
        {current.by_rank.map((r) => (
          <tr key={r.rank} data-testid="group-rank-row" data-rank={r.rank}>
            <td>{r.rank}</td>
            <td className="num">{formatNumber(r.calls)}</td>
            <td className="num">{formatDuration(r.time_us)}</td>
            <td className="num">{formatDuration(r.exposed_us)}</td>
            <td className="num">{formatBytes(r.bytes)}</td>
          </tr>
        ))}
      </DataTable>
    </>
  );
}
