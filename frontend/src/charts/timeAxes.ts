// Browser-test hook: the extent ECharts gave each time axis (those with `id: "time"`), written on the
// chart's element as `data-time-axes` ("[[min, max], …]") after each setOption, so the browser walk can
// assert that no time axis runs negative. Only under the test flag (util/testHooks.ts).
import { testHooksEnabled } from "../util/testHooks";

/** The id that marks a time axis in an option (an ECharts component id). */
export const TIME_AXIS_ID = "time";

interface AxisModel {
  id?: string;
  axis?: { scale?: { getExtent(): [number, number] } };
}

interface ChartLike {
  getModel?: () => { getComponent?: (main: string, index: number) => AxisModel | undefined } | undefined;
}

/** The [min, max] of every time axis of a rendered chart (reads ECharts' model). */
export function timeAxisExtents(chart: ChartLike): [number, number][] {
  const model = chart.getModel?.();
  const out: [number, number][] = [];
  for (const main of ["xAxis", "yAxis"]) {
    for (let i = 0; i < 8; i++) {
      const c = model?.getComponent?.(main, i);
      if (!c) break;
      if (c.id === TIME_AXIS_ID && c.axis?.scale) out.push(c.axis.scale.getExtent());
    }
  }
  return out;
}

export function exposeTimeAxes(chart: ChartLike, el: HTMLElement | null): void {
  if (!el || !testHooksEnabled()) return;
  try {
    el.dataset.timeAxes = JSON.stringify(timeAxisExtents(chart));
  } catch {
    // a chart being disposed: nothing to record
  }
}
