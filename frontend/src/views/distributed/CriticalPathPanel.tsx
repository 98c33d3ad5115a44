// The Distributed tab's critical-path panel: per step, the path's time by category and by
// rank (stacked bars), then the chosen step's work of most time grouped by name, its ten longest
// segments (host ones with their enclosing annotation) and the collectives that waited for a late rank,
// with the work that made that rank late. Definitions: docs/METRICS.md.
import { useMemo, useState } from "react";
import type { CriticalPathItem, CriticalPathSegment, CriticalPathStep, DistributedResponse, RankRow } from "../../api/types";
import { ColumnTable, type TableColumn } from "../../components/ColumnTable";
import { RemoteStatus } from "../../components/RemoteStatus";
import { remoteData, useRemote } from "../../hooks/useRemote";
import { DataTable, Th } from "../../components/DataTable";
import { SelectField } from "../../components/Fields";
import { EChart } from "../../components/EChart";
import { InfoTooltip } from "../../components/InfoTooltip";
import { Notice } from "../../components/Notice";
import type { Theme } from "../../hooks/useTheme";
import { formatDuration, formatPct, formatText } from "../../util/format";
import { PATH_CATEGORIES, pathByCategoryOption, pathByRankOption } from "./criticalPathCharts";
import { DIST_DEFS } from "./definitions";

const CATEGORY_LABEL: Record<string, string> = Object.fromEntries(PATH_CATEGORIES.map((c) => [c.key, c.label]));

interface Props {
  steps: CriticalPathStep[] | undefined;
  theme: Theme;
  textColor: string;
  /** The ranks' workers, for "show in trace" (absent: no such column). */
  ranks?: Pick<RankRow, "rank" | "worker">[];
  onShowInTrace?: (worker: string, row: number) => void;
  /** The number of steps of the path when the answer lists fewer (the first ones). */
  total?: number;
  /** The `distributed` URL that details one step (an answer details one step only). */
  detailUrl?: (step: string) => string;
}

export function CriticalPathPanel({ steps, theme, textColor, ranks, onShowInTrace, total, detailUrl }: Props) {
  const [chosen, setChosen] = useState<string | null>(null);
  const listed = steps?.find((s) => s.step === chosen) ?? steps?.[0];
  const needed = listed && listed.detailed === false && detailUrl ? detailUrl(listed.step) : null;
  const detailState = useRemote<DistributedResponse>(needed);
  const fetched = pathStep(remoteData(detailState), listed?.step);
  const byCategory = useMemo(() => (steps?.length ? pathByCategoryOption(steps, textColor) : null), [steps, textColor]);
  const byRank = useMemo(() => (steps?.length ? pathByRankOption(steps, textColor) : null), [steps, textColor]);
  if (steps === undefined) return <p className="muted">The critical path is not sent by this server.</p>;
  if (steps.length === 0) return <p className="muted" data-testid="path-empty">No steps in these ranks.</p>;
  const current = listed?.detailed === false && fetched ? fetched : listed!;
  return (
    <div data-testid="critical-path">
      <div className="grid-2">
        <EChart option={byCategory!} theme={theme} height={280} testId="path-category-chart" ariaLabel="Critical path per step by category" />
        <EChart option={byRank!} theme={theme} height={280} testId="path-rank-chart" ariaLabel="Critical path per step by rank" />
      </div>
      <div className="dist-controls">
        <SelectField label="Step" testId="path-step-select" value={current.step} options={steps.map((s) => ({ value: s.step, label: s.step }))} onChange={setChosen} />
        <span data-testid="path-summary">
          {formatDuration(current.length_us)} ·{" "}
          {PATH_CATEGORIES.map((c) => `${c.label} ${formatPct(current.by_category_pct[c.key], 1)}`).join(" · ")}
          {current.host_blocked_us ? ` · host blocked on the device ${formatDuration(current.host_blocked_us)}` : ""}
        </span>
      </div>
      {total !== undefined && total > steps.length ? (
        <Notice>{`The first ${steps.length} of ${total} steps are listed.`}</Notice>
      ) : null}
      {current.detailed === false ? <RemoteStatus state={detailState} what="step's critical path" /> : null}
      {current.truncated ? <Notice kind="warning">The graph was too large: part of this path was not walked (shown as waiting).</Notice> : null}
      {(current.collectives ?? []).map((c, i) => (
        <div key={i} data-testid="path-late-rank">
          <Notice kind="warning">{lateText(c)}</Notice>
        </div>
      ))}
      {current.top_items?.length ? <ItemTable items={current.top_items} /> : null}
      <SegmentTable
        segments={current.segments ?? []}
        workerOf={(rank) => ranks?.find((r) => r.rank === rank)?.worker}
        onShowInTrace={onShowInTrace}
      />
    </div>
  );
}

