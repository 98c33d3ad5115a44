// finetuning-scheduler MemProfiler files of a run: a stats YAML (chart + table of its snapshots) or an
// FSDP memory report (text, shown as text).
import { useMemo, useState } from "react";
import { memprofilerLogUrl, memprofilerStatsUrl, type ArtifactRef } from "../../api/routes";
import type { MemProfilerLogReady, MemProfilerStatsReady } from "../../api/types";
import { Card } from "../../components/Card";
import { EChart } from "../../components/EChart";
import { ErrorCard } from "../../components/ErrorCard";
import { Notice } from "../../components/Notice";
import { RemoteStatus } from "../../components/RemoteStatus";
import { chartTextColor } from "../../components/chartColors";
import { useRemote } from "../../hooks/useRemote";
import type { Theme } from "../../hooks/useTheme";
import { formatBytes, formatNumber } from "../../util/format";
import { formatStat, statsChartOption, statsTable } from "./memprofiler";
import { DataTable, Th } from "../../components/DataTable";

export function MemProfilerStatsView({ artifact, theme }: { artifact: ArtifactRef; theme: Theme }) {
  const state = useRemote<MemProfilerStatsReady>(memprofilerStatsUrl(artifact));
  const [all, setAll] = useState(false);
  const textColor = chartTextColor(theme);
  const data = state.kind === "ready" ? state.data : null;
  const option = useMemo(() => (data ? statsChartOption(data, textColor) : null), [data, textColor]);
  const table = useMemo(() => (data ? statsTable(data, all) : null), [data, all]);
  if (state.kind === "file-error") {
    return <ErrorCard title={`This MemProfiler stats file could not be read: ${artifact.path}`} message={state.error} />;
  }
  if (!data || !option || !table) return <RemoteStatus state={state} what="MemProfiler stats" />;
  const title = `MemProfiler snapshots${data.rank !== null ? `, rank ${data.rank}` : ""}`;
  return (
    <Card title={title} testId="memprofiler-stats">
      {data.warnings.map((w, i) => (
        <Notice key={i} kind="warning">
          {w}
        </Notice>
      ))}
      <p className="mem-hint">
        {formatNumber(data.snapshots.length)} snapshots taken at the start and end of each profiled call. npp: bytes of
        non-parameter tensors saved for backward (an upper bound of activation memory).
      </p>
      <EChart option={option} theme={theme} height={320} testId="memprofiler-chart" ariaLabel="MemProfiler memory per snapshot" />
      <label className="check">
        <input type="checkbox" data-testid="memprofiler-all" checked={all} onChange={(e) => setAll(e.target.checked)} /> Show
        every recorded stat
      </label>
      <DataTable
        scroll="memprof-table-wrap"
        testId="memprofiler-table"
        head={
          <>
            <Th label="Stat" num={false} />
            {table.columns.map((c) => (
              <Th key={c.id} label={c.label} />
            ))}
          </>
        }
      >
        {table.rows.map((r) => (
          <tr key={r.key} data-testid="memprofiler-row" data-key={r.key}>
            <td className="name" title={r.key}>
              {r.label}
            </td>
            {r.cells.map((v, i) => (
              <td
                key={table.columns[i]!.id}
                className="num"
                data-testid="memprofiler-cell"
                data-column={table.columns[i]!.id}
                data-value={v === null ? "" : String(v)}
                title={v === null ? undefined : `${formatNumber(v)}${r.unit === "bytes" ? " B" : ""}`}
              >
                {formatStat(v, r.unit)}
              </td>
            ))}
          </tr>
        ))}
      </DataTable>
    </Card>
  );
}

export function MemProfilerLogView({ artifact }: { artifact: ArtifactRef }) {
  const state = useRemote<MemProfilerLogReady>(memprofilerLogUrl(artifact));
  if (state.kind === "file-error") {
    return <ErrorCard title={`This report could not be read: ${artifact.path}`} message={state.error} />;
  }
  if (state.kind !== "ready") return <RemoteStatus state={state} what="report" />;
  const d = state.data;
  return (
    <Card title="FSDP memory report" testId="memprofiler-log-card">
      {d.truncated ? (
        <Notice kind="warning">
          Showing the first {formatBytes(d.text.length)} of {formatBytes(d.size_bytes)}.
        </Notice>
      ) : null}
      <pre className="mem-log" data-testid="memprofiler-log">
        {d.text}
      </pre>
    </Card>
  );
}
