import { useMemo } from "react";
import type { TopItem } from "../api/types";
import { buildTopDonutOption } from "../charts/topDonutOption";
import type { Theme } from "../hooks/useTheme";
import { Card } from "./Card";
import { EChart } from "./EChart";

/** One titled donut of a top-N list. */
export function TopDonut({ title, items, theme, testId }: { title: string; items: TopItem[]; theme: Theme; testId: string }) {
  const option = useMemo(() => buildTopDonutOption(items), [items]);
  const empty = items.every((it) => !(it.value > 0));
  return (
    <Card title={title} className="donut-card" testId={testId}>
      {empty ? <div className="muted donut-empty">No time recorded.</div> : <EChart option={option} theme={theme} height={200} ariaLabel={title} />}
    </Card>
  );
}
