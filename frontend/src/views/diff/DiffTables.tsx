// The Diff tab's operator level (breadcrumbs, waterfall, aligned rows) and kernel table.
import { useMemo, useState } from "react";
import type { DiffKernel, DiffOperator, DiffReady, DiffThresholds, DiffWaterfall, OpTimes } from "../../api/types";
import { Card } from "../../components/Card";
import { chartTextColor } from "../../components/chartColors";
import { EChart } from "../../components/EChart";
import { InfoTooltip } from "../../components/InfoTooltip";
import { Notice } from "../../components/Notice";
import { waterfallOption } from "./charts";
import { breadcrumbs, drillPath, filterSortKernels, reasonText, REMAINDER_LABEL, signed, statusClass, thresholdText, waterfall, type KernelSortKey } from "./model";
import { elideMiddle } from "../../util/elide";
import type { Theme } from "../../hooks/useTheme";
import { formatDuration, formatNumber, formatPct } from "../../util/format";

/** A signed duration, coloured by its sign. */
export function Delta({ us, testId }: { us: number; testId?: string }) {
  const cls = us > 0 ? "diff-up" : us < 0 ? "diff-down" : undefined;
  return (
    <span className={cls} data-testid={testId}>
      {signed(formatDuration(us), us)}
    </span>
  );
}

export const TIME_COLS: { key: keyof OpTimes; label: string }[] = [
  { key: "calls", label: "Calls" },
  { key: "host_self_us", label: "Host self" },
  { key: "host_total_us", label: "Host total" },
  { key: "device_self_us", label: "Device self" },
  { key: "device_total_us", label: "Device total" },
];

export function timeCell(times: OpTimes | null, key: keyof OpTimes): string {
  if (!times) return "\u2013";
  return key === "calls" ? formatNumber(times.calls, Number.isInteger(times.calls) ? 0 : 2) : formatDuration(times[key]);
}

export interface OperatorDiffProps {
  data: DiffReady;
  path: string[];
  onPath: (path: string[]) => void;
  theme: Theme;
  busy: boolean;
}

export function OperatorDiff({ data, path, onPath, theme, busy }: OperatorDiffProps) {
  const crumbs = breadcrumbs(path);
  const wf = useMemo(() => waterfall(data.operators, data.waterfall), [data.operators, data.waterfall]);
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
            verdict and the waterfall use the host total; the waterfall ends at the step-total {"\u0394"}.
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
                  <OpRow key={op.path.join("\u0000") || op.name} op={op} thresholds={data.thresholds} onOpen={() => onPath(drillPath(op, path))} />
                ))}
              </tbody>
            </table>
          </div>
          {data.waterfall ? <WaterfallSum totals={data.waterfall} /> : null}
          <EChart
            option={option}
            theme={theme}
            height={Math.max(160, 28 * (wf.bars.length + 1) + 60)}
            testId="diff-waterfall"
            ariaLabel="Cumulative delta of the operators at this level"
            labelTips
          />
        </>
      )}
    </Card>
  );
}

/** The waterfall's sum in words: rows + remainder = step-total Δ (the server's numbers). */
function WaterfallSum({ totals }: { totals: DiffWaterfall }) {
  return (
    <p className="diff-hint" data-testid="diff-waterfall-sum">
      Rows <Delta us={totals.rows_us} testId="diff-wf-rows" /> + {REMAINDER_LABEL.toLowerCase()}{" "}
      <Delta us={totals.remainder_us} testId="diff-wf-remainder" /> = step-total {"\u0394"}{" "}
      <Delta us={totals.total_us} testId="diff-wf-total" />
    </p>
  );
}

export function SubHeads() {
  return (
    <>
      <th className="num diff-sub">B</th>
      <th className="num diff-sub">E</th>
      <th className="num diff-sub">{"\u0394"}</th>
    </>
  );
}

/** Characters of an operator name in the table; longer names are elided in the middle (title: whole). */
const NAME_CHARS = 40;

export function OpRow({ op, thresholds, onOpen }: { op: DiffOperator; thresholds?: DiffThresholds; onOpen: () => void }) {
  const open = op.has_children;
  const change = op.change_us ?? op.delta.host_total_us;
  return (
    <tr
      data-testid="diff-op-row"
      data-name={op.name}
      className={open ? "diff-op-open" : undefined}
      onClick={open ? onOpen : undefined}
      onKeyDown={open ? (e) => (e.key === "Enter" || e.key === " " ? (e.preventDefault(), onOpen()) : undefined) : undefined}
      tabIndex={open ? 0 : undefined}
    >
      <td className="name" title={open ? `${op.name} (open the operators under it)` : op.name} data-testid="diff-op-name">
        <span className="diff-caret">{open ? "\u25b8" : ""}</span>
        {elideMiddle(op.name, NAME_CHARS)}
      </td>
      <td className="diff-verdict" title={reasonText(op.reason, thresholds)}>
        <span className={statusClass(op.status)} data-testid="diff-status">
          {op.status}
        </span>
        {op.moved_from ? (
          <span
            className="diff-badge diff-badge-moved"
            data-testid="diff-moved"
            title={`moved: its parent changed (baseline: ${op.moved_from.join(" \u203a ")})`}
          >
            {" "}
            moved
          </span>
        ) : null}
        {op.status !== "added" && op.status !== "removed" ? (
          <span className="diff-pct" data-testid="diff-change">
            {" "}
            {signed(formatDuration(change), change)}
            {op.change_pct !== null ? ` (${signed(formatPct(op.change_pct, 1), op.change_pct)})` : ""}
          </span>
        ) : null}
      </td>
      {TIME_COLS.map((c) => (
        <OpCells key={c.key} op={op} k={c.key} />
      ))}
    </tr>
  );
}

export function OpCells({ op, k }: { op: DiffOperator; k: keyof OpTimes }) {
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

export const KERNEL_COLS: { key: KernelSortKey; label: string }[] = [
  { key: "name", label: "Kernel" },
  { key: "baseline_calls", label: "Calls B" },
  { key: "experiment_calls", label: "Calls E" },
  { key: "baseline_per_step_us", label: "Baseline / step" },
  { key: "experiment_per_step_us", label: "Experiment / step" },
  { key: "delta_per_step_us", label: "\u0394 / step" },
];

export function KernelDiff({ kernels }: { kernels: DiffKernel[] }) {
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
