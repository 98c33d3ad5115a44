import type { GpuInfo } from "../../api/types";
import { DEFINITIONS } from "../../util/definitions";
import { formatDuration, formatGiB, formatPct, formatText } from "../../util/format";
import { gpuGeneration } from "../../util/gpuGeneration";
import { Card } from "../../components/Card";
import { InfoTooltip } from "../../components/InfoTooltip";

/** The rows every device has: its name and memory. */
function DeviceRows({ gpu }: { gpu: GpuInfo }) {
  return (
    <>
      <div className="kv-row">
        <dt>Name</dt>
        <dd>{formatText(gpu.name)}</dd>
      </div>
      <div className="kv-row">
        <dt>Memory</dt>
        <dd>{formatGiB(gpu.memory_bytes)}</dd>
      </div>
    </>
  );
}

/** An accelerator that is not a GPU (MTIA): its card says what it is and shows what applies to it. */
function AcceleratorBlock({ gpu, kind }: { gpu: GpuInfo; kind: string }) {
  return (
    <div className="gpu-block" data-testid="gpu-block">
      <div className="gpu-title">
        {kind} {gpu.id}
      </div>
      <dl className="kv">
        <DeviceRows gpu={gpu} />
        <div className="kv-row">
          <dt>
            <InfoTooltip label="Utilization" text={`Time with ${kind} device work running ÷ the steps window.`} />
          </dt>
          <dd data-testid="gpu-utilization">{formatPct(gpu.utilization_pct)}</dd>
        </div>
      </dl>
      <p className="muted" data-testid="accelerator-note">
        SM efficiency, occupancy and tensor cores are GPU measures; they do not apply to {kind}.
      </p>
    </div>
  );
}

function GpuBlock({ gpu }: { gpu: GpuInfo }) {
  if (gpu.device_type && gpu.device_type !== "GPU") return <AcceleratorBlock gpu={gpu} kind={gpu.device_type} />;
  const generation = gpuGeneration(gpu);
  const amd = gpu.vendor === "AMD";
  const withoutGeometry = gpu.kernel_us_without_geometry ?? 0;
  const withoutOccupancy = gpu.kernel_us_without_occupancy ?? 0;
  return (
    <div className="gpu-block" data-testid="gpu-block">
      <div className="gpu-title">GPU {gpu.id}</div>
      <dl className="kv">
        <DeviceRows gpu={gpu} />
        <div className="kv-row">
          <dt>{generation.label}</dt>
          <dd data-testid="gpu-generation">{generation.value}</dd>
        </div>
        <div className="kv-row">
          <dt>
            <InfoTooltip label="GPU Utilization" text={DEFINITIONS.gpuUtilization} />
          </dt>
          <dd data-testid="gpu-utilization">{formatPct(gpu.utilization_pct)}</dd>
        </div>
        <div className="kv-row">
          <dt>
            <InfoTooltip label="Est. SM Efficiency" text={DEFINITIONS.smEfficiency} />
          </dt>
          <dd data-testid="sm-efficiency">{formatPct(gpu.sm_efficiency_pct)}</dd>
        </div>
        {withoutGeometry > 0 ? (
          <p className="muted" data-testid="sm-efficiency-note">
            Leaves out {formatDuration(withoutGeometry)} of kernel time without launch geometry.
          </p>
        ) : null}
        <div className="kv-row">
          <dt>
            <InfoTooltip label="Est. Achieved Occupancy" text={DEFINITIONS.achievedOccupancy} />
          </dt>
          <dd data-testid="achieved-occupancy">{formatPct(gpu.achieved_occupancy_pct)}</dd>
        </div>
        {withoutOccupancy > 0 ? (
          <p className="muted" data-testid="occupancy-note">
            Leaves out {formatDuration(withoutOccupancy)} of kernel time with unknown occupancy.
          </p>
        ) : null}
        <div className="kv-row">
          <dt>
            {amd ? (
              <InfoTooltip label="Kernel time using Matrix Cores" text={DEFINITIONS.matrixCores} />
            ) : (
              <InfoTooltip label="Kernel time using Tensor Cores" text={DEFINITIONS.tensorCores} />
            )}
          </dt>
          <dd data-testid="tensor-core">{formatPct(gpu.tensor_core_pct)}</dd>
        </div>
      </dl>
    </div>
  );
}

/** Whether every device of the trace is an accelerator other than a GPU (MTIA). */
function accelerators(gpus: GpuInfo[]): boolean {
  return gpus.length > 0 && gpus.every((g) => g.device_type !== undefined && g.device_type !== "GPU");
}

/** One block per GPU (or other accelerator) seen in the trace. */
export function GpuSummaryCard({ gpus }: { gpus: GpuInfo[] }) {
  return (
    <Card title={accelerators(gpus) ? "Accelerator Summary" : "GPU Summary"} testId="gpu-summary">
      {gpus.length === 0 ? (
        <p className="muted">No GPU activity in this trace.</p>
      ) : (
        <div className="gpu-grid">
          {gpus.map((gpu) => (
            <GpuBlock key={gpu.id} gpu={gpu} />
          ))}
        </div>
      )}
    </Card>
  );
}
