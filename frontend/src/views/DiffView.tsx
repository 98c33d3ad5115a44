// The Diff view (issue 8): a baseline and an experiment (run, worker, span each), the average step side
// by side, the operator trees aligned level by level with a cumulative-delta waterfall, and the kernels.
import { useMemo, useState } from "react";
import { diffUrl, type DiffSelection } from "../api/routes";
import type { DiffKernel, DiffOperator, DiffReady, OpTimes, RunInfo, Selection } from "../api/types";
import { Card } from "../components/Card";
import { chartTextColor } from "../components/chartColors";
import { EChart } from "../components/EChart";
import { InfoTooltip } from "../components/InfoTooltip";
import { Notice } from "../components/Notice";
import { RemoteStatus } from "../components/RemoteStatus";
import { RunWorkerSpanFields } from "../components/Selectors";
import { stepCompareOption, waterfallOption } from "../diff/charts";
import {
  breadcrumbs,
  drillPath,
  filterSortKernels,
  applicablePick,
  hasPick,
  resolveDiffSelection,
  signed,
  statusClass,
  stepRows,
  thresholdText,
  waterfall,
  type KernelSortKey,
} from "../diff/model";
import { useDiffHash } from "../diff/useDiffHash";
import { useDiffStyles } from "../diff/useDiffStyles";
import { remoteData, useRemote } from "../hooks/useRemote";
import type { Theme } from "../hooks/useTheme";
import { findRun, findWorker } from "../state/selection";
import { formatDuration, formatNumber, formatPct } from "../util/format";

interface DiffViewProps {
  runs: RunInfo[];
  /** The main selection: the default baseline. */
  current: Selection;
  theme: Theme;
}

export function DiffView({ runs, current, theme }: DiffViewProps) {
  useDiffStyles();
  const { wanted, pick, reset } = useDiffHash();
  // The rule: the baseline is the main selection unless sides were picked here under this main selection.
  const applied = useMemo(() => applicablePick(runs, wanted, current), [runs, wanted, current]);
  const picked = hasPick(applied);
  const sel = useMemo(() => resolveDiffSelection(runs, applied, current), [runs, applied, current]);
  const path = applied.path;
  const url = sel ? diffUrl(sel, path) : null;
  const remote = useRemote<DiffReady>(url);
  const data = remoteData(remote);

  if (!sel) return <Notice>The Diff view needs at least one trace file.</Notice>;
  const choose = (next: DiffSelection) => pick(next, [], current);
  const goTo = (nextPath: string[]) => pick(sel, nextPath, current);
  const main = `${current.run} \u00b7 ${current.worker} \u00b7 span ${current.span}`;

  return (
    <div className="diff-view" data-testid="diff-view">
      <Card title="Compare" testId="diff-pickers">
        <p className="diff-hint" data-testid="diff-rule">
          {picked ? (
            <>
              Sides picked here; kept (and in the URL) while the main selection is {main}.{" "}
              <button type="button" className="link-button" data-testid="diff-follow-main" onClick={reset}>
                Use the main selection as baseline
              </button>
            </>
          ) : (
            <>
              Baseline: the main selection ({main}); experiment: the same worker and span of another run. A pick here is
              kept while the main selection stays {main}.
            </>
          )}
        </p>
        <div className="diff-pickers">
          <SidePicker label="Baseline" side="base" runs={runs} value={sel.base} onChange={(base) => choose({ ...sel, base })} />
          <SidePicker label="Experiment" side="exp" runs={runs} value={sel.exp} onChange={(exp) => choose({ ...sel, exp })} />
          <button
            type="button"
            className="diff-swap"
            data-testid="diff-swap"
            onClick={() => choose({ base: sel.exp, exp: sel.base })}
            title="Swap baseline and experiment"
          >
            Swap
          </button>
        </div>
      </Card>
      <RemoteStatus state={remote} what="diff" />
      {data ? (
        <>
          <StepComparison data={data} theme={theme} />
          <OperatorDiff data={data} path={path} onPath={goTo} theme={theme} busy={remote.kind === "fetching"} />
          <KernelDiff kernels={data.kernels} />
        </>
      ) : null}
    </div>
  );
}

