// The "Selected range" panel: the box's times and the server's exact statistics of its events.
import { formatNumber } from "../../util/format";
import { formatTimeUs } from "./math";
import type { Box, RangeStats } from "./useRangeStats";
import { DataTable, Th } from "../../components/DataTable";

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
      <DataTable
        scroll={false}
        className="compact"
        head={
          <>
            <Th label="Name" num={false} />
            <Th label="Count" />
            <Th label="Time in range" />
          </>
        }
      >
        {(stats?.top ?? []).map((s) => (
          <tr key={s.name}>
            <td className="name">{s.name}</td>
            <td className="num">{formatNumber(s.count)}</td>
            <td className="num">{formatTimeUs(s.totalUs)}</td>
          </tr>
        ))}
      </DataTable>
    </div>
  );
}
