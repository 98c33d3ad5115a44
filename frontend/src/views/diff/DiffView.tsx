// The Diff view: a baseline and an experiment (run, worker, span each), the average step side
// by side, the operator trees aligned level by level with a cumulative-delta waterfall, and the kernels.
import { useMemo } from "react";
import { diffUrl, type DiffSelection } from "../../api/routes";
import type { DiffReady, RunInfo, Selection } from "../../api/types";
import { Card } from "../../components/Card";
import { chartTextColor } from "../../components/chartColors";
import { EChart } from "../../components/EChart";
import { Notice } from "../../components/Notice";
import { RemoteStatus } from "../../components/RemoteStatus";
import { RunWorkerSpanFields } from "../../components/Selectors";
import { stepCompareOption } from "./charts";
import { applicablePick, hasPick, resolveDiffSelection, signed, stepRows } from "./model";
import { useDiffHash } from "./useDiffHash";
import { useDiffStyles } from "./useDiffStyles";
import { remoteData, useRemote } from "../../hooks/useRemote";
import type { Theme } from "../../hooks/useTheme";
import { findRun, findWorker } from "../../state/selection";
import { formatDuration, formatPct } from "../../util/format";
import { Delta, KernelDiff, OperatorDiff } from "./DiffTables";

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

function StepComparison({ data, theme }: { data: DiffReady; theme: Theme }) {
  const rows = useMemo(() => stepRows(data.steps, data.category_labels), [data.steps, data.category_labels]);
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
