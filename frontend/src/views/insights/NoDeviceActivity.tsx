// What Insights say for a CPU-only trace, instead of idle figures, launch delays and a bar of zeros.
import type { InsightsReady } from "../../api/types";

/** Any GPU, stream, kernel or per-GPU exposed time: something on a device to analyse. */
export function hasDeviceActivity(data: InsightsReady): boolean {
  return data.idle.gpus.length > 0 || data.idle.per_stream.length > 0 || data.launch.kernels > 0 || data.exposed.gpus.length > 0;
}

export function NoDeviceActivity() {
  return (
    <p className="muted" data-testid="insights-no-device">
      This trace has no device activity to analyse: no GPU kernels, copies or streams were recorded (a CPU-only
      profile). GPU idle time, kernel launches, exposed time and host synchronization need device work; the Overview,
      Operator and Trace tabs show the CPU side.
    </p>
  );
}
