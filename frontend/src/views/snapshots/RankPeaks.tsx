// Per-rank snapshots side by side (route snapshot_ranks): each rank's peak active bytes, the outlier named.
import { snapshotRanksUrl, type ArtifactRef } from "../../api/routes";
import type { RankPeakRow, SnapshotRanksReady } from "../../api/types";
import { Card } from "../../components/Card";
import { Notice } from "../../components/Notice";
import { PagedTable, type Column, wholePage } from "../../components/PagedTable";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useRemote } from "../../hooks/useRemote";
import { formatBytes, formatPct } from "../../util/format";
import { deviceLabel } from "../../util/device";

interface RankPeaksProps {
  artifact: ArtifactRef;
  /** Select another snapshot of the same run. */
  onSelect: (path: string) => void;
}

/** The served vs-median percentage (analysis/snapshot_ranks.py), signed: 48.5 -> "+48.5 %", -1 -> "-1.0 %"; null -> "–". */
function signedPct(pct: number | null): string {
  if (pct === null) return "–";
  return `${pct >= 0 ? "+" : ""}${formatPct(pct, 1)}`;
}

export function RankPeaks({ artifact, onSelect }: RankPeaksProps) {
  const state = useRemote<SnapshotRanksReady>(snapshotRanksUrl(artifact));
  if (state.kind !== "ready") return <RemoteStatus state={state} what="per-rank peaks" />;
  const d = state.data;
  if (d.ranks.length < 2) return null;
  const columns: Column<RankPeakRow>[] = [
    { key: "rank", label: "Rank", render: (r) => `${r.rank}${r.rank === d.outlier_rank ? " (outlier)" : ""}` },
    { key: "peak_active_bytes", label: "Peak active", numeric: true, render: (r) => (r.peak_active_bytes === null ? r.state : formatBytes(r.peak_active_bytes)) },
    { key: "peak_to_median", label: "vs median", tooltip: "(peak / median of the ranks' peaks − 1) × 100", numeric: true, render: (r) => signedPct(r.vs_median_pct) },
    { key: "device", label: "Device", render: (r) => (r.device ? deviceLabel(r.device) : "–") },
    { key: "path", label: "File", className: "name", render: (r) => <span className="cell-name">{r.path}</span> },
  ];
  return (
    <Card title={`Peak per rank (${d.ranks.length} ranks)`} testId="snapshot-ranks">
      {d.outlier_rank !== null ? (
        <Notice kind="warning">
          <span data-testid="snapshot-outlier">
            Rank {d.outlier_rank} is the outlier: its peak is {formatPct(Math.abs(d.outlier_vs_median_pct ?? 0), 1)}{" "}
            {(d.outlier_vs_median_pct ?? 0) >= 0 ? "above" : "below"} the median ({formatBytes(d.median_peak_bytes)}).
          </span>
        </Notice>
      ) : (
        <Notice>
          <span data-testid="snapshot-outlier">No outlier: every rank's peak is within {formatPct(d.outlier_threshold_pct, 0)} of the median ({formatBytes(d.median_peak_bytes)}).</span>
        </Notice>
      )}
      <PagedTable
        testId="snapshot-ranks-table"
        rowTestId="snapshot-rank-row"
        columns={columns}
        {...wholePage(d.ranks)}
        rowKey={(r) => r.path}
        selectedKey={d.path}
        onRowClick={(r) => (r.run === artifact.run ? onSelect(r.path) : undefined)}
      />
    </Card>
  );
}
