import { useMemo } from "react";
import type { OverviewReady } from "../../api/types";
import { buildDonutOption, buildExecutionRows } from "../../charts/executionDonutOption";
import type { Theme } from "../../hooks/useTheme";
import { DEFINITIONS } from "../../util/definitions";
import { formatDuration, formatNumber, formatPct } from "../../util/format";
import { Card } from "../../components/Card";
import { EChart } from "../../components/EChart";
import { InfoTooltip } from "../../components/InfoTooltip";
import { chartTextColor } from "../../components/chartColors";

interface ExecutionSummaryProps {
  data: Pick<OverviewReady, "average" | "average_pct" | "categories" | "category_labels">;
  theme: Theme;
}

/** The average step split by category: a table and a donut of the same numbers. */
export function ExecutionSummary({ data, theme }: ExecutionSummaryProps) {
  const rows = useMemo(() => buildExecutionRows(data), [data]);
  const option = useMemo(() => buildDonutOption(rows, chartTextColor(theme)), [rows, theme]);
  const total = data.average.total_us;
  return (
    <Card
      title={<InfoTooltip label="Execution Summary" text={DEFINITIONS.breakdown} />}
      testId="execution-summary"
    >
      <div className="exec-layout">
        <table className="data-table" data-testid="execution-table">
          <thead>
            <tr>
              <th>Category</th>
              <th className="num">Time (µs)</th>
              <th className="num">Percentage of average step</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.key} data-category={r.key}>
                <td>
                  <span className="swatch" style={{ background: r.color }} />
                  {r.label}
                </td>
                <td className="num">{formatNumber(r.us, 1)}</td>
                <td className="num">{formatPct(r.pct)}</td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr>
              <td>Average step</td>
              <td className="num">{formatNumber(total, 1)}</td>
              <td className="num">{formatPct(total > 0 ? 100 : null)}</td>
            </tr>
          </tfoot>
        </table>
        <div className="donut">
          <EChart
            option={option}
            theme={theme}
            height={240}
            testId="execution-donut"
            ariaLabel="Average step time by category"
          />
          <div className="donut-center" data-testid="donut-center">
            <span className="donut-center-label">Average step</span>
            <span className="donut-center-value">{formatDuration(total)}</span>
          </div>
        </div>
      </div>
    </Card>
  );
}
