import type { GpuInfo } from "../api/types";
import { formatText } from "./format";

/** The label and value of a GPU's generation: AMD devices report a gfx architecture (ROCm's
 * computeMajor/Minor), never a CUDA compute capability. */
export function gpuGeneration(gpu: GpuInfo): { label: string; value: string } {
  if (gpu.vendor === "AMD") {
    return { label: "Architecture", value: gpu.architecture ? `AMD ${gpu.architecture}` : "AMD" };
  }
  return { label: "Compute capability", value: formatText(gpu.compute_capability) };
}
