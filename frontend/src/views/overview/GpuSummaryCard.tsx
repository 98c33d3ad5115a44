import type { ReactNode } from "react";
import type { GpuInfo } from "../../api/types";
import { DEFINITIONS } from "../../util/definitions";
import { formatDuration, formatGiB, formatPct, formatText } from "../../util/format";
import { gpuGeneration } from "../../util/gpuGeneration";
import { Card } from "../../components/Card";
import { InfoTooltip } from "../../components/InfoTooltip";

/** One labelled value of a device's card; ``definition`` puts the label behind an info tooltip, ``note``
 * (a muted line under the row, test id ``noteTestId``) says what the value leaves out. */
function KvRow({
  label,
  definition,
  testId,
  note,
  noteTestId,
  children,
}: {
  label: string;
  definition?: string;
  testId?: string;
  note?: string;
  noteTestId?: string;
  children: ReactNode;
}) {
  return (
    <>
      <div className="kv-row">
        <dt>{definition === undefined ? label : <InfoTooltip label={label} text={definition} />}</dt>
        <dd data-testid={testId}>{children}</dd>
      </div>
      {note ? (
        <p className="muted" data-testid={noteTestId}>
          {note}
        </p>
      ) : null}
    </>
  );
}

/** The GPU's percentages: utilization, the two estimates (each with what it leaves out) and the Tensor
 * (on AMD, Matrix) Core share of kernel time. */
function percentRows(gpu: GpuInfo): { label: string; definition: string; testId: string; pct: number | null; note?: string; noteTestId?: string }[] {
  const amd = gpu.vendor === "AMD";
  const geometry = leavesOut(gpu.kernel_us_without_geometry ?? 0, "without launch geometry");
  const occupancy = leavesOut(gpu.kernel_us_without_occupancy ?? 0, "with unknown occupancy");
  return [
    { label: "GPU Utilization", definition: DEFINITIONS.gpuUtilization, testId: "gpu-utilization", pct: gpu.utilization_pct },
    { label: "Est. SM Efficiency", definition: DEFINITIONS.smEfficiency, testId: "sm-efficiency", pct: gpu.sm_efficiency_pct, note: geometry, noteTestId: "sm-efficiency-note" },
    { label: "Est. Achieved Occupancy", definition: DEFINITIONS.achievedOccupancy, testId: "achieved-occupancy", pct: gpu.achieved_occupancy_pct, note: occupancy, noteTestId: "occupancy-note" },
    amd
      ? { label: "Kernel time using Matrix Cores", definition: DEFINITIONS.matrixCores, testId: "tensor-core", pct: gpu.tensor_core_pct }
      : { label: "Kernel time using Tensor Cores", definition: DEFINITIONS.tensorCores, testId: "tensor-core", pct: gpu.tensor_core_pct },
  ];
}

/** "Leaves out <time> of kernel time <why>." for a positive time (µs), else nothing. */
function leavesOut(us: number, why: string): string | undefined {
  return us > 0 ? `Leaves out ${formatDuration(us)} of kernel time ${why}.` : undefined;
}

/** The rows every device has: its name and memory. */
function DeviceRows({ gpu }: { gpu: GpuInfo }) {
  return (
    <>
      <KvRow label="Name">{formatText(gpu.name)}</KvRow>
      <KvRow label="Memory">{formatGiB(gpu.memory_bytes)}</KvRow>
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
        <KvRow
          label="Utilization"
          definition={`Time with ${kind} device work running ÷ the steps window.`}
          testId="gpu-utilization"
        >
          {formatPct(gpu.utilization_pct)}
        </KvRow>
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
  return (
    <div className="gpu-block" data-testid="gpu-block">
      <div className="gpu-title">GPU {gpu.id}</div>
      <dl className="kv">
        <DeviceRows gpu={gpu} />
        <KvRow label={generation.label} testId="gpu-generation">
          {generation.value}
        </KvRow>
        {percentRows(gpu).map(({ pct, ...row }) => (
          <KvRow key={row.testId} {...row}>
            {formatPct(pct)}
          </KvRow>
        ))}
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
