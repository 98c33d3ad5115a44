import type { OverviewExtras } from "../../api/types";
import type { OverviewReady } from "../../api/types";
import { ConfigurationCard } from "../../components/ConfigurationCard";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import { ExecutionSummary } from "./ExecutionSummary";
import { GpuSummaryCard } from "./GpuSummaryCard";
import { AboutTrace } from "./AboutTrace";
import { Recommendations } from "./Recommendations";
import { RuntimeCallsCard } from "./RuntimeCallsCard";
import { StepTimeChart } from "./StepTimeChart";
import { SystemMetrics } from "./SystemMetrics";
import { TrainerEvents } from "./TrainerEvents";
import { FileNotes, WarningsList } from "../../components/WarningsList";
import { InsightsCard } from "../insights/InsightsCard";
import { GraphsLine } from "../kernels/GraphsCard";
import type { Theme } from "../../hooks/useTheme";

interface OverviewProps {
  data: OverviewReady;
  theme: Theme;
}

/**
 * The Overview of one file. Each card has its own error boundary, so a card that cannot render
 * (an unexpected value) does not take the others down.
 */
export function Overview({ data, theme }: OverviewProps) {
  return (
    <div className="overview" data-testid="overview">
      <WarningsList warnings={data.warnings} />
      <FileNotes notes={data.notes} />
      <ErrorBoundary title="About this trace failed to render">
        <AboutTrace notes={data.about} />
      </ErrorBoundary>
      <div className="grid-2">
        <ErrorBoundary title="Configuration failed to render">
          <ConfigurationCard configuration={data.configuration} />
        </ErrorBoundary>
        <ErrorBoundary title="GPU Summary failed to render">
          <GpuSummaryCard gpus={data.gpus} />
        </ErrorBoundary>
      </div>
      <ErrorBoundary title="CUDA graphs line failed to render">
        <GraphsLine selection={{ run: data.run, worker: data.worker, span: data.span }} />
      </ErrorBoundary>
      <ErrorBoundary title="Execution Summary failed to render">
        <ExecutionSummary data={data} theme={theme} />
      </ErrorBoundary>
      <ErrorBoundary title="Step Time Breakdown failed to render">
        <StepTimeChart data={data} theme={theme} />
      </ErrorBoundary>
      <ErrorBoundary title="Trainer events failed to render">
        <TrainerEvents events={(data as OverviewReady & OverviewExtras).trainer_events} />
      </ErrorBoundary>
      <ErrorBoundary title="System metrics failed to render">
        <SystemMetrics metrics={(data as OverviewReady & OverviewExtras).system_metrics} theme={theme} />
      </ErrorBoundary>
      <ErrorBoundary title="Recommendations failed to render">
        <Recommendations items={data.recommendations} details={data.recommendation_details} />
      </ErrorBoundary>
      <ErrorBoundary title="Runtime calls failed to render">
        <RuntimeCallsCard calls={data.runtime_calls} />
      </ErrorBoundary>
      <ErrorBoundary title="Insights failed to render">
        <InsightsCard selection={{ run: data.run, worker: data.worker, span: data.span }} />
      </ErrorBoundary>
    </div>
  );
}