interface SidePickerProps {
  label: string;
  side: "base" | "exp";
  runs: RunInfo[];
  value: Selection;
  onChange: (next: Selection) => void;
}

/** Run, worker and span of one side; changing the run or worker picks the first worker/span there. */
function SidePicker({ label, side, runs, value, onChange }: SidePickerProps) {
  const firstOf = (runName: string, workerName?: string): Selection => {
    const r = findRun(runs, runName);
    const w = (workerName ? findWorker(r, workerName) : undefined) ?? r?.workers[0];
    return { run: runName, worker: w?.worker ?? "", span: w?.spans.find((s) => s.span === value.span)?.span ?? w?.spans[0]?.span ?? "" };
  };
  return (
    <div className={`diff-side diff-side-${side}`} data-testid={`diff-${side}`}>
      <span className="diff-side-label">{label}</span>
      <RunWorkerSpanFields
        runs={runs.filter((r) => r.workers.length > 0)}
        value={value}
        testIds={{ run: `diff-${side}-run`, worker: `diff-${side}-worker`, span: `diff-${side}-span` }}
        onRun={(run) => onChange(firstOf(run, value.worker))}
        onWorker={(worker) => onChange(firstOf(value.run, worker))}
        onSpan={(span) => onChange({ ...value, span })}
      />
    </div>
  );
}

function Delta({ us, testId }: { us: number; testId?: string }) {
  const cls = us > 0 ? "diff-up" : us < 0 ? "diff-down" : undefined;
  return (
    <span className={cls} data-testid={testId}>
      {signed(formatDuration(us), us)}
    </span>
  );
}

function StepComparison({ data, theme }: { data: DiffReady; theme: Theme }) {
  const rows = useMemo(() => stepRows(data.steps), [data.steps]);
  const option = useMemo(() => stepCompareOption(rows, chartTextColor(theme)), [rows, theme]);
  return (
    <Card title="Step comparison (average step)" testId="diff-steps">
      <div className="grid-2 diff-steps-grid">
        <table className="data-table diff-table">
          <thead>
            <tr>
              <th>Category</th>
              <th className="num">Baseline</th>
              <th className="num">Experiment</th>
              <th className="num">{"\u0394"}</th>
              <th className="num">{"\u0394 %"}</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.key} data-testid="diff-step-row" data-key={r.key} className={r.key === "total_us" ? "diff-total" : undefined}>
                <td>{r.label}</td>
                <td className="num">{formatDuration(r.baseline)}</td>
                <td className="num">{formatDuration(r.experiment)}</td>
                <td className="num">
                  <Delta us={r.delta} testId="diff-step-delta" />
                </td>
                <td className="num">{r.relativePct === null ? "\u2013" : signed(formatPct(r.relativePct, 1), r.relativePct)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <EChart option={option} theme={theme} height={300} testId="diff-steps-chart" ariaLabel="Average step time per category, baseline and experiment" />
      </div>
    </Card>
  );
}

const TIME_COLS: { key: keyof OpTimes; label: string }[] = [
  { key: "calls", label: "Calls" },
  { key: "host_self_us", label: "Host self" },
  { key: "host_total_us", label: "Host total" },
  { key: "device_self_us", label: "Device self" },
  { key: "device_total_us", label: "Device total" },
];

function timeCell(times: OpTimes | null, key: keyof OpTimes): string {
  if (!times) return "\u2013";
  return key === "calls" ? formatNumber(times.calls, Number.isInteger(times.calls) ? 0 : 2) : formatDuration(times[key]);
}

