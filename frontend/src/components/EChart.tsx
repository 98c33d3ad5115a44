import { useEffect, useRef } from "react";
import { echarts, type ChartOption } from "../charts/echarts";
import { exposeTimeAxes } from "../charts/timeAxes";
import type { Theme } from "../hooks/useTheme";

interface EChartProps {
  option: ChartOption;
  theme: Theme;
  height: number;
  testId?: string;
  ariaLabel: string;
  /** Hovering a category label of an axis with `triggerEvent` shows that category's tooltip. */
  labelTips?: boolean;
}

/**
 * An ECharts instance bound to a div. It is re-created when the theme changes (ECharts themes are
 * fixed at init), updated in place when the option changes, and resized with its container.
 */
export function EChart({ option, theme, height, testId, ariaLabel, labelTips = false }: EChartProps) {
  const containerRef = useRef<HTMLDivElement>(null);
  const chartRef = useRef<ReturnType<typeof echarts.init> | null>(null);

  useEffect(() => {
    const el = containerRef.current;
    if (!el) return;
    const chart = echarts.init(el, theme === "dark" ? "dark" : undefined, { renderer: "canvas" });
    chartRef.current = chart;
    if (labelTips) {
      chart.on("mouseover", (p: { componentType?: string; value?: unknown; targetType?: string }) => {
        if ((p.componentType !== "yAxis" && p.componentType !== "xAxis") || p.targetType !== "axisLabel") return;
        const axes = (chart.getOption() as Record<string, { data?: unknown[] }[] | undefined>)[p.componentType] ?? [];
        const dataIndex = axes[0]?.data?.indexOf(p.value) ?? -1;
        if (dataIndex >= 0) chart.dispatchAction({ type: "showTip", seriesIndex: 0, dataIndex });
      });
    }
    const observer =
      typeof ResizeObserver !== "undefined" ? new ResizeObserver(() => chart.resize()) : undefined;
    observer?.observe(el);
    return () => {
      observer?.disconnect();
      chart.dispose();
      chartRef.current = null;
    };
  }, [theme, labelTips]);

  useEffect(() => {
    chartRef.current?.setOption(option, { notMerge: true });
    if (chartRef.current) exposeTimeAxes(chartRef.current as never, containerRef.current);
  }, [option, theme]);

  return (
    <div
      ref={containerRef}
      className="chart"
      style={{ height }}
      data-testid={testId}
      role="img"
      aria-label={ariaLabel}
    />
  );
}
