// The "Selected range" panel: the box's times and the server's exact statistics of its events.
import { formatNumber } from "../../util/format";
import { formatTimeUs } from "./math";
import type { Box, NameStat, RangeStats } from "./useRangeStats";
import { ColumnTable, type TableColumn } from "../../components/ColumnTable";

const COLUMNS: TableColumn<NameStat>[] = [
  { label: "Name", num: false, className: "name", cell: (s) => s.name },
  { label: "Count", cell: (s) => formatNumber(s.count) },
  { label: "Time in range", cell: (s) => formatTimeUs(s.totalUs) },
];

interface RangePanelProps {
  box: Box;
  stats: RangeStats | null;
  onZoom: () => void;
  onClear: () => void;
}

export function RangePanel({ box, stats, onZoom, onClear }: RangePanelProps) {
  const lo = Math.min(box.t0, box.t1);
  const hi = Math.max(box.t0, box.t1);
  return (
    <div className="timeline-panel" data-testid="timeline-range">
      <div className="panel-head">
        <strong>Selected range: {formatTimeUs(hi - lo)}</strong>
        <span className="muted">
          {" "}
          {formatTimeUs(lo)} – {formatTimeUs(hi)} ·{" "}
          {stats ? `${formatNumber(stats.count)} slices · ${formatTimeUs(stats.totalUs)} total` : "counting…"}
        </span>
        <button type="button" onClick={onZoom}>
          Zoom to range
        </button>
        <button type="button" onClick={onClear}>
          Clear
        </button>
      </div>
      <ColumnTable scroll={false} className="compact" columns={COLUMNS} rows={stats?.top ?? []} rowKey={(s) => s.name} />
    </div>
  );
}