interface OperatorDiffProps {
  data: DiffReady;
  path: string[];
  onPath: (path: string[]) => void;
  theme: Theme;
  busy: boolean;
}

function OperatorDiff({ data, path, onPath, theme, busy }: OperatorDiffProps) {
  const crumbs = breadcrumbs(path);
  const wf = useMemo(() => waterfall(data.operators), [data.operators]);
  const option = useMemo(() => waterfallOption(wf.bars, wf.total, chartTextColor(theme)), [wf, theme]);
  const title = (
    <>
      <InfoTooltip label="Operator diff" text={thresholdText(data.thresholds)} />
    </>
  );
  return (
    <Card title={title} testId="diff-operators">
      <nav className="diff-breadcrumbs" data-testid="diff-breadcrumbs" aria-label="Operator path">
        {crumbs.map((c, i) => (
          <span key={c.path.join("\u0000")} className="diff-crumb">
            {i > 0 ? <span className="diff-crumb-sep">{"\u203a"}</span> : null}
            {i === crumbs.length - 1 ? (
              <span className="diff-crumb-current" data-testid="diff-crumb" aria-current="page">
                {c.label}
              </span>
            ) : (
              <button type="button" className="link-button" data-testid="diff-crumb" onClick={() => onPath(c.path)}>
                {c.label}
              </button>
            )}
          </span>
        ))}
      </nav>
      {data.operators.length === 0 ? (
        <Notice>No operators at this level{path.length > 0 ? " (the path may not exist in either trace)" : ""}.</Notice>
      ) : (
        <>
          <p className="diff-hint">
            Time per average step; {"\u0394"} = experiment {"\u2212"} baseline. Rows with {"\u25b8"} open the level below. The
            waterfall adds up the compared time (device total, else host total) row by row.
          </p>
          <div className="table-scroll diff-op-scroll" aria-busy={busy}>
            <table className="data-table diff-table diff-op-table">
              <thead>
                <tr>
                  <th rowSpan={2}>Operator</th>
                  <th rowSpan={2}>Status</th>
                  {TIME_COLS.map((c) => (
                    <th key={c.key} colSpan={3} className="diff-group">
                      {c.label}
                    </th>
                  ))}
                </tr>
                <tr>
                  {TIME_COLS.map((c) => (
                    <SubHeads key={c.key} />
                  ))}
                </tr>
              </thead>
              <tbody>
                {data.operators.map((op) => (
                  <OpRow key={op.path.join("\u0000") || op.name} op={op} onOpen={() => onPath(drillPath(op, path))} />
                ))}
              </tbody>
            </table>
          </div>
          <EChart
            option={option}
            theme={theme}
            height={Math.max(160, 28 * (wf.bars.length + 1) + 60)}
            testId="diff-waterfall"
            ariaLabel="Cumulative delta of the operators at this level"
          />
        </>
      )}
    </Card>
  );
}

function SubHeads() {
  return (
    <>
      <th className="num diff-sub">B</th>
      <th className="num diff-sub">E</th>
      <th className="num diff-sub">{"\u0394"}</th>
    </>
  );
}

function OpRow({ op, onOpen }: { op: DiffOperator; onOpen: () => void }) {
  const open = op.has_children;
  return (
    <tr
      data-testid="diff-op-row"
      data-name={op.name}
      className={open ? "diff-op-open" : undefined}
      onClick={open ? onOpen : undefined}
      onKeyDown={open ? (e) => (e.key === "Enter" || e.key === " " ? (e.preventDefault(), onOpen()) : undefined) : undefined}
      tabIndex={open ? 0 : undefined}
      title={open ? `Open the operators under ${op.name}` : undefined}
    >
      <td className="name">
        <span className="diff-caret">{open ? "\u25b8" : ""}</span>
        {op.name}
      </td>
      <td>
        <span className={statusClass(op.status)} data-testid="diff-status">
          {op.status}
        </span>
        {op.change_pct !== null && op.status !== "added" && op.status !== "removed" ? (
          <span className="diff-pct"> {signed(formatPct(op.change_pct, 1), op.change_pct)}</span>
        ) : null}
      </td>
      {TIME_COLS.map((c) => (
        <OpCells key={c.key} op={op} k={c.key} />
      ))}
    </tr>
  );
}

