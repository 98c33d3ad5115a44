// The Distributed tab: the selected run's workers compared as ranks of one job at one span. Rank
// table with stragglers, per-rank breakdown and transfer/sync charts, process groups, the critical path, collectives with bandwidths, a
// rank's communication ops, and each rank's devices (sent with the rank).
import { useMemo, useState } from "react";
import { distributedUrl } from "../../api/routes";
import type { DistributedData, DistributedResponse, RankRow, Selection, SingleRank } from "../../api/types";
import { Card } from "../../components/Card";
import { SelectField } from "../../components/Fields";
import { EChart } from "../../components/EChart";
import { InfoTooltip } from "../../components/InfoTooltip";
import { Notice } from "../../components/Notice";
import { RemoteStatus } from "../../components/RemoteStatus";
import { chartTextColor } from "../../components/chartColors";
import { remoteData, useRemote } from "../../hooks/useRemote";
import type { Theme } from "../../hooks/useTheme";
import { rankBreakdownOption, transferSyncOption } from "./charts";
import { DIST_DEFS } from "./definitions";
import { noViewReason } from "./model";
import { useDistributedStyles } from "./useDistributedStyles";
import { formatNumber, formatText } from "../../util/format";
import { RankTable, CollectivesTable, CommOpsTable, DeviceTable } from "./DistributedTables";
import { ProcessGroupsTable } from "./ProcessGroupsTable";
import { CriticalPathPanel, PATH_TITLE } from "./CriticalPathPanel";

interface DistributedViewProps {
  run: string;
  theme: Theme;
  /** The span to start with; "1" unless given. */
  initialSpan?: string;
  /** "show in trace" of a critical-path segment: that rank's file at this span, and the event row. */
  onShowInTrace?: (at: Selection, row: number) => void;
}

export function DistributedView({ run, theme, initialSpan = "1", onShowInTrace }: DistributedViewProps) {
  useDistributedStyles();
  const [span, setSpan] = useState(initialSpan);
  const state = useRemote<DistributedResponse>(distributedUrl(run, span));
  const data = remoteData(state);
  const spans = data?.spans ?? [];
  const spanChoices = spans.includes(span) ? spans : [span, ...spans];
  const rankView: RankViewProps = {
    theme,
    detailUrl: (step) => distributedUrl(run, span, step),
    onShowInTrace: onShowInTrace ? (worker, row) => onShowInTrace({ run, worker, span }, row) : undefined,
  };
  return (
    <div className="dist-view" data-testid="distributed-page">
      <div className="dist-controls">
        <SelectField label="Span" testId="dist-span-select" value={span} options={spanChoices.map((s) => ({ value: s, label: s }))} onChange={setSpan} />
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
      {(data?.notes ?? []).map((m, i) => (
        <Notice key={`note-${i}`}>{m}</Notice>
      ))}
      {data?.recommendations?.length ? (
        <Card title="Advice for the run" testId="run-advice-card">
          <ul className="recommendations">
            {data.recommendations.map((r) => (
              <li key={r.key} data-testid="run-advice">
                {formatText(r.text)}
              </li>
            ))}
          </ul>
        </Card>
      ) : null}
      {data && data.view === null ? (
        <div data-testid="distributed-null">
          <Notice>{noViewReason(data)}</Notice>
        </div>
      ) : null}
      {data && data.view === null && data.single_rank ? <SingleRankContent own={data.single_rank} {...rankView} /> : null}
      {data?.view ? <DistributedContent view={data.view} {...rankView} /> : null}
    </div>
  );
}

/** One loaded rank: no comparison, but its own process groups and critical path. */
function SingleRankContent({ own, ...rankView }: RankViewProps & { own: SingleRank }) {
  return (
    <div data-testid="single-rank">
      <GroupsAndPathCards groupsTitle={`Process groups of rank ${own.rank}`} source={own} ranks={[{ rank: own.rank, worker: own.worker }]} {...rankView} />
    </div>
  );
}

/** What every part of the view below the controls takes: the theme, step detail and "show in trace". */
interface RankViewProps {
  theme: Theme;
  /** The `distributed` URL that details one critical-path step. */
  detailUrl: (step: string) => string;
  onShowInTrace?: ((worker: string, row: number) => void) | undefined;
}

/** The process-groups card and the critical-path card of the ranks ``source`` covers (one or many). */
function GroupsAndPathCards({
  groupsTitle,
  source,
  ranks,
  theme,
  onShowInTrace,
  detailUrl,
}: RankViewProps & {
  groupsTitle: string;
  source: Pick<DistributedData, "groups" | "groups_messages" | "critical_path" | "critical_path_total">;
  ranks: Pick<RankRow, "rank" | "worker">[];
}) {
  return (
    <>
      <Card title={groupsTitle} testId="groups-card">
        <ProcessGroupsTable groups={source.groups} messages={source.groups_messages} />
      </Card>
      <Card title={PATH_TITLE} testId="path-card">
        <CriticalPathPanel
          steps={source.critical_path}
          total={source.critical_path_total}
          detailUrl={detailUrl}
          theme={theme}
          textColor={chartTextColor(theme)}
          ranks={ranks}
          onShowInTrace={onShowInTrace}
        />
      </Card>
    </>
  );
}

function DistributedContent({ view, ...rankView }: RankViewProps & { view: DistributedData }) {
  const { theme } = rankView;
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
      <GroupsAndPathCards groupsTitle="Process groups" source={view} ranks={ranks} {...rankView} />
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
