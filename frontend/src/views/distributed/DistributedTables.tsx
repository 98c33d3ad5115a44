// The Distributed tab's tables: ranks, collectives, a rank's communication ops, devices.
import type { Arrival, Collective, CommOp, DistributedData, RankRow } from "../../api/types";
import { distributedText } from "../../components/ConfigurationCard";
import { ColumnTable, type TableColumn } from "../../components/ColumnTable";
import { DataTable, Th } from "../../components/DataTable";
import { DIST_DEFS } from "./definitions";
import { gbpsText } from "./model";
import { formatBytes, formatDuration, formatGiB, formatNumber, formatPct, formatText } from "../../util/format";
import { gpuGeneration } from "../../util/gpuGeneration";

export function RankTable({
  ranks,
  stragglers,
  arrivals = new Map(),
  selected,
  onSelect,
}: {
  ranks: RankRow[];
  stragglers: Set<number>;
  /** Arrival evidence per rank (absent from older servers: the columns then read "–"). */
  arrivals?: Map<number, Arrival>;
  selected: number | null;
  onSelect: (rank: number) => void;
}) {
  return (
    <DataTable
      testId="rank-table"
      head={
        <>
          <Th label="Rank" num={false} tip={DIST_DEFS.straggler} />
          <Th label="Worker" num={false} />
          <Th label="Computation" tip={DIST_DEFS.computation} />
          <Th label="Overlap" tip={DIST_DEFS.overlap} />
          <Th label="Communication" tip={DIST_DEFS.communication} />
          <Th label="Other" tip={DIST_DEFS.other} />
          <Th label="Step time" />
          <Th label="Transfer" tip={DIST_DEFS.transfer} />
          <Th label="Sync" tip={DIST_DEFS.sync} />
          <Th label="Latency" tip={DIST_DEFS.latency} />
          <Th label="Last at" tip={DIST_DEFS.lastAt} />
          <Th label="Others waited" tip={DIST_DEFS.waited} />
        </>
      }
    >
      {ranks.map((r) => {
        const straggler = stragglers.has(r.rank);
        const arrival = arrivals.get(r.rank);
        const cls = ["clickable-row", straggler ? "rank-row-straggler" : "", selected === r.rank ? "rank-row-selected" : ""].filter(Boolean).join(" ");
        return (
          <tr key={r.rank} className={cls} data-testid="rank-row" data-rank={r.rank} onClick={() => onSelect(r.rank)}>
            <td>
              {r.rank}
              {straggler ? (
                <span className="straggler-badge" data-testid="straggler-badge" title={arrival ? arrival.text : DIST_DEFS.straggler}>
                  straggler
                </span>
              ) : null}
            </td>
            <td className="cell-code">{r.worker}</td>
            <td className="num">{formatDuration(r.computation_us)}</td>
            <td className="num">{formatDuration(r.overlap_us)}</td>
            <td className="num">{formatDuration(r.communication_us)}</td>
            <td className="num">{formatDuration(r.other_us)}</td>
            <td className="num">{formatDuration(r.total_us)}</td>
            <td className="num">{formatDuration(r.transfer_us)}</td>
            <td className="num">{formatDuration(r.sync_us)}</td>
            <td className="num">{formatDuration(r.latency_us)}</td>
            <td className="num">{arrival ? `${formatNumber(arrival.last)} / ${formatNumber(arrival.instances)}` : "\u2013"}</td>
            <td className="num">{arrival && arrival.last > 0 ? formatDuration(arrival.wait_mean_us) : "\u2013"}</td>
          </tr>
        );
      })}
    </DataTable>
  );
}

export function MatchingSummary({ view }: { view: DistributedData }) {
  const m = view.matching;
  if (!m || m.by_type.length === 0) return null;
  return (
    <p className="muted" data-testid="matching-summary">
      Matched by {formatText(m.method)}:{" "}
      {m.by_type.map((t) => `${formatText(t.name)} ${formatNumber(t.matched)} matched, ${formatNumber(t.unmatched)} unmatched`).join(" · ")}
    </p>
  );
}

const COLLECTIVE_COLUMNS: TableColumn<Collective>[] = [
  { label: "Collective", num: false, className: "cell-code", cell: (c) => c.name },
  { label: "Calls", cell: (c) => formatNumber(c.calls) },
  {
    label: "Bytes",
    title: (c) => (c.calls_without_bytes ? `${formatNumber(c.calls_without_bytes)} calls of unknown size are not in it` : undefined),
    cell: (c) => formatBytes(c.bytes),
  },
  { label: "Group size", cell: (c) => formatNumber(c.group_size) },
  { label: "Transfer", tip: DIST_DEFS.transfer, cell: (c) => formatDuration(c.transfer_us) },
  { label: "Sync", tip: DIST_DEFS.sync, cell: (c) => formatDuration(c.sync_us) },
  { label: "Algbw", tip: DIST_DEFS.algbw, cell: (c) => gbpsText(c.algbw_gbps) },
  {
    label: "Busbw",
    tip: DIST_DEFS.busbw,
    title: (c) => (c.bus_factor !== undefined ? `algbw × ${c.bus_factor.toFixed(3)} (n = ${c.group_size ?? "?"})` : undefined),
    cell: (c) => gbpsText(c.busbw_gbps),
  },
];

