import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { GraphsReady } from "../../api/types";
import { json, stubFetchEachTest } from "../../testing/fetch";
import { GraphsCards, GraphsLine } from "./GraphsCard";

const selection = { run: "r", worker: "w", span: "1" };
const ANSWER: GraphsReady = {
  state: "ready",
  cuda_graphs: {
    replays: 3, graphs: 1, kernel_us: 60, graph_kernel_us: 60, graph_kernel_pct: 100,
    graph_list: [{
      graph: 0, graph_id: 42, replays: 3, events_per_replay: 4, kernel_us: 60, busy_us: 45, gap_us: 3, launch_us: 15,
      streams: [7, 20], status: "attributed", method: "graph node id order", capture: 0, candidates: [0],
      note: "Replayed kernels attributed to the operators that launched them during the capture.",
      kernels: [{ graph: 0, name: "<b>gemm</b>", op: "aten::mm", frame: "model.py(7): forward", calls: 3, total_us: 30 }],
    }],
    accounting: { kernel_us: 60, attributed_us: 60, unattributed_us: 0, from_graph_replay_us: 60 },
    advice: [],
  },
  compiled: {
    regions: [{ name: "Torch-Compiled Region: 0/0", calls: 3, host_us: 840, device_us: 120, kernels: 3, kernel_us: 120,
                triton_kernels: 3, triton_us: 120 }],
    triton_kernels: [{ name: "triton_poi_fused_add_mul_0", kind: "pointwise", fused: "add_mul", region: "CompiledFunction",
                       calls: 3, total_us: 120, source_nodes: ["linear_mul"], source_lines: null }],
    steps: [{ step: "3", step_us: 1400, regions: 2, frames: 2, versions: ["0/0", "1/1"], recompilations: 1,
              cache_lookup_us: 10, between_us: 100 }],
    advice: [{ rule: "compile.recompilation", addressed_us: 400, threshold_pct: 10, text: "torch.compile recompiled." }],
  },
};

let answer: GraphsReady = ANSWER;
const requests = stubFetchEachTest(() => json(answer));

describe("CUDA graphs and compiled regions", () => {
  it("shows the Overview line, the graphs with their capture status and the compiled regions", async () => {
    render(<><GraphsLine selection={selection} /><GraphsCards selection={selection} /></>);
    expect((await screen.findByTestId("graphs-line")).textContent).toMatch(/3 replays of 1 graph, 100\.0 ?% of GPU kernel time in graphs/);
    expect((await screen.findByTestId("graph-row")).textContent).toMatch(/graph id 42.*attributed/);
    expect(screen.getByTestId("graph-kernels").textContent).toContain("<b>gemm</b>"); // text, never HTML
    expect(screen.getByTestId("graph-kernels").textContent).toContain("aten::mm");
    expect(screen.getByTestId("compile-steps").textContent).toContain("0/0 1/1");
    expect(screen.getByTestId("triton-kernels").textContent).toContain("linear_mul");
    expect(screen.getByTestId("graphs-advice").textContent).toContain("recompiled");
    expect(requests.every((u) => u.startsWith("graphs?"))).toBe(true);
  });

  it("says nothing on the Overview without replays", async () => {
    answer = { ...ANSWER, cuda_graphs: { ...ANSWER.cuda_graphs, replays: 0, graphs: 0, graph_list: [] } };
    render(<GraphsLine selection={selection} />);
    await new Promise((r) => setTimeout(r, 50));
    expect(requests).toHaveLength(1);
    expect(screen.queryByTestId("graphs-line")).toBeNull();
    answer = ANSWER;
  });
});