/** The step named ``step`` of a `distributed` answer asked with `?step=` (view or single rank), when detailed. */
function pathStep(doc: DistributedResponse | null, step: string | undefined): CriticalPathStep | undefined {
  const steps = doc?.view?.critical_path ?? doc?.single_rank?.critical_path ?? [];
  return steps.find((s) => s.step === step && s.detailed !== false);
}

/** "rank 0 waited 450 µs in ncclAllReduce… for rank 1, late after untraced host work in enumerate(DataLoader)… (cpu, 500 µs)". */
export function lateText(c: CriticalPathSegment): string {
  const w = c.late_work;
  const where = w?.annotation ? ` in ${w.annotation}` : "";
  const work = w ? `, late after ${w.name}${where} (${CATEGORY_LABEL[w.category] ?? w.category}, ${formatDuration(w.dur_us)})` : "";
  return `Rank ${c.rank} waited ${formatDuration(c.wait_us ?? 0)} in ${c.name} for rank ${c.late_rank ?? "?"}${work}`;
}

/** The work of most time on the path, grouped by name ("aten::mm: 1.1 ms over 71 segments"). */
function ItemTable({ items }: { items: CriticalPathItem[] }) {
  return (
    <ColumnTable
      testId="path-items-table"
      columns={ITEM_COLUMNS}
      rows={items}
      rowKey={(_, i) => i}
      rowAttrs={() => ({ "data-testid": "path-item-row" })}
    />
  );
}

const ITEM_COLUMNS: TableColumn<CriticalPathItem>[] = [
  { label: "Most time on the path", num: false, tip: DIST_DEFS.pathItems, className: "cell-code", cell: (it) => formatText(it.name) },
  { label: "Category", num: false, cell: (it) => CATEGORY_LABEL[it.category] ?? it.category },
  { label: "Total", cell: (it) => formatDuration(it.us) },
  { label: "Segments", cell: (it) => it.segments },
];

interface TableProps {
  segments: CriticalPathSegment[];
  workerOf: (rank: number) => string | undefined;
  onShowInTrace?: (worker: string, row: number) => void;
}

function SegmentTable({ segments, workerOf, onShowInTrace }: TableProps) {
  return (
    <DataTable
      testId="path-segments-table"
      head={
        <>
          <Th label="Rank" num={false} />
          <Th label="Category" num={false} tip={DIST_DEFS.pathCategory} />
          <Th label="Name" num={false} />
          <Th label="At" tip={DIST_DEFS.pathAt} />
          <Th label="Duration" />
          <Th label="Late rank" num={false} tip={DIST_DEFS.pathLate} />
          {onShowInTrace ? <Th label="Trace" num={false} /> : null}
        </>
      }
    >
      {segments.map((s, i) => (
        <tr key={i} data-testid="path-segment-row" data-rank={s.rank} title={`starts at ${s.start_us} µs on rank ${s.rank}'s trace clock`}>
          <td>{s.rank}</td>
          <td>{CATEGORY_LABEL[s.category] ?? s.category}</td>
          <td className="cell-code">
            {formatText(s.name)}
            {s.annotation ? <span className="muted" data-testid="path-segment-context">{` in ${formatText(s.annotation)}`}</span> : null}
          </td>
          <td className="num">{formatDuration(s.at_us)}</td>
          <td className="num">{formatDuration(s.dur_us)}</td>
          <td>{s.late_rank !== undefined && s.late_rank !== null && s.late_rank !== s.rank ? String(s.late_rank) : formatText(null)}</td>
          {onShowInTrace ? <td>{showButton(s, workerOf(s.rank), onShowInTrace)}</td> : null}
        </tr>
      ))}
    </DataTable>
  );
}

function showButton(s: CriticalPathSegment, worker: string | undefined, onShow: (worker: string, row: number) => void) {
  if (worker === undefined || typeof s.row !== "number" || s.row < 0) return null;
  return (
    <button type="button" className="link-button" data-testid="path-show-in-trace" title={`Show this event in rank ${s.rank}'s trace`} onClick={() => onShow(worker, s.row)}>
      show in trace
    </button>
  );
}

export const PATH_TITLE = <InfoTooltip label="Critical path" text={DIST_DEFS.criticalPath} />;
