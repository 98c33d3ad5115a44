// The Distributed tab: the selected run's workers compared as ranks of one job at one span. Rank
// table with stragglers, per-rank breakdown and transfer/sync charts, collectives with bandwidths, a
// rank's communication ops, and each rank's devices (sent with the rank).
import { useMemo, useState } from "react";
import { distributedUrl } from "../api/routes";
import type { Arrival, DistributedData, DistributedResponse, RankRow } from "../api/types";
import { Card } from "../components/Card";
import { distributedText } from "../components/ConfigurationCard";
import { EChart } from "../components/EChart";
import { InfoTooltip } from "../components/InfoTooltip";
import { Notice } from "../components/Notice";
import { RemoteStatus } from "../components/RemoteStatus";
import { chartTextColor } from "../components/chartColors";
import { remoteData, useRemote } from "../hooks/useRemote";
import type { Theme } from "../hooks/useTheme";
import { rankBreakdownOption, transferSyncOption } from "../distributed/charts";
import { DIST_DEFS } from "../distributed/definitions";
import { gbpsText, noViewReason } from "../distributed/model";
import { useDistributedStyles } from "../distributed/useDistributedStyles";
import { formatBytes, formatDuration, formatGiB, formatNumber, formatPct, formatText } from "../util/format";
import { gpuGeneration } from "../util/gpuGeneration";

interface DistributedViewProps {
  run: string;
  theme: Theme;
  /** The span to start with; "1" unless given. */
  initialSpan?: string;
}

export function DistributedView({ run, theme, initialSpan = "1" }: DistributedViewProps) {
  useDistributedStyles();
  const [span, setSpan] = useState(initialSpan);
  const state = useRemote<DistributedResponse>(distributedUrl(run, span));
  const data = remoteData(state);
  const spans = data?.spans ?? [];
  const spanChoices = spans.includes(span) ? spans : [span, ...spans];
  return (
    <div className="dist-view" data-testid="distributed-page">
      <div className="dist-controls">
        <label className="selector">
          <span className="selector-label">Span</span>
          <select data-testid="dist-span-select" value={span} onChange={(e) => setSpan(e.target.value)}>
            {spanChoices.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        {data?.view ? (
          <span className="dist-summary" data-testid="dist-summary">
            {formatNumber(data.view.ranks_present)} of {formatNumber(data.view.world_size)} ranks present ·{" "}
            <InfoTooltip
              label={`${formatNumber(data.view.instances.matched)} / ${formatNumber(data.view.instances.total)} collective instances matched`}
              text={DIST_DEFS.instances}
            />
          </span>
        ) : null}
      </div>
      <RemoteStatus state={state} what="distributed view" />
      {data
        ? data.messages.map((m, i) => (
            <Notice key={i} kind="warning">
              {m}
            </Notice>
          ))
        : null}
      {data && data.view === null ? (
        <div data-testid="distributed-null">
          <Notice>{noViewReason(data)}</Notice>
        </div>
      ) : null}
      {data?.view ? <DistributedContent view={data.view} theme={theme} /> : null}
    </div>
  );
}

function DistributedContent({ view, theme }: { view: DistributedData; theme: Theme }) {
  const text = chartTextColor(theme);
  const ranks = useMemo(() => [...view.ranks].sort((a, b) => a.rank - b.rank), [view]);
  const stragglers = useMemo(() => new Set(view.stragglers), [view]);
  const arrivals = useMemo(() => new Map((view.arrivals ?? []).map((a) => [a.rank, a])), [view]);
  const breakdown = useMemo(() => rankBreakdownOption(ranks, text), [ranks, text]);
  const transferSync = useMemo(() => transferSyncOption(ranks, text), [ranks, text]);
  const [selectedRank, setSelectedRank] = useState<number | null>(null);
  const current = ranks.find((r) => r.rank === selectedRank) ?? ranks[0];
  return (
    <>
      <Card title="Ranks" testId="ranks-card">
        {(view.arrivals ?? [])
          .filter((a) => a.straggler)
          .map((a) => (
            <div key={a.rank} data-testid="straggler-evidence">
              <Notice kind="warning">Straggler {formatText(a.text)}</Notice>
            </div>
          ))}
        <RankTable ranks={ranks} stragglers={stragglers} arrivals={arrivals} selected={current?.rank ?? null} onSelect={setSelectedRank} />
      </Card>
      <div className="grid-2">
        <Card title={<InfoTooltip label="Computation and communication per rank" text={DIST_DEFS.overlap} />}>
          <EChart option={breakdown} theme={theme} height={320} testId="rank-breakdown-chart" ariaLabel="Per-rank time per step by computation, overlap, communication and other" />
        </Card>
        <Card title={<InfoTooltip label="Transfer vs sync per rank" text={DIST_DEFS.sync} />}>
          <EChart option={transferSync} theme={theme} height={320} testId="transfer-sync-chart" ariaLabel="Per-rank transfer and sync time in collectives" />
        </Card>
      </div>
      <Card title="Collectives">
        <CollectivesTable view={view} />
      </Card>
      <Card title="Communication ops of a rank">
        <CommOpsTable ranks={ranks} current={current} onSelect={setSelectedRank} />
      </Card>
      <Card title="Devices">
        <DeviceTable ranks={ranks} />
      </Card>
    </>
  );
}

function Th({ label, tip, num = true }: { label: string; tip?: string; num?: boolean }) {
  return <th className={num ? "num" : undefined}>{tip ? <InfoTooltip label={label} text={tip} /> : label}</th>;
}

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
    <div className="table-scroll">
      <table className="data-table" data-testid="rank-table">
        <thead>
          <tr>
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
          </tr>
        </thead>
        <tbody>
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
        </tbody>
      </table>
    </div>
  );
}

