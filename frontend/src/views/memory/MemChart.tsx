// An ECharts instance for the memory views: like components/EChart, plus access to the instance
// (brush and zoom events, actions) through onReady.
import { useEffect, useRef } from "react";
import { exposeTimeAxes } from "../../charts/timeAxes";
import type { Theme } from "../../hooks/useTheme";
import { echarts, type MemChartInstance, type MemChartOption } from "./echarts";

interface MemChartProps {
  option: MemChartOption;
  theme: Theme;
  height: number;
  testId?: string;
  ariaLabel: string;
  /** Called after each setOption with the live instance (and once with null on dispose). */
  onReady?: (chart: MemChartInstance | null) => void;
}

export function MemChart({ option, theme, height, testId, ariaLabel, onReady }: MemChartProps) {
  const containerRef = useRef<HTMLDivElement>(null);
  const chartRef = useRef<MemChartInstance | null>(null);
  const readyRef = useRef(onReady);
  readyRef.current = onReady;

  useEffect(() => {
    const el = containerRef.current;
    if (!el) return;
    const chart = echarts.init(el, theme === "dark" ? "dark" : undefined, { renderer: "canvas" });
    chartRef.current = chart;
    const observer = typeof ResizeObserver !== "undefined" ? new ResizeObserver(() => chart.resize()) : undefined;
    observer?.observe(el);
    return () => {
      observer?.disconnect();
      readyRef.current?.(null);
      chart.dispose();
      chartRef.current = null;
    };
  }, [theme]);

  useEffect(() => {
    const chart = chartRef.current;
    if (!chart) return;
    chart.setOption(option, { notMerge: true });
    exposeTimeAxes(chart as never, containerRef.current);
    readyRef.current?.(chart);
  }, [option, theme]);

  return (
    <div ref={containerRef} className="chart" style={{ height }} data-testid={testId} role="img" aria-label={ariaLabel} />
  );
}
