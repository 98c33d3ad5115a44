import { useMemo } from "react";
import type { OverviewReady } from "../../api/types";
import { buildStepChartModel, buildStepChartOption } from "../../charts/stepChartOption";
import type { Theme } from "../../hooks/useTheme";
import { DEFINITIONS } from "../../util/definitions";
import { Card } from "../../components/Card";
import { EChart } from "../../components/EChart";
import { InfoTooltip } from "../../components/InfoTooltip";
import { chartTextColor } from "../../components/chartColors";

interface StepTimeChartProps {
  data: Pick<OverviewReady, "steps" | "categories" | "category_labels">;
  theme: Theme;
}

/** One stacked bar per step, split by category. */
export function StepTimeChart({ data, theme }: StepTimeChartProps) {
  const model = useMemo(() => buildStepChartModel(data), [data]);
  const option = useMemo(() => buildStepChartOption(model, chartTextColor(theme)), [model, theme]);
  return (
    <Card title={<InfoTooltip label="Step Time Breakdown" text={DEFINITIONS.stepTime} />} testId="step-time">
      {data.steps.length === 0 ? (
        <p className="muted">No steps found in this trace.</p>
      ) : (
        <EChart
          option={option}
          theme={theme}
          height={340}
          testId="step-chart"
          ariaLabel={`Step time breakdown of ${data.steps.length} steps, in ${model.unit.label}`}
        />
      )}
    </Card>
  );
}