function MatchingSummary({ view }: { view: DistributedData }) {
  const m = view.matching;
  if (!m || m.by_type.length === 0) return null;
  return (
    <p className="muted" data-testid="matching-summary">
      Matched by {formatText(m.method)}:{" "}
      {m.by_type.map((t) => `${formatText(t.name)} ${formatNumber(t.matched)} matched, ${formatNumber(t.unmatched)} unmatched`).join(" · ")}
    </p>
  );
}

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
      <table className="data-table" data-testid="collectives-table">
        <thead>
          <tr>
            <Th label="Collective" num={false} />
            <Th label="Calls" />
            <Th label="Bytes" />
            <Th label="Group size" />
            <Th label="Transfer" tip={DIST_DEFS.transfer} />
            <Th label="Sync" tip={DIST_DEFS.sync} />
            <Th label="Algbw" tip={DIST_DEFS.algbw} />
            <Th label="Busbw" tip={DIST_DEFS.busbw} />
          </tr>
        </thead>
        <tbody>
          {view.collectives.map((c, i) => (
            <tr key={`${c.name}\u0000${i}`} data-testid="collective-row">
              <td className="cell-code">{c.name}</td>
              <td className="num">{formatNumber(c.calls)}</td>
              <td className="num">{formatBytes(c.bytes)}</td>
              <td className="num">{formatNumber(c.group_size)}</td>
              <td className="num">{formatDuration(c.transfer_us)}</td>
              <td className="num">{formatDuration(c.sync_us)}</td>
              <td className="num">{gbpsText(c.algbw_gbps)}</td>
              <td className="num" title={c.bus_factor !== undefined ? `algbw × ${c.bus_factor.toFixed(3)} (n = ${c.group_size ?? "?"})` : undefined}>
                {gbpsText(c.busbw_gbps)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function CommOpsTable({ ranks, current, onSelect }: { ranks: RankRow[]; current: RankRow | undefined; onSelect: (rank: number) => void }) {
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
        <div className="table-scroll">
          <table className="data-table" data-testid="comm-ops-table">
            <thead>
              <tr>
                <Th label="Op" num={false} />
                <Th label="Calls" />
                <Th label="Total size" />
                <Th label="Mean size" />
                <Th label="Latency" tip={DIST_DEFS.latency} />
                <Th label="Transfer" tip={DIST_DEFS.transfer} />
                <Th label="Sync" tip={DIST_DEFS.sync} />
              </tr>
            </thead>
            <tbody>
              {current.comm_ops.map((o, i) => (
                <tr key={`${o.name}\u0000${i}`} data-testid="comm-op-row">
                  <td className="cell-code">{o.name}</td>
                  <td className="num">{formatNumber(o.calls)}</td>
                  <td className="num">{formatBytes(o.total_bytes)}</td>
                  <td className="num">{formatBytes(o.mean_bytes === null ? null : Math.round(o.mean_bytes))}</td>
                  <td className="num">{formatDuration(o.latency_us)}</td>
                  <td className="num">{formatDuration(o.transfer_us)}</td>
                  <td className="num">{formatDuration(o.sync_us)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

/** Each rank's GPUs, as the server sends them with the rank (the very rows of that rank's Overview). */
function DeviceTable({ ranks }: { ranks: RankRow[] }) {
  return (
    <div className="table-scroll">
      <table className="data-table" data-testid="device-table">
        <thead>
          <tr>
            <Th label="Rank" num={false} />
            <Th label="Worker" num={false} />
            <Th label="Backend" num={false} />
            <Th label="GPU" num={false} />
            <Th label="Name" num={false} />
            <Th label="Memory" />
            <Th label="Compute capability / arch." />
            <Th label="Utilization" />
          </tr>
        </thead>
        <tbody>
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
        </tbody>
      </table>
    </div>
  );
}
