/** Plot margins of a chart in px (ECharts `grid`); axis labels are laid out inside them. */
export interface GridMargins {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/**
 * The option keys every chart with a legend on top shares: a transparent background (the card
 * shows through), no animation, text and legend in the theme's text colour, the legend at the top,
 * and plot margins `grid` (px) that contain the axis labels. Spread it first, then add the chart's own keys.
 */
export function legendChartBase(textColor: string, grid: GridMargins) {
  return {
    backgroundColor: "transparent",
    animation: false,
    textStyle: { color: textColor },
    legend: { type: "plain" as const, top: 0, textStyle: { color: textColor } },
    grid: { ...grid, containLabel: true },
  };
}