function OpCells({ op, k }: { op: DiffOperator; k: keyof OpTimes }) {
  const d = op.delta[k];
  return (
    <>
      <td className="num">{timeCell(op.baseline, k)}</td>
      <td className="num">{timeCell(op.experiment, k)}</td>
      <td className={`num ${d > 0 ? "diff-up" : d < 0 ? "diff-down" : ""}`}>
        {k === "calls" ? signed(formatNumber(d, Number.isInteger(d) ? 0 : 2), d) : signed(formatDuration(d), d)}
      </td>
    </>
  );
}

const KERNEL_COLS: { key: KernelSortKey; label: string }[] = [
  { key: "name", label: "Kernel" },
  { key: "baseline_calls", label: "Calls B" },
  { key: "experiment_calls", label: "Calls E" },
  { key: "baseline_per_step_us", label: "Baseline / step" },
  { key: "experiment_per_step_us", label: "Experiment / step" },
  { key: "delta_per_step_us", label: "\u0394 / step" },
];

function KernelDiff({ kernels }: { kernels: DiffKernel[] }) {
  const [search, setSearch] = useState("");
  const [sort, setSort] = useState<KernelSortKey>("abs_delta");
  const [order, setOrder] = useState<"asc" | "desc">("desc");
  const rows = useMemo(() => filterSortKernels(kernels, search, sort, order), [kernels, search, sort, order]);
  const clickSort = (key: KernelSortKey) => {
    if (key === sort) setOrder(order === "asc" ? "desc" : "asc");
    else {
      setSort(key);
      setOrder(key === "name" ? "asc" : "desc");
    }
  };
  return (
    <Card title="Kernel diff" testId="diff-kernels">
      {kernels.length === 0 ? (
        <Notice>Neither trace has GPU kernels.</Notice>
      ) : (
        <>
          <div className="diff-kernel-tools">
            <input
              type="search"
              placeholder="Search kernels"
              value={search}
              onChange={(e) => setSearch(e.target.value)}
              data-testid="diff-kernel-search"
              aria-label="Search kernels"
            />
            <span className="diff-hint">
              {rows.length} of {kernels.length} kernels{sort === "abs_delta" ? ", largest change first" : ""}
            </span>
          </div>
          <div className="table-scroll diff-kernel-scroll">
            <table className="data-table diff-table">
              <thead>
                <tr>
                  {KERNEL_COLS.map((c) => (
                    <th
                      key={c.key}
                      className={`${c.key === "name" ? "" : "num "}sortable${c.key === sort ? " sorted" : ""}`}
                      onClick={() => clickSort(c.key)}
                      aria-sort={c.key === sort ? (order === "asc" ? "ascending" : "descending") : undefined}
                    >
                      {c.label}
                      {c.key === sort ? (order === "asc" ? " \u25b4" : " \u25be") : ""}
                    </th>
                  ))}
                  <th>Status</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((k) => (
                  <tr key={k.name} data-testid="diff-kernel-row">
                    <td className="name diff-kernel-name" title={k.name}>
                      {k.name}
                    </td>
                    <td className="num">{formatNumber(k.baseline_calls)}</td>
                    <td className="num">{formatNumber(k.experiment_calls)}</td>
                    <td className="num">{formatDuration(k.baseline_per_step_us)}</td>
                    <td className="num">{formatDuration(k.experiment_per_step_us)}</td>
                    <td className="num">
                      <Delta us={k.delta_per_step_us} />
                    </td>
                    <td>
                      <span className={statusClass(k.status)}>{k.status}</span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </Card>
  );
}
