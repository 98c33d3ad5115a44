import { fireEvent, render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import dlrm from "../../__fixtures__/distributed/distributed_dlrm.json";
import type { CriticalPathStep, DistributedResponse } from "../../api/types";
import { CriticalPathPanel, lateText } from "./CriticalPathPanel";
import { pathByCategoryOption, pathByRankOption } from "./criticalPathCharts";
import { cells } from "../../testing/table";

vi.mock("../../components/EChart", () => ({
  EChart: (props: { testId?: string; option: { series?: { name?: string; data?: number[] }[] } }) => (
    <div data-testid={props.testId} data-series={JSON.stringify((props.option.series ?? []).map((s) => [s.name, s.data]))} />
  ),
}));

// The server's answer on the synthesized job of tests/synth/critical.py (dataloader_job([[60, 50], [50, 500]])):
// step 1, rank 0 loads 60 µs and is the last to the all-reduce; step 2, rank 1 loads 500 µs and rank 0 waits
// 450 µs for it, so the path runs through rank 1's data loader.
const steps = [{"step": "1", "length_us": 230.0, "by_category": {"kernel": 100.0, "cpu": 75.0, "communication": 50.0, "waiting": 5.0}, "by_category_pct": {"kernel": 43.47826086956522, "cpu": 32.608695652173914, "communication": 21.73913043478261, "waiting": 2.1739130434782608}, "by_rank": [{"rank": 0, "us": 230.0, "pct": 100.0}], "segments": [{"category": "kernel", "name": "gemm", "start_us": 70.0, "dur_us": 100.0, "row": 4, "rank": 0, "at_us": 70.0}, {"category": "cpu", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "start_us": 0.0, "dur_us": 60.0, "row": 1, "rank": 0, "at_us": 0.0}, {"rank": 0, "category": "communication", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "row": 9, "start_us": 170.0, "at_us": 170.0, "dur_us": 50.0, "late_rank": 0, "wait_us": 0.0, "late_work": null}, {"category": "cpu", "name": "aten::item", "start_us": 220.0, "dur_us": 10.0, "row": 7, "rank": 0, "at_us": 220.0}, {"category": "cpu", "name": "aten::mm", "start_us": 60.0, "dur_us": 5.0, "row": 2, "rank": 0, "at_us": 60.0}, {"category": "waiting", "name": "idle", "start_us": 65.0, "dur_us": 5.0, "row": -1, "rank": 0, "at_us": 65.0}], "collectives": [], "truncated": false}, {"step": "2", "length_us": 670.0, "by_category": {"kernel": 100.0, "cpu": 515.0, "communication": 50.0, "waiting": 5.0}, "by_category_pct": {"kernel": 14.925373134328357, "cpu": 76.86567164179104, "communication": 7.462686567164178, "waiting": 0.7462686567164178}, "by_rank": [{"rank": 0, "us": 60.0, "pct": 8.955223880597014}, {"rank": 1, "us": 610.0, "pct": 91.04477611940298}], "segments": [{"category": "cpu", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "start_us": 1000.0, "dur_us": 500.0, "row": 11, "rank": 1, "at_us": 0.0}, {"category": "kernel", "name": "gemm", "start_us": 1510.0, "dur_us": 100.0, "row": 14, "rank": 1, "at_us": 510.0}, {"rank": 0, "category": "communication", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "row": 19, "start_us": 2610.0, "at_us": 610.0, "dur_us": 50.0, "late_rank": 1, "wait_us": 450.0, "late_work": {"name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "category": "cpu", "dur_us": 500.0}}, {"category": "cpu", "name": "aten::item", "start_us": 2660.0, "dur_us": 10.0, "row": 17, "rank": 0, "at_us": 660.0}, {"category": "cpu", "name": "aten::mm", "start_us": 1500.0, "dur_us": 5.0, "row": 12, "rank": 1, "at_us": 500.0}, {"category": "waiting", "name": "idle", "start_us": 1505.0, "dur_us": 5.0, "row": -1, "rank": 1, "at_us": 505.0}], "collectives": [{"rank": 0, "category": "communication", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "row": 19, "start_us": 2610.0, "at_us": 610.0, "dur_us": 50.0, "late_rank": 1, "wait_us": 450.0, "late_work": {"name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "category": "cpu", "dur_us": 500.0}}], "truncated": false}] as CriticalPathStep[];

describe("CriticalPathPanel", () => {
  it("stacks each step's path by category and by rank", () => {
    expect(pathByCategoryOption(steps, "#000").series).toMatchObject([
      { name: "Kernel", data: [100, 100] },
      { name: "Launch / CPU", data: [75, 515] },
      { name: "Communication", data: [50, 50] },
      { name: "Waiting", data: [5, 5] },
    ]);
    expect(pathByRankOption(steps, "#000").series).toMatchObject([
      { name: "Rank 0", data: [230, 60] },
      { name: "Rank 1", data: [0, 610] },
    ]);
  });

  it("shows the served shares of the path (by_category_pct), not ones recomputed from the µs", () => {
    const served = [{ ...steps[0]!, by_category_pct: { kernel: 12.5, cpu: 0, communication: 0, waiting: 87.5 } }];
    render(<CriticalPathPanel steps={served} theme="light" textColor="#000" />);
    expect(screen.getByTestId("path-summary").textContent).toContain("Kernel 12.5 % · Launch / CPU 0.0 %");
  });

  it("lists the chosen step's longest segments and names the late rank and its work", () => {
    render(<CriticalPathPanel steps={steps} theme="light" textColor="#000" />);
    expect(screen.getByTestId("path-summary").textContent).toBe(
      "230 µs · Kernel 43.5 % · Launch / CPU 32.6 % · Communication 21.7 % · Waiting 2.2 %",
    );
    expect(screen.queryAllByTestId("path-late-rank")).toEqual([]);
    fireEvent.change(screen.getByTestId("path-step-select"), { target: { value: "2" } });
    const rows = screen.getAllByTestId("path-segment-row");
    expect(cells(rows[0]!)).toEqual(["1", "Launch / CPU", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "0.00 µs", "500 µs", "–"]);
    const comm = rows.find((r) => cells(r)[1] === "Communication")!;
    expect(cells(comm)).toEqual(["0", "Communication", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "610 µs", "50 µs", "1"]);
    expect(screen.getByTestId("path-late-rank").textContent).toBe(
      "Rank 0 waited 450 µs in ncclDevKernel_AllReduce_Sum_f32_RING_LL for rank 1, late after enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ (Launch / CPU, 500 µs)",
    );
    expect(lateText(steps[1]!.collectives![0]!)).toContain("for rank 1");
  });

  it("shows a segment in its rank's trace: that rank's worker and the event row", () => {
    const shown: [string, number][] = [];
    const ranks = [
      { rank: 0, worker: "rank0" },
      { rank: 1, worker: "rank1" },
    ];
    render(<CriticalPathPanel steps={steps} theme="light" textColor="#000" ranks={ranks} onShowInTrace={(w, r) => shown.push([w, r])} />);
    fireEvent.change(screen.getByTestId("path-step-select"), { target: { value: "2" } });
    const rows = screen.getAllByTestId("path-segment-row");
    fireEvent.click(within(rows[0]!).getByTestId("path-show-in-trace"));
    expect(shown).toEqual([["rank1", steps[1]!.segments![0]!.row]]);
    // waiting segments have no event to show
    const waiting = rows.filter((r) => cells(r)[1] === "Waiting");
    expect(waiting.length).toBeGreaterThan(0);
    expect(waiting.every((r) => within(r).queryByTestId("path-show-in-trace") === null)).toBe(true);
  });

  it("on the 8 DLRM ranks (the server's real answer) names rank 7 late at the first send/recv", () => {
    const path = (dlrm as unknown as DistributedResponse).view!.critical_path!;
    render(<CriticalPathPanel steps={path} theme="light" textColor="#000" />);
    expect(screen.getByTestId("path-summary").textContent!.startsWith("19.53 ms · ")).toBe(true);
    expect(screen.getAllByTestId("path-segment-row")).toHaveLength(10);
    expect(screen.getByTestId("path-late-rank").textContent).toMatch(/^Rank 4 waited 4\.87 ms in ncclKernel_SendRecv.* for rank 7, late after untraced host work/);
    // annotations are context, never a segment: no segment is named "## …"
    expect(screen.getAllByTestId("path-segment-row").every((r) => !r.textContent!.includes("\u00a0## "))).toBe(true);
    const items = screen.getAllByTestId("path-item-row");
    expect(items).toHaveLength(10);
    expect(items[0]!.textContent).toBe("untraced host workLaunch / CPU3.63 ms370");
    expect(screen.getByTestId("path-summary").textContent).toMatch(/host blocked on the device 66 µs$/);
  });

  it("says when the server sends no path", () => {
    render(<CriticalPathPanel steps={undefined} theme="light" textColor="#000" />);
    expect(screen.getByText("The critical path is not sent by this server.")).toBeTruthy();
  });
});