const COMM_OP_COLUMNS: TableColumn<CommOp>[] = [
  { label: "Op", num: false, className: "cell-code", cell: (o) => o.name },
  { label: "Calls", cell: (o) => formatNumber(o.calls) },
  { label: "Total size", cell: (o) => formatBytes(o.total_bytes) },
  { label: "Mean size", cell: (o) => formatBytes(o.mean_bytes === null ? null : Math.round(o.mean_bytes)) },
  { label: "Latency", tip: DIST_DEFS.latency, cell: (o) => formatDuration(o.latency_us) },
  { label: "Transfer", tip: DIST_DEFS.transfer, cell: (o) => formatDuration(o.transfer_us) },
  { label: "Sync", tip: DIST_DEFS.sync, cell: (o) => formatDuration(o.sync_us) },
];

export function CollectivesTable({ view }: { view: DistributedData }) {
  if (view.collectives.length === 0)
    return (
      <>
        <MatchingSummary view={view} />
        <p className="muted">No collectives matched across ranks.</p>
      </>
    );
  return (
    <div className="table-scroll">
      <MatchingSummary view={view} />
      <ColumnTable
        scroll={false}
        testId="collectives-table"
        columns={COLLECTIVE_COLUMNS}
        rows={view.collectives}
        rowKey={(c, i) => `${c.name}\u0000${i}`}
        rowAttrs={() => ({ "data-testid": "collective-row" })}
      />
      {view.bandwidth_caveat ? (
        <p className="muted" data-testid="bandwidth-caveat">
          {view.bandwidth_caveat}
        </p>
      ) : null}
    </div>
  );
}

export function CommOpsTable({ ranks, current, onSelect }: { ranks: RankRow[]; current: RankRow | undefined; onSelect: (rank: number) => void }) {
  return (
    <>
      <label className="selector" style={{ marginBottom: 8 }}>
        <span className="selector-label">Rank</span>
        <select data-testid="comm-rank-select" value={current?.rank ?? ""} onChange={(e) => onSelect(Number(e.target.value))}>
          {ranks.map((r) => (
            <option key={r.rank} value={r.rank}>
              {r.rank} ({r.worker})
            </option>
          ))}
        </select>
      </label>
      {!current || current.comm_ops.length === 0 ? (
        <p className="muted">This rank has no communication ops.</p>
      ) : (
        <ColumnTable
          testId="comm-ops-table"
          columns={COMM_OP_COLUMNS}
          rows={current.comm_ops}
          rowKey={(o, i) => `${o.name}\u0000${i}`}
          rowAttrs={() => ({ "data-testid": "comm-op-row" })}
        />
      )}
    </>
  );
}

/** Each rank's GPUs, as the server sends them with the rank (the very rows of that rank's Overview). */
export function DeviceTable({ ranks }: { ranks: RankRow[] }) {
  return (
    <DataTable
      testId="device-table"
      head={
        <>
          <Th label="Rank" num={false} />
          <Th label="Worker" num={false} />
          <Th label="Backend" num={false} />
          <Th label="GPU" num={false} />
          <Th label="Name" num={false} />
          <Th label="Memory" />
          <Th label="Compute capability / arch." />
          <Th label="Utilization" />
        </>
      }
    >
      {ranks.flatMap((row) => {
        if (row.gpus === undefined) {
          return [
            <tr key={`${row.rank}`} data-testid="device-row">
              <td>{row.rank}</td>
              <td className="cell-code">{row.worker}</td>
              <td colSpan={6} className="muted">
                not sent by this server
              </td>
            </tr>,
          ];
        }
        const backend = distributedText(row.distributed ?? null);
        const gpus = row.gpus.length > 0 ? row.gpus : [null];
        return gpus.map((g, i) => (
          <tr key={`${row.rank}:${g?.id ?? i}`} data-testid="device-row">
            <td>{row.rank}</td>
            <td className="cell-code">{row.worker}</td>
            <td>{backend}</td>
            <td>{g ? formatNumber(g.id) : "\u2013"}</td>
            <td>{formatText(g?.name ?? null)}</td>
            <td className="num">{formatGiB(g?.memory_bytes ?? null)}</td>
            <td className="num">{g ? gpuGeneration(g).value : "\u2013"}</td>
            <td className="num">{formatPct(g?.utilization_pct ?? null)}</td>
          </tr>
        ));
      })}
    </DataTable>
  );
}
