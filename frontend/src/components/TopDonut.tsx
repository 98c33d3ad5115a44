import { useMemo } from "react";
import type { TopItem } from "../api/types";
import { buildTopDonutOption, colorTopItems } from "../charts/topDonutOption";
import type { Theme } from "../hooks/useTheme";
import { formatDuration, formatPct } from "../util/format";
import { Card } from "./Card";
import { EChart } from "./EChart";
import { ElidedName } from "./ElidedName";

interface TopDonutProps {
  title: string;
  items: TopItem[];
  theme: Theme;
  testId: string;
  colors?: string[];
  /** How many legend lines to list under the donut. */
  legend?: number;
}

/** One titled donut of a top-N list, with a text legend of the largest entries under it. */
export function TopDonut({ title, items, theme, testId, colors, legend = 5 }: TopDonutProps) {
  const colored = useMemo(() => colorTopItems(items, colors), [items, colors]);
  const option = useMemo(() => buildTopDonutOption(colored), [colored]);
  return (
    <Card title={title} className="donut-card" testId={testId}>
      {!colored.some((it) => it.value > 0) ? (
        <div className="muted donut-empty">No time recorded.</div>
      ) : (
        <>
          <EChart option={option} theme={theme} height={170} ariaLabel={title} />
          <ul className="donut-legend">
            {colored.slice(0, legend).map((it, i) => (
              <li key={i} title={`${it.name}: ${formatDuration(it.value)}`}>
                <span className="swatch" style={{ background: it.color }} />
                <ElidedName text={it.name} className="donut-legend-name" />
                <span className="donut-legend-value">{formatPct(it.pct, 1)}</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </Card>
  );
}
