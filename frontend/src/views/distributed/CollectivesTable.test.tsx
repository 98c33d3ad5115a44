import { cleanup, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import type { DistributedData } from "../../api/types";
import { CollectivesTable } from "./DistributedTables";

function view(extra: Partial<DistributedData>): DistributedData {
  return {
    world_size: 128,
    ranks_present: 2,
    instances: { matched: 1, total: 1 },
    stragglers: [],
    collectives: [
      { name: "allreduce", calls: 1, bytes: null, calls_without_bytes: 1, transfer_us: 99, sync_us: 1, group_size: 2, algbw_gbps: null, busbw_gbps: null, bus_factor: 1 },
    ],
    ranks: [],
    ...extra,
  };
}

describe("CollectivesTable", () => {
  afterEach(cleanup);

  it("shows unknown bytes and bandwidths as a dash, never 0 B or 0.00 GB/s", () => {
    render(<CollectivesTable view={view({})} />);
    const row = screen.getByTestId("collective-row");
    const text = row.textContent ?? "";
    expect(text).not.toContain("0 B");
    expect(text).not.toContain("GB/s");
    expect(within(row).getAllByText("\u2013").length).toBeGreaterThanOrEqual(3);
    expect(screen.queryByTestId("bandwidth-caveat")).toBeNull();
  });

  it("says why bandwidths are lower bounds when ranks are missing", () => {
    const caveat = "2 of 64 ranks loaded: an instance's transfer time is its shortest kernel among the loaded ranks";
    render(<CollectivesTable view={view({ bandwidth_caveat: caveat })} />);
    expect(screen.getByTestId("bandwidth-caveat").textContent).toBe(caveat);
  });
});
