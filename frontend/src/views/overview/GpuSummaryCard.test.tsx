import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { GpuInfo } from "../../api/types";
import { GpuSummaryCard } from "./GpuSummaryCard";

const base: GpuInfo = {
  id: 2,
  name: "AMD Instinct MI300X VF",
  memory_bytes: 205571227648,
  vendor: "AMD",
  compute_capability: null,
  architecture: "gfx94x",
  utilization_pct: 9.69,
  sm_efficiency_pct: 36.11,
  kernel_us_without_geometry: 100,
  achieved_occupancy_pct: null,
  tensor_core_pct: 74.11,
};

function valueOf(label: string): string | null {
  const dt = screen.getAllByText(label).find((el) => el.closest("dt"))?.closest("dt");
  return dt?.nextElementSibling?.textContent ?? null;
}

describe("GpuSummaryCard", () => {
  it("labels an AMD GPU's architecture, never a compute capability", () => {
    render(<GpuSummaryCard gpus={[base]} />);
    expect(valueOf("Architecture")).toBe("AMD gfx94x");
    expect(screen.queryByText("Compute capability")).toBeNull();
    expect(screen.getByTestId("gpu-generation").textContent).toBe("AMD gfx94x");
    const tips = within(screen.getByTestId("gpu-summary")).getAllByRole("tooltip").map((el) => el.textContent ?? "");
    expect(tips[3]).toMatch(/Matrix Cores/);
  });

  it("says how much kernel time the SM efficiency leaves out", () => {
    render(<GpuSummaryCard gpus={[base]} />);
    expect(screen.getByTestId("sm-efficiency-note").textContent).toMatch(/^Leaves out 100(\.0+)? µs of kernel time/);
  });

  it("shows unknown occupancy as a note, never null or NaN", () => {
    const hopper: GpuInfo = { ...base, id: 0, name: "NVIDIA H200", vendor: "NVIDIA", compute_capability: "9.0",
      architecture: null, kernel_us_without_geometry: 0, achieved_occupancy_pct: 63.99,
      kernel_us_without_occupancy: 2614 };
    render(<GpuSummaryCard gpus={[hopper]} />);
    expect(screen.getByTestId("achieved-occupancy").textContent).toBe("63.99 %");
    expect(screen.getByTestId("occupancy-note").textContent).toMatch(/^Leaves out 2\.61 ms of kernel time with unknown occupancy/);
    expect(screen.getByTestId("gpu-summary").textContent).not.toMatch(/null|NaN|undefined/);
  });

  it("keeps the compute capability of NVIDIA GPUs and shows no note without missing geometry", () => {
    const nvidia: GpuInfo = { ...base, id: 0, name: "NVIDIA H100 80GB HBM3", vendor: "NVIDIA",
      compute_capability: "9.0", architecture: null, kernel_us_without_geometry: 0 };
    render(<GpuSummaryCard gpus={[nvidia]} />);
    expect(valueOf("Compute capability")).toBe("9.0");
    expect(screen.queryByText("Architecture")).toBeNull();
    expect(screen.queryByTestId("sm-efficiency-note")).toBeNull();
  });

  it("renders an AMD GPU without an architecture as plain AMD, never null", () => {
    render(<GpuSummaryCard gpus={[{ ...base, architecture: null }]} />);
    expect(valueOf("Architecture")).toBe("AMD");
    expect(document.body.textContent).not.toMatch(/null|undefined|NaN/);
  });

  it("gives an MTIA device an accelerator card with no GPU-only measures", () => {
    const mtia: GpuInfo = { ...base, id: 0, name: null, vendor: null, architecture: null, device_type: "MTIA",
      utilization_pct: 20, sm_efficiency_pct: null, achieved_occupancy_pct: null, tensor_core_pct: null, kernel_us_without_geometry: 0 };
    render(<GpuSummaryCard gpus={[mtia]} />);
    expect(screen.getByText("Accelerator Summary")).toBeTruthy();
    expect(screen.getByText("MTIA 0", { exact: false })).toBeTruthy();
    expect(screen.queryByTestId("tensor-core")).toBeNull();
    expect(screen.queryByTestId("sm-efficiency")).toBeNull();
    expect(screen.queryByText("Kernel time using Tensor Cores")).toBeNull();
    expect(screen.getByTestId("gpu-utilization").textContent).toContain("20");
    expect(screen.getByTestId("accelerator-note").textContent).toContain("do not apply to MTIA");
  });
});
