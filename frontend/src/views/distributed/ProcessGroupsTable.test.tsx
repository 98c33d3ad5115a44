import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import fsdpTp from "../../__fixtures__/distributed/distributed_fsdp_tp.json";
import type { DistributedResponse, ProcessGroup } from "../../api/types";
import { ProcessGroupsTable } from "./ProcessGroupsTable";
import { ranksText } from "./model";
import { cells } from "../../testing/table";

// The server's answer on the synthesized FSDP + TP job (tests/synth/comm.py fsdp_tp_docs): 4 ranks on a
// 2 × 2 mesh, all-gathers on the shard groups (100 µs, 40 exposed), all-reduces on the TP groups
// (60/50 µs on the lower rank, 40/40 on the higher).
const groups = (fsdpTp as unknown as DistributedResponse).view!.groups!;

describe("ProcessGroupsTable", () => {
  it("shows every group of the server's answer with its role, ranks, time and exposed time", () => {
    render(<ProcessGroupsTable groups={groups} />);
    const rows = screen.getAllByTestId("group-row");
    expect(rows.map((r) => r.dataset.group)).toEqual(["1", "2", "3", "4"]);
    expect(cells(rows[0]!)).toEqual(["1", "mesh_dp_shard", "FSDP shard", "0, 2", "2", "1", "100 µs", "40 µs", "40.0 %", "8.0 KiB", "0.08 GB/s"]);
    expect(cells(rows[2]!)).toEqual(["3", "mesh_tp", "TP", "0, 1", "2", "1", "50 µs", "45 µs", "90.0 %", "4.0 KiB", "0.08 GB/s"]);
  });

  it("lists the selected group's ranks, the first group by default", () => {
    render(<ProcessGroupsTable groups={groups} />);
    const perRank = () =>
      screen.getAllByTestId("group-rank-row").map((r) => [r.dataset.rank, ...cells(r).slice(2, 4)]);
    expect(perRank()).toEqual([
      ["0", "100 µs", "40 µs"],
      ["2", "100 µs", "40 µs"],
    ]);
    fireEvent.click(screen.getAllByTestId("group-row")[3]!);
    // TP group [2, 3]: rank 2 entered at 200 µs (60 µs, 10 hidden by compute), rank 3 at 220 µs
    expect(perRank()).toEqual([
      ["2", "60 µs", "50 µs"],
      ["3", "40 µs", "40 µs"],
    ]);
    expect(screen.getByTestId("group-ranks-title").textContent).toBe("Group 4 (TP): 2 of 2 ranks loaded");
  });

  it("shows the fallback group and absent data without inventing a role", () => {
    const fallback: ProcessGroup = {
      name: "default", description: null, role: null, ranks: [0, 1, 2, 3, 4, 5, 6, 7], size: 8, ranks_loaded: 8,
      calls: 8, time_us: 6067.75, bytes: 2549700, exposed_us: 5861.25, bandwidth_gbps: 0.42,
      by_rank: [{ rank: 0, calls: 8, time_us: 5798, bytes: 2549700, exposed_us: 5537 }],
    };
    const note = "the traces name no process group (no 'Process Group Name' args, no pg_config): all collectives are counted in one group over the world";
    const { unmount } = render(<ProcessGroupsTable groups={[fallback]} messages={[note]} />);
    expect(screen.getByTestId("groups-message").textContent).toBe(note);
    expect(cells(screen.getByTestId("group-row"))).toEqual(["default", "–", "–", "0–7", "8", "8", "6.07 ms", "5.86 ms", "96.6 %", "2.4 MiB", "0.42 GB/s"]);
    unmount();
    render(<ProcessGroupsTable groups={undefined} />);
    expect(screen.getByText("Process groups are not sent by this server.")).toBeTruthy();
  });
});

describe("ranksText", () => {
  it("joins runs, lists steps and caps long lists", () => {
    expect(ranksText([3, 0, 1, 2])).toBe("0–3");
    expect(ranksText([0, 2, 4])).toBe("0, 2, 4");
    expect(ranksText([0, 1, 4, 5, 6])).toBe("0, 1, 4–6");
    expect(ranksText(null)).toBe("–");
    expect(ranksText(Array.from({ length: 64 }, (_, i) => i * 8), 3)).toBe("0, 8, 16, … (64 ranks)");
  });
});
